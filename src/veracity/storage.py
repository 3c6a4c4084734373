"""Folders veracity writes and reads back (indexes, image collections): a JSON manifest naming the
format and its version, written atomically, with one-line errors for a folder that is missing, not
ours, from a newer veracity, or damaged."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .errors import IndexError_, UserError

T = TypeVar("T")


@dataclass(frozen=True)
class FolderFormat:
    what: str  # "index", "image collection"
    format: str  # the manifest's "format" value
    version: int  # the newest format version this code reads
    manifest: str  # the manifest's file name
    rebuild: str  # the command that builds one, for error messages

    def is_ours(self, path: Path) -> bool:
        try:
            return json.loads((path / self.manifest).read_text(encoding="utf-8")).get("format") == self.format
        except (OSError, ValueError, AttributeError):
            return False

    def check_can_write(self, out_dir: Path) -> None:
        """Refuse to replace anything but an empty folder or a folder of this format."""
        if not out_dir.exists():
            return
        if not out_dir.is_dir():
            raise UserError(f"cannot write the {self.what} to {out_dir}: it is a file")
        if any(out_dir.iterdir()) and not self.is_ours(out_dir):
            raise UserError(f"refusing to overwrite {out_dir}: it is not empty and not a veracity {self.what}")

    def corrupt(self, path: Path, problem: str) -> IndexError_:
        return IndexError_(" ".join(f"corrupt {self.what} {path}: {problem}; rebuild it with `{self.rebuild}`".split()))

    def read_manifest(self, path: Path) -> dict[str, Any]:
        """The manifest, checked for format and version (callers check their own fields)."""
        try:
            manifest = json.loads((path / self.manifest).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise self.corrupt(path, f"{self.manifest} is unreadable ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != self.format:
            raise IndexError_(f"{path} is not a veracity {self.what} ({self.manifest} is not its manifest)")
        version = manifest.get("format_version")
        if not isinstance(version, int) or version > self.version:
            raise IndexError_(
                f"{self.what} {path} has format version {version!r}; this veracity reads up to "
                f"{self.version}: rebuild it or upgrade veracity"
            )
        return manifest

    def read_rows(self, path: Path, name: str, parse: Callable[[Any], T], expected: int, noun: str) -> list[T]:
        """The JSON lines of `path/name`, each through `parse` (which raises ValueError, KeyError, TypeError or
        AttributeError on a bad row); exactly `expected` of them, as the manifest says, or a corruption error."""
        if not (path / name).is_file():
            raise self.corrupt(path, f"{name} is missing")
        rows: list[T] = []
        try:
            with (path / name).open(encoding="utf-8") as f:
                for lineno, line in enumerate(f, start=1):
                    try:
                        rows.append(parse(json.loads(line)))
                    except (ValueError, KeyError, TypeError, AttributeError):
                        raise self.corrupt(path, f"{name} line {lineno} is unreadable") from None
        except (OSError, UnicodeDecodeError) as e:
            raise self.corrupt(path, f"{name} is unreadable ({e})") from None
        if len(rows) != expected:
            raise self.corrupt(path, f"{self.manifest} says {expected} {noun} but {name} has {len(rows)}")
        return rows

    def write(self, out_dir: Path, fill: Callable[[Path], None], manifest: dict[str, Any]) -> None:
        """Write a folder atomically: `fill` writes the files into a temporary folder, then the manifest
        goes in and the folder replaces `out_dir` (a crash leaves the old folder, never half a new one)."""
        self.check_can_write(out_dir)
        tmp = out_dir.with_name(f".{out_dir.name}.building-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir(parents=True)
            fill(tmp)
            (tmp / self.manifest).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            if out_dir.exists():
                shutil.rmtree(out_dir)
            tmp.rename(out_dir)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise UserError(f"cannot write the {self.what} to {out_dir}: {e.strerror or e}") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
