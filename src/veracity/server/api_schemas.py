"""What the API answers: the response schemas (they make the OpenAPI document), the error responses each route
documents, and a stored run in those schemas (`summary`, `detail`), or a 404 for a run that is not there (`get_run`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..failures import short_error
from ..verdict_words import words_of
from . import store as st
from .answers import leaf_summary
from .checks import images_of, stored_images
from .errors import ApiError
from .texts import NAME as TEXT_CHECK
from .texts import text_summary
from .views import iso

if TYPE_CHECKING:
    from .state import ServerState


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
    shown_as: str | None = Field(
        None,
        description="the verdict as a reader should read it (the page's badge): the "
        "label, or 'Uncertain, leaning Supported' for an uncertain one; "
        "null until the run is done",
    )
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
    leaf: dict[str, Any] | None = Field(
        None, description="answer-check: score, supported, checked and the per-sentence results (from the steps)"
    )
    text: dict[str, Any] | None = Field(
        None,
        description="text-check: the text, how its claims were extracted, "
        "the summary (counts, factuality) and every claim with "
        "its spans, outcome and evidence (from the steps)",
    )
    images: list[ImageOut] = Field([], description="the claim's images, in the order given")
    started_at: str | None
    queue_position: int | None
    factchecks: dict[str, Any] | None = Field(
        None,
        description="the published fact-checks of the claim (found, summary, matches with the claim as the "
        "publisher worded it, rating, publisher, date, url, probability), when the server has a fact-check store",
    )
    verdict: dict[str, Any] | None = Field(
        description="uncertain, shown_as (how it reads: 'Uncertain, leaning "
        "Supported'), label, rationale, confidence, steps, "
        "parse_failures, uncertain_reason, basis"
    )
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
    counts: dict[str, int] = Field(
        description="evidence items per status: unchanged, changed, gone, unreachable, refused, not re-checkable"
    )
    items: list[dict[str, Any]] = Field(
        description="each item: status, reason, the stored record, the quote as it reads now and a short diff"
    )
    decisions: list[dict[str, Any]] = Field(
        description="per claim or sentence: the verifier's label on the "
        "evidence as stored and now, and whether it holds"
    )
    links: Links


class HistoryPage(BaseModel):
    items: list[RunSummary]
    total: int
    limit: int
    offset: int
    next_offset: int | None


ERRORS = {400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 404: {"model": ErrorBody}, 429: {"model": ErrorBody}}
TEXT_ERRORS = {
    **ERRORS,
    413: {"model": ErrorBody, "description": "text_too_long, file_too_large, body_too_large: the limit is stated"},
    415: {"model": ErrorBody, "description": "text_binary: the text or file is binary data"},
    503: {"model": ErrorBody},
}
CHECK_ERRORS = {
    **ERRORS,
    413: {"model": ErrorBody, "description": "image_too_large, body_too_large"},
    415: {"model": ErrorBody, "description": "image_type: not a JPEG, PNG, GIF or WebP, or not the declared type"},
    503: {"model": ErrorBody},
}


def links(run_id: str) -> dict[str, str]:
    base = f"/api/checks/{run_id}"
    return {
        "self": base,
        "events": f"{base}/events",
        "page": f"/checks/{run_id}",
        "report_md": f"{base}/report.md",
        "report_html": f"{base}/report.html",
        "report_json": f"{base}/report.json",
    }


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def summary(run: dict[str, Any]) -> dict[str, Any]:
    """A run as the API lists it; every field has its declared type whatever the database holds."""
    options = run.get("options") or {}
    return {
        "id": run["id"],
        "status": str(run["status"]),
        "claim": str(run["claim"] or ""),
        "date": _str(options.get("date")),
        "image_count": len(stored_images(run)),
        "pipeline": str(run["pipeline"] or ""),
        "qa": _str(run["qa"]),
        "model": str(run["model"] or ""),
        "shown_as": words_of(run).text if run["status"] == st.DONE else None,
        "uncertain": bool(run.get("uncertain")),
        "label": _str(run["label"]),
        "confidence": _num(run["confidence"]),
        "created_at": iso(run["created"]),
        "finished_at": iso(run["finished"]),
        "seconds": _num(run["seconds"]),
        "error": short_error(_str(run["error"])),
        "links": links(run["id"]),
    }


def detail(s: ServerState, run: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    r = run.get("result") or {}
    text_run = run["pipeline"] == TEXT_CHECK
    return {
        **summary(run),
        "answer": _str((run.get("options") or {}).get("answer")),
        "leaf": None if text_run else leaf_summary(steps),
        "text": text_summary(steps, stopped=run["status"] in (st.FAILED, st.INTERRUPTED)) if text_run else None,
        "images": images_of(run),
        "started_at": iso(run["started"]),
        "queue_position": s.manager.queue_position(run["id"]) if run["status"] == st.QUEUED else None,
        "factchecks": r.get("factchecks"),  # published fact-checks of the claim, shown before the verdict
        "verdict": verdict_view(r.get("verdict")),
        "usage": r.get("usage"),
        "steps": steps,
    }


def verdict_view(verdict: Any) -> dict[str, Any] | None:
    """A stored verdict led by whether it is uncertain and how it reads (`verdict_words`), for runs stored
    before the verdict carried `shown_as` too."""
    if not isinstance(verdict, dict):
        return None
    return {"uncertain": bool(verdict.get("uncertain")), "shown_as": words_of(verdict).text, **verdict}


def get_run(s: ServerState, run_id: str) -> dict[str, Any]:
    run = s.store.get(run_id)
    if run is None:
        raise ApiError(
            404, "not_found", f"no run {run_id!r}: it never existed or was deleted (GET /api/checks lists the runs)"
        )
    return run
