"""QACheck's parsers: the generated question, the QA modules' short answers, evidence and recited passages.

The claim verifier and the validator decide Yes/No through the model's `choose`, so they need no parser
here; the reasoner's rationale and label are read by the shared parsers in `prompts/parsers.py` (through
`veracity.verdicts`), as the chain-of-thought baseline's are. Each returns `None` when the output cannot
be used; the prompt spec's call (`prompts.py`) records that as a parse failure and the pipeline falls back.
Markdown bullets and bold, quotes and a repeated prompt cue are stripped; a new demonstration is no question.
"""

from __future__ import annotations

import re

from ..prompts.parsers import text_lines

_PREFIX = (
    r"^\s*(?:question\s*\d*|q\d*|answer\s*\d*|a\d*|relevant passage|passage|evidence|prediction)\s*[:=]"
    r"\s*(?:\*\*)?\s*"
)
# markdown a small model adds: a bullet or number, bold ("- **Question:** ...")
_MARKUP = re.compile(r"^\s*(?:[-*\u2022+>](?:\s+|$)|\d{1,2}[.)]\s+)?(?:\*\*)?")
_QUOTES = '"\u201c\u201d'
# the model starts a new demonstration instead of answering
_DEMO = re.compile(r"^(?:claim|contexts?)\s*\d*\s*[:=]|^-{3,}", re.IGNORECASE)


def _strip_prefix(line: str) -> str:
    line = re.sub(_PREFIX, "", _MARKUP.sub("", line), flags=re.IGNORECASE)
    return line.strip().strip("*").strip().strip(_QUOTES).strip()


def parse_question(text: str) -> str | None:
    """The generated question: the first non-empty line, without a `Question N =` prefix.

    Anything after the first `?` on that line (a stray answer) is dropped. Returns None when
    nothing question-like (at least two words) remains, or when the line starts a new demonstration.
    """
    for line in text_lines(text):
        if _DEMO.match(line):
            return None
        q = _strip_prefix(line)
        if "?" in q:
            q = q[: q.index("?") + 1]
        q = re.split(r"\s+(?:Answer\s*\d*\s*[:=])", q, maxsplit=1)[0].strip()
        if len(q.split()) >= 2:
            return q if q.endswith("?") else q.rstrip(".") + "?"
        return None
    return None


def parse_short_answer(text: str) -> str | None:
    """A short answer (reader, closed-book): the first line without an `Answer =` prefix."""
    for line in text_lines(text):
        a = _strip_prefix(line)
        a = re.split(r"\s+(?:Evidence|Question)\s*\d*\s*[:=]", a, maxsplit=1)[0].strip()
        return a.rstrip(".").strip() or None
    return None


def parse_closed_book(text: str) -> tuple[str | None, str | None]:
    """(answer, evidence) from `<answer>\\nEvidence = <sentence>`; evidence may be missing."""
    answer = parse_short_answer(text)
    m = re.search(r"evidence\s*[:=]\s*(.+)", text, flags=re.IGNORECASE)
    evidence = m.group(1).strip() if m else None
    return answer, (evidence or None)


def parse_passage(text: str) -> str | None:
    """A recited passage: the text up to the next demonstration-like line."""
    kept: list[str] = []
    for line in text_lines(text):
        if re.match(r"^(question|claim)\s*\d*\s*[:=]", line, flags=re.IGNORECASE) or line.startswith("---"):
            break
        kept.append(_strip_prefix(line))
    passage = " ".join(k for k in kept if k).strip()
    return passage if len(passage.split()) >= 3 else None
