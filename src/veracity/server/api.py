"""The HTTP API under /api: start checks, follow them live (SSE), read, page, delete and download them."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from . import store as st
from .answers import NAME as ANSWER_CHECK
from .answers import check_answer_input, leaf_summary
from .errors import ApiError
from .limits import check_claim
from .reports import result_of, to_html, to_json, to_markdown
from .views import iso

if TYPE_CHECKING:
    from .app import ServerState


def state(request: Request) -> "ServerState":
    return request.app.state.veracity


async def require_auth(request: Request) -> None:  # async: no threadpool hop for a comparison
    state(request).auth.check_api(request.headers, request.cookies)


router = APIRouter(prefix="/api", dependencies=[Depends(require_auth)])


# -- schemas (they make the OpenAPI document) ----------------------------------------------------------

class ErrorBody(BaseModel):
    error: str = Field(description="a stable code, e.g. claim_empty, unknown_pipeline, rate_limited")
    detail: str = Field(description="what went wrong and what to change")


class CheckIn(BaseModel):
    claim: str | None = Field(None, description="the statement to check (claim pipelines)",
                              examples=["Lars Onsager won the Nobel prize when he was 30 years old."])
    question: str | None = Field(None, description="answer-check: the question the answer replies to")
    answer: str | None = Field(None, description="answer-check: the answer to fact-check sentence by sentence "
                                                 "against the server's index (LEAF)")
    pipeline: str | None = Field(None, description="a pipeline name from GET /api/pipelines (default: qacheck, or "
                                                   "answer-check when question or answer is given)")
    qa: str | None = Field(None, description="QACheck's question-answering module: retriever-reader, closed-book "
                                             "or reciter-reader (default: the server's)")
    model: str | None = Field(None, description="one of the models the server offers (default: the first)")


class Links(BaseModel):
    self: str
    events: str
    page: str
    report_md: str
    report_html: str
    report_json: str


class CheckAccepted(BaseModel):
    id: str
    status: str
    queue_position: int = Field(description="0 when the check starts at once, else its place in the queue")
    links: Links


class RunSummary(BaseModel):
    id: str
    status: Literal["queued", "running", "done", "failed", "interrupted"]
    claim: str
    pipeline: str
    qa: str | None
    model: str
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
    started_at: str | None
    queue_position: int | None
    verdict: dict[str, Any] | None = Field(description="label, rationale, confidence, steps, parse_failures")
    usage: dict[str, Any] | None = Field(description="total and by_stage: calls, tokens, seconds, cost")
    steps: list[dict[str, Any]] = Field(description="the run's trace steps, in the order they happened")


class HistoryPage(BaseModel):
    items: list[RunSummary]
    total: int
    limit: int
    offset: int
    next_offset: int | None


ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 404: {"model": ErrorBody},
          429: {"model": ErrorBody}}


def links(run_id: str) -> dict[str, str]:
    base = f"/api/checks/{run_id}"
    return {"self": base, "events": f"{base}/events", "page": f"/checks/{run_id}", "report_md": f"{base}/report.md",
            "report_html": f"{base}/report.html", "report_json": f"{base}/report.json"}


def summary(run: dict[str, Any]) -> dict[str, Any]:
    return {"id": run["id"], "status": run["status"], "claim": run["claim"], "pipeline": run["pipeline"],
            "qa": run["qa"], "model": run["model"], "label": run["label"], "confidence": run["confidence"],
            "created_at": iso(run["created"]), "finished_at": iso(run["finished"]), "seconds": run["seconds"],
            "error": run["error"], "links": links(run["id"])}


def detail(s: "ServerState", run: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    r = run.get("result") or {}
    return {**summary(run), "answer": (run.get("options") or {}).get("answer"), "leaf": leaf_summary(steps),
            "started_at": iso(run["started"]),
            "queue_position": s.manager.queue_position(run["id"]) if run["status"] == st.QUEUED else None,
            "verdict": r.get("verdict"), "usage": r.get("usage"), "steps": steps}


def get_run(s: "ServerState", run_id: str) -> dict[str, Any]:
    run = s.store.get(run_id)
    if run is None:
        raise ApiError(404, "not_found", f"no run {run_id!r}: it never existed or was deleted (GET /api/checks "
                                         "lists the runs)")
    return run


def start_check(s: "ServerState", body: CheckIn, client: str) -> tuple[str, int]:
    """Validate a request and queue the check (shared by the API and the page's plain form)."""
    s.limiter.check(client)
    answer_given = body.question is not None or body.answer is not None
    name = body.pipeline or (ANSWER_CHECK if answer_given else "qacheck")
    info = s.catalog.pipelines.get(name)
    if info is not None and info.input_kind == "answer":
        if body.claim is not None:
            raise ApiError(400, "claim_not_applicable", f"pipeline {name!r} checks an answer: send `question` and "
                                                        "`answer` instead of `claim`")
        pipeline, cfg, qa = s.catalog.resolve(name, body.qa, body.model, input_kind="answer")  # index first
        question, answer = check_answer_input(body.question, body.answer,
                                              max_question_chars=s.config.max_claim_chars,
                                              max_answer_chars=s.catalog.max_answer_chars)
        return s.manager.submit(claim=question, pipeline=pipeline, config=cfg, qa=qa, options={"answer": answer})
    if body.claim is None:
        if info is None:
            s.catalog.resolve(name, body.qa, body.model)  # says the pipeline is unknown
        if answer_given:
            raise ApiError(400, "input_not_supported", f"pipeline {name!r} checks a claim: send `claim`, or use "
                                                       f"pipeline {ANSWER_CHECK!r} to check a question's answer")
        raise ApiError(422, "invalid_request", "claim: Field required (or `question` and `answer` with pipeline "
                                               f"{ANSWER_CHECK!r})")
    claim = check_claim(body.claim, s.config.max_claim_chars)
    pipeline, cfg, qa = s.catalog.resolve(name, body.qa, body.model)
    return s.manager.submit(claim=claim, pipeline=pipeline, config=cfg, qa=qa)


# -- routes ------------------------------------------------------------------------------------------

@router.post("/checks", status_code=202, response_model=CheckAccepted, responses={**ERRORS, 503: {"model": ErrorBody}},
             summary="Start a check")
def create_check(body: CheckIn, request: Request, response: Response) -> dict[str, Any]:
    """Queue a check of `claim` and return its id at once (202). Follow it with GET .../events (SSE) or
    poll GET /api/checks/{id}."""
    s = state(request)
    run_id, position = start_check(s, body, request.client.host if request.client else "unknown")
    response.headers["Location"] = f"/api/checks/{run_id}"
    return {"id": run_id, "status": st.QUEUED, "queue_position": position, "links": links(run_id)}


@router.get("/checks", response_model=HistoryPage, responses=ERRORS, summary="List past runs, newest first")
def list_checks(request: Request, limit: int = Query(20, ge=1, le=100, description="runs per page (1-100)"),
                offset: int = Query(0, ge=0, description="runs to skip")) -> dict[str, Any]:
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
    """Delete a run and its steps. A queued run never starts; a running one stops at its next step."""
    if not state(request).manager.delete(run_id):
        raise ApiError(404, "not_found", f"no run {run_id!r}: it never existed or was already deleted")
    return Response(status_code=204)


REPORT_TYPES = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8",
                "json": "application/json"}


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
        raise ApiError(409, "no_report", f"run {run_id} {run['status']} ({run['error']}): it has no report; "
                                         "its steps are at GET /api/checks/{id}")
    result = result_of(run, [d for _, d in s.store.steps(run_id)])
    if fmt == "md":
        body = to_markdown(run, result)
    elif fmt == "html":
        body = to_html(run, result)
    else:
        body = to_json(run, result)
    return Response(body, media_type=REPORT_TYPES[fmt],
                    headers={"Content-Disposition": f'attachment; filename="veracity-{run_id}.{fmt}"'})


