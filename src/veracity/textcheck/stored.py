"""A checked text read back from its steps (a server's stored run): the steps are the record of what happened,
so the report of a stored text check is the one `veracity check-text --report` writes for the same check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..claims.sources import Source
from ..claims.types import ExtractedClaim, Extraction
from ..steps import as_step
from .run import ClaimResult, TextCheck
from .steps import TextClaim, TextExtraction, TextSummary


def text_check_from_steps(
    steps: Iterable[Mapping[str, Any]],
    *,
    pipeline: str,
    model: str,
    usage: dict[str, Any] | None = None,
    seconds: float = 0.0,
) -> TextCheck | None:
    """The TextCheck the steps tell (None when they hold no extraction: not a text check, or one that failed
    before its claims were known). A claim without a result step reads as not checked."""
    typed = [as_step(s) for s in steps]
    ext = next((s for s in typed if isinstance(s, TextExtraction)), None)
    if ext is None:
        return None
    claims = [ExtractedClaim.from_dict(c) for c in ext.claims if isinstance(c, dict)]
    extraction = Extraction(
        text=ext.text,
        claims=claims,
        sentences=ext.sentences,
        method=ext.method,
        model_sentences=ext.model_sentences,
        fallback_sentences=ext.fallback_sentences,
        parse_failures=list(ext.parse_failures),
    )
    done = {s.id: s for s in typed if isinstance(s, TextClaim)}
    results = []
    for c in claims:
        r = done.get(c.id)
        results.append(
            ClaimResult(c, "not_checked", note="no result was recorded")
            if r is None
            else ClaimResult(c, r.outcome, r.label, r.confidence, r.rationale, list(r.evidence), r.note, r.seconds)
        )
    summary = next((s for s in reversed(typed) if isinstance(s, TextSummary)), None)
    return TextCheck(
        source=Source(ext.text, ext.origin, ext.source_kind, ext.title, ext.source_note),
        pipeline=pipeline,
        model=model,
        extraction=extraction,
        results=results,
        usage=usage or {},
        seconds=seconds,
        stopped=summary.stopped if summary else None,
        confidence_note=summary.confidence_note if summary else "",
    )
