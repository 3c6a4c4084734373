"""The HTTP API under /api: start checks, follow them live (SSE), read, page, delete and download them."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from ..report import report_csp
from ..verdict_words import words_of
from . import store as st
from .answers import leaf_summary
from .checks import MAX_OFFSET, CheckIn, image_url, images_of, start_check, stored_images
from ..failures import short_error
from .errors import ApiError
from .rechecks import recheck_run
from .reports import StoredImage, result_of, to_html, to_json, to_markdown
from .runs import final_event
from .safe import mend, strict_json
from .state import state
from .texts import NAME as TEXT_CHECK
from .texts import TextIn, start_text, text_report, text_summary
from .views import LiveView, iso

if TYPE_CHECKING:
    from .state import ServerState


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


log = logging.getLogger("veracity.server")
router = APIRouter(prefix="/api", dependencies=[Depends(require_auth)], route_class=StrictJsonRoute)


# -- schemas (they make the OpenAPI document) ----------------------------------------------------------

class ErrorBody(BaseModel):
    error: str = Field(description="a stable code, e.g. claim_empty, unknown_pipeline, rate_limited")
    detail: str = Field(description="what went wrong and what to change")


class Links(BaseModel):
    self: str
    events: str
    page: str
    report_md: str
    report_html: str
    report_json: str


class ImageOut(BaseModel):
    index: int = Field(description="1 for the first image; the pipeline calls it <image:1>")
    url: str = Field(description="the image itself, as uploaded")
    filename: str | None
    media_type: str
    bytes: int
    width: int
    height: int
    sha256: str


class CheckAccepted(BaseModel):
    id: str
    status: str
    queue_position: int = Field(description="0 when the check starts at once, else its place in the queue")
    date: str | None = Field(None, description="the claim's date, as the check will use it")
    images: list[ImageOut] = Field([], description="the claim's images as stored (identical ones once)")
    links: Links


class RunSummary(BaseModel):
    id: str
    status: Literal["queued", "running", "done", "failed", "interrupted"]
    claim: str
    date: str | None = Field(None, description="the claim's date, when given")
    image_count: int = Field(0, description="how many images the claim has")
    pipeline: str
    qa: str | None
    model: str
    shown_as: str | None = Field(None, description="the verdict as a reader should read it (the page's badge): the "
                                                   "label, or 'Uncertain, leaning Supported' for an uncertain one; "
                                                   "null until the run is done")
    uncertain: bool = Field(False, description="the verdict is uncertain: do not present its label as a finding")
    label: str | None
    confidence: float | None
    created_at: str
    finished_at: str | None
    seconds: float | None
    error: str | None
    links: Links


class RunDetail(RunSummary):
    answer: str | None = Field(None, description="answer-check: the answer checked (`claim` is its question)")
    leaf: dict[str, Any] | None = Field(None, description="answer-check: score, supported, checked and the "
                                                          "per-sentence results (from the steps)")
    text: dict[str, Any] | None = Field(None, description="text-check: the text, how its claims were extracted, "
                                                          "the summary (counts, factuality) and every claim with "
                                                          "its spans, outcome and evidence (from the steps)")
    images: list[ImageOut] = Field([], description="the claim's images, in the order given")
    started_at: str | None
    queue_position: int | None
    verdict: dict[str, Any] | None = Field(description="uncertain, shown_as (how it reads: 'Uncertain, leaning "
                                                       "Supported'), label, rationale, confidence, steps, "
                                                       "parse_failures, uncertain_reason, basis")
    usage: dict[str, Any] | None = Field(description="total and by_stage: calls, tokens, seconds, cost")
    steps: list[dict[str, Any]] = Field(description="the run's trace steps, in the order they happened")


class TextAccepted(BaseModel):
    id: str
    status: str
    queue_position: int = Field(description="0 when the check starts at once, else its place in the queue")
    title: str = Field(description="what the history calls it: the text's title, else its first words")
    characters: int = Field(description="the text's length, as it will be checked")
    source_kind: str = Field(description="text, html or pdf: how the text was read")
    pipeline: str = Field(description="the claim pipeline that checks each claim")
    extract: str = Field(description="how the claims are extracted: auto, rules or model")
    max_claims: int = Field(description="the most claims that will be checked")
    links: Links


class RecheckOut(BaseModel):
    id: str = Field(description="the recheck's own run (GET /api/checks/{id}; its page links the rechecked run)")
    rechecks: str = Field(description="the run it rechecks")
    headline: str = Field(description="e.g. Evidence unchanged, Evidence changed, Verdict may not hold")
    summary: str
    changed: bool = Field(description="a quote changed or its source is gone, or the verdict no longer holds")
    incomplete: bool = Field(description="some source could not be read again (unreachable, refused, no hash)")
    holds: bool | None = Field(description="whether the verdict holds; null: no decision could be taken again")
    exit_status: int = Field(description="what `veracity recheck` exits with: 0 unchanged, 1 changed, 4 incomplete")
    counts: dict[str, int] = Field(description="evidence items per status: unchanged, changed, gone, unreachable, "
                                               "refused, not re-checkable")
    items: list[dict[str, Any]] = Field(description="each item: status, reason, the stored record, the quote as "
                                                    "it reads now and a short diff")
    decisions: list[dict[str, Any]] = Field(description="per claim or sentence: the verifier's label on the "
                                                        "evidence as stored and now, and whether it holds")
    links: Links


class HistoryPage(BaseModel):
    items: list[RunSummary]
    total: int
    limit: int
    offset: int
    next_offset: int | None


ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 404: {"model": ErrorBody},
          429: {"model": ErrorBody}}
TEXT_ERRORS = {**ERRORS, 413: {"model": ErrorBody, "description": "text_too_long, file_too_large, body_too_large: "
                                                                   "the limit is stated"},
               415: {"model": ErrorBody, "description": "text_binary: the text or file is binary data"},
               503: {"model": ErrorBody}}
CHECK_ERRORS = {**ERRORS, 413: {"model": ErrorBody, "description": "image_too_large, body_too_large"},
                415: {"model": ErrorBody, "description": "image_type: not a JPEG, PNG, GIF or WebP, or not the "
                                                         "declared type"},
                503: {"model": ErrorBody}}


def links(run_id: str) -> dict[str, str]:
    base = f"/api/checks/{run_id}"
    return {"self": base, "events": f"{base}/events", "page": f"/checks/{run_id}", "report_md": f"{base}/report.md",
            "report_html": f"{base}/report.html", "report_json": f"{base}/report.json"}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def summary(run: dict[str, Any]) -> dict[str, Any]:
    """A run as the API lists it; every field has its declared type whatever the database holds."""
    options = run.get("options") or {}
    return {"id": run["id"], "status": str(run["status"]), "claim": str(run["claim"] or ""),
            "date": _str(options.get("date")), "image_count": len(stored_images(run)),
            "pipeline": str(run["pipeline"] or ""), "qa": _str(run["qa"]), "model": str(run["model"] or ""),
            "shown_as": words_of(run).text if run["status"] == st.DONE else None,
            "uncertain": bool(run.get("uncertain")), "label": _str(run["label"]), "confidence": _num(run["confidence"]),
            "created_at": iso(run["created"]), "finished_at": iso(run["finished"]), "seconds": _num(run["seconds"]),
            "error": short_error(_str(run["error"])), "links": links(run["id"])}


def detail(s: "ServerState", run: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    r = run.get("result") or {}
    text_run = run["pipeline"] == TEXT_CHECK
    return {**summary(run), "answer": _str((run.get("options") or {}).get("answer")),
            "leaf": None if text_run else leaf_summary(steps), "text": text_summary(steps) if text_run else None,
            "images": images_of(run), "started_at": iso(run["started"]),
            "queue_position": s.manager.queue_position(run["id"]) if run["status"] == st.QUEUED else None,
            "verdict": verdict_view(r.get("verdict")), "usage": r.get("usage"), "steps": steps}


def verdict_view(verdict: Any) -> dict[str, Any] | None:
    """A stored verdict led by whether it is uncertain and how it reads (`verdict_words`), for runs stored
    before the verdict carried `shown_as` too."""
    if not isinstance(verdict, dict):
        return None
    return {"uncertain": bool(verdict.get("uncertain")), "shown_as": words_of(verdict).text, **verdict}


def get_run(s: "ServerState", run_id: str) -> dict[str, Any]:
    run = s.store.get(run_id)
    if run is None:
        raise ApiError(404, "not_found", f"no run {run_id!r}: it never existed or was deleted (GET /api/checks "
                                         "lists the runs)")
    return run


# -- routes ------------------------------------------------------------------------------------------

@router.post("/checks", status_code=202, response_model=CheckAccepted, responses=CHECK_ERRORS,
             summary="Start a check")
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
    return {"id": run_id, "status": st.QUEUED, "queue_position": position,
            "date": (run.get("options") or {}).get("date"), "images": images_of(run), "links": links(run_id)}


@router.post("/texts", status_code=202, response_model=TextAccepted, responses=TEXT_ERRORS,
             summary="Start a text check")
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
    return {"id": run_id, "status": st.QUEUED, "queue_position": position, "title": run["claim"],
            "characters": len(source.text), "source_kind": source.kind, "pipeline": options.get("pipeline", ""),
            "extract": options.get("extract", ""), "max_claims": options.get("max_claims", 0),
            "links": links(run_id)}


@router.post("/checks/{run_id}/recheck", status_code=201, response_model=RecheckOut,
             responses={**ERRORS, 409: {"model": ErrorBody}}, summary="Re-check a run's evidence")
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
    return {"id": new_id, "rechecks": run_id, **{k: d[k] for k in ("headline", "summary", "changed", "incomplete",
                                                                   "holds", "exit_status", "counts", "items",
                                                                   "decisions")}, "links": links(new_id)}


@router.get("/checks", response_model=HistoryPage, responses=ERRORS, summary="List past runs, newest first")
def list_checks(request: Request, limit: int = Query(20, ge=1, le=100, description="runs per page (1-100)"),
                offset: int = Query(0, ge=0, le=MAX_OFFSET, description="runs to skip")) -> dict[str, Any]:
    runs, total = state(request).store.list(limit, offset)
    return {"items": [summary(r) for r in runs], "total": total, "limit": limit, "offset": offset,
            "next_offset": offset + limit if offset + limit < total else None}


@router.get("/checks/{run_id}", response_model=RunDetail, responses=ERRORS, summary="One run with its steps")
def read_check(run_id: str, request: Request,
               calls: bool = Query(True, description="include the model_call steps")) -> dict[str, Any]:
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


@router.get("/checks/{run_id}/images/{index}", responses=ERRORS, response_class=FileResponse,
            summary="One of the claim's images, as uploaded")
def check_image_file(run_id: str, index: int, request: Request) -> Response:
    s = state(request)
    run = get_run(s, run_id)
    infos = stored_images(run)
    if not 1 <= index <= len(infos):
        raise ApiError(404, "not_found", f"run {run_id} has {len(infos)} image(s); there is no image {index}")
    info = infos[index - 1]
    path = s.uploads.path(info.get("file") if isinstance(info.get("file"), str) else "")
    if path is None or not path.is_file():
        raise ApiError(404, "image_missing", f"image {index} of run {run_id} is no longer on the server (its file "
                                             "was removed from the server's images folder)")
    name = info.get("filename") or f"image-{index}.{path.suffix.lstrip('.')}"
    return FileResponse(path, media_type=info.get("media_type"), content_disposition_type="inline", filename=name,
                        headers={"Cache-Control": "private, max-age=86400", "X-Content-Type-Options": "nosniff",
                                 "Content-Security-Policy": "default-src 'none'; sandbox"})


REPORT_TYPES = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8",
                "json": "application/json"}


def build_report(s: "ServerState", request: Request, run: dict[str, Any], fmt: str) -> str:
    """A finished run's report in `fmt` (md, html or json)."""
    run_id = run["id"]
    if run["pipeline"] == TEXT_CHECK:
        return text_report(run, [d for _, d in s.store.steps(run_id)], fmt)
    result = result_of(run, [d for _, d in s.store.steps(run_id)])
    base = str(request.base_url).rstrip("/")
    # the stored images' paths are the server's: a download links them by URL (HTML embeds them)
    stored = {info["file"]: StoredImage(path, base + image_url(run_id, i),
                                        info.get("media_type") or "application/octet-stream")
              for i, info in enumerate(stored_images(run), start=1)
              if isinstance(info.get("file"), str) and (path := s.uploads.path(info["file"])) is not None}
    if fmt == "md":
        return to_markdown(run, result, images=stored)
    if fmt == "html":
        return to_html(run, result, images=stored)
    return to_json(run, result, images=[{**im, "url": base + im["url"]} for im in images_of(run)])


