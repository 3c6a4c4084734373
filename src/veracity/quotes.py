"""Provenance of a quote: the content hash of its source text, the time, finding the quote again, and a short diff.

sha256_text(page_text)                  -> "9f86d0..."
locate("the quote", new_text, near=120) -> (start, end) or None
short_diff(old_quote, new_span)         -> '... was [-30-]{+31+} years old ...'
"""

from __future__ import annotations

import difflib
import hashlib
import re
from datetime import UTC, datetime

DIFF_CONTEXT = 40  # characters of unchanged text shown around each change
MAX_DIFF = 400


def sha256_text(text: str) -> str:
    """The SHA-256 (hex) of a source text as UTF-8."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def utc_now() -> str:
    """Now, ISO-8601 UTC to the second (as an index's manifest writes its creation time)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def locate(quote: str, text: str, near: int | None = None) -> tuple[int, int] | None:
    """Where `quote` stands in `text`, exactly: the occurrence nearest to offset `near` (the first without one);
    None when it is not there (an empty quote is nowhere)."""
    if not quote:
        return None
    best, pos = None, text.find(quote)
    while pos != -1:
        if near is None:
            return pos, pos + len(quote)
        if best is None or abs(pos - near) < abs(best - near):
            best = pos
        pos = text.find(quote, pos + 1)
    return None if best is None else (best, best + len(quote))


def aligned_span(quote: str, text: str, start: int, end: int) -> tuple[int, int]:
    """Where a quote that no longer stands in `text` stood: the stretch near its old offsets `start:end` that lines
    up with it best (text inserted or removed inside it moves its end), else the same offsets."""
    lo = max(0, start - len(quote))
    window = text[lo : end + len(quote)]
    blocks = [b for b in difflib.SequenceMatcher(None, quote, window, autojunk=False).get_matching_blocks() if b.size]
    if not blocks or sum(b.size for b in blocks) < len(quote) / 3:
        return start, min(end, len(text))
    first, last = blocks[0], blocks[-1]
    s = max(0, first.b - first.a)
    e = min(len(window), last.b + last.size + (len(quote) - last.a - last.size))
    return lo + s, lo + max(s, e)


def short_diff(old: str, new: str, limit: int = MAX_DIFF) -> str:
    """What changed from `old` to `new`, word by word: removed words as [-...-], added as {+...+}, with a little
    unchanged text around each change ("..." where it is left out); at most about `limit` characters."""
    a, b = old.split(), new.split()
    parts: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            same = " ".join(a[i1:i2])
            if len(same) > 2 * DIFF_CONTEXT:
                first = "" if not parts else same[:DIFF_CONTEXT].rsplit(" ", 1)[0] + " "
                last = "" if i2 == len(a) else " " + same[-DIFF_CONTEXT:].split(" ", 1)[-1]
                same = f"{first}...{last}".strip()
            parts.append(same)
            continue
        if i2 > i1:
            parts.append("[-" + " ".join(a[i1:i2]) + "-]")
        if j2 > j1:
            parts.append("{+" + " ".join(b[j1:j2]) + "+}")
    out = " ".join(p for p in parts if p)
    return out if len(out) <= limit else out[: limit - 3] + "..."


_CHANGE = re.compile(r"\[-(.*?)-\]|\{\+(.*?)\+\}", re.S)


def diff_parts(diff: str) -> list[dict[str, str]]:
    """A `short_diff` as parts a page draws: [{"op": "-" | "+" | "=", "text"}]."""
    parts, pos = [], 0
    for m in _CHANGE.finditer(diff or ""):
        if m.start() > pos:
            parts.append({"op": "=", "text": diff[pos : m.start()]})
        parts.append({"op": "-", "text": m.group(1)} if m.group(1) is not None else {"op": "+", "text": m.group(2)})
        pos = m.end()
    if pos < len(diff or ""):
        parts.append({"op": "=", "text": diff[pos:]})
    return parts
