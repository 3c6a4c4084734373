"""The HTTP API under /api: start checks, follow them live (SSE), read, page, delete and download them.

Its routes, by area: api_checks.py (start a check or a text check, re-check one, list, read and delete runs, a run's
images, the pipelines), api_events.py (follow a run: Server-Sent Events), api_reports.py (download a report) and
api_factchecks.py (the published fact-checks of a claim) and api_grounding.py (an answer against the documents given
with it).
What they answer is in api_schemas.py; api_routing.py has what every /api route shares (authentication, strict
JSON bodies). The health check, outside the authentication, is here.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from .api_checks import router as checks_router
from .api_events import router as events_router
from .api_factchecks import router as factchecks_router
from .api_grounding import router as grounding_router
from .api_reports import router as reports_router
from .state import state

router = APIRouter()
router.include_router(checks_router)
router.include_router(reports_router)
router.include_router(events_router)
router.include_router(factchecks_router)
router.include_router(grounding_router)

health = APIRouter()


@health.get("/api/health", summary="Liveness, and how many checks run and wait")
def healthcheck(request: Request) -> dict[str, Any]:
    s = state(request)
    return {"status": "ok", **s.manager.counts(), "max_concurrent": s.settings.max_concurrent}
