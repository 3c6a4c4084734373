"""The run store's schema, as numbered migrations that upgrade any older store in place, SQLite or PostgreSQL.

Each migration runs in one transaction with the version it brings, under a database-wide lock, so that several
workers starting at once migrate once. A store newer than this veracity is refused (its columns may mean more than
this code knows). The version lives in `veracity_schema`; stores written before it existed (SQLite only) kept
their version in `PRAGMA user_version` (1).

    veracity db migrate [--db URL]      what `veracity serve` also does when it opens a store
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from ..errors import UserError
from .connection import Database

LOCK_KEY = 5_914_722_001  # the advisory lock migrations hold (PostgreSQL)
BEFORE_LEASES = "before-leases"  # the worker of runs left unfinished by a store older than leases


def _types(db: Database, sql: str) -> str:
    return sql.replace("{REAL}", "DOUBLE PRECISION" if db.is_postgres else "REAL")


def _v1(db: Database) -> None:
    """The first schema: runs, their steps (the trace, in order) and which uploaded image files each run uses."""
    for statement in (
        """
        CREATE TABLE IF NOT EXISTS runs (
            id TEXT PRIMARY KEY,
            created {REAL} NOT NULL,
            started {REAL},
            finished {REAL},
            status TEXT NOT NULL,
            claim TEXT NOT NULL,
            pipeline TEXT NOT NULL,
            qa TEXT,
            model TEXT NOT NULL,
            options TEXT NOT NULL DEFAULT '{}',
            label TEXT,
            confidence {REAL},
            result TEXT,
            seconds {REAL},
            error TEXT)""",
        "CREATE INDEX IF NOT EXISTS runs_created ON runs (created DESC)",
        """CREATE TABLE IF NOT EXISTS steps (
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            stage TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, seq))""",
        """CREATE TABLE IF NOT EXISTS run_images (
            run_id TEXT NOT NULL,
            file TEXT NOT NULL,
            PRIMARY KEY (run_id, file))""",
        "CREATE INDEX IF NOT EXISTS run_images_file ON run_images (file)",
    ):
        db.execute(_types(db, statement))


def _json(text: str | None) -> dict:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _v2(db: Database) -> None:
    """The shared queue: what a worker needs to run a run it did not accept (`request`), who runs it and until
    when (`worker`, `lease_until`, renewed by its heartbeat); `uncertain` and `rechecks` as columns (lists read
    them without parsing JSON in SQL); rate-limit buckets shared by workers."""
    for column, kind in (
        ("request", "TEXT"),
        ("worker", "TEXT"),
        ("lease_until", "{REAL}"),
        ("uncertain", "INTEGER NOT NULL DEFAULT 0"),
        ("rechecks", "TEXT"),
    ):
        db.execute(_types(db, f"ALTER TABLE runs ADD COLUMN {column} {kind}"))
    db.execute("CREATE INDEX IF NOT EXISTS runs_queue ON runs (status, created)")
    db.execute("CREATE INDEX IF NOT EXISTS runs_rechecks ON runs (rechecks)")
    db.execute(
        _types(
            db,
            "CREATE TABLE IF NOT EXISTS rate_buckets (client TEXT PRIMARY KEY, tokens {REAL} NOT NULL, "
            "updated {REAL} NOT NULL)",
        )
    )
    for row in db.rows("SELECT id, options, result FROM runs WHERE pipeline = 'recheck' OR result IS NOT NULL"):
        verdict = _json(row["result"]).get("verdict")
        uncertain = 1 if isinstance(verdict, dict) and verdict.get("uncertain") else 0
        rechecks = _json(row["options"]).get("rechecks")
        db.execute(
            "UPDATE runs SET uncertain = ?, rechecks = ? WHERE id = ?",
            (uncertain, rechecks if isinstance(rechecks, str) else None, row["id"]),
        )
    # runs a store older than leases left unfinished belong to a process that is gone: the next worker to look
    # marks them interrupted (`RunStore.reap`), keeping their steps
    db.execute("UPDATE runs SET worker = ?, lease_until = 0 WHERE status IN ('queued', 'running')", (BEFORE_LEASES,))


MIGRATIONS: list[tuple[int, str, Callable[[Database], None]]] = [
    (1, "runs, steps and run images", _v1),
    (2, "a shared queue with leases; uncertain and rechecks as columns; shared rate limits", _v2),
]
LATEST = MIGRATIONS[-1][0]


def current_version(db: Database) -> int:
    if db.is_postgres:
        exists = db.value("SELECT to_regclass('veracity_schema') IS NOT NULL")
    else:
        exists = db.value("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'veracity_schema'")
    if exists:
        return int(db.value("SELECT MAX(version) FROM veracity_schema", default=0) or 0)
    if not db.is_postgres:  # a store from before veracity_schema: its version was PRAGMA user_version
        return int(db.value("PRAGMA user_version", default=0) or 0)
    return 0


def migrate(db: Database) -> tuple[int, int]:
    """Bring the store to the latest schema; (version before, version after). A UserError for a newer store."""
    before = current_version(db)
    if before > LATEST:
        raise UserError(
            f"the run database {db.shown()} was written by a newer veracity (schema {before}, this one "
            f"knows up to {LATEST}): use a newer veracity or another --db"
        )
    if before == LATEST:
        return before, before
    with db.transaction():
        db.lock(LOCK_KEY)
        db.execute(
            _types(
                db,
                "CREATE TABLE IF NOT EXISTS veracity_schema (version INTEGER PRIMARY KEY, "
                "applied {REAL} NOT NULL, description TEXT NOT NULL)",
            )
        )
    version = before
    for number, description, step in MIGRATIONS:
        with db.transaction():
            db.lock(LOCK_KEY)
            version = current_version(db)  # another worker may have migrated meanwhile
            if number <= version:
                continue
            step(db)
            db.execute(
                "INSERT INTO veracity_schema (version, applied, description) VALUES (?, ?, ?)",
                (number, time.time(), description),
            )
            if not db.is_postgres:
                db.execute(f"PRAGMA user_version = {number}")
            version = number
    return before, version
