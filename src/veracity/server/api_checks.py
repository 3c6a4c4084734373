"""The /api routes that start and manage runs: start a check (`POST /api/checks`) or a text check (`POST /api/texts`),
re-check a run's evidence, list, read and delete runs, serve a run's images, and list the pipelines."""

from __future__ import annotations

from typing import Any

from fastapi import Query, Request, Response
from fastapi.responses import FileResponse

from . import store as st
from .api_routing import api_router
from .api_schemas import (
    CHECK_ERRORS,
    ERRORS,
    TEXT_ERRORS,
    CheckAccepted,
    ErrorBody,
    HistoryPage,
    RecheckOut,
    RunDetail,
    TextAccepted,
    detail,
    get_run,
    links,
    summary,
)
from .checks import MAX_OFFSET, CheckIn, images_of, start_check, stored_images
from .errors import ApiError
from .rechecks import recheck_run
from .state import state
from .texts import TextIn, start_text

router = api_router()


@router.post("/checks", status_code=202, response_model=CheckAccepted, responses=CHECK_ERRORS, summary="Start a check")
def create_check(body: CheckIn, request: Request, response: Response) -> dict[str, Any]:
    """Queue a check of `claim` and return its id at once (202). Follow it with GET .../events (SSE) or
    poll GET /api/checks/{id}.

    Images (pipelines with `accepts_images`, e.g. defame) come inline:
    `"images": [{"data": "<base64>", "filename": "photo.jpg"}]` (or `"data": "data:image/jpeg;base64,..."`).
    Each is checked before the check is queued: 400 `image_empty`, `image_encoding` (not base64) or
    `image_broken` (does not decode: truncated or corrupt), 413 `image_too_large`, 415 `image_type` (not a
    JPEG, PNG, GIF or WebP, or not the declared `media_type`), 400 `too_many_images`, 400 `images_not_accepted`
    (the pipeline does not look at images). `date` (YYYY-MM-DD) is checked too: 400 `invalid_date`.
    A run's images are served at GET /api/checks/{id}/images/{n} and deleted with the run (unless another
    run uses the same image)."""
    s = state(request)
    run_id, position = start_check(s, body, request.client.host if request.client else "unknown")
    response.headers["Location"] = f"/api/checks/{run_id}"
    run = s.store.get(run_id) or {"id": run_id}
    return {
        "id": run_id,
        "status": st.QUEUED,
        "queue_position": position,
        "date": (run.get("options") or {}).get("date"),
        "images": images_of(run),
        "links": links(run_id),
    }


@router.post(
    "/texts", status_code=202, response_model=TextAccepted, responses=TEXT_ERRORS, summary="Start a text check"
)
def create_text(body: TextIn, request: Request, response: Response) -> dict[str, Any]:
    """Queue a check of a text: its claims are extracted (each with the character spans of the text it came
    from), each checkable one is checked with a claim pipeline, and the text gets a factuality score (supported
    / checked claims). Send the text as `text`, or a file (.txt, .md, .html, .pdf) as `file`:
    `{"data": "<base64>", "filename": "article.pdf"}`. Answers 202 with the run's id at once.

    The run is a run like any other: GET /api/checks/{id}/events streams it (a `text_extraction` step with the
    text and every claim's spans, then one `text_claim` step per claim as it is checked, with its outcome,
    label, confidence and evidence, then a `text_summary`), GET /api/checks/{id} has it (its `text` field),
    and its reports are at .../report.md, .../report.html (the text with each claim coloured by its verdict)
    and .../report.json. A text without a checkable claim (questions, greetings, opinions) is a finished run
    that says so (label "No checkable claim"), not an error.

    Errors: 400 `text_empty`, `text_and_file`, `invalid_text` (not UTF-8), `file_encoding` (not base64),
    `file_unreadable` (a PDF without a text layer, HTML without visible text), `max_claims_too_high`,
    `input_not_supported` (not a claim pipeline) and the pipeline and model errors of POST /api/checks;
    413 `text_too_long` / `file_too_large` (the limit, `texts.max_bytes` of GET /api/pipelines, is stated);
    415 `text_binary`."""
    s = state(request)
    run_id, position, source = start_text(s, body, request.client.host if request.client else "unknown")
    response.headers["Location"] = f"/api/checks/{run_id}"
    run = s.store.get(run_id) or {"id": run_id, "claim": "", "options": {}}
    options = run.get("options") or {}
    return {
        "id": run_id,
        "status": st.QUEUED,
        "queue_position": position,
        "title": run["claim"],
        "characters": len(source.text),
        "source_kind": source.kind,
        "pipeline": options.get("pipeline", ""),
        "extract": options.get("extract", ""),
        "max_claims": options.get("max_claims", 0),
        "links": links(run_id),
    }


