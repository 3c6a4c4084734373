"""What every route under /api shares: the API's authentication, and a JSON body read as strict JSON first."""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute

from .safe import strict_json
from .state import state


async def require_auth(request: Request) -> None:  # async: no threadpool hop for a comparison
    state(request).auth.check_api(request.headers, request.cookies)


def is_json(content_type: str | None) -> bool:
    """Whether FastAPI reads a body of this type as JSON (application/json or application/*+json)."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


class StrictJsonRoute(APIRoute):
    """A route whose JSON body is read as strict JSON first (`safe.strict_json`): NaN, Infinity, numbers out of
    range and lone surrogates are refused with a 400 before any validation could echo them back or a run
    could store them. The parsed body is left where FastAPI looks for it, so it is read once."""

    def get_route_handler(self):  # noqa: ANN201 - Starlette's handler type
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            if request.method in ("POST", "PUT", "PATCH") and is_json(request.headers.get("content-type")):
                body = await request.body()
                if body:
                    try:
                        request._json = strict_json(body)  # what Request.json() returns from now on
                    except json.JSONDecodeError:
                        pass  # not JSON at all: FastAPI answers it (422 json_invalid) as before
            return await handler(request)

        return strict_handler


def api_router() -> APIRouter:
    """A router for routes under /api: each needs the API's authentication and reads its JSON body strictly."""
    return APIRouter(prefix="/api", dependencies=[Depends(require_auth)], route_class=StrictJsonRoute)
