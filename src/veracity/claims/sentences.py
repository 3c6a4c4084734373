"""Splitting text into sentences that know where they came from (character spans of the source).

pysbd does the sentence boundaries (abbreviations, decimals, "e.g.", "vs." stay inside a sentence).
Before it, the text is cut into blocks: a blank line ends a block, and so does a line break before
a list item (`- `, `* `, `1.`, `(B)`), because model answers and notes often list items one per line
without a closing period. Other single line breaks are hard wraps and become spaces. Segments with
no letter or digit (a lone `**` or `---`) are not sentences and are dropped.

Each sentence is returned with its text (whitespace squeezed to single spaces) and the span
`[start, end)` of the source it covers, so that `source[start:end]` is the sentence as written.
LEAF splits answers with the same function (`leaf/sentences.py`), so both agree on sentence bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_LIST_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*•+]\s|\d{1,2}[.)]\s|\(?[A-Za-z]\)\s|#+\s))")
_BLANK_LINE = re.compile(r"\n[ \t]*\n+")
_WORDY = re.compile(r"[^\W_]")
_SPACE = re.compile(r"\s+")
# pysbd's time grows with the square of a block's length (3,000 sentences: 19 s), so a longer block is segmented
# CHUNK_CHARS at a time: each piece's last sentence, which the cut may have ended early, starts the next piece
CHUNK_CHARS = 3000


@dataclass(frozen=True)
class Segment:
    """A piece of the source: its text (whitespace squeezed) and its span `[start, end)` in the source."""

    text: str
    start: int
    end: int


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def _pieces(text: str, separator: re.Pattern[str], start: int, end: int) -> list[tuple[int, int]]:
    """The spans of text[start:end] between the matches of `separator`."""
    out, at = [], start
    for m in separator.finditer(text, start, end):
        out.append((at, m.start()))
        at = m.end() if m.end() > m.start() else m.start() + 1
    out.append((at, end))
    return out


def _squeeze(text: str, start: int, end: int) -> tuple[str, list[int]]:
    """text[start:end] with whitespace runs as one space and the ends stripped, and for each of its characters
    the position in `text` it came from (plus one past the last)."""
    chars: list[str] = []
    where: list[int] = []
    at = start
    for m in _SPACE.finditer(text, start, end):
        for i in range(at, m.start()):
            chars.append(text[i])
            where.append(i)
        if chars and m.end() < end:
            chars.append(" ")
            where.append(m.start())
        at = m.end()
    for i in range(at, end):
        chars.append(text[i])
        where.append(i)
    where.append((where[-1] + 1) if where else start)
    return "".join(chars), where


def _segments(block: str) -> list[tuple[int, int]]:
    """pysbd's sentence spans of `block`, segmented CHUNK_CHARS at a time (the same spans, in linear time)."""
    out, at = [], 0
    while True:
        end = min(len(block), at + CHUNK_CHARS)
        spans = [(at + seg.start, at + seg.end) for seg in _segmenter().segment(block[at:end])]
        if end == len(block):
            return out + spans
        if len(spans) < 2:  # one sentence longer than a piece: taken as cut
            out, at = out + spans, end
        else:
            out, at = out + spans[:-1], spans[-1][0]


def sentence_spans(text: str) -> list[Segment]:
    """The sentences of `text`, in order, each with its span in `text`; [] when it has no words at all."""
    # \r\n -> " \n" and \r -> \n keep every offset where it was
    plain = text.replace("\r\n", " \n").replace("\r", "\n")
    out: list[Segment] = []
    for p_start, p_end in _pieces(plain, _BLANK_LINE, 0, len(plain)):
        for b_start, b_end in _pieces(plain, _LIST_ITEM, p_start, p_end):
            block, where = _squeeze(plain, b_start, b_end)
            if not block:
                continue
            for seg_start, seg_end in _segments(block):
                piece = block[seg_start:seg_end]
                lead = len(piece) - len(piece.lstrip())
                stripped = piece.strip()
                if not _WORDY.search(stripped):
                    continue
                s = seg_start + lead
                e = s + len(stripped)
                out.append(Segment(stripped, where[s], where[e - 1] + 1))
    return out


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, in order, each stripped and whitespace-squeezed; [] when it has no words."""
    return [s.text for s in sentence_spans(text)]
