"""LEAF's prompt specs: answering a multiple-choice question (three prompts that differ in the knowledge they
show), deciding which option an answer chose, and fact-checking one sentence of it (a search query, the
rater's reasoning, the rating). Passages are written as quoted data (`numbered_passages`); the replies are
read by `parsing.py` and the ratings decided through `choose`.
"""

from __future__ import annotations

from ..prompts.quoting import quote_passages
from ..prompts.spec import PromptSpec
from ..types import Evidence
from .options import format_options
from .parsing import parse_query, parse_reasoning

SUPPORTED = "Supported"
NOT_SUPPORTED = "Not Supported"
RATINGS = [SUPPORTED, NOT_SUPPORTED]
REASONING_CUE = "Reasoning:"
DECISION_CUE = "Final answer:"
NO_PASSAGES = "(no passages found)"
NO_ANSWER_TEXT = "(no answer)"
ANSWER_MAX_TOKENS = 320  # the default of leaf.answer_max_tokens, which each call passes


def numbered_passages(passages: list[Evidence]) -> str:
    """Passages as `[1] source: text` lines in one quoted-data block (the format of the prompts' demonstrations)."""
    return quote_passages(passages) if passages else NO_PASSAGES


def letters_phrase(keys: list[str]) -> str:
    """The option keys as the letter prompt names them: "A, B or C"."""
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " or " + keys[-1]


def reasoning_line(reasoning: str | None) -> str:
    """What stands between the rating prompt and its decision: nothing when the rater does not reason,
    else the reasoning cue and the reasoning written after it."""
    if reasoning is None:
        return ""
    return f"\n{REASONING_CUE} {reasoning}" if reasoning else f"\n{REASONING_CUE}"


# -- answering (chat messages; the letter is then decided with ANSWER_LETTER) --------------------------------
_ANSWER = dict(stage="answer", max_tokens=ANSWER_MAX_TOKENS, chat=True, parser=str.strip)
ANSWER_PLAIN = PromptSpec(
    name="leaf.answer_plain",
    template="answer_plain",
    slots=("QUESTION", "OPTIONS"),
    formats={"OPTIONS": format_options},
    **_ANSWER,
)
ANSWER_RAG = PromptSpec(
    name="leaf.answer_rag",
    template="answer_rag",
    slots=("DOCUMENTS", "QUESTION", "OPTIONS"),
    formats={"OPTIONS": format_options, "DOCUMENTS": numbered_passages},
    **_ANSWER,
)
ANSWER_FC_RAG = PromptSpec(
    name="leaf.answer_fc_rag",
    template="answer_fc_rag",
    slots=("KNOWLEDGE", "QUESTION", "OPTIONS"),
    formats={"OPTIONS": format_options, "KNOWLEDGE": numbered_passages},
    **_ANSWER,
)
ANSWERS = {"plain": ANSWER_PLAIN, "rag": ANSWER_RAG, "fc-rag": ANSWER_FC_RAG}
KNOWLEDGE_SLOT = {"rag": "DOCUMENTS", "fc-rag": "KNOWLEDGE"}  # where each kind shows its passages

ANSWER_LETTER = PromptSpec(
    name="leaf.answer_letter",
    template="answer_letter",
    stage="answer_choice",
    slots=("QUESTION", "OPTIONS", "ANSWER", "LETTERS"),
    formats={"OPTIONS": format_options, "ANSWER": lambda text: text or NO_ANSWER_TEXT, "LETTERS": letters_phrase},
    max_tokens=8,
    decision=True,  # among the option keys, given per call
    problem="no option",
    fallback="no option chosen: the item counts as unanswered",
)

# -- fact-checking one sentence ------------------------------------------------------------------------------
QUERY = PromptSpec(
    name="leaf.query",
    template="leaf_query",
    stage="leaf_query",
    slots=("CONTEXT", "STATEMENT"),
    max_tokens=40,
    stop=("\n\n", "\nSTATEMENT", "\nQUESTION", "--------"),
    parser=parse_query,
    problem="no query",
    fallback="searched for the sentence itself",
)

REASONING = PromptSpec(
    name="leaf.reasoning",
    template="leaf_rate",
    stage="leaf_rating",
    slots=("KNOWLEDGE", "CONTEXT", "STATEMENT"),
    formats={"KNOWLEDGE": numbered_passages},
    cue=f"\n{REASONING_CUE}",
    max_tokens=64,
    stop=("Final answer", "\n\n", "--------"),
    parser=parse_reasoning,
)
RATING = PromptSpec(
    name="leaf.rating",
    template="leaf_rate",
    stage="leaf_rating",
    slots=("KNOWLEDGE", "CONTEXT", "STATEMENT", "REASONING"),
    formats={"KNOWLEDGE": numbered_passages, "REASONING": reasoning_line},
    cue=f"[[REASONING]]\n{DECISION_CUE}",
    max_tokens=8,
    options=RATINGS,
    strict=True,
    problem="no rating",
    fallback=f"counted as {NOT_SUPPORTED!r}: the rater asserted neither label unambiguously",
)

SPECS = (ANSWER_PLAIN, ANSWER_RAG, ANSWER_FC_RAG, ANSWER_LETTER, QUERY, REASONING, RATING)
