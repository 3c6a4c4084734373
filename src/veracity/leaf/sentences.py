"""Splitting an answer into the units LEAF checks one by one: its sentences (the default), or its atomic claims.

The sentence splitter is the shared one (`veracity.claims.sentences`: pysbd inside blocks cut at blank
lines and list items), so that LEAF and `veracity check-text` agree on sentence bounds. With
`leaf.units = "claims"` an answer is split by the shared claim extractor instead (`veracity.claims`, its
rule-based method: deterministic, no model call): atomic claims, with what is not checkable (questions,
advice, opinions) left out. Claims that stay ambiguous are kept as they are written: LEAF's rater sees the
question, where their antecedent usually is.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..claims.sentences import split_sentences
from ..errors import UserError

__all__ = ["Sentences", "answer_sentences", "answer_units", "split_sentences"]


@dataclass(frozen=True)
class Sentences:
    """The sentences to check: the first `max_sentences` of an answer's `total` sentences."""

    checked: list[str]
    total: int

    @property
    def capped(self) -> bool:
        return self.total > len(self.checked)


def answer_sentences(answer: str, max_sentences: int, *, allow_empty: bool = False) -> Sentences:
    """Split `answer` and apply the cap. An empty answer is a UserError unless `allow_empty`.

    `allow_empty` is for answers a model wrote (a pipeline must not stop an evaluation because the
    model said nothing); an answer a user gives to be checked must say something.
    """
    sentences = split_sentences(answer or "")
    if not sentences and not allow_empty:
        raise UserError("the answer is empty: give the text to fact-check" if not (answer or "").strip()
                        else "the answer has no words to fact-check")
    return Sentences(checked=sentences[:max_sentences], total=len(sentences))


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