@router.post(
    "/checks/{run_id}/recheck",
    status_code=201,
    response_model=RecheckOut,
    responses={**ERRORS, 409: {"model": ErrorBody}},
    summary="Re-check a run's evidence",
)
def recheck_check(run_id: str, request: Request, response: Response) -> dict[str, Any]:
    """Read each evidence source of a finished run again (pages through the guarded scraper, index documents in
    the index they came from), say per item whether it is unchanged, changed (with a short diff of the quote),
    gone, unreachable, refused by the address guard or not re-checkable (the model's memory, a record without a
    content hash), and take the decision again with the trained verifier. The recheck is stored as a new run
    (201, its id) that names the run it rechecks. 404 for no such run; 409 `not_recheckable` for an unfinished
    run or a recheck, 409 `nothing_to_recheck` for a run that read no evidence source (its verdict rests on the
    model's memory only), saying so."""
    s = state(request)
    new_id, result = recheck_run(s, run_id, request.client.host if request.client else "unknown")
    response.headers["Location"] = f"/api/checks/{new_id}"
    d = result.to_dict()
    return {
        "id": new_id,
        "rechecks": run_id,
        **{
            k: d[k]
            for k in (
                "headline",
                "summary",
                "changed",
                "incomplete",
                "holds",
                "exit_status",
                "counts",
                "items",
                "decisions",
            )
        },
        "links": links(new_id),
    }


@router.get("/checks", response_model=HistoryPage, responses=ERRORS, summary="List past runs, newest first")
def list_checks(
    request: Request,
    limit: int = Query(20, ge=1, le=100, description="runs per page (1-100)"),
    offset: int = Query(0, ge=0, le=MAX_OFFSET, description="runs to skip"),
) -> dict[str, Any]:
    runs, total = state(request).store.list(limit, offset)
    return {
        "items": [summary(r) for r in runs],
        "total": total,
        "limit": limit,
        "offset": offset,
        "next_offset": offset + limit if offset + limit < total else None,
    }


@router.get("/checks/{run_id}", response_model=RunDetail, responses=ERRORS, summary="One run with its steps")
def read_check(
    run_id: str, request: Request, calls: bool = Query(True, description="include the model_call steps")
) -> dict[str, Any]:
    s = state(request)
    run = get_run(s, run_id)
    steps = [d for _, d in s.store.steps(run_id) if calls or d.get("stage") != "model_call"]
    return detail(s, run, steps)


@router.delete("/checks/{run_id}", status_code=204, responses=ERRORS, summary="Delete a run")
def delete_check(run_id: str, request: Request) -> Response:
    """Delete a run, its steps and its images (those no other run uses). A queued run never starts; a running
    one stops at its next step."""
    s = state(request)
    with s.uploads.lock:
        files = s.store.image_files(run_id)
        if not s.manager.delete(run_id):
            raise ApiError(404, "not_found", f"no run {run_id!r}: it never existed or was already deleted")
        s.uploads.release(files)
    return Response(status_code=204)


@router.get(
    "/checks/{run_id}/images/{index}",
    responses=ERRORS,
    response_class=FileResponse,
    summary="One of the claim's images, as uploaded",
)
def check_image_file(run_id: str, index: int, request: Request) -> Response:
    s = state(request)
    run = get_run(s, run_id)
    infos = stored_images(run)
    if not 1 <= index <= len(infos):
        raise ApiError(404, "not_found", f"run {run_id} has {len(infos)} image(s); there is no image {index}")
    info = infos[index - 1]
    path = s.uploads.path(info.get("file") if isinstance(info.get("file"), str) else "")
    if path is None or not path.is_file():
        raise ApiError(
            404,
            "image_missing",
            f"image {index} of run {run_id} is no longer on the server (its file "
            "was removed from the server's images folder)",
        )
    name = info.get("filename") or f"image-{index}.{path.suffix.lstrip('.')}"
    return FileResponse(
        path,
        media_type=info.get("media_type"),
        content_disposition_type="inline",
        filename=name,
        headers={
            "Cache-Control": "private, max-age=86400",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
        },
    )


@router.get("/pipelines", summary="Pipelines, QA modules and models a check can use")
def pipelines(request: Request) -> dict[str, Any]:
    return state(request).catalog.to_dict()
