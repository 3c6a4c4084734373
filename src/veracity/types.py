"""The data that flows through every pipeline: claims, evidence, reasoning steps and verdicts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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


@dataclass
class Evidence:
    text: str
    source: str = ""  # human-readable origin: document title, "model recitation", URL
    doc_id: str | None = None
    url: str | None = None
    score: float | None = None
    date: str | None = None  # publication date, when known
    images: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "rationale": self.rationale,
            "confidence": self.confidence,
            "steps": [s.to_dict() for s in self.steps],
            "parse_failures": list(self.parse_failures),
            "uncertain": self.uncertain,
            "uncertain_reason": self.uncertain_reason,
            "basis": self.basis,
            **({"confidence_note": self.confidence_note} if self.confidence_note else {}),
        }
