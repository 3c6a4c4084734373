"""What is known of a run database at a glance, for `veracity doctor` and `veracity db status`."""

from __future__ import annotations

from typing import Any


def describe(db_spec: str) -> dict[str, Any]:
    """What `veracity doctor` and `veracity db status` say of a run database: where it is, whether it can be
    reached, the server's version and pgvector (PostgreSQL), the schema version, runs by status. Never raises."""
    from ..errors import UserError
    from .connection import Database
    from .migrations import LATEST, current_version
    from .url import redact

    out: dict[str, Any] = {"database": redact(db_spec)}
    try:
        db = Database(db_spec)
    except UserError as e:
        return {**out, "reachable": False, "error": str(e)}
    try:
        out["kind"] = db.kind
        out["reachable"] = True
        if db.is_postgres:
            out["server"] = db.value("SHOW server_version")
            vector = db.value("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            available = db.value("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
            out["pgvector"] = (
                f"{vector} (installed)"
                if vector
                else f"{available} available, not installed (CREATE EXTENSION vector)"
                if available
                else "not available (evidence indexes with --dense need it)"
            )
        version = current_version(db)
        out["schema"] = (
            f"{version} (current)"
            if version == LATEST
            else f"{version}: older than {LATEST}, run `veracity db migrate`"
            if version < LATEST
            else f"{version}: newer than this veracity ({LATEST})"
        )
        if version:
            out["runs"] = {
                r["status"]: int(r["n"]) for r in db.rows("SELECT status, COUNT(*) AS n FROM runs GROUP BY status")
            } or "none"
    except db.errors() as e:
        out["error"] = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    finally:
        db.close()
    return out
