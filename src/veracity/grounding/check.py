"""`ground(answer, documents)`: every sentence of an answer against every part of the documents it was given."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..inputs import DEFAULT_MAX_ANSWER_CHARS, clean_answer
from ..leaf.sentences import answer_sentences
from ..verdict_words import verdict_words
from ..verify.grounding import (
    CONTRADICTED,
    NOT_SUPPORTED,
    SUPPORTED,
    Grounded,
    GroundingRule,
    ground_sentences,
    narrow_quotes,
    reading_dict,
)
from .documents import Document, as_documents

if TYPE_CHECKING:
    from ..config import Config

#: how each label reads (`verdict_words` makes an uncertain one "Uncertain, leaning ...")
WORDS = {SUPPORTED: "Supported", NOT_SUPPORTED: "Not Supported", CONTRADICTED: "Contradicted"}
MAX_SENTENCES = 200  # sentences checked at most; the rest are said to be left out


@dataclass
class SentenceGrounding:
    index: int  # 1-based place in the answer
    text: str
    span: tuple[int, int]  # [start, end) in the answer
    label: str  # supported | not_supported | contradicted
    probability: float  # that the documents support it (calibrated)
    decided: bool
    quote: dict[str, Any] | None  # the part that decided: document id and title, [start, end) there, its text
    reading: dict[str, float] = field(default_factory=dict)  # the verifier's three-way reading of that part
    parts_read: int = 0  # the parts the documents were cut into, every one read
    read_closely: int = 0  # of them, those read beside this sentence by the cross-encoder (verify/grounding.py)
    read_as: str = ""  # the sentence as the verifier read it, a leading pronoun resolved ("": as written)

    @property
    def confidence(self) -> float:
        return self.probability if self.label == SUPPORTED else 1.0 - self.probability

    @property
    def shown_as(self) -> str:
        return verdict_words(WORDS[self.label], uncertain=not self.decided).text

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "text": self.text,
            "span": list(self.span),
            "label": self.label,
            "shown_as": self.shown_as,
            "decided": self.decided,
            "probability": round(self.probability, 4),
            "confidence": round(self.confidence, 4),
            "quote": self.quote,
            "reading": self.reading,
            "parts_read": self.parts_read,
            "read_closely": self.read_closely,
            **({"read_as": self.read_as} if self.read_as else {}),
        }


@dataclass
class Grounding:
    sentences: list[SentenceGrounding]
    documents: list[Document]
    total_sentences: int
    verifier: str
    uncertain_below: float
    rule_fitted: bool
    seconds: float = 0.0

    def count(self, label: str, *, decided: bool | None = None) -> int:
        return sum(s.label == label and (decided is None or s.decided == decided) for s in self.sentences)

    @property
    def decided(self) -> int:
        return sum(s.decided for s in self.sentences)

    @property
    def grounded_share(self) -> float | None:
        """Supported / decided sentences; None ("not determined") when no sentence is decided."""
        return self.count(SUPPORTED, decided=True) / self.decided if self.decided else None

    @property
    def note(self) -> str | None:
        if self.total_sentences > len(self.sentences):
            return f"the answer has {self.total_sentences} sentences; the first {len(self.sentences)} were checked"
        return None

    def summary(self) -> str:
        share = self.grounded_share
        said = "not determined (no sentence decided)" if share is None else f"{100 * share:.0f}% of decided sentences"
        counts = ", ".join(
            f"{self.count(label, decided=True)} {WORDS[label].lower()}"
            for label in (SUPPORTED, NOT_SUPPORTED, CONTRADICTED)
        )
        return f"grounded: {said} ({counts}, {len(self.sentences) - self.decided} uncertain)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "grounded_share": None if self.grounded_share is None else round(self.grounded_share, 4),
            "summary": self.summary(),
            "decided": self.decided,
            "supported": self.count(SUPPORTED, decided=True),
            "not_supported": self.count(NOT_SUPPORTED, decided=True),
            "contradicted": self.count(CONTRADICTED, decided=True),
            "uncertain": len(self.sentences) - self.decided,
            "total_sentences": self.total_sentences,
            "note": self.note,
            "sentences": [s.to_dict() for s in self.sentences],
            "documents": [d.to_dict() for d in self.documents],
            "verifier": self.verifier,
            "uncertain_below": self.uncertain_below,
            "rule": "fitted on grounding pairs" if self.rule_fitted else "the verifier's rule against the rest",
            "seconds": round(self.seconds, 4),
        }


def ground(
    answer: str,
    documents: Iterable[Any],
    *,
    config: Config | None = None,
    verifier: str | None = None,
    max_sentences: int = MAX_SENTENCES,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
) -> Grounding:
    """Which sentences of `answer` the `documents` support (see the package doc). `verifier`: a verifier folder
    (default: config.verifier.model, the shipped one). A UserError for an empty or too long answer, and for
    documents that are not texts or have no text."""
    from ..verify import load_verifier

    text = clean_answer(answer, max_answer_chars)
    docs = as_documents(documents)
    split = answer_sentences(text, max_sentences)
    settings = config.verifier if config is not None else None
    v = load_verifier(
        verifier or (settings.model if settings else None),
        threads=settings.threads if settings else None,  # without a configuration: every core
        runtime=settings.runtime if settings else None,
    )
    t0 = time.perf_counter()  # the check itself, the verifier loaded (once per process)
    rule = GroundingRule.of(v)
    if settings is not None and settings.uncertain_below is not None:  # the configuration's threshold, as checks do
        rule = replace(rule, uncertain_below=settings.uncertain_below)
    reads = [split.reading(i) for i in range(len(split.checked))]
    found = ground_sentences(v, reads, [d.text for d in docs], rule)
    narrow_quotes(v, reads, found, [d.text for d in docs])
    sentences = [_sentence(i, split, g, docs) for i, g in enumerate(found)]
    return Grounding(sentences, docs, split.total, v.name, rule.uncertain_below, rule.fitted, time.perf_counter() - t0)


def _sentence(i: int, split, g: Grounded, docs: list[Document]) -> SentenceGrounding:
    part = g.deciding
    quote = None
    if part is not None:
        doc = docs[part.document]
        start, end = g.quote or (part.start, part.end)
        quote = {
            "document": doc.id,
            **({"title": doc.title} if doc.title else {}),
            **({"url": doc.url} if doc.url else {}),
            "start": start,
            "end": end,
            "text": doc.text[start:end],
            "part": [part.start, part.end],  # the part of the document it was read in
        }
    written, read = split.checked[i], split.reading(i)
    return SentenceGrounding(
        index=i + 1,
        text=written,
        span=split.spans[i],
        label=g.label,
        probability=g.probability,
        decided=g.decided,
        quote=quote,
        reading=reading_dict(part.probabilities) if part else {},
        parts_read=g.parts,
        read_closely=g.read_closely,
        read_as=read if read != written else "",
    )
