"""SQLite storage of runs and their steps.

One row per run (what was asked, its status, the verdict and usage once finished) and one row per
trace step, in the order the run's tracer emitted them: the steps table *is* the run's trace, written
by the tracer listener as each step happens, never rebuilt from anything else.

Runs survive a restart. A run that was queued or running when the server stopped cannot resume (the
model state is gone), so at startup `interrupt_unfinished` marks it `interrupted`, keeping the steps
it got through; it is never silently lost.

Thread-safe: one connection per thread, WAL journal, autocommit.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from .safe import mend, mend_text

QUEUED, RUNNING, DONE, FAILED, INTERRUPTED = "queued", "running", "done", "failed", "interrupted"
STATUSES = (QUEUED, RUNNING, DONE, FAILED, INTERRUPTED)
UNFINISHED = (QUEUED, RUNNING)
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    status TEXT NOT NULL,
    claim TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    qa TEXT,
    model TEXT NOT NULL,
    options TEXT NOT NULL DEFAULT '{}',   -- what else the request carried: answer, date, images
    label TEXT,
    confidence REAL,
    result TEXT,                          -- CheckResult.to_dict() without the trace (that is the steps table)
    seconds REAL,
    error TEXT
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created DESC);
CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    stage TEXT NOT NULL,
    data TEXT NOT NULL,                   -- Step.to_dict(), exactly as the tracer emitted it
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS run_images (   -- which run uses which uploaded image file (one file, many runs)
    run_id TEXT NOT NULL,
    file TEXT NOT NULL,                   -- its name in the server's images folder: <sha256[:16]>.<ext>
    PRIMARY KEY (run_id, file)
);
CREATE INDEX IF NOT EXISTS run_images_file ON run_images (file);
"""

_RUN_COLUMNS = ("id", "created", "started", "finished", "status", "claim", "pipeline", "qa", "model", "options",
                "label", "confidence", "result", "seconds", "error")

#: a run's verdict is uncertain, read from its stored result where a list leaves the result out
_UNCERTAIN = (", CASE WHEN json_valid(result) THEN json_extract(result, '$.verdict.uncertain') ELSE 0 END "
              "AS uncertain")


def _json_or(text: str | None, default: Any) -> Any:
    """Stored JSON, or `default` when the column is empty or not JSON (a damaged database still reads)."""
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


class RunStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        c = self._conn()
        c.execute("PRAGMA journal_mode=WAL")
        version = c.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            from ..errors import UserError

            raise UserError(f"the run database {self.path} was written by a newer veracity (schema {version}); "
                            "use a newer veracity or another --db")
        c.executescript(_SCHEMA)
        c.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            # text that is not valid UTF-8 (written by something else) is read with U+FFFD, never an error
            conn.text_factory = lambda b: b.decode("utf-8", "replace")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    # -- writing ----------------------------------------------------------------------------------

    def create(self, run_id: str, *, claim: str, pipeline: str, qa: str | None, model: str,
               options: dict[str, Any] | None = None, image_files: list[str] | None = None) -> None:
        c = self._conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            c.execute("INSERT INTO runs (id, created, status, claim, pipeline, qa, model, options) "
                      "VALUES (?,?,?,?,?,?,?,?)",
                      (run_id, time.time(), QUEUED, mend_text(claim), pipeline, qa, model,
                       json.dumps(mend(options or {}))))
            c.executemany("INSERT OR IGNORE INTO run_images (run_id, file) VALUES (?,?)",
                          [(run_id, f) for f in image_files or []])
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def mark_running(self, run_id: str) -> None:
        self._conn().execute("UPDATE runs SET status=?, started=? WHERE id=?", (RUNNING, time.time(), run_id))

    def add_step(self, run_id: str, seq: int, step: dict[str, Any]) -> None:
        self._conn().execute("INSERT INTO steps (run_id, seq, stage, data) VALUES (?,?,?,?)",
                             (run_id, seq, mend_text(str(step.get("stage", ""))),
                              json.dumps(mend(step), ensure_ascii=False, default=str)))

    def finish(self, run_id: str, result: dict[str, Any]) -> None:
        """Store a finished run: `result` is CheckResult.to_dict() (its trace is not stored twice). The run's
        `model` stays the name the client chose; the backend's own model id is in the result."""
        result = mend({k: v for k, v in result.items() if k != "trace"})
        v = result.get("verdict") or {}
        self._conn().execute(
            "UPDATE runs SET status=?, finished=?, label=?, confidence=?, result=?, seconds=? WHERE id=?",
            (DONE, time.time(), v.get("label"), v.get("confidence"),
             json.dumps(result, ensure_ascii=False, default=str), result.get("seconds"), run_id))

    def fail(self, run_id: str, error: str, status: str = FAILED) -> None:
        self._conn().execute("UPDATE runs SET status=?, finished=?, error=? WHERE id=?",
                             (status, time.time(), mend_text(error), run_id))

    def interrupt_unfinished(self, reason: str = "the server stopped before this run finished") -> list[str]:
        """Mark every queued or running run as interrupted (at startup: they belong to a dead process)."""
        c = self._conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            ids = [r[0] for r in c.execute("SELECT id FROM runs WHERE status IN (?,?)", UNFINISHED)]
            c.execute("UPDATE runs SET status=?, finished=?, error=? WHERE status IN (?,?)",
                      (INTERRUPTED, time.time(), reason, *UNFINISHED))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return ids

    def delete(self, run_id: str) -> bool:
        c = self._conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            n = c.execute("DELETE FROM runs WHERE id=?", (run_id,)).rowcount
            c.execute("DELETE FROM steps WHERE run_id=?", (run_id,))
            c.execute("DELETE FROM run_images WHERE run_id=?", (run_id,))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return n > 0

    # -- reading ----------------------------------------------------------------------------------

    @staticmethod
    def _row(row: sqlite3.Row) -> dict[str, Any]:
        """A run as stored, mended (`safe.mend`): nothing read back can make a response fail. `uncertain`: whether
        its verdict is uncertain (from its result; a list reads it with `_UNCERTAIN`), so that a history shows it."""
        d = {k: row[k] for k in _RUN_COLUMNS if k in row.keys()}
        if "uncertain" in row.keys():
            d["uncertain"] = bool(row["uncertain"])
        d["options"] = _json_or(d.get("options"), {})
        if not isinstance(d["options"], dict):
            d["options"] = {}
        if "result" in d:
            d["result"] = _json_or(d["result"], None)
            if not isinstance(d["result"], dict):
                d["result"] = None
            verdict = (d["result"] or {}).get("verdict")
            d["uncertain"] = bool(verdict.get("uncertain")) if isinstance(verdict, dict) else False
        return mend(d)

    def get(self, run_id: str) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        return self._row(row) if row else None

    def steps(self, run_id: str, after: int = -1) -> list[tuple[int, dict[str, Any]]]:
        rows = self._conn().execute("SELECT seq, data FROM steps WHERE run_id=? AND seq>? ORDER BY seq",
                                    (run_id, after))
        out = []
        for seq, data in rows:
            step = _json_or(data, None)
            if not isinstance(step, dict):  # a damaged row: shown as what it is, never a failed read
                step = {"stage": "unreadable", "data": str(data)[:200]}
            out.append((seq, mend(step)))
        return out

    def list(self, limit: int = 20, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """A page of runs, newest first (without their results), and the total count."""
        c = self._conn()
        cols = ", ".join(k for k in _RUN_COLUMNS if k != "result") + _UNCERTAIN
        rows = c.execute(f"SELECT {cols} FROM runs ORDER BY created DESC, rowid DESC LIMIT ? OFFSET ?",
                         (limit, offset)).fetchall()
        total = c.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return [self._row(r) for r in rows], total

    def rechecks_of(self, run_id: str) -> list[dict[str, Any]]:
        """The rechecks of a run (`veracity recheck`, the page's Re-check button), newest first, without results."""
        cols = ", ".join(k for k in _RUN_COLUMNS if k != "result") + _UNCERTAIN
        rows = self._conn().execute(
            f"SELECT {cols} FROM runs WHERE pipeline='recheck' AND json_valid(options) "
            "AND json_extract(options, '$.rechecks')=? ORDER BY created DESC, rowid DESC", (run_id,)).fetchall()
        return [self._row(r) for r in rows]

    def image_files(self, run_id: str) -> list[str]:
        """The uploaded image files a run uses."""
        return [r[0] for r in self._conn().execute("SELECT file FROM run_images WHERE run_id=?", (run_id,))]

    def image_in_use(self, file: str) -> bool:
        return self._conn().execute("SELECT 1 FROM run_images WHERE file=? LIMIT 1", (file,)).fetchone() is not None

    def all_image_files(self) -> set[str]:
        return {r[0] for r in self._conn().execute("SELECT DISTINCT file FROM run_images")}

    def count_by_status(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self._conn().execute("SELECT status, COUNT(*) FROM runs GROUP BY status")}
