"""Splitting an answer into the sentences LEAF checks one by one.

pysbd does the sentence boundaries (abbreviations, decimals, "e.g.", "vs." stay inside a sentence).
Before it, the text is cut into blocks: a blank line ends a block, and so does a line break before
a list item (`- `, `* `, `1.`, `(B)`), because model answers often list options one per line
without a closing period. Other single line breaks are hard wraps and become spaces. Segments with
no letter or digit (a lone `**` or `---`) are not sentences and are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import UserError

_LIST_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*•+]\s|\d{1,2}[.)]\s|\(?[A-Za-z]\)\s|#+\s))")
_BLANK_LINE = re.compile(r"\n[ \t]*\n+")
_WORDY = re.compile(r"[^\W_]")


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, in order, each stripped; [] when it has no words at all."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    sentences: list[str] = []
    for paragraph in _BLANK_LINE.split(text):
        for block in _LIST_ITEM.split(paragraph):
            block = " ".join(block.split())
            if not block:
                continue
            for seg in _segmenter().segment(block):
                seg = seg.strip()
                if _WORDY.search(seg):
                    sentences.append(seg)
    return sentences


@dataclass(frozen=True)
class Sentences:
    """The sentences to check: the first `max_sentences` of an answer's `total` sentences."""

    checked: list[str]
    total: int

    @property
    def capped(self) -> bool:
        return self.total > len(self.checked)


def answer_sentences(answer: str, max_sentences: int, *, allow_empty: bool = False) -> Sentences:
    """Split `answer` and apply the cap. An empty answer is a UserError unless `allow_empty`.

    `allow_empty` is for answers a model wrote (a pipeline must not stop an evaluation because the
    model said nothing); an answer a user gives to be checked must say something.
    """
    sentences = split_sentences(answer or "")
    if not sentences and not allow_empty:
        raise UserError("the answer is empty: give the text to fact-check" if not (answer or "").strip()
                        else "the answer has no words to fact-check")
    return Sentences(checked=sentences[:max_sentences], total=len(sentences))
