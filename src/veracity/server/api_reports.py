"""Downloading a finished run's report: `GET /api/checks/{id}/report.md`, `.html` or `.json`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from fastapi import Request, Response

from ..failures import short_error
from ..report.page import report_csp
from . import store as st
from .api_routing import api_router
from .api_schemas import ERRORS, ErrorBody, get_run
from .checks import image_url, images_of, stored_images
from .errors import ApiError
from .reports import StoredImage, result_of, to_html, to_json, to_markdown
from .state import state
from .texts import NAME as TEXT_CHECK
from .texts import text_report

if TYPE_CHECKING:
    from .state import ServerState

log = logging.getLogger("veracity.server")
router = api_router()


REPORT_TYPES = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8", "json": "application/json"}


def build_report(s: ServerState, request: Request, run: dict[str, Any], fmt: str) -> str:
    """A finished run's report in `fmt` (md, html or json)."""
    run_id = run["id"]
    if run["pipeline"] == TEXT_CHECK:
        return text_report(run, [d for _, d in s.store.steps(run_id)], fmt)
    result = result_of(run, [d for _, d in s.store.steps(run_id)])
    base = str(request.base_url).rstrip("/")
    # the stored images' paths are the server's: a download links them by URL (HTML embeds them)
    stored = {
        info["file"]: StoredImage(
            path, base + image_url(run_id, i), info.get("media_type") or "application/octet-stream"
        )
        for i, info in enumerate(stored_images(run), start=1)
        if isinstance(info.get("file"), str) and (path := s.uploads.path(info["file"])) is not None
    }
    if fmt == "md":
        return to_markdown(run, result, images=stored)
    if fmt == "html":
        return to_html(run, result, images=stored)
    return to_json(run, result, images=[{**im, "url": base + im["url"]} for im in images_of(run)])


REPORT_CSP = report_csp("data: https: http:") + "; frame-ancestors 'none'"  # framing: a header-only directive


@router.get(
    "/checks/{run_id}/report.{fmt}",
    responses={**ERRORS, 409: {"model": ErrorBody}},
    summary="Download the report (md, html or json)",
    response_class=Response,
)
def report(run_id: str, fmt: str, request: Request) -> Response:
    if fmt not in REPORT_TYPES:
        raise ApiError(404, "not_found", f"no report format {fmt!r}: use report.md, report.html or report.json")
    s = state(request)
    run = get_run(s, run_id)
    if run["status"] != st.DONE:
        if run["status"] in st.UNFINISHED:
            raise ApiError(
                409,
                "not_finished",
                f"run {run_id} is {run['status']}: its report exists once it is done "
                "(the `done` event of GET .../events)",
            )
        raise ApiError(
            409,
            "no_report",
            f"run {run_id} {run['status']} ({short_error(run['error'])}): it has no "
            "report; its steps are at GET /api/checks/{id}",
        )
    try:
        body = build_report(s, request, run, fmt)
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # a stored result that is not a result
        log.warning("run %s: no report from its stored result: %s: %s", run_id, type(e).__name__, e)
        raise ApiError(
            409,
            "report_unavailable",
            f"run {run_id}'s stored result is damaged, so it has no report; its steps are at GET /api/checks/{{id}}",
        ) from None
    headers = {
        "Content-Disposition": f'attachment; filename="veracity-{run_id}.{fmt}"',
        "X-Content-Type-Options": "nosniff",
    }
    if fmt == "html":  # the report is self-contained: no script, no fetch, images inline or from the web
        headers["Content-Security-Policy"] = REPORT_CSP
    return Response(body, media_type=REPORT_TYPES[fmt], headers=headers)