@router.get("/pipelines", summary="Pipelines, QA modules and models a check can use")
def pipelines(request: Request) -> dict[str, Any]:
    return state(request).catalog.to_dict()


@router.get("/checks/{run_id}/events", responses=ERRORS, response_class=EventSourceResponse,
            summary="Follow a run: Server-Sent Events")
async def events(run_id: str, request: Request,
                 last_event_id: str | None = Header(None, description="resume after this step (set by "
                                                                      "EventSource on reconnect)")):
    """Events: `status` ({"status", "queue_position"}), one `step` per trace step in the order the run emitted
    it (data: the step; id: its sequence number), and a final `done` ({"status", "verdict", "usage", "seconds"}
    or {"status", "error"}), after which the stream ends. A client connecting late first gets the steps so far;
    `Last-Event-ID` skips the steps it already has."""
    s = state(request)
    try:
        after = int(last_event_id) if last_event_id else -1
    except ValueError:
        after = -1
    live = s.manager.subscribe(run_id, asyncio.get_running_loop())
    run = None
    if live is None:
        run = await run_in_threadpool(get_run, s, run_id)

    def step_event(seq: int, data: dict[str, Any]) -> ServerSentEvent:
        return ServerSentEvent(data=json.dumps(data, ensure_ascii=False, default=str), event="step", id=str(seq))

    def event(kind: str, data: dict[str, Any]) -> ServerSentEvent:
        return ServerSentEvent(data=json.dumps(data, ensure_ascii=False, default=str), event=kind, retry=2000)

    async def stream():
        if live is None:  # finished before: everything is in the store
            yield event("status", {"status": run["status"], "queue_position": None})
            for seq, d in await run_in_threadpool(s.store.steps, run_id, after):
                yield step_event(seq, d)
            r = run.get("result") or {}
            final = ({"status": run["status"], "verdict": r.get("verdict"), "usage": r.get("usage"),
                      "seconds": r.get("seconds"), "model": r.get("model")} if run["status"] == st.DONE
                     else {"status": run["status"], "error": run["error"]})
            yield event("done", final)
            return
        snapshot, status, sub, final = live
        try:
            yield event("status", {"status": status, "queue_position": s.manager.queue_position(run_id)})
            for seq, d in enumerate(snapshot):
                if seq > after:
                    yield step_event(seq, d)
            if sub is None:
                yield event("done", final or {})
                return
            while True:
                kind, seq, data = await sub.queue.get()
                if kind == "step":
                    if seq > after:
                        yield step_event(seq, data)
                elif kind == "status":
                    yield event("status", {**data, "queue_position": None})
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
