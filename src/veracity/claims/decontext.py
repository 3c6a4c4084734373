"""Decontextualisation by rule: a piece's pronoun replaced by the name it refers to, or the piece flagged.

A claim must say on its own what it is about. The rules resolve a third-person pronoun ("He", "his", "it")
that comes before any name in the claim to the most recent named sentence subject (the *topic*: "Lanny
Flaherty is an actor. He was born in 1949." -> "Lanny Flaherty was born in 1949."), but only when nothing else
could be meant: no other person-like name as a subject or partner ("met Bill Smith", "with Jane Doe") in this or
the previous sentence, a pronoun of the topic's gender (unless the topic is this very sentence's subject: "The
Colosseum is in Rome, and it was built in AD 80" means the Colosseum), and a topic at all. Otherwise the claim is
AMBIGUOUS and says why, rather than being checked as a guess. "they", first-person "I"/"we", a demonstrative
subject ("This was ...") and a place adverb "there" ("There she met ...") are never resolved by the rules: they are
flagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .lexicon import FIRST_PERSON, NAME_JOINERS, NOT_NAMES, PRONOUN_CLASS, WORD, is_capitalised, is_verb
from .types import Span

_PARTNER_CUES = frozenset("with and met married by told than beat defeated succeeded replaced".split())
_DEMONSTRATIVES = frozenset("this that these those".split())
_EXPLETIVE_IT = re.compile(
    r"^it\s+(?:is|was|has been|had been|will be|would be|seems|seemed|remains)\b"
    r".*\b(?:that|to)\b",
    re.I,
)
_EXISTENTIAL = frozenset("is are was were has have had remain remains".split())


@dataclass
class Name:
    text: str
    span: Span
    words: frozenset[str]
    article: str = ""  # "the" where the source writes the name with it ("The Eiffel Tower is ...")

    def same(self, other: Name) -> bool:
        """The same entity named again ("Lanny Flaherty" ... "Flaherty")."""
        return bool(self.words & other.words)


def names_in(source: str, start: int, end: int) -> list[tuple[Name, str]]:
    """The capitalised name runs of source[start:end] outside quotations, each with the word before it."""
    tokens = [(m.group(), m.start(), m.end()) for m in WORD.finditer(source, start, end)]
    out: list[tuple[Name, str]] = []
    in_quote = False
    i = 0
    while i < len(tokens):
        word = tokens[i][0]
        if word in ('"', "“", "”"):
            in_quote = not in_quote if word == '"' else word == "“"
            i += 1
            continue
        if in_quote or not is_capitalised(word) or word.lower() in NOT_NAMES or not word[0].isalpha():
            i += 1
            continue
        j = i + 1
        while j < len(tokens) and (
            is_capitalised(tokens[j][0])
            and tokens[j][0][0].isalpha()
            or (tokens[j][0].lower() in NAME_JOINERS and j + 1 < len(tokens) and is_capitalised(tokens[j + 1][0]))
        ):
            j += 1
        run = tokens[i:j]
        words = frozenset(w.lower() for w, _, _ in run if w.lower() not in NAME_JOINERS)
        before = tokens[i - 1][0].lower() if i > 0 else ""
        name = Name(" ".join(w for w, _, _ in run), (run[0][1], run[-1][2]), words, "the" if before == "the" else "")
        out.append((name, before))
        i = j
    return out


def _subject_name(source: str, start: int, end: int) -> Name | None:
    """The sentence's subject when it is a name: a name run right before the first verb."""
    tokens = [(m.group(), m.start(), m.end()) for m in WORD.finditer(source, start, end)]
    for i, (word, _, _) in enumerate(tokens):
        if is_verb(word):
            head_end = tokens[i - 1][2] if i else start
            found = names_in(source, start, head_end)
            if found and found[-1][0].span[1] == head_end:
                return found[-1][0]
            return None
    return None


@dataclass
class Resolution:
    text: str
    borrowed: list[Span] = field(default_factory=list)
    reason: str = ""  # why the claim stays ambiguous ("" when it is self-contained)


