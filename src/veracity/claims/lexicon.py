"""Word lists the rule-based extractor reads text with (no tagger: small, fixed and easy to audit)."""

from __future__ import annotations

import re

AUX = frozenset(
    """is was are were be been being am has have had having does did do will would can could shall
should must may might 's 're""".split()
)
#: frequent verbs that the -ed rule misses (irregular pasts, presents), for finding a clause's verb
VERBS = frozenset(
    """won became began made wrote led took went gave got grew came saw ran became founded holds
remains includes include included contains contain lives live works work plays play serves serve leads lead
owns own means mean says said told sold built bought brought taught thought fought left lost met paid put read
set sent spent stood struck swam threw wore wove won wrote broke chose drove fell flew forgot froze hid held
hung kept knew laid lay rode rose sang sank shook shot shut slept spoke stole stuck swore swung tore understood
woke became becomes gives give takes take makes make writes write runs run stars star lies lie flows flow
borders border covers cover consists consist belongs belong comprises comprise causes cause raises raise
increases increase reduces reduce produces produce affects affect treats treat prevents prevent requires require
provides provide allows allow knows know""".split()
)
#: words that open a clause's own subject after a conjunction: a new clause rather than a list item
SUBJECT_PRONOUNS = frozenset("he she it they we i you this that these those there".split())
PREPOSITIONS = frozenset(
    """in on at of for with from by to into onto about as after before during since until
under over between among through throughout across against near within without including such""".split()
)
DETERMINERS = frozenset("the a an his her its their our my your this that these those some many several".split())
#: capitalised words that start sentences without being names
NOT_NAMES = frozenset(
    """the a an in on at of for with from by to and but or as after before during since he she
it they we i you his her its their our my your this that these those there here some many several one two
however also although while when where what who which why how yes no if then so today yesterday
january february march april may june july august september october november december monday tuesday
wednesday thursday friday saturday sunday some most all both each every many""".split()
)
NAME_JOINERS = frozenset("of de da del della di du van von der den la le al bin ibn y and".split())

PRONOUN_CLASS = {
    "he": "m",
    "him": "m",
    "his": "m",
    "himself": "m",
    "she": "f",
    "her": "f",
    "hers": "f",
    "herself": "f",
    "it": "n",
    "its": "n",
    "itself": "n",
    "they": "p",
    "them": "p",
    "their": "p",
    "theirs": "p",
    "themselves": "p",
}
FIRST_PERSON = frozenset("i me my mine myself we us our ours ourselves".split())

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|\S")


_NOT_PAST = frozenset("seed speed breed greed steed creed weed deed hundred shed bred fled".split())


def is_verb(word: str) -> bool:
    """A rough test for a finite verb (auxiliary, listed verb, or a past form in -ed)."""
    w = word.lower().strip(".,;:!?\"'()")
    return w in AUX or w in VERBS or (len(w) >= 4 and w.endswith("ed") and w.isalpha() and w not in _NOT_PAST)


def is_capitalised(word: str) -> bool:
    w = word.strip("\"'“”‘’()")
    return bool(w) and w[0].isupper()
