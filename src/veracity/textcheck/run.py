"""Checking a text: extract its claims, check each checkable one with a pipeline, and sum them up.

Every claim ends with one outcome: supported / refuted / uncertain (any other label, or a confidence below
verifier.uncertain_below) for the claims checked; ambiguous and not_checkable for those the extractor flagged
and did not send; not_checked for those a budget left out (--max-claims, --max-tokens); failed for a claim whose
check the model backend answered with an error (its message kept; an unreachable backend still stops the text).
The factuality score is supported / decided claims (FActScore's and LEAF's supported / checked, with the uncertain
claims left out: they decide nothing either way); None when no claim was decided, said as "not determined", never
as 0%, which reads "all false" (`outcomes.factuality_words`).

Given a `tracer`, the check is also told as steps (steps.py): the text and its claims once extracted, each claim's
result as it is known, the summary; the model calls of the extraction and of every claim's check are traced
there too, and their usage is metered on `meter`. That is how the server runs a text check as one run.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..check import run_check
from ..claims import AMBIGUOUS, NOT_CHECKABLE, ExtractedClaim, Extraction, extract_claims
from ..errors import BackendError, BackendUnavailable, is_search_error
from ..failures import backend_error
from ..llm.base import NO_CONFIDENCES
from ..llm.usage import UsageMeter
from ..steps import evidence_license
from ..types import REFUTED, SUPPORTED, Claim
from .outcomes import OUTCOMES
from .steps import TextClaim, TextExtraction, TextSummary

if TYPE_CHECKING:
    from ..claims.sources import Source
    from ..config import Config
    from ..llm.model import Model
    from ..pipeline import Pipeline
    from ..retrieval.base import Retriever
    from ..steps import Step
    from ..trace import Tracer

MAX_EVIDENCE = 5


@dataclass
class ClaimResult:
    claim: ExtractedClaim
    outcome: str
    label: str | None = None
    confidence: float | None = None
    rationale: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""  # why it was not checked
    seconds: float = 0.0
    #: published fact-checks of the claim (factchecks/lookup.py matches), when a fact-check store is in use
    factchecks: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.claim.to_dict(),
            "outcome": self.outcome,
            "label": self.label,
            "confidence": self.confidence,
            "rationale": self.rationale,
            "evidence": self.evidence,
            "note": self.note,
            "seconds": round(self.seconds, 3),
            **({"factchecks": self.factchecks} if self.factchecks else {}),
        }


@dataclass
class TextCheck:
    source: Source
    pipeline: str
    model: str
    extraction: Extraction
    results: list[ClaimResult]
    usage: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    stopped: str | None = None  # which budget ended the checks early
    confidence_note: str = ""  # the model's server gives no confidences (llm.base.NO_CONFIDENCES)

    @property
    def counts(self) -> dict[str, int]:
        return {o: sum(r.outcome == o for r in self.results) for o in OUTCOMES}

    @property
    def checked(self) -> int:
        c = self.counts
        return c["supported"] + c["refuted"] + c["uncertain"]

    @property
    def decided(self) -> int:
        """The checked claims that were decided: supported or refuted (an uncertain one is neither)."""
        c = self.counts
        return c["supported"] + c["refuted"]

    @property
    def factuality(self) -> float | None:
        """Supported / decided claims: None when no claim was decided (not 0, which would read "all false")."""
        return self.counts["supported"] / self.decided if self.decided else None

    @property
    def note(self) -> str | None:
        return "; ".join(n for n in (self.extraction.note, self.confidence_note) if n) or None

    def summary(self) -> dict[str, Any]:
        return {
            **self.counts,
            "checked": self.checked,
            "decided": self.decided,
            "claims": len(self.results),
            "factuality": self.factuality,
            "note": self.note,
            "stopped": self.stopped,
            "confidence_note": self.confidence_note,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": {
                "origin": self.source.origin,
                "kind": self.source.kind,
                "title": self.source.title,
                "note": self.source.note,
                "characters": len(self.source.text),
            },
            "text": self.source.text,
            "pipeline": self.pipeline,
            "model": self.model,
            "extraction": {k: v for k, v in self.extraction.to_dict().items() if k != "claims"},
            "summary": self.summary(),
            "claims": [r.to_dict() for r in self.results],
            "usage": self.usage,
            "seconds": round(self.seconds, 3),
        }


def outcome_of(label: str, uncertain: bool) -> str:
    if uncertain:
        return "uncertain"
    return {SUPPORTED: "supported", REFUTED: "refuted"}.get(label, "uncertain")


def evidence_of(trace: list[dict[str, Any]], limit: int = MAX_EVIDENCE) -> list[dict[str, Any]]:
    """The passages a check read, from its trace, without repeats: first those the trained verifier read for its
    verdict (an `evidence_verifier` step's `read`), then retrieval results and evidence lists (a model's recital
    among them), each with the license its source states."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    ordered = [s for s in trace if s.get("stage") == "evidence_verifier"] + [
        s for s in trace if s.get("stage") != "evidence_verifier"
    ]
    for step in ordered:
        for key in ("read", "results", "evidence"):
            items = step.get(key)
            if not isinstance(items, list):
                continue
            for item in items:
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    norm = " ".join(item["text"].split())
                    if norm and norm not in seen:
                        seen.add(norm)
                        kept = {k: item.get(k) for k in ("text", "source", "url", "score") if k in item}
                        license_ = evidence_license(item)
                        out.append({**kept, **({"license": license_} if license_ else {})})
    return out[:limit]