REPORT_CSP = report_csp("data: https: http:") + "; frame-ancestors 'none'"  # framing: a header-only directive


@router.get("/checks/{run_id}/report.{fmt}", responses={**ERRORS, 409: {"model": ErrorBody}},
            summary="Download the report (md, html or json)",
            response_class=Response)
def report(run_id: str, fmt: str, request: Request) -> Response:
    if fmt not in REPORT_TYPES:
        raise ApiError(404, "not_found", f"no report format {fmt!r}: use report.md, report.html or report.json")
    s = state(request)
    run = get_run(s, run_id)
    if run["status"] != st.DONE:
        if run["status"] in st.UNFINISHED:
            raise ApiError(409, "not_finished", f"run {run_id} is {run['status']}: its report exists once it is done "
                                                "(the `done` event of GET .../events)")
        raise ApiError(409, "no_report", f"run {run_id} {run['status']} ({short_error(run['error'])}): it has no "
                                         "report; its steps are at GET /api/checks/{id}")
    try:
        body = build_report(s, request, run, fmt)
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # a stored result that is not a result
        log.warning("run %s: no report from its stored result: %s: %s", run_id, type(e).__name__, e)
        raise ApiError(409, "report_unavailable", f"run {run_id}'s stored result is damaged, so it has no report; "
                                                  "its steps are at GET /api/checks/{id}") from None
    headers = {"Content-Disposition": f'attachment; filename="veracity-{run_id}.{fmt}"',
               "X-Content-Type-Options": "nosniff"}
    if fmt == "html":  # the report is self-contained: no script, no fetch, images inline or from the web
        headers["Content-Security-Policy"] = REPORT_CSP
    return Response(body, media_type=REPORT_TYPES[fmt], headers=headers)


