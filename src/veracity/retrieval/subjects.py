"""Whether a query names an article's subject: how the knowledge base keeps to the articles a claim is about
(index.SubjectRetriever)."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")  # "Mercury (planet)": the article's subject is "Mercury"
MIN_NAME_LETTERS = 4  # a last name shorter than this ("Li", "Ray") names too many things to stand alone
_PARTICLES = frozenset(
    {"van", "von", "de", "da", "di", "du", "del", "der", "den", "la", "le", "ter", "bin", "ibn", "al"}
)
#: particles that make a title a place, an event or a work rather than a person ("Tour de France" has "de" before a
#: place; "Lake Albert" and "Mount Everest" begin with a kind of place)
_NOT_IN_NAMES = frozenset(
    {
        "Lake",
        "Mount",
        "River",
        "Cape",
        "Saint",
        "St.",
        "Gulf",
        "Bay",
        "Sea",
        "Battle",
        "Treaty",
        "Tour",
        "University",
        "Republic",
        "Kingdom",
        "Empire",
        "House",
    }
)


def names_subject(query: str, title: str, taken: set[str] = frozenset()) -> bool:
    """Whether `query` names the subject of the article `title`: the title (less a bracketed qualifier) as whole
    words, without regard to case (`title_span`); or a person's name by its last word (`surname_of`): "Einstein"
    names "Albert Einstein", and "Beethoven" "Ludwig van Beethoven", unless that word of the query is `taken`, part
    of another article's whole title it names ("London" names "London", not "Jack London")."""
    if title_span(query, title) is not None:
        return True
    surname = surname_of(title)
    return surname is not None and surname in _WORD.findall(query) and surname.casefold() not in taken


def title_span(query: str, title: str) -> tuple[int, int] | None:
    """The word positions [start, end) of the article's title (less its qualifier) in `query`, case aside."""
    subject = [w.casefold() for w in _WORD.findall(_QUALIFIER.sub("", title))]
    words = [w.casefold() for w in _WORD.findall(query)]
    n = len(subject)
    if not n:
        return None
    return next(((i, i + n) for i in range(len(words) - n + 1) if words[i : i + n] == subject), None)


def taken_words(query: str, titles: list[str]) -> set[str]:
    """The words of `query` (folded) that belong to a whole title among `titles` it names."""
    words = [w.casefold() for w in _WORD.findall(query)]
    taken: set[str] = set()
    for title in titles:
        span = title_span(query, title)
        if span is not None:
            taken.update(words[span[0] : span[1]])
    return taken


def surname_of(title: str) -> str | None:
    """The last word of a title that reads as a person's name: two to four capitalised words, name particles
    between them allowed ("Ludwig van Beethoven"), no digits ("Philip II"), the last at least MIN_NAME_LETTERS
    letters; else None ("Tour de France" ends in a particle's phrase; "World War II" has a numeral)."""
    words = _QUALIFIER.sub("", title).split()
    if not 2 <= len(words) <= 4 or words[-1] in _PARTICLES:
        return None
    for w in words:
        if w in _PARTICLES:
            continue
        if not (w[:1].isupper() and w.replace("-", "").replace("'", "").replace(".", "").isalpha()):
            return None
        if w.isupper() and len(w) > 1:  # "II", "NATO": a numeral or an acronym, not a name
            return None
    last = words[-1]
    if len(last) < MIN_NAME_LETTERS or any(w in _NOT_IN_NAMES for w in words[:-1]):
        return None
    return last


def mention_at(query: str, title: str) -> int:
    """Where in `query` (a word position) the article is first named, by its title or its surname; a large number
    when it is not."""
    span = title_span(query, title)
    if span is not None:
        return span[0]
    surname, words = surname_of(title), _WORD.findall(query)
    return words.index(surname) if surname in words else len(words) + 1
