"""DEFAME's steps, and how each folds into the view (see `veracity.steps`).

They are also the blocks of DEFAME's record (`record.Record`): the pipeline adds each step to the record and
emits the same object, so the record and the trace hold the facts once.

The view: the claim's images a line; a plan a card per round (its actions, fallback, rejected and unavailable
tools); a tool call a card (error, notes, and each result with its link) to which the summaries of that call
attach, one per result in order (the summary, or "not relevant"); a summary of no known result a line of its
own; develop, judge and justify a line each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..steps import Fold, Step, evidence_when, http_url, link_parts, optional, source_link, step_type

EXCERPT_MARK = 'Excerpt: "'  # a summary that quotes the source (the model's was rejected) is shown so


@step_type
@dataclass(kw_only=True)
class Images(Step):
    """The claim's images: their references in the record (<image:N>), where they came from, and whether the
    model sees them itself."""

    kind: ClassVar[str] = "images"
    refs: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    model_sees_images: bool = False

    def fold(self, view: Fold) -> None:
        view.append(
            {
                "kind": "images",
                "refs": list(self.refs or []),
                "sources": list(self.sources or []),
                "model_sees_images": bool(self.model_sees_images),
            }
        )


@dataclass(kw_only=True)
class RoundStep(Step):
    """A step that belongs to one round of the record."""

    round: int = 0


@step_type
@dataclass(kw_only=True)
class Plan(RoundStep):
    """A round's plan: the actions to run, and how they were chosen (`how`: planned, constrained, fallback;
    `static`: the static-actions ablation; `note`: why there is none)."""

    kind: ClassVar[str] = "plan"
    actions: list[str] = field(default_factory=list)
    rejected: list[str] | None = optional()
    raw: str | None = optional()
    how: str | None = optional()
    fallback: bool | None = optional()
    static: bool | None = optional()
    unavailable: dict[str, str] = field(default_factory=dict)
    note: str | None = optional()

    def fold(self, view: Fold) -> None:
        view.append(
            {
                "kind": "plan",
                "round": self.round,
                "actions": list(self.actions or []),
                "fallback": bool(self.fallback),
                "static": bool(self.static),
                "rejected": list(self.rejected or []),
                "note": self.note,
                "how": self.how,
                "unavailable": dict(self.unavailable or {}) if self.round == 1 else {},
            }
        )
        actions = list(self.actions or [])
        view.status = (
            f"Round {self.round}: running {', '.join(actions)}" if actions else f"Round {self.round}: no new action"
        )


@step_type
@dataclass(kw_only=True)
class ToolRun(RoundStep):
    """One executed action: its results (or error) and the tool's notes (e.g. what was filtered out)."""

    kind: ClassVar[str] = "action"
    action: str = ""
    tool: str = ""
    argument: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    def failure(self) -> str | None:
        """The line the record keeps for a call that found nothing to summarize."""
        if self.error:
            return f"{self.action}: {self.error}"
        return None if self.results else f"{self.action}: no results"

    def fold(self, view: Fold) -> None:
        card = {
            "kind": "action",
            "round": self.round,
            "action": self.action,
            "error": self.error,
            "notes": list(self.notes or []),
            "results": [result_item(r) for r in self.results or []],
        }
        view.state.setdefault("defame_calls", {})[(self.round, self.action)] = card
        view.append(card)
        n = len(card["results"])
        view.status = f"Round {self.round}: {self.action} {'failed' if self.error else f'found {n} result(s)'}"


def result_item(r: dict[str, Any]) -> dict[str, Any]:
    """One result of a tool call, waiting for its summary."""
    return {
        "title": r.get("source") or r.get("url") or "result",
        "source": r.get("source"),
        "url": r.get("url"),
        "href": http_url(r.get("url")),
        "date": r.get("date"),
        "text": r.get("text") or "",
        "summarized": False,
        "summary": None,
        "images": [],
        "when": evidence_when(r),
    }


