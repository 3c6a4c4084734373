"""Model states kept on disk, so that a new process starts with each prompt template's demonstrations evaluated.

The embedded backend keeps evaluated states in memory (embedded.PrefixStateCache) and restores the one sharing
the longest prefix with each prompt; a new process has none, so its first check evaluates every template's
demonstrations from scratch (about 1.4 s per template for SmolLM2-135M on 2 cores: most of a first `veracity
check`). This store keeps ONE state per prompt head (the first HEAD tokens name a template), written the first time
that template is evaluated and read when a later process meets the same head.

States are only valid for the same model file, llama.cpp build and context size: they live in a folder named by a
hash of those (`key_for`). Each file holds its tokens and the state with a SHA-256 of both, checked before
anything reaches native code: a damaged or foreign file is ignored and removed. The folder is capped
(MAX_BYTES, oldest files removed first); the response cache's `--no-cache` turns the store off too.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

HEAD = 48  # tokens that name a prompt template (its first demonstrations' words)
MAX_BYTES = 512 << 20
MAGIC = b"veracity model state 1\n"


def key_for(model_path: Path, n_ctx: int, runtime: str) -> str:
    """The folder name of the states of this model file (by its size and time), context size and llama.cpp build
    (`runtime`: its version and system info)."""
    st = model_path.stat()
    ident = json.dumps([str(model_path.resolve()), st.st_size, st.st_mtime_ns, n_ctx, runtime])
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


class StateStore:
    def __init__(self, folder: str | os.PathLike, key: str, *, max_bytes: int = MAX_BYTES) -> None:
        self.dir = Path(folder) / key
        self.max_bytes = max_bytes

    def _path(self, tokens: np.ndarray) -> Path | None:
        if len(tokens) < HEAD:
            return None
        return self.dir / f"{hashlib.sha256(tokens[:HEAD].astype(np.int32).tobytes()).hexdigest()[:32]}.state"

    def load(self, tokens: np.ndarray) -> tuple[np.ndarray, bytes] | None:
        """(the state's tokens, its data) for a prompt with this head, or None (none kept, or a damaged file)."""
        path = self._path(tokens)
        if path is None or not path.is_file():
            return None
        try:
            raw = path.read_bytes()
            if not raw.startswith(MAGIC):
                raise ValueError("not a state file")
            head_end = raw.index(b"\n", len(MAGIC))
            header = json.loads(raw[len(MAGIC) : head_end])
            body = raw[head_end + 1 :]
            n = int(header["tokens"]) * 4
            if len(body) != n + int(header["bytes"]) or hashlib.sha256(body).hexdigest() != header["sha256"]:
                raise ValueError("its contents do not match its checksum")
            state_tokens = np.frombuffer(body[:n], dtype=np.int32).copy()
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)  # damaged: never handed to native code, written again when next met
            return None
        os.utime(path)  # recently used: pruned last
        return state_tokens, body[n:]

    def save(self, tokens: np.ndarray, data: bytes) -> bool:
        """Keep this state for its head unless one is kept already; False when none was written."""
        path = self._path(tokens)
        if path is None or path.exists():
            return False
        body = np.asarray(tokens, dtype=np.int32).tobytes() + data
        header = json.dumps({"tokens": len(tokens), "bytes": len(data), "sha256": hashlib.sha256(body).hexdigest()})
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.dir, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + header.encode() + b"\n" + body)
            os.replace(tmp, path)
        except OSError:  # a full or read-only disk: the in-memory states still work
            return False
        self._prune()
        return True

    def _prune(self) -> None:
        """Oldest first, over every model's folder (those of a replaced model or build are never read again)."""
        files = []
        for p in self.dir.parent.glob("*/*.state"):
            try:
                st = p.stat()
            except OSError:  # another process pruned it just now
                continue
            files.append((st.st_mtime, st.st_size, p))
        files.sort()
        total = sum(size for _, size, _ in files)
        for _, size, p in files:
            if total <= self.max_bytes:
                break
            p.unlink(missing_ok=True)
            total -= size
