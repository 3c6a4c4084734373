"""What is not a checkable claim: questions, greetings, advice, opinions, speculation, headings and fragments.

Such pieces are kept in the result (marked NOT_CHECKABLE with the reason, so a report can show them in grey
and the summary can count them), but never sent to a pipeline: there is nothing true or false in them.
"""

from __future__ import annotations

import re

from .lexicon import WORD, is_verb

_GREETING = re.compile(
    r"^(?:hi|hello|hey|dear|thanks|thank you|sure|certainly|of course|okay|ok|great question|"
    r"good (?:morning|afternoon|evening)|i hope|hope this helps|let me know|feel free|good luck|"
    r"best regards|regards|cheers|welcome)\b",
    re.I,
)
_ADVICE = re.compile(
    r"^(?:please|you should|you must|you need to|you can|you may want|we recommend|it is "
    r"(?:recommended|advisable|best to)|consider|try|make sure|remember|don'?t|do not|be sure|"
    r"note that|keep in mind|always|never|let'?s|avoid|check|ask|see|click|visit|go to|read)\b",
    re.I,
)
_OPINION = re.compile(
    r"\b(?:i|we) (?:think|believe|feel|guess|suppose|love|like|hate|prefer|hope)\b|"
    r"\bin (?:my|our) (?:opinion|view)\b|\bpersonally\b|\bmy favou?rite\b",
    re.I,
)
_EVALUATIVE = re.compile(
    r"\b(?:is|are|was|were|looks?|seems?|sounds?) (?:so |very |really |truly |quite )?"
    r"(?:beautiful|amazing|wonderful|awesome|terrible|horrible|great|delicious|boring|"
    r"interesting|fascinating|incredible|lovely|ugly|nice|fantastic|brilliant|stunning|"
    r"magnificent|cool|bad|good|overrated|underrated|disappointing)\b",
    re.I,
)
_SPECULATION = re.compile(r"\b(?:might|may|perhaps|maybe)\b(?! \d)")


def not_checkable(text: str) -> str | None:
    """Why `text` is not a checkable claim ("question", "advice", ...), or None when it is one."""
    t = text.strip()
    words = [w for w in WORD.findall(t) if w[0].isalnum()]
    if t.endswith("?"):
        return "question"
    if _GREETING.match(t):
        return "greeting"
    if _OPINION.search(t):
        return "opinion"
    if _ADVICE.match(t):
        return "advice"
    if t.endswith(":"):
        return "introduces what follows"
    if _EVALUATIVE.search(t) and not re.search(r"\d", t):
        return "opinion"
    if _SPECULATION.search(t):
        return "speculation"
    if len(words) < 3:
        return "not a statement"
    if not any(is_verb(w) or (i > 0 and w.endswith("s") and w.islower() and len(w) > 3) for i, w in enumerate(words)):
        return "not a statement"
    return None