@step_type
@dataclass(kw_only=True)
class Summary(RoundStep):
    """The summary of one result (None: the summarizer judged it irrelevant); `written_by` "excerpt" when the
    model's summary was not drawn from the source and the source's own sentences stand in for it."""

    kind: ClassVar[str] = "summary"
    action: str = ""
    source: str | None = None
    url: str | None = None
    date: str | None = None
    summary: str | None = None
    written_by: str = "model"
    images: list[str] = field(default_factory=list)  # the result's images the report may show
    image_refs: list[str] = field(default_factory=list)  # those that joined the fact-check (<image:N>)
    #: the source's own sentences nearest the claim: what the trained verifier reads (never the model's summary,
    #: which can restate the claim); None in records written before it was kept
    evidence: str | None = None

    @property
    def text(self) -> str | None:
        """The summary as the record quotes it (an excerpt without its marking)."""
        s = self.summary
        if s and self.written_by == "excerpt" and s.startswith(EXCERPT_MARK) and s.endswith('"'):
            return s[len(EXCERPT_MARK) : -1]
        return s

    def fold(self, view: Fold) -> None:
        view.status = f"Round {self.round}: reading the results"
        card = view.state.get("defame_calls", {}).get((self.round, self.action))
        if card is not None:
            for r in card["results"]:  # the next result of the call still without one (read in order)
                if not r["summarized"] and (not self.url or not r["url"] or r["url"] == self.url):
                    r.update(summarized=True, summary=self.summary, images=list(self.images or []))
                    view.changed(card)
                    return
        view.append(
            {
                "kind": "summary",
                "round": self.round,
                "action": self.action,
                "title": self.source or self.url or "result",
                "source": self.source,
                "url": self.url,
                "href": http_url(self.url),
                "summary": self.summary,
                "images": list(self.images or []),
            }
        )


@step_type
@dataclass(kw_only=True)
class Develop(RoundStep):
    """The reasoning over the evidence so far, gaps marked."""

    kind: ClassVar[str] = "develop"
    text: str = ""

    def fold(self, view: Fold) -> None:
        view.append({"kind": "develop", "round": self.round, "text": self.text or ""})
        view.status = f"Round {self.round}: judging"


@step_type
@dataclass(kw_only=True)
class Judge(RoundStep):
    """A round's judgement; not `final` when it sends the check back to planning."""

    kind: ClassVar[str] = "judge"
    label: str = ""
    confidence: float | None = None
    findings: str = ""
    probabilities: dict[str, float] | None = None
    final: bool = False
    #: the trained verifier's reading of each finding ({source, supported, refuted, nei}) when it is on
    verifier: list[dict[str, Any]] | None = None
    decided_by: str = "model"  # "verifier": decisive sources settled the label (judgement.py); "model": no source
    # decides and the model's pick stands; "verifier-leaning": no source decides, a decision is due, the sources lean
    model_pick: str | None = optional()  # the model's own scored pick (one input of the judge)
    score: float | None = optional()  # the judge's deciding score before calibration (judgement.py)

    def fold(self, view: Fold) -> None:
        view.append(
            {
                "kind": "judge",
                "round": self.round,
                "label": self.label,
                "confidence": self.confidence,
                "findings": self.findings or "",
                "final": bool(self.final),
                "verifier": self.verifier or [],
                "decided_by": self.decided_by or "model",
            }
        )
        view.status = (
            "Writing the justification…" if self.final else f"Round {self.round}: not enough to decide, planning again"
        )


@step_type
@dataclass(kw_only=True)
class Justify(Step):
    """The justification of the verdict, and the sources it may link (Markdown links)."""

    kind: ClassVar[str] = "justify"
    text: str = ""
    sources: list[str] = field(default_factory=list)

    def fold(self, view: Fold) -> None:
        text = self.text or ""
        view.append(
            {
                "kind": "justify",
                "text": text,
                "parts": link_parts(text),
                "sources": [source_link(x) for x in dict.fromkeys(self.sources or [])],
            }
        )
        view.status = "Finishing…"