class Resolver:
    """Walks the sentences in order, keeping the topic, and resolves each piece of a sentence."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.topic: Name | None = None
        self.gender: str | None = None  # the topic's pronoun class, once a pronoun was resolved to it
        self.previous: list[Name] = []  # competitors of the sentence before
        self.earlier: list[tuple[Name, str]] = []  # earlier topics whose pronoun class is known (most recent last)
        self.topic_here = False  # the current sentence names the topic as its subject

    def sentence(self, start: int, end: int) -> None:
        """Enter a sentence: its named subject becomes the topic; its partner names are competitors."""
        subject = _subject_name(self.source, start, end)
        self.topic_here = subject is not None  # the topic is this sentence's own subject
        if subject is not None:
            if self.topic is None or not subject.same(self.topic):
                if self.topic is not None and self.gender is not None:
                    self.earlier = [*self.earlier[-2:], (self.topic, self.gender)]
                self.gender = None
                self.topic = subject
            elif len(subject.words) >= len(self.topic.words):
                self.topic = subject  # named again in full: the newer mention (a surname alone keeps the full name)
        competitors = [
            n for n, before in names_in(self.source, start, end) if before in _PARTNER_CUES and len(n.words) >= 2
        ]
        self.current = competitors
        self._competitors = [n for n in competitors + self.previous if self.topic is None or not n.same(self.topic)]
        self.previous = competitors

    def resolve(self, text: str) -> Resolution:
        words = [(m.group(), m.start(), m.end()) for m in WORD.finditer(text)]
        if not words:
            return Resolution(text)
        first = words[0][0].lower()
        if any(w.lower() in FIRST_PERSON and (w != "US") for w, _, _ in words):
            who = next(w for w, _, _ in words if w.lower() in FIRST_PERSON and w != "US")
            return Resolution(text, reason=f"'{who}': the text does not say who is speaking")
        if first in _DEMONSTRATIVES and len(words) > 1 and is_verb(words[1][0]):
            return Resolution(text, reason=f"'{words[0][0]}' refers to something said before")
        if first == "there" and len(words) > 1 and words[1][0].lower() not in _EXISTENTIAL:
            return Resolution(text, reason="'there' refers to a place named before")
        named_at = next(
            (s for w, s, _ in words if is_capitalised(w) and w.lower() not in NOT_NAMES and w[0].isalpha()), len(text)
        )
        pronouns = [(w, s, e) for w, s, e in words if w.lower() in PRONOUN_CLASS]
        if not pronouns or pronouns[0][1] > named_at:
            return Resolution(text)
        word, s, e = pronouns[0]
        kind = PRONOUN_CLASS[word.lower()]
        if kind == "n" and _EXPLETIVE_IT.match(text):
            return Resolution(text)
        if kind == "p":
            return Resolution(text, reason=f"'{word}': the rules cannot tell who or what it refers to")
        if self.topic is None:
            return Resolution(text, reason=f"'{word}': no one is named before it")
        # a name the claim itself writes after the pronoun is not what the pronoun stands for ("It was designed by
        # Hedda Lund" does not leave "It" between the bridge and Hedda Lund)
        rivals_named = [n for n in self._competitors if n.text not in text[e:]]
        if rivals_named:
            return Resolution(text, reason=f"'{word}' could mean {self.topic.text} or {rivals_named[0].text}")
        rivals = [n for n, g in self.earlier if g == kind and not n.same(self.topic)]
        if self.gender is None and rivals and not self.topic_here:
            return Resolution(text, reason=f"'{word}' could mean {self.topic.text} or {rivals[-1].text}")
        if self.gender is not None and kind != self.gender:
            return Resolution(text, reason=f"'{word}' does not refer to {self.topic.text}, and nothing else named fits")
        others = {PRONOUN_CLASS[w.lower()] for w, _, _ in pronouns[1:]} - {kind}
        if others:
            return Resolution(text, reason="more than one unnamed person or thing")
        self.gender = kind
        name = self.topic.text
        if self.topic.article:  # "It was completed in 1889." -> "The Eiffel Tower was completed in 1889."
            name = f"{self.topic.article.capitalize() if word[0].isupper() else self.topic.article} {name}"
        possessive = word.lower() in ("his", "its") or (word.lower() == "her" and _possessive_her(words, s))
        replacement = f"{name}'s" if possessive else name
        return Resolution(text[:s] + replacement + text[e:], borrowed=[self.topic.span])


def _possessive_her(words: list[tuple[str, int, int]], at: int) -> bool:
    """'her' before a noun is possessive ("her husband"); before a preposition, a verb or the end, an object."""
    following = [w for w, s, _ in words if s > at]
    if not following or not following[0][0].isalpha():
        return False
    nxt = following[0].lower()
    return not (is_verb(nxt) or nxt in ("in", "on", "at", "to", "for", "with", "from", "by", "and", "as"))
