"""The data that flows through every pipeline: claims, evidence, reasoning steps and verdicts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .verdict_words import words_of

# Label sets. Pipelines declare which one they predict; datasets map their gold labels onto it.
SUPPORTED = "Supported"
REFUTED = "Refuted"
BINARY_LABELS: tuple[str, ...] = (SUPPORTED, REFUTED)


@dataclass
class Claim:
    text: str
    images: list[str] = field(default_factory=list)  # paths or URLs
    date: str | None = None  # ISO date the claim was made, when known
    id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


#: the source of a passage the model recited (QACheck's reciter-reader): its memory, not a source it read
RECITED = "recited by the model"


#: the fields of an evidence record that older versions did not write: `Evidence.to_dict` leaves them out while they
#: are unset, so that a record without them keeps its old JSON shape
PROVENANCE = ("quote_start", "quote_end", "source_sha256", "retrieved_at", "found_by", "memory")


@dataclass
class Evidence:
    """One piece of evidence: the text quoted exactly as in its source, and where, when and how it was found.

    `text` is the quoted span exactly as it reads in the source text, at `quote_start:quote_end` of it;
    `source_sha256` is the SHA-256 of that whole source text (a fetched page's extracted text, an index document's
    text), so that `veracity recheck` can tell whether it still reads so; `retrieved_at` is when it was fetched (or
    when its index was built), ISO-8601 UTC; `found_by` how it was found ({"tool", "retriever", "index", "query",
    "score", "rank"}, as known). `memory` marks text the model recited or stated: its memory, not a source.
    """

    text: str
    source: str = ""  # human-readable origin: document title, "model recitation", URL
    doc_id: str | None = None
    url: str | None = None
    score: float | None = None
    date: str | None = None  # publication date, when known
    images: list[str] = field(default_factory=list)
    quote_start: int | None = None  # the quote's character offsets in the source text
    quote_end: int | None = None
    source_sha256: str | None = None
    retrieved_at: str | None = None
    found_by: dict[str, Any] = field(default_factory=dict)
    memory: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for name in PROVENANCE:
            if d[name] is None or d[name] is False or d[name] == {}:  # (0 is an offset, not unset)
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evidence:
        """An evidence record as stored by any version: fields it lacks keep their defaults, fields this version
        does not know are ignored."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known.setdefault("text", "")
        if not isinstance(known.get("found_by"), dict):
            known.pop("found_by", None)
        return cls(**known)

    def cut(self, max_chars: int) -> Evidence:
        """The evidence with its quote shortened to its first `max_chars` characters (its offsets follow)."""
        if len(self.text) <= max_chars:
            return self
        end = None if self.quote_start is None else self.quote_start + max_chars
        return replace(self, text=self.text[:max_chars], quote_end=end)


@dataclass
class QAStep:
    """One question-answer step of QACheck's context C."""

    depth: int
    question: str
    answer: str
    evidence: list[Evidence] = field(default_factory=list)
    useful: bool | None = None  # the validator's decision; None when the validator is off

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = [e.to_dict() for e in self.evidence]
        return d


@dataclass
class Verdict:
    label: str
    rationale: str = ""
    confidence: float | None = None  # probability of `label` among the allowed labels, when known
    steps: list[QAStep] = field(default_factory=list)
    parse_failures: list[str] = field(default_factory=list)  # what the model got wrong, if anything
    #: the confidence is below the configured threshold (verify.uncertain_threshold), the verdict rests on the
    #: model's memory only, or the pipeline gave its own reason (check.settle_uncertainty):
    #: front ends say "uncertain" beside the label, with `uncertain_reason`, instead of presenting a guess as a finding
    uncertain: bool = False
    uncertain_reason: str = ""
    #: what the verdict rests on: "evidence" (passages from an index, a search or a page were read) or "memory"
    #: (only the model's own knowledge, or text it recited: not a source)
    basis: str = "evidence"
    #: why the verdict has no confidence, when its model's server offers none (llm.base.NO_CONFIDENCES)
    confidence_note: str = ""
    #: what a reader should know about the evidence behind the label (e.g. sources possibly stale for a claim about
    #: the present: web.filters.stale_note)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON: first whether it is uncertain and how it reads (`verdict_words`: "Uncertain, leaning
        Supported"), then the label itself, unchanged, and the rest."""
        return {
            "uncertain": self.uncertain,
            "shown_as": words_of(self).text,
            "label": self.label,
            "rationale": self.rationale,
            "confidence": self.confidence,
            "steps": [s.to_dict() for s in self.steps],
            "parse_failures": list(self.parse_failures),
            "uncertain_reason": self.uncertain_reason,
            "basis": self.basis,
            **({"confidence_note": self.confidence_note} if self.confidence_note else {}),
            **({"notes": list(self.notes)} if self.notes else {}),
        }
