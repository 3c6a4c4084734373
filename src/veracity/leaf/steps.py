"""LEAF's steps, and how each folds into the view (see `veracity.steps`).

An answer check: one `leaf_sentence` per sentence (its query, evidence, rating and the rater's reasoning), a
`leaf_note` when the answer was empty or cut, and the `leaf_score`. The answering pipelines add the answers
(`mc_answer`), the Fact-Check-Then-RAG rounds (`fc_rag_round`, `fc_rag_done`), the ranked samples
(`leaf_samples`) and the final answer with its score (`leaf_final`). A step of a round or a sample of a
pipeline carries its `round` or `sample`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..steps import Fold, Step, evidence_view, optional, step_type


@dataclass(kw_only=True)
class Labelled(Step):
    """A step that may belong to one round or sample of an answering pipeline."""

    round: int | None = optional()
    sample: int | None = optional()


def item(kind: str, data: dict[str, Any], **defaults: Any) -> dict[str, Any]:
    """A view item of the step's data as stored, with the fields the views read set when the step lacked them."""
    out = {"kind": kind, **data}
    for k, v in defaults.items():
        out.setdefault(k, v)
    return out


@step_type
@dataclass(kw_only=True)
class LeafSentence(Labelled):
    """One sentence of the answer checked: the query written for it, the evidence retrieved, the rating."""

    kind: ClassVar[str] = "leaf_sentence"
    index: int = 0
    sentence: str = ""
    query: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    rating: str | None = None
    supported: bool = False
    reasoning: str = ""
    confidence: float | None = None
    seconds: float | None = None
    read_as: str | None = optional()  # the sentence as the verifier read it (its pronoun resolved), when it differs
    uncertain_reason: str | None = optional()  # why the verifier's rating is uncertain, when it is

    def fold(self, view: Fold) -> None:
        leaf = item(
            "leaf",
            self.data,
            index=None,
            sentence="",
            query="",
            evidence=[],
            rating=None,
            supported=False,
            confidence=None,
            reasoning="",
        )
        leaf["evidence"] = evidence_view(leaf["evidence"] or [])
        view.append(leaf)
        view.status = f"Sentence {self.index}: {self.rating or 'no decision'}"


@step_type
@dataclass(kw_only=True)
class LeafScore(Step):
    """The LEAF score of an answer: supported / checked sentences."""

    kind: ClassVar[str] = "leaf_score"
    score: float = 0.0
    supported: int = 0
    checked: int = 0
    total_sentences: int = 0
    capped: bool = False
    note: str | None = None
    round: int | None = optional()
    sample: int | None = optional()

    def fold(self, view: Fold) -> None:
        view.append(item("leaf_score", self.data, score=0.0, supported=0, checked=0))


@step_type
@dataclass(kw_only=True)
class LeafNote(Step):
    """What the score does not cover: an empty answer, or the sentences beyond leaf.max_sentences."""

    kind: ClassVar[str] = "leaf_note"
    note: str | None = ""
    round: int | None = optional()
    sample: int | None = optional()

    def fold(self, view: Fold) -> None:
        view.append(item("leaf_note", self.data, note=""))


@step_type
@dataclass(kw_only=True)
class McAnswer(Labelled):
    """An answer to a multiple-choice question and the option it chose."""

    kind: ClassVar[str] = "mc_answer"
    answer_kind: str = field(default="", metadata={"key": "kind"})  # plain | rag | fc-rag
    text: str = ""
    letter: str | None = None
    confidence: float | None = None
    method: str = ""
    stated: str | None = None
    parse_failure: str | None = None
    knowledge: list[dict[str, Any]] = field(default_factory=list)


@step_type
@dataclass(kw_only=True)
class FcRagRound(Step):
    """A Fact-Check-Then-RAG round starts: the score so far, the failed sentences, the passages they bring."""

    kind: ClassVar[str] = "fc_rag_round"
    round: int = 0
    score_before: float = 0.0
    failed_sentences: list[int] = field(default_factory=list)
    knowledge: list[dict[str, Any]] = field(default_factory=list)


@step_type
@dataclass(kw_only=True)
class FcRagDone(Step):
    """Fact-Check-Then-RAG stopped: why, and which round's answer is kept."""

    kind: ClassVar[str] = "fc_rag_done"
    rounds: int = 0
    stop: str = ""
    chosen_round: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)


@step_type
@dataclass(kw_only=True)
class LeafSamples(Step):
    """The sampled answers' scores, and the one kept."""

    kind: ClassVar[str] = "leaf_samples"
    samples: list[dict[str, Any]] = field(default_factory=list)
    chosen: int = 0


@step_type
@dataclass(kw_only=True)
class LeafFinal(Step):
    """The answering pipeline's final answer and its LEAF score."""

    kind: ClassVar[str] = "leaf_final"
    pipeline: str = ""
    letter: str | None = None
    option: str | None = None
    stated: str | None = None
    score: float = 0.0
    supported: int = 0
    checked: int = 0
    total_sentences: int = 0
    note: str | None = None
    rater: str = ""
    rounds: int | None = optional()
    chosen_round: int | None = optional()
    history: list[dict[str, Any]] | None = optional()
    samples: list[dict[str, Any]] | None = optional()
    chosen_sample: int | None = optional()
