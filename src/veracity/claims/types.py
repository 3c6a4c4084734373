"""What claim extraction returns: claims with their source spans, status and the method that made them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CHECKABLE = "checkable"
AMBIGUOUS = "ambiguous"  # still needs context after decontextualisation (e.g. an unresolved pronoun): not checked
NOT_CHECKABLE = "not_checkable"  # a question, advice, an opinion, a greeting, a heading: nothing to check
RULES = "rules"
MODEL = "model"

Span = tuple[int, int]  # [start, end) in the source text


@dataclass
class ExtractedClaim:
    """One atomic claim: `spans` are the parts of the source that state it (in order; a list item's claim has the
    words before the list and the item); `context` the spans it borrowed from elsewhere (the name a pronoun was
    resolved to)."""

    text: str
    spans: list[Span]
    sentence: int  # 0-based index of the source sentence it came from
    method: str  # "rules" | "model"
    status: str = CHECKABLE
    reason: str = ""  # why it is ambiguous or not checkable
    id: int = 0  # 1-based, in source order (set by the extractor)
    context: list[Span] = field(default_factory=list)

    @property
    def checkable(self) -> bool:
        return self.status == CHECKABLE

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "spans": [list(s) for s in self.spans],
            "sentence": self.sentence,
            "context": [list(s) for s in self.context],
            "method": self.method,
            "status": self.status,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExtractedClaim:
        """A claim as `to_dict` wrote it (a stored run's)."""
        return cls(
            text=str(d.get("text", "")),
            spans=[(int(s), int(e)) for s, e in d.get("spans") or []],
            sentence=int(d.get("sentence") or 0),
            method=str(d.get("method") or RULES),
            status=str(d.get("status") or CHECKABLE),
            reason=str(d.get("reason") or ""),
            id=int(d.get("id") or 0),
            context=[(int(s), int(e)) for s, e in d.get("context") or []],
        )


@dataclass
class Extraction:
    """The claims of one text. `method` names what made them: "rules", "model", or "model+rules" when the model's
    reply for some sentences was unusable and the rules stood in (`fallback_sentences` of them)."""

    text: str  # the source text the spans index
    claims: list[ExtractedClaim]
    sentences: int
    method: str
    model_sentences: int = 0  # sentences the model decomposed usably
    fallback_sentences: int = 0  # sentences the model was asked about and the rules split instead
    parse_failures: list[str] = field(default_factory=list)

    def with_status(self, status: str) -> list[ExtractedClaim]:
        return [c for c in self.claims if c.status == status]

    @property
    def checkable(self) -> list[ExtractedClaim]:
        return self.with_status(CHECKABLE)

    @property
    def note(self) -> str | None:
        if not self.claims:
            return "the text states nothing that can be checked: it has no sentence with a claim"
        if not self.checkable:
            return "the text has no checkable claim: " + ", ".join(sorted({c.reason for c in self.claims})) + " only"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "sentences": self.sentences,
            "model_sentences": self.model_sentences,
            "fallback_sentences": self.fallback_sentences,
            "parse_failures": list(self.parse_failures),
            "claims": [c.to_dict() for c in self.claims],
            "note": self.note,
        }
