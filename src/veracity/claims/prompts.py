"""The claim extractor's prompt spec: one sentence (with the sentence before it as context) into atomic facts.

The sentence and its context are untrusted text: each is written on one line with our quoting markers removed
(`neutralise`), so it cannot start a line that imitates the prompt's cues.
"""

from __future__ import annotations

from ..prompts.quoting import neutralise
from ..prompts.spec import PromptSpec
from .model import parse_facts

NO_CONTEXT = "(none)"
MAX_SENTENCE_CHARS = 1200


def _line(text: str) -> str:
    return neutralise(text, MAX_SENTENCE_CHARS) or NO_CONTEXT


EXTRACT = PromptSpec(
    name="claims.extract",
    template="claims_extract",
    stage="claim_extraction",
    slots=("CONTEXT", "SENTENCE"),
    formats={"CONTEXT": _line, "SENTENCE": _line},
    max_tokens=160,
    stop=("\n\n", "--------", "\nCONTEXT:"),
    parser=parse_facts,
    problem="no facts",
    fallback="the sentence was split by the rules instead",
)

SPECS = (EXTRACT,)
