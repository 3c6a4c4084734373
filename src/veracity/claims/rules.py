"""The rule-based splitter: a sentence into atomic pieces, each with the source spans it is made of.

Three cuts, each made only where the rules are sure, because a wrong cut makes a claim nobody wrote:
1. clauses: at a semicolon, and at a coordinating conjunction (`and`, `but`, `while`, `whereas`, `yet`, `so`,
   `or`) when both sides are clauses (the left side has a verb; the right side starts with a verb, then it
   shares the left side's subject -- an ellipsis --, or has a subject and a verb of its own);
2. non-restrictive relative clauses at the end of a sentence (", which began in 1970" -> "his career began in
   1970"), which take the noun phrase before the comma as their subject;
3. lists: "appeared in films, television shows, and plays" -> one piece per item (three or more short items
   without a verb; two when both are short lower-case words: "an actor and director").
Pronouns are resolved afterwards (`decontext.py`), on the pieces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lexicon import DETERMINERS, PREPOSITIONS, SUBJECT_PRONOUNS, WORD, is_capitalised, is_verb
from .sentences import Segment
from .types import Span

CONJUNCTIONS = frozenset("and but while whereas yet so or".split())
_QUOTES = '"“”'
MAX_ITEM_WORDS = 6


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int

    @property
    def low(self) -> str:
        return self.text.lower()


@dataclass
class Piece:
    """Part of a sentence as a claim: its parts (token runs, in the order they are read) and their spans."""

    parts: list[list[Token]]
    quoted: tuple[int, ...] = ()  # parts that are quoted list items ("The Abyss"): written inside quotes

    @property
    def spans(self) -> list[Span]:
        return sorted({(p[0].start, p[-1].end) for p in self.parts if p})

    def text(self, source: str) -> str:
        words = [
            _quoted(_run_text(source, p)) if i in self.quoted else _run_text(source, p)
            for i, p in enumerate(self.parts)
            if p
        ]
        return finish(" ".join(w for w in words if w))


def tokens_of(source: str, seg: Segment) -> list[Token]:
    return [Token(m.group(), m.start(), m.end()) for m in WORD.finditer(source, seg.start, seg.end)]


def _run_text(source: str, run: list[Token]) -> str:
    text = " ".join(source[run[0].start : run[-1].end].split())
    text = re.sub(r",\s*([\"”’])", r"\1", text)  # "The Abyss," -> "The Abyss"
    return text.strip(" ,;:-–—")


def _quoted(text: str) -> str:
    return f'"{text.strip(_QUOTES + " ,")}"'


def _unquote(run: list[Token]) -> tuple[list[Token], bool]:
    """A list item without the quotation marks around it (and whether it had them)."""
    inner = [t for t in run if t.text not in _QUOTES]
    return inner, len(inner) < len(run)


def finish(text: str) -> str:
    """A claim's text as a sentence: no dangling separator, a capital first letter, a closing full stop."""
    text = " ".join(text.split()).strip(" ,;:-–—")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?\"”'’)" else text + "."


def _has_verb(run: list[Token]) -> bool:
    return any(is_verb(t.text) for t in run)


def subject_of(clause: list[Token]) -> list[Token]:
    """The subject of a clause: the words before its first verb, after any introductory phrase ("In 1990, ")."""
    for i, t in enumerate(clause):
        if is_verb(t.text):
            head = clause[:i]
            commas = [j for j, h in enumerate(head) if h.text == ","]
            return head[commas[-1] + 1 :] if commas else head
    return []


def _is_clause_start(rest: list[Token]) -> bool:
    """Whether `rest` (the words after a conjunction) is a clause with its own subject and verb."""
    if not rest or not _has_verb(rest[:6]) or is_verb(rest[0].text):
        return False
    first = rest[0]
    return first.low in SUBJECT_PRONOUNS or first.low in DETERMINERS or is_capitalised(first.text)


def _clauses(tokens: list[Token]) -> list[tuple[list[Token], bool]]:
    """The sentence's clauses, each with whether it is elliptical (starts with its verb: shares the subject)."""
    out: list[tuple[list[Token], bool]] = []
    start, i = 0, 0
    elliptical = False
    while i < len(tokens):
        t = tokens[i]
        left = tokens[start:i]
        cut = None
        if t.text == ";" and _has_verb(left):
            rest = tokens[i + 1 :]
            cut = (i, i + 1, bool(rest) and is_verb(rest[0].text))
        elif t.low in CONJUNCTIONS and i > start and _has_verb(left):
            rest = tokens[i + 1 :]
            after_comma = tokens[i - 1].text == ","
            if (
                rest
                and is_verb(rest[0].text)
                and rest[0].text.islower()
                and not (t.low == "so" and rest[0].low == "that")
            ):
                cut = (i - 1 if after_comma else i, i + 1, True)
            elif _is_clause_start(rest) and (after_comma or rest[0].low in SUBJECT_PRONOUNS):
                cut = (i - 1 if after_comma else i, i + 1, False)
        if cut:
            end, resume, ell = cut
            out.append((tokens[start:end], elliptical))
            start, i, elliptical = resume, resume, ell
            continue
        i += 1
    out.append((tokens[start:], elliptical))
    return [(c, e) for c, e in out if any(ch.isalnum() for tok in c for ch in tok.text)]


