"""Reading the model's facts for one sentence, and keeping only those the sentence (or its context) states.

A small model copies the demonstrations, repeats the prompt or invents facts. A fact is kept only when it is
grounded: at least 70% of its content words (not articles, pronouns, auxiliaries or prepositions) occur in the
sentence or its context. A reply with no usable fact is a parse failure; the sentence is then split by the
rules (`extract.py` records which sentences that happened to, and the result's method says "model+rules").
"""

from __future__ import annotations

import re

from .lexicon import AUX, DETERMINERS, PREPOSITIONS, PRONOUN_CLASS

GROUNDED = 0.7
MAX_FACTS = 12
_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.*\S)\s*$")
_STOP = frozenset({"and", "or", "not", "that", "which", "who"}) | AUX | DETERMINERS | PREPOSITIONS | set(PRONOUN_CLASS)


def parse_facts(text: str) -> list[str] | None:
    """The facts of a reply: its "- " lines up to the first blank line or new demonstration; [] for "- NONE";
    None when the reply has no such line."""
    facts: list[str] = []
    for line in (text or "").replace("\r", "").split("\n"):
        if re.match(r"^\s*(?:CONTEXT|SENTENCE|FACTS|Task)\s*:", line) or line.startswith("---"):
            break
        m = _ITEM.match(line)
        if not m:
            if facts and not line.strip():
                break
            continue
        fact = m.group(1).strip().strip("\"'")
        if fact.upper().rstrip(".") == "NONE":
            return []
        facts.append(fact)
    return facts[:MAX_FACTS] if facts else None


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[^\W_]+", text.lower()) if w not in _STOP}


def grounded(fact: str, sentence: str, context: str) -> bool:
    """Whether the fact says only what the sentence and its context say (most of its content words are theirs)."""
    words = content_words(fact)
    if not words:
        return False
    known = content_words(sentence) | content_words(context)
    return len(words & known) / len(words) >= GROUNDED and bool(words & content_words(sentence))
