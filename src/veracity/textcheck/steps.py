"""A checked text's steps, and how each folds into the view (see `veracity.steps`).

`text_extraction`: the text (with where it came from) and every claim extracted from it, with its spans;
`text_claim`: one claim's result (outcome, label, confidence, rationale, evidence), one per claim, as each is
known; `text_summary`: the counts and the factuality score. Their view items:

    text_source   the text and how its claims were extracted
    text_mark     a stretch of the text that claims cover: its claims and the outcome that colours it
                  (`outcomes.marks`); pending until the claims covering it are decided
    text_claim    one claim: pending from the extraction on, filled in by its `text_claim` step
    text_summary  the counts as rows, and the factuality score

A `text_claim` step changes its claim's item and the marks that cover it, so a live view redraws only those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..failures import failure_view
from ..steps import Fold, Step, evidence_view, http_url, optional, step_type
from .outcomes import LABELS, PENDING, marks, outcome_words, strongest, summary_rows

_STATE = "text"  # the fold's bookkeeping for a text: Fold.state[_STATE]


def _claim_item(c: dict[str, Any], **result: Any) -> dict[str, Any]:
    outcome = result.get("outcome") or PENDING
    return {
        "kind": "text_claim",
        "id": c.get("id"),
        "text": c.get("text", ""),
        "spans": c.get("spans") or [],
        "status": c.get("status", ""),
        "reason": c.get("reason", ""),
        "outcome": outcome,
        "outcome_label": outcome_words(outcome, result.get("label")),
        "label": result.get("label"),
        "confidence": result.get("confidence"),
        "rationale": result.get("rationale") or "",
        "evidence": evidence_view(result.get("evidence") or []),
        "note": result.get("note") or "",
        # a failed check, in plain words with its technical line apart (as a failed run on the page)
        "failure": failure_view(result.get("note")) if outcome == "failed" else None,
        "factchecks": [
            {**m, "url": http_url(m.get("url"))} for m in result.get("factchecks") or [] if isinstance(m, dict)
        ],
    }


def _mark_item(m: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "text_mark", **m, "label": LABELS.get(m["outcome"], m["outcome"])}


@step_type
@dataclass(kw_only=True)
class TextExtraction(Step):
    """The text to check (and where it came from) and the claims extracted from it (`Extraction.to_dict`)."""

    kind: ClassVar[str] = "text_extraction"
    text: str = ""
    title: str = ""
    origin: str = ""
    source_kind: str = "text"
    source_note: str = ""
    method: str = ""
    sentences: int = 0
    model_sentences: int = 0
    fallback_sentences: int = 0
    parse_failures: list[str] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None

    def fold(self, view: Fold) -> None:
        claims = [c for c in self.claims if isinstance(c, dict)]
        checkable = sum(c.get("status") == "checkable" for c in claims)
        view.append(
            {
                "kind": "text_source",
                "text": self.text,
                "title": self.title,
                "origin": self.origin,
                "source_kind": self.source_kind,
                "source_note": self.source_note,
                "method": self.method,
                "sentences": self.sentences,
                "claims": len(claims),
                "checkable": checkable,
                "note": self.note,
            }
        )
        state = view.state.setdefault(_STATE, {"claims": {}, "marks": {}, "outcomes": {}})
        state["outcomes"].update({c.get("id"): PENDING for c in claims})
        for m in marks((c.get("id"), [tuple(s) for s in c.get("spans") or []], PENDING) for c in claims):
            item = view.append(_mark_item(m))
            for cid in m["claims"]:
                state["marks"].setdefault(cid, []).append(item)
        for c in claims:
            state["claims"][c.get("id")] = view.append(_claim_item(c))
        state["to_check"] = [c.get("id") for c in claims if c.get("status") == "checkable"]
        view.status = f"{len(claims)} claims found. {_progress(state)}"


@step_type
@dataclass(kw_only=True)
class TextClaim(Step):
    """One claim of the text with its result (`ClaimResult.to_dict`)."""

    kind: ClassVar[str] = "text_claim"
    id: int = 0
    text: str = ""
    spans: list[list[int]] = field(default_factory=list)
    sentence: int = 0
    context: list[list[int]] = field(default_factory=list)
    method: str = ""
    status: str = ""
    reason: str = ""
    outcome: str = ""
    label: str | None = None
    confidence: float | None = None
    rationale: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""
    seconds: float = 0.0
    factchecks: list[dict[str, Any]] | None = optional()  # published fact-checks of the claim, when found

    def fold(self, view: Fold) -> None:
        data = self.data
        state = view.state.setdefault(_STATE, {"claims": {}, "marks": {}, "outcomes": {}})
        fresh = _claim_item(data, **data)
        item = state["claims"].get(self.id)
        if item is None:
            state["claims"][self.id] = view.append(fresh)
        else:
            item.update(fresh)
            view.changed(item)
        state["outcomes"][self.id] = fresh["outcome"]
        for mark in state["marks"].get(self.id, []):
            outcome = strongest(state["outcomes"].get(c, PENDING) for c in mark["claims"])
            if outcome != mark["outcome"]:
                mark.update(outcome=outcome, label=LABELS.get(outcome, outcome))
                view.changed(mark)
        view.status = _progress(state)


STOPPED_NOTE = "the run stopped before this claim was checked; check the text again to have it checked"


def settle_pending(items: list[dict[str, Any]]) -> None:
    """A text run that ended before it finished (interrupted, failed): its claims still pending are not checked,
    and say why, and the stretches of text they colour are coloured so (not "Checking..." for good)."""
    for it in items:
        if it.get("kind") == "text_claim" and it.get("outcome") == PENDING:
            it.update(outcome="not_checked", outcome_label=LABELS["not_checked"], note=it.get("note") or STOPPED_NOTE)
        elif it.get("kind") == "text_mark" and it.get("outcome") == PENDING:
            it.update(outcome="not_checked", label=LABELS["not_checked"])


#: the outcomes of a claim that was not checked (the extractor's flags, a budget): not counted as "to check"
_NOT_SENT = ("ambiguous", "not_checkable", "not_checked")


def _progress(state: dict[str, Any]) -> str:
    """What a text check is doing now: the claim being checked, as "n of m" of the claims it checks (the claims
    are told in text order, so the first one still pending is the one in progress)."""
    outcomes, sent = (
        state["outcomes"],
        [c for c in state.get("to_check", []) if state["outcomes"].get(c) not in _NOT_SENT],
    )
    pending = [c for c in sent if outcomes.get(c) == PENDING]
    if not pending:
        return "Summing up"
    text = state["claims"][pending[0]]["text"]
    return f"Checking claim {len(sent) - len(pending) + 1} of {len(sent)}: {text}"


@step_type
@dataclass(kw_only=True)
class TextSummary(Step):
    """The counts of a checked text's outcomes (`TextCheck.summary`)."""

    kind: ClassVar[str] = "text_summary"
    supported: int = 0
    refuted: int = 0
    uncertain: int = 0
    ambiguous: int = 0
    not_checkable: int = 0
    not_checked: int = 0
    failed: int = 0
    checked: int = 0
    decided: int = 0  # supported + refuted: what the factuality is over
    claims: int = 0
    factuality: float | None = None
    note: str | None = None
    stopped: str | None = None
    confidence_note: str = ""

    def fold(self, view: Fold) -> None:
        data = self.data
        view.append({"kind": "text_summary", **data, "rows": [list(r) for r in summary_rows(data)]})
        view.status = "Summing up"