def check_text(
    source: Source,
    pipeline: Pipeline,
    model: Model,
    config: Config,
    *,
    retriever: Retriever | None = None,
    extract: str = "auto",
    workers: int = 1,
    max_claims: int | None = None,
    max_tokens: int | None = None,
    on_claim: Callable[[ClaimResult], None] | None = None,
    tracer: Tracer | None = None,
    meter: UsageMeter | None = None,
) -> TextCheck:
    """Extract and check the claims of `source`. `on_claim` is called as each claim's result is known; `tracer`
    and `meter` (see the module doc) receive the steps and the usage."""
    t0 = time.perf_counter()
    meter = meter if meter is not None else UsageMeter()
    extraction = extract_claims(
        source.text, method=extract, model=model.bind(meter, tracer), prompts_dir=config.prompts_dir
    )
    if tracer is not None:
        tracer.emit(
            TextExtraction(
                text=source.text,
                title=source.title,
                origin=source.origin,
                source_kind=source.kind,
                source_note=source.note,
                **extraction.to_dict(),
            )
        )
    results: dict[int, ClaimResult] = {}
    todo: list[ExtractedClaim] = []
    for claim in extraction.claims:
        if claim.status == AMBIGUOUS:
            results[claim.id] = ClaimResult(claim, "ambiguous", note=claim.reason)
        elif claim.status == NOT_CHECKABLE:
            results[claim.id] = ClaimResult(claim, "not_checkable", note=claim.reason)
        elif max_claims is not None and len(todo) >= max_claims:
            results[claim.id] = ClaimResult(
                claim, "not_checked", note=f"over the budget of {max_claims} claim{'s' if max_claims > 1 else ''}"
            )
        else:
            todo.append(claim)
    lock = threading.Lock()
    stopped: list[str] = []

    def forward(step: Step) -> None:
        """A claim's model call, told on the text's tracer too (a copy: the claim's own trace keeps its times)."""
        if step.stage == "model_call":
            tracer.emit(dataclasses.replace(step))

    def one(claim: ExtractedClaim) -> ClaimResult:
        total = meter.total
        if max_tokens is not None and total.prompt_tokens + total.completion_tokens >= max_tokens:
            with lock:
                if not stopped:
                    stopped.append(f"the budget of {max_tokens} tokens was spent")
            return ClaimResult(claim, "not_checked", note=f"the budget of {max_tokens} tokens was spent")
        try:
            res = run_check(
                Claim(text=claim.text),
                pipeline,
                model,
                config,
                retriever=retriever,
                listeners=[forward] if tracer is not None else None,
            )
        except BackendUnavailable:
            raise  # nothing answers: every later claim would fail the same way
        except BackendError as e:  # this claim's check only (a timeout, a malformed reply): the others go on
            return ClaimResult(claim, "failed", note=backend_error(str(e), search=is_search_error(e)))
        meter.add(res.usage)
        v = res.verdict
        return ClaimResult(
            claim,
            outcome_of(v.label, v.uncertain),
            v.label,
            v.confidence,
            v.rationale,
            evidence_of(res.trace),
            seconds=res.seconds,
            note=f"uncertain: {v.uncertain_reason}" if v.uncertain and v.uncertain_reason else "",
            factchecks=(res.factchecks or {}).get("matches") or [],
        )

    def known(r: ClaimResult) -> None:
        if tracer is not None:
            tracer.emit(TextClaim(**r.to_dict()))
        if on_claim:
            on_claim(r)

    for r in results.values():
        known(r)
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="check-text")
    try:
        for claim, future in [(c, pool.submit(one, c)) for c in todo]:
            results[claim.id] = r = future.result()
            known(r)
    finally:  # stopped (an error, or the run deleted): the claims not started never start
        pool.shutdown(wait=True, cancel_futures=True)
    check = TextCheck(
        source=source,
        pipeline=pipeline.name,
        model=model.model_id,
        extraction=extraction,
        results=[results[c.id] for c in extraction.claims],
        usage=meter.to_dict(),
        seconds=time.perf_counter() - t0,
        stopped=stopped[0] if stopped else None,
        confidence_note=NO_CONFIDENCES if model.gives_confidences() is False else "",
    )
    if tracer is not None:
        tracer.emit(TextSummary(**check.summary()))
    return check
