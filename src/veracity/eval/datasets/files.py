"""Reading a dataset's files: its text (size-limited), JSON (a list of objects), and the one-line UserErrors of a
malformed record or an unknown setting, shared by every dataset's loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from veracity.errors import UserError

SHARED_HINT = "the benchmark data lives in ../shared/benchmarks (next to the project; see its README.md)"


def check_setting(name: str, setting: str | None, allowed: tuple[str, ...]) -> str:
    """`setting`, or the default (the first allowed), after checking that the dataset has it."""
    if setting is None:
        return allowed[0]
    if setting not in allowed:
        raise UserError(f"dataset {name} has no setting {setting!r}; choose one of: {', '.join(allowed)}")
    return setting


def read_text(path: Path) -> str:
    """A dataset file's text, read up to MAX_DATASET_BYTES (a one-line UserError beyond, or when unreadable)."""
    from veracity.reading import MAX_DATASET_BYTES, read_limited

    try:
        return read_limited(path, MAX_DATASET_BYTES, "dataset file").decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"cannot read {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise UserError(f"{path} is not valid JSON (line {e.lineno}: {e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {path}: {e}") from None


def json_list(path: Path) -> list[dict[str, Any]]:
    data = read_json(path)
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise UserError(f"{path} must hold a JSON list of objects")
    if not data:
        raise UserError(f"{path} holds no items")
    return data


def required(record: dict[str, Any], key: str, where: str) -> Any:
    if key not in record:
        raise UserError(f"{where} has no {key!r} field")
    return record[key]


def map_label(raw: Any, mapping: dict[str, str], where: str) -> str:
    label = mapping.get(str(raw))
    if label is None:
        raise UserError(f"{where}: unknown label {raw!r} (expected one of: {', '.join(mapping)})")
    return label
