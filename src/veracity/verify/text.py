"""Word-level facts of a claim and its evidence: the tokens, content words, numbers, names and negations.

Shared by the lexical baseline's features and by the synthetic training edits, so both agree on what a
number, a name or a negation is.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d[\d,.]*\d|\d")
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
STOPWORDS = frozenset(
    """a an the and or but if of at by for with about against between into through during before after
above below to from up down in out on off over under again further then once here there when where why how all any
both each few more most other some such only own same so than too very s t can will just don should now is are was
were be been being have has had having do does did doing i me my we our you your he him his she her it its they them
their what which who whom this that these those am as until while also its itself themselves himself herself would
could may might must shall one""".split()
)
NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor cannot can't don't doesn't didn't isn't wasn't
aren't weren't won't wouldn't shouldn't couldn't hasn't haven't hadn't without lack lacks lacked fail fails failed
only""".split()
)


def tokens(text: str) -> list[str]:
    return _WORD.findall(text)


def words(text: str) -> list[str]:
    return [t.lower() for t in tokens(text)]


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS and not _NUMBER.fullmatch(w) and len(w) > 1}


def numbers(text: str) -> set[str]:
    return {n.replace(",", "").rstrip(".") for n in _NUMBER.findall(text)}


def names(text: str) -> set[str]:
    """Capitalised words that do not start a sentence (a cheap stand-in for named entities)."""
    out: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        toks = tokens(sentence)
        for t in toks[1:]:
            if t[0].isupper() and t.lower() not in STOPWORDS:
                out.add(t.lower())
    return out


def negations(text: str) -> int:
    return sum(1 for w in words(text) if w in NEGATIONS or w.endswith("n't"))


def stem(word: str) -> str:
    """A crude suffix stripper, enough to match "separated" with "separation" and "films" with "film"."""
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s", "ly"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
