"""QACheck's parsers: the generated question, the QA modules' short answers, evidence and recited passages.

The claim verifier and the validator decide Yes/No through the model's `choose`, so they need no parser
here; the reasoner's rationale and label are read by the shared parsers in `prompts/parsers.py` (through
`veracity.verdicts`), as the chain-of-thought baseline's are. Each returns `None` when the output cannot
be used; callers record that as a parse failure in the trace and fall back explicitly.
"""

from __future__ import annotations

import re

from ..prompts.parsers import text_lines

_PREFIX = r"^\s*(?:question\s*\d*|q\d*|answer\s*\d*|a\d*|relevant passage|passage|evidence|prediction)\s*[:=]\s*"


def _strip_prefix(line: str) -> str:
    line = re.sub(_PREFIX, "", line, flags=re.IGNORECASE)
    return line.strip().strip('"').strip()


def parse_question(text: str) -> str | None:
    """The generated question: the first non-empty line, without a `Question N =` prefix.

    Anything after the first `?` on that line (a stray answer) is dropped. Returns None when
    nothing question-like (at least two words) remains.
    """
    for line in text_lines(text):
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
