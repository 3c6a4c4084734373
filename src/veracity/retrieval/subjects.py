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


#: words that may stand before a surname without making it another person's ("President Trump", "Dr. Curie")
HONORIFICS = frozenset(
    {
        "President", "Vice", "Prime", "Minister", "Chancellor", "Senator", "Governor", "Mayor", "King", "Queen",
        "Prince", "Princess", "Emperor", "Empress", "Pope", "Saint", "Sir", "Dame", "Lord", "Lady", "General",
        "Admiral", "Captain", "Colonel", "Chairman", "Judge", "Justice", "Mr", "Mrs", "Ms", "Miss", "Dr", "Prof",
        "Professor", "Rev", "Reverend", "Father", "Sister", "Brother", "Uncle", "Aunt", "Former", "Late", "Young",
        "Old", "The", "A", "An", "When", "While", "After", "Before", "Why", "How", "If", "As", "But", "And", "So",
        "Was", "Is", "Were", "Are", "Did", "Does", "Do", "Has", "Had", "Have", "Can", "Could", "Will", "Would",
        "Should", "In", "On", "At", "By", "For", "From", "With", "Of", "To", "Then", "Yes", "No", "Only", "Even",
        "Also", "What", "Who", "Where", "Which", "That", "This", "Since", "Until", "Though", "Although",
    }
)  # fmt: skip


def names_subject(query: str, title: str, taken: set[str] = frozenset()) -> bool:
    """Whether `query` names the subject of the article `title`, as a name and not as a word:
    - its title (less a bracketed qualifier) as whole words, without regard to case (`title_span`), except a
      one-word title that the query writes in lower case after its first word ("freezing weather" does not name
      "Freezing", nor "no correlation" "Correlation"; "Paris" and "Correlation does not ..." do);
    - or a person's name by its last word (`surname_of`): "Einstein" names "Albert Einstein", and "Beethoven"
      "Ludwig van Beethoven", unless that word of the query is `taken`, part of another article's whole title it
      names ("London" names "London", not "Jack London"), or another given name stands before it ("Hilda Heine" is
      not "Heinrich Heine", nor "Neil Armstrong" "Louis Armstrong"; "President Trump" is "Donald Trump")."""
    span = title_span(query, title)
    if span is not None:
        return span[1] - span[0] > 1 or _one_word_subject(_WORD.findall(query), span[0])
    surname = surname_of(title)
    if surname is None or _folded(surname) in taken:
        return False
    words = _WORD.findall(query)
    given = set(_QUALIFIER.sub("", title).split()[:-1])
    return any(w == surname and (i == 0 or not _is_other_name(words[i - 1], given)) for i, w in enumerate(words))


#: the words that may open a claim before a common noun in lower case that is its topic ("A giraffe's neck ...",
#: "The platypus ..."); a common noun after other words is one on the way ("... could cause freezing weather",
#: "Scientists found no correlation ...")
OPENING_WORDS = frozenset({"a", "an", "the", "all", "most", "many", "some", "every", "no", "male", "female", "wild"})


def _one_word_subject(words: list[str], at: int) -> bool:
    """Whether the query's word at position `at`, which a one-word title matches, names that article: a name (a
    capitalised word that is not part of a longer name: "Bank of England" does not name "Bank", nor "Gotthard Base
    Tunnel" "Tunnel"), or a common noun in lower case near the claim's start, where its topic is."""
    word = words[at]
    if not word[:1].isupper():
        return all(w.casefold() in OPENING_WORDS for w in words[:at])
    before = words[at - 1] if at else ""
    if before == "s" and at >= 2 and words[at - 2][:1].isupper():  # "Cooper's Hill"
        return False
    if at > 0 and before[:1].isupper() and before not in HONORIFICS:
        return False
    after = words[at + 1 : at + 4]
    if after[:1] and after[0][:1].isupper():
        return False
    return not (after[:1] == ["of"] and any(w[:1].isupper() for w in after[1:]))


def _is_other_name(word: str, given: set[str]) -> bool:
    """Whether `word`, just before a surname, is another person's given name: capitalised, not one of the title's
    own names, not an honorific or a sentence's opening word."""
    return word[:1].isupper() and word not in given and word not in HONORIFICS and not word.isupper()


def title_span(query: str, title: str) -> tuple[int, int] | None:
    """The word positions [start, end) of the article's title (less its qualifier) in `query`, case aside."""
    subject = [_folded(w) for w in _WORD.findall(_QUALIFIER.sub("", title))]
    words = [_folded(w) for w in _WORD.findall(query)]
    n = len(subject)
    if not n:
        return None
    return next(((i, i + n) for i in range(len(words) - n + 1) if words[i : i + n] == subject), None)


def _folded(word: str) -> str:
    """A word as titles are matched: case aside, and a plural's "s" ("Bats" names "Bat", "Vikings" "Viking")."""
    w = word.casefold()
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def taken_words(query: str, titles: list[str]) -> set[str]:
    """The words of `query` (folded) that belong to a whole title among `titles` it names."""
    words = [_folded(w) for w in _WORD.findall(query)]
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
