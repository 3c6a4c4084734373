"""Splitting an answer into the units LEAF checks one by one: its sentences (the default), or its atomic claims.

The sentence splitter is the shared one (`veracity.claims.sentences`: pysbd inside blocks cut at blank
lines and list items), so that LEAF and `veracity check-text` agree on sentence bounds. With
`leaf.units = "claims"` an answer is split by the shared claim extractor instead (`veracity.claims`, its
rule-based method: deterministic, no model call): atomic claims, with what is not checkable (questions,
advice, opinions) left out. Claims that stay ambiguous are kept as they are written: LEAF's rater sees the
question, where their antecedent usually is.

Each sentence also has the text it reads as on its own (`read_as`): a leading pronoun resolved by the shared
rules (`veracity.claims.decontext`: "The Eiffel Tower is in Paris. It opened in 1889." -> "The Eiffel Tower
opened in 1889."), where nothing else could be meant. The trained verifier reads that text and, when no model
writes the queries, it is the search query: neither sees the question or the sentences before. The sentence
as written is what is shown and scored.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..claims.decontext import Resolver
from ..claims.sentences import sentence_spans, split_sentences
from ..errors import UserError

__all__ = ["Sentences", "answer_sentences", "answer_units", "split_sentences"]


@dataclass(frozen=True)
class Sentences:
    """The sentences to check: the first `max_sentences` of an answer's `total` sentences."""

    checked: list[str]
    total: int
    read_as: list[str] | None = None  # each checked unit as it reads on its own; None: as written
    spans: list[tuple[int, int]] | None = None  # each checked sentence's [start, end) in the answer, when known

    def reading(self, i: int) -> str:
        """The text unit i (0-based) reads as on its own."""
        return self.read_as[i] if self.read_as is not None else self.checked[i]

    @property
    def capped(self) -> bool:
        return self.total > len(self.checked)


def answer_sentences(answer: str, max_sentences: int, *, allow_empty: bool = False) -> Sentences:
    """Split `answer` and apply the cap. An empty answer is a UserError unless `allow_empty`.

    `allow_empty` is for answers a model wrote (a pipeline must not stop an evaluation because the
    model said nothing); an answer a user gives to be checked must say something.
    """
    segments = sentence_spans(answer or "")
    if not segments and not allow_empty:
        raise UserError(
            "the answer is empty: give the text to fact-check"
            if not (answer or "").strip()
            else "the answer has no words to fact-check"
        )
    checked = segments[:max_sentences]
    resolver = Resolver(answer or "")
    read_as = []
    for seg in checked:
        resolver.sentence(seg.start, seg.end)
        read_as.append(resolver.resolve(seg.text).text)
    return Sentences(
        checked=[seg.text for seg in checked],
        total=len(segments),
        read_as=read_as,
        spans=[(seg.start, seg.end) for seg in checked],
    )


def answer_units(answer: str, max_units: int, *, units: str = "sentences", allow_empty: bool = False) -> Sentences:
    """The units of `answer` to check: its sentences, or its atomic claims (`units="claims"`), capped."""
    if units != "claims":
        return answer_sentences(answer, max_units, allow_empty=allow_empty)
    from ..claims import extract_claims

    split = answer_sentences(answer, max_units, allow_empty=allow_empty)  # the same empty-answer rule
    if split.total == 0:
        return split
    claims = [c.text for c in extract_claims(answer, method="rules").claims if c.status != "not_checkable"]
    return Sentences(checked=claims[:max_units], total=len(claims))