def _relative(clause: list[Token]) -> tuple[list[Token], list[Token], list[Token]] | None:
    """(main clause, antecedent, relative clause without its pronoun) for ", which/who VERB ..." at the end."""
    for i in range(1, len(clause) - 2):
        if clause[i].text == "," and clause[i + 1].low in ("which", "who") and _has_verb(clause[i + 2 : i + 5]):
            if any(t.text == "," for t in clause[i + 2 :]):
                return None  # not at the end of the sentence: leave it whole
            before = clause[:i]
            j = len(before)
            while j > 0 and not (
                before[j - 1].low in PREPOSITIONS or is_verb(before[j - 1].text) or before[j - 1].text in ",;"
            ):
                j -= 1
            antecedent = before[j:]
            if not antecedent or not _has_verb(before[:j]):
                return None
            return before, antecedent, clause[i + 2 :]
    return None


def _item_start(run: list[Token]) -> int:
    """Where a list's first item starts inside the words before the list's first comma."""
    quotes = [j for j, t in enumerate(run) if t.text in _QUOTES]
    if len(quotes) % 2 == 1:  # the comma is inside an open quotation: the item is the quotation
        return quotes[-1]
    for j in range(len(run) - 1, -1, -1):
        if run[j].low in PREPOSITIONS or is_verb(run[j].text):
            return j + 1
    return -1


def _list_items(clause: list[Token]) -> tuple[list[Token], list[list[Token]]] | None:
    """(the words before the list, its items) when the clause ends in a list, else None."""
    body = list(clause)
    while body and (body[-1].text in ".!?" or body[-1].text in _QUOTES):
        body.pop()
    conj = [i for i, t in enumerate(body) if t.low in ("and", "or")]
    if not conj:
        return None
    k = conj[-1]
    last = body[k + 1 :]
    if not last or len([t for t in last if t.text.isalnum()]) > MAX_ITEM_WORDS or _has_verb(last):
        return None
    items = [last]
    end = k - 1 if body[k - 1].text == "," else k
    commas = [i for i in range(end) if body[i].text == ","]
    while commas:
        c = commas.pop()
        item = body[c + 1 : end]
        if item and all(t.text in _QUOTES for t in item):  # the closing quote of the item before: skip it
            end = c
            continue
        if not item or len([t for t in item if t.text.isalnum()]) > MAX_ITEM_WORDS or _has_verb(item):
            commas.append(c)
            break
        items.insert(0, item)
        end = c
    head = body[:end]
    start = _item_start(head)
    if start <= 0 or start >= len(head):
        return None
    first = head[start:]
    if len([t for t in first if t.text.isalnum()]) > MAX_ITEM_WORDS or _has_verb(first):
        return None
    items.insert(0, first)
    if len(items) < 2:
        return None
    if len(items) == 2 and not all(
        t.text.isalpha() and t.text.islower() for it in items for t in it if t.text not in DETERMINERS
    ):
        return None
    if len(items) == 2 and any(len(it) > 3 for it in items):
        return None
    return head[:start], items


def split_pieces(source: str, seg: Segment) -> list[Piece]:
    """The atomic pieces of one sentence, in order."""
    tokens = tokens_of(source, seg)
    pieces: list[Piece] = []
    main_subject: list[Token] = []
    for clause, elliptical in _clauses(tokens):
        subject = main_subject if elliptical else []
        if not elliptical:
            main_subject = subject_of(clause) or main_subject
        rel = _relative(clause)
        extra: list[Piece] = []
        if rel:
            clause, antecedent, rest = rel
            extra.append(Piece([antecedent, rest]))
        listed = _list_items(clause)
        if listed:
            head, items = listed
            for item in items:
                inner, quoted = _unquote(item)
                pieces.append(Piece([subject, head, inner], quoted=(2,) if quoted else ()))
        else:
            pieces.append(Piece([subject, clause]))
        pieces.extend(extra)
    return pieces
