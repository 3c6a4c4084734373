"""QACheck's prompt specs: one per model call of the five modules (templates in `prompts/templates`).

The claim verifier and the validator decide Yes/No through the model's `choose`; the question generator and
the QA modules' replies are read by `parsing.py`; the reasoner's rationale and its True/False decision by
the shared parsers (`veracity.verdicts.final_answer`). How the collected question-answer pairs are written
into each prompt is here too, as the slots' formats.
"""

from __future__ import annotations

from ..prompts.parsers import parse_rationale
from ..prompts.quoting import quote_passages
from ..prompts.spec import PromptSpec
from ..types import QAStep
from ..verdicts import final_answer
from .parsing import parse_closed_book, parse_passage, parse_question, parse_short_answer

YES_NO = ("Yes", "No")
NOTHING_YET = "(nothing yet)"
UNKNOWN = "Unknown"  # the answer when the QA module found none


def numbered_pairs(context: list[QAStep]) -> str:
    """`Question 1 = ...` / `Answer 1 = ...`: the verifier's and the follow-up question's view of the context."""
    return (
        "\n".join(f"Question {i} = {s.question}\nAnswer {i} = {s.answer}" for i, s in enumerate(context, 1))
        or NOTHING_YET
    )


def known_pairs(context: list[QAStep]) -> str:
    """`Question = ...` / `Answer = ...`, unnumbered: the validator's view of the context."""
    return "\n".join(qa_pair(s) for s in context) or NOTHING_YET


def qa_pair(step: QAStep) -> str:
    return f"Question = {step.question}\nAnswer = {step.answer}"


def reasoner_pairs(context: list[QAStep]) -> str:
    """`Q1: ...` / `A1: ...`: the reasoner's view of the context."""
    return "\n".join(f"Q{i}: {s.question}\nA{i}: {s.answer}" for i, s in enumerate(context, 1)) or NOTHING_YET


VERIFIER = PromptSpec(
    name="qacheck.verifier",
    template="verifier",
    stage="verifier",
    slots=("CLAIM", "QA_CONTEXTS"),
    formats={"QA_CONTEXTS": numbered_pairs},
    max_tokens=8,
    options=YES_NO,
    problem="no Yes/No",
    fallback="treated as 'No': keep gathering evidence",
)

_QUESTION = dict(
    stage="question",
    max_tokens=48,
    stop=("\n",),
    parser=parse_question,
    problem="no question",
    fallback="stop asking; the reasoner decides from what is known",
)
QUESTION_FIRST = PromptSpec(name="qacheck.question_first", template="question_first", slots=("CLAIM",), **_QUESTION)
QUESTION_FOLLOWUP = PromptSpec(
    name="qacheck.question_followup",
    template="question_followup",
    slots=("CLAIM", "QA_CONTEXTS", "Q_INDEX"),
    formats={"QA_CONTEXTS": numbered_pairs},
    **_QUESTION,
)

VALIDATOR = PromptSpec(
    name="qacheck.validator",
    template="validator",
    stage="validator",
    slots=("CLAIM", "QA_CONTEXTS", "NEW_QA_PAIR"),
    formats={"QA_CONTEXTS": known_pairs, "NEW_QA_PAIR": qa_pair},
    max_tokens=8,
    options=YES_NO,
    problem="no Yes/No",
    fallback="treated as 'Yes': keep the pair",
)

REASONER = PromptSpec(
    name="qacheck.reasoner",
    template="reasoner",
    stage="reasoner",
    slots=("CONTEXTS", "CLAIM"),
    formats={"CONTEXTS": reasoner_pairs},
    max_tokens=200,
    stop=("Therefore", "\n\n", "final answer"),
    parser=parse_rationale,
)
REASONER_LABEL = final_answer(REASONER, "qacheck.reasoner.label")

# -- the QA module A(q) ---------------------------------------------------------------------------------
READER = PromptSpec(
    name="qacheck.reader",
    template="reader",
    stage="answer",
    slots=("PASSAGES", "QUESTION"),
    formats={"PASSAGES": quote_passages},  # any page's text: quoted data
    max_tokens=32,
    stop=("\n",),
    parser=parse_short_answer,
    problem="no answer",
    fallback=f"answer {UNKNOWN!r}",
)

CLOSED_BOOK = PromptSpec(
    name="qacheck.closed_book",
    template="qa_closed_book",
    stage="answer",
    slots=("QUESTION",),
    max_tokens=80,
    stop=("\n\n", "\nQuestion"),
    parser=parse_closed_book,
    usable=lambda answer_evidence: answer_evidence[0] is not None,  # the evidence may come without an answer
    problem="no answer",
    fallback=f"answer {UNKNOWN!r}",
)

RECITE = PromptSpec(
    name="qacheck.recite",
    template="recite",
    stage="recite",
    slots=("QUESTION",),
    max_tokens=120,
    stop=("\n\n", "\nQuestion"),
    parser=parse_passage,
    problem="no passage",
    fallback=f"answer {UNKNOWN!r} (nothing recited)",
)

SPECS = (VERIFIER, QUESTION_FIRST, QUESTION_FOLLOWUP, VALIDATOR, REASONER, REASONER_LABEL, READER, CLOSED_BOOK, RECITE)
