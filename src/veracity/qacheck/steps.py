"""QACheck's steps, and how each folds into the view (see `veracity.steps`).

A question opens a card (`qa` item); the answer (with its evidence) and the validator's decision on the same
question fill it in; a repeated question is a card marked duplicate, never answered. The verifier's decisions
and the reason the loop stopped are a line each; the reasoner's label and rationale a `reasoning` item.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..steps import Fold, Reasoning, Step, evidence_view, optional, step_type

STOP_REASONS = {
    "verifier": "the verifier judged the answers enough to decide",
    "max_iterations": "the most questions allowed were asked",
    "no_question": "no further question came",
    "rejected": "the last questions asked added nothing useful (qacheck.max_rejected)",
}


def qa_card(depth: Any, question: str, duplicate: bool = False) -> dict[str, Any]:
    return {
        "kind": "qa",
        "depth": depth,
        "question": question,
        "duplicate": duplicate,
        "answer": None,
        "evidence": [],
        "useful": None,
    }


@step_type
@dataclass(kw_only=True)
class Question(Step):
    """The question generator's next question; `duplicate` when it was asked before (then it is skipped)."""

    kind: ClassVar[str] = "question"
    depth: int = 0
    question: str = ""
    duplicate: bool | None = optional()

    def fold(self, view: Fold) -> None:
        view.question_card = view.append(qa_card(self.depth, self.question, bool(self.duplicate)))
        view.status = f"Step {self.depth}: {self.question}"


@step_type
@dataclass(kw_only=True)
class Answer(Step):
    """The QA module's answer to a question, with its evidence."""

    kind: ClassVar[str] = "answer"
    depth: int = 0
    question: str = ""
    answer: str = ""
    qa: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def fold(self, view: Fold) -> None:
        card = view.question_card
        if card is None or card["question"] != self.question:  # an answer to a question not seen: its own card
            card = view.question_card = view.append(qa_card(self.depth, self.question))
        card.update(answer=self.answer, evidence=evidence_view(self.evidence), qa=self.qa)
        view.changed(card)
        view.status = f"Step {self.depth}: answered"


@step_type
@dataclass(kw_only=True)
class Validator(Step):
    """The validator's decision: does the question-answer pair add useful knowledge?"""

    kind: ClassVar[str] = "validator"
    depth: int = 0
    question: str = ""
    useful: bool = True
    confidence: float | None = None

    def fold(self, view: Fold) -> None:
        card = view.question_card
        if card is None or card["question"] != self.question:
            view.generic(self)
            return
        card["useful"] = self.useful
        view.changed(card)


@step_type
@dataclass(kw_only=True)
class Verifier(Step):
    """The claim verifier's decision: is the context enough to decide?"""

    kind: ClassVar[str] = "verifier"
    depth: int = 0
    enough: bool = False
    confidence: float | None = None
    by: str = "model"  # "evidence_verifier": the trained verifier found the evidence decisive, the model was not asked

    def fold(self, view: Fold) -> None:
        view.append(
            {
                "kind": "verifier",
                "depth": self.depth,
                "enough": self.enough,
                "confidence": self.confidence,
                "by": self.by or "model",
            }
        )


@step_type
@dataclass(kw_only=True)
class ContextDone(Step):
    """The loop stopped asking: why, and how many pairs the context holds."""

    kind: ClassVar[str] = "context_done"
    depth: int = 0
    reason: str = ""

    def fold(self, view: Fold) -> None:
        view.append({"kind": "stop", "reason": STOP_REASONS.get(self.reason, self.reason), "depth": self.depth})
        view.status = "Weighing the answers…"


@step_type
@dataclass(kw_only=True)
class Reasoner(Reasoning):
    """The reasoner's label and rationale from the context."""

    kind: ClassVar[str] = "reasoner"