@router.get("/pipelines", summary="Pipelines, QA modules and models a check can use")
def pipelines(request: Request) -> dict[str, Any]:
    return state(request).catalog.to_dict()


MAX_STEP_ID = 2**53  # step ids are a run's step numbers: anything larger was never sent


def resume_after(last_event_id: str | None) -> int:
    """The step after which a stream resumes: Last-Event-ID when it is a step id this server could have sent,
    else -1 (a fresh start, every step again), whatever the header holds."""
    text = (last_event_id or "").strip()
    if not text or len(text) > 20 or not text.isascii() or not text.isdigit():
        return -1
    value = int(text)
    return value if value <= MAX_STEP_ID else -1


def elapsed(s: "ServerState", run_id: str, status: str) -> dict[str, float]:
    """A running run's seconds so far (`elapsed` of its `status` event: the page counts on from it)."""
    run = s.store.get(run_id) if status == st.RUNNING else None
    started = run.get("started") if run else None
    return {"elapsed": round(max(0.0, time.time() - started), 1)} if isinstance(started, (int, float)) else {}


@router.get("/checks/{run_id}/events", responses=ERRORS, response_class=EventSourceResponse,
            summary="Follow a run: Server-Sent Events")
async def events(run_id: str, request: Request,
                 last_event_id: str | None = Header(None, description="resume after this step (set by "
                                                                      "EventSource on reconnect)")):
    """Events: `status` ({"status", "queue_position", and "elapsed": seconds since it started, while running}),
    one `step` per trace step in the order the run emitted it (data: the step; id: its sequence number), each
    right after a `view` event with what that step changed in the run's view, already folded ({"items":
    [{"index", "item"}], "status": what the run is doing, "calls": model calls so far}; the page draws these), and a
    final `done` ({"status", "verdict", "usage", "seconds"} or {"status", "error"}), after which the stream ends. A
    client connecting late first gets the steps so far; `Last-Event-ID` skips the steps it already has (and their
    views)."""
    s = state(request)
    after = resume_after(last_event_id)
    live = s.manager.subscribe(run_id, asyncio.get_running_loop())
    run = None
    if live is None:
        run = await run_in_threadpool(get_run, s, run_id)

    def step_event(seq: int, data: dict[str, Any]) -> ServerSentEvent:
        return ServerSentEvent(data=json.dumps(mend(data), ensure_ascii=False, default=str), event="step",
                               id=str(seq))

    def event(kind: str, data: dict[str, Any]) -> ServerSentEvent:
        return ServerSentEvent(data=json.dumps(mend(data), ensure_ascii=False, default=str), event=kind, retry=2000)

    view = LiveView()  # this stream's fold of the run's steps (veracity.steps)

    def step_events(seq: int, data: dict[str, Any]) -> list[ServerSentEvent]:
        """The step's `view` event (what it changed in the view), then the step itself; none for a step the
        client already has (its view included)."""
        update = view.add(data)
        if seq <= after:
            return []
        return [ServerSentEvent(data=json.dumps(mend(update), ensure_ascii=False, default=str), event="view"),
                step_event(seq, data)]

    async def stream():
        if live is None:  # finished before: everything is in the store
            yield event("status", {"status": run["status"], "queue_position": None})
            for seq, d in await run_in_threadpool(s.store.steps, run_id):
                for e in step_events(seq, d):
                    yield e
            yield event("done", final_event(run))
            return
        snapshot, status, sub, final = live
        try:
            yield event("status", {"status": status, "queue_position": s.manager.queue_position(run_id),
                                   **await run_in_threadpool(elapsed, s, run_id, status)})
            for seq, d in enumerate(snapshot):
                for e in step_events(seq, d):
                    yield e
            if sub is None:
                yield event("done", final or {})
                return
            while True:
                kind, seq, data = await sub.queue.get()
                if kind == "step":
                    for e in step_events(seq, data):
                        yield e
                elif kind == "status":
                    yield event("status", {**data, "queue_position": None, "elapsed": 0.0})
                else:
                    yield event("done", data)
                    return
        finally:
            if sub is not None:
                s.manager.unsubscribe(run_id, sub)

    return EventSourceResponse(stream(), ping=15, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


health = APIRouter()


@health.get("/api/health", summary="Liveness, and how many checks run and wait")
def healthcheck(request: Request) -> dict[str, Any]:
    s = state(request)
    return {"status": "ok", **s.manager.counts(), "max_concurrent": s.settings.max_concurrent}
