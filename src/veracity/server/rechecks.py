"""Rechecks and the run store. Where a recheck's run comes from and where the recheck goes: the run store (the
server's database, shared by `veracity serve`, `mcp` and `proxy`) or a report JSON (`veracity check --json`, a run's
report.json); the recheck is stored as a new run whose options name the run it rechecks (`rechecks`), so that the old
run links to it. The run page's Re-check button (pages.py) and POST /api/checks/{id}/recheck (api_checks.py) share
`recheck_run`: the recheck (evidence/recheck.py) reads every source again with the server's settings (its address
guard, timeouts and verifier) and is stored as a new, finished run; the old run's page lists it."""

from __future__ import annotations

import json
import secrets
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..evidence.recheck import recheck
from ..evidence.result import Recheck
from ..evidence.stored import StoredRun, nothing_to_recheck
from ..types import Verdict
from .errors import ApiError

if TYPE_CHECKING:
    from .state import ServerState
    from .store import RunStore

RECHECK = "recheck"  # the pipeline name a stored recheck has
MAX_REPORT_BYTES = 200_000_000


def open_run_store(db: str | Path) -> RunStore:
    """The run store `db` names (the SQLite file of `veracity serve`, or a database URL), or a one-line UserError:
    no such file, a path no file can have, a file that is not a run store (not an SQLite database, or a damaged
    one), or a database that cannot be reached."""
    from .settings import is_server_url
    from .store import RunStore

    if is_server_url(str(db)):
        return RunStore(str(db))
    try:
        found = Path(db).expanduser().is_file()
    except (OSError, ValueError):
        found = False
    if not found:
        raise UserError(
            f"no run store at {str(db)[:200]}: give --db FILE (the SQLite file of `veracity serve`), a "
            "database URL, or a report JSON file"
        )
    try:
        return RunStore(db)
    except (sqlite3.DatabaseError, OSError) as e:
        raise UserError(f"{db} is not a run store ({e}): give --db the SQLite file of `veracity serve`") from None


def run_from_store(store: RunStore, run_id: str) -> StoredRun:
    """A finished run of the store, or a UserError saying why it cannot be rechecked (no such run; one that has
    not finished or is itself a recheck; a store that cannot be read)."""
    try:
        return _run_from_store(store, run_id)
    except store.db.errors() as e:
        raise UserError(f"the run store {store.path} cannot be read ({e})") from None


def _run_from_store(store: RunStore, run_id: str) -> StoredRun:
    from .store import DONE

    run = store.get(run_id)
    if run is None:
        shown = run_id if len(run_id) <= 80 else run_id[:80] + "…"
        raise UserError(
            f"no run {shown!r} in {store.path} (give a run id from `veracity serve`'s history, or a report JSON file)"
        )
    if run["pipeline"] == RECHECK:
        rechecks = (run.get("options") or {}).get("rechecks")
        raise UserError(f"run {run_id} is itself a recheck" + (f": recheck run {rechecks} again" if rechecks else ""))
    if run["status"] != DONE:
        raise UserError(f"run {run_id} has not finished ({run['status']}): there is no verdict to re-check")
    result = run.get("result") or {}
    claim = result.get("claim") if isinstance(result.get("claim"), dict) else {}
    return StoredRun(
        claim=run["claim"],
        pipeline=run["pipeline"],
        model=run["model"],
        verdict=result.get("verdict") if isinstance(result.get("verdict"), dict) else {},
        steps=[d for _, d in store.steps(run_id)],
        id=run_id,
        origin=f"run {run_id}",
        date=claim.get("date") or (run.get("options") or {}).get("date"),
    )


def run_from_report(path: str | Path) -> StoredRun:
    """A run from its report JSON (`veracity check --json`, or report.json from the server), or a UserError."""
    from ..reading import read_limited

    data = read_limited(path, MAX_REPORT_BYTES, "the report")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        raise UserError(
            f"{path} is not a JSON report (write one with `veracity check --json` or download a run's report.json)"
        ) from None
    steps = doc.get("trace") if isinstance(doc, dict) else None
    if not isinstance(steps, list) or not isinstance(doc.get("verdict"), dict):
        raise UserError(
            f"{path} is not a veracity report: it has no verdict and trace (write one with `veracity check --json`)"
        )
    claim = doc.get("claim")
    text = claim.get("text") if isinstance(claim, dict) else claim
    return StoredRun(
        claim=str(text or ""),
        pipeline=str(doc.get("pipeline") or ""),
        model=str(doc.get("model") or ""),
        verdict=doc["verdict"],
        steps=steps,
        id=None,
        origin=str(path),
        date=claim.get("date") if isinstance(claim, dict) else None,
    )


def store_recheck(store: RunStore, result: Recheck) -> str:
    """Store the recheck as a finished run linked to the run it rechecks; returns its id."""
    run = result.run
    run_id = secrets.token_hex(8)
    options: dict[str, Any] = {"rechecks": run.id} if run.id else {"rechecks_report": run.origin}
    store.create(run_id, claim=run.claim, pipeline=RECHECK, qa=None, model=run.model, options=options)
    store.mark_running(run_id)
    for seq, step in enumerate(result.steps):
        store.add_step(run_id, seq, step)
    verdict = Verdict(label=result.headline(), rationale=result.summary()).to_dict()
    store.finish(
        run_id,
        {
            "claim": {"text": run.claim, "id": None, "date": run.date, "images": []},
            "pipeline": RECHECK,
            "model": run.model,
            "verdict": verdict,
            "usage": {},
            "seconds": round(result.seconds, 3),
            "recheck": result.to_dict(),
        },
    )
    return run_id


def recheck_run(s: ServerState, run_id: str, client: str) -> tuple[str, Recheck]:
    """Re-check run `run_id` now and store it; (the new run's id, the recheck). 404 for no such run, 409 for one
    that cannot be rechecked (unfinished, or itself a recheck: `not_recheckable`) or that read no evidence source
    (only the model's memory: `nothing_to_recheck`, saying so); rate-limited like starting a check."""
    if s.store.get(run_id) is None:
        raise ApiError(404, "not_found", f"no run {run_id!r}: it never existed or was deleted")
    s.limiter.check(client)
    try:
        run = run_from_store(s.store, run_id)
    except UserError as e:
        raise ApiError(409, "not_recheckable", str(e)) from None
    why = nothing_to_recheck(run.steps)
    if why:
        raise ApiError(409, "nothing_to_recheck", why[0].upper() + why[1:])
    result = recheck(run, s.config)
    return store_recheck(s.store, result), result
