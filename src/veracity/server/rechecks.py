"""Re-checking a stored run from the server: the run page's Re-check button (pages.py) and
POST /api/checks/{id}/recheck (api.py) share `recheck_run`. The recheck (evidence/recheck.py) reads every source
again with the server's settings (its address guard, timeouts and verifier) and is stored as a new, finished run
whose options name the run it rechecks; the old run's page lists it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UserError
from ..evidence.recheck import Recheck, nothing_to_recheck, recheck
from ..evidence.runs import run_from_store, store_recheck
from .errors import ApiError

if TYPE_CHECKING:
    from .state import ServerState


def recheck_run(s: "ServerState", run_id: str, client: str) -> tuple[str, Recheck]:
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
