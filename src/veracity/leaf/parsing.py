"""Parsers for what the model writes in reply to the LEAF prompts, with fallbacks.

They return None (or "") when the output cannot be used; the prompt spec's call (`prompts.py`) records a
parse failure and the checker falls back explicitly (a sentence with no usable query is searched for with
its own text).
"""

from __future__ import annotations

import re

_QUERY_PREFIX = re.compile(r"^\s*(?:search\s+query|query|google\s+search|search)\s*[:=]\s*", re.IGNORECASE)
_CODE_BLOCK = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)
_DEMO_START = re.compile(r"^(?:question|statement|knowledge|task)\s*:", re.IGNORECASE)
_REASONING_CUE = re.compile(r"^\s*reasoning\s*:\s*", re.IGNORECASE)


def parse_query(text: str) -> str | None:
    """The search query: the content of a ``` block if there is one, else the first non-empty line.

    A `Search query:` / `Query:` prefix and surrounding quotes or backticks are removed. Returns
    None when fewer than two characters of query remain or the line starts a new demonstration.
    """
    if not text:
        return None
    m = _CODE_BLOCK.search(text)
    candidates = [m.group(1)] if m else []
    candidates.append(text.replace("```", "\n"))
    for cand in candidates:
        for line in cand.replace("\r", "").split("\n"):
            line = line.strip()
            if not line:
                continue
            if _DEMO_START.match(line) or line.startswith("---"):
                return None
            q = _QUERY_PREFIX.sub("", line).strip().strip("`\"'\u201c\u201d\u2018\u2019").strip()
            return q if len(q) >= 2 and re.search(r"[^\W_]", q) else None
    return None


def parse_reasoning(text: str, max_chars: int = 600) -> str:
    """The rater's reasoning: the text before `Final answer`, on one line, at most `max_chars`."""
    cut = re.split(
        r"final\s+answer|\n\s*\n|\n-{3,}|\n(?:KNOWLEDGE|QUESTION|STATEMENT)\s*:",
        text or "",
        maxsplit=1,
        flags=re.IGNORECASE,
    )[0]
    one = _REASONING_CUE.sub("", " ".join(cut.split()))  # the model may repeat the cue
    return one if len(one) <= max_chars else one[: max_chars - 1].rstrip() + "…"
