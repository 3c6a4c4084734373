"""A persistent response cache in SQLite, shared by every backend.

Keys are SHA-256 digests of a canonical JSON encoding of the whole request (backend model id,
call kind, messages, sampling parameters, options), so they are stable across processes and
Python versions (never Python's `hash()`). Safe to use from several threads and processes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any


def stable_key(payload: dict[str, Any]) -> str:
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as c:
            c.execute("PRAGMA journal_mode=WAL")
            c.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, kind TEXT, "
                "model TEXT, value TEXT NOT NULL, created REAL DEFAULT (unixepoch('subsec')))"
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._local.conn = conn
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT value FROM responses WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any], *, kind: str = "", model: str = "") -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO responses (key, kind, model, value) VALUES (?,?,?,?)",
            (key, kind, model, json.dumps(value, ensure_ascii=False)),
        )

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def clear(self) -> None:
        self._conn().execute("DELETE FROM responses")
