"""Shared parsers for what models write in reply to the templates, with regex fallbacks.

Here: reading a verdict label from free text (`parse_label`, `choice_text`, `is_parsed`), the True/False
labels and final-answer cue of the reasoner and chain-of-thought prompts, and the reasoning before that
answer (`parse_rationale`); `veracity.verdicts` uses them for QACheck, the baselines, DEFAME and LEAF.
Each system's own parsers live in its package: `qacheck/parsing.py`, `defame/parsing.py`, `leaf/parsing.py`.

Each returns `None` (or an empty value) when the output cannot be used; the prompt spec's call records that
as a parse failure (`prompts/spec.py`) and the pipeline falls back explicitly. No parser ever invents a label.
"""

from __future__ import annotations

import re


def text_lines(text: str) -> list[str]:
    """The non-blank lines of a model's output, stripped (the parsers' common first step)."""
    return [ln.strip() for ln in text.replace("\r", "").split("\n") if ln.strip()]


def parse_rationale(text: str) -> str:
    """The reasoning before `Therefore, the final answer is ...` (which the label call decides)."""
    cut = re.split(
        r"therefore,?\s+the\s+final\s+answer|the\s+final\s+answer\s+is", text, maxsplit=1, flags=re.IGNORECASE
    )[0]
    return "\n".join(text_lines(cut)).strip()


_CONCLUSION = re.compile(
    r"\b(?:claim|statement)\s+(?:is|was)(n[’']t\s+|\s+not\s+|\s+)(true|false|correct|incorrect|accurate|inaccurate|"
    r"supported|refuted|wrong|right)\b",
    re.IGNORECASE,
)
_AFFIRM = {"true", "correct", "accurate", "supported", "right"}


def stated_conclusion(rationale: str) -> str | None:
    """What a free-text rationale itself concludes ("the claim is false" -> Refuted), or None when it states no
    conclusion or states both. Used to show, never to hide, a rationale that disagrees with the label."""
    found = set()
    for m in _CONCLUSION.finditer(rationale):
        affirmed = (m.group(2).lower() in _AFFIRM) != bool(m.group(1).strip())
        found.add("Supported" if affirmed else "Refuted")
    return found.pop() if len(found) == 1 else None


# The reasoner and CoT prompts ask for "True"/"False"; pipelines speak Supported/Refuted.
TRUE_FALSE = ["True", "False"]
TRUTH_TO_LABEL = {"True": "Supported", "False": "Refuted"}
FINAL_ANSWER_CUE = "Therefore, the final answer is:"


# --------------------------------------------------------------------------------------------------
# Labels. A label is read from free text only when the text asserts exactly one label unambiguously.

_NEGATOR = re.compile(
    r"(?<![A-Za-z])(?:not|no|never|neither|nor|cannot|without|hardly|barely)(?![A-Za-z])"
    r"|n[’']t(?![A-Za-z])",
    re.IGNORECASE,
)
# refusals, uncertainty and hedges: the model did not commit to a label
_UNSURE = re.compile(
    r"(?<![A-Za-z])(?:can\s*not|cannot|can[’']t|unable|not\s+sure|unsure|uncertain|unclear|unknown|undetermined|"
    r"undecided|indeterminate|inconclusive|ambiguous|unverifiable|don[’']t\s+know|do\s+not\s+know|no\s+idea|"
    r"neither|either|both|hard\s+to\s+(?:say|tell)|impossible\s+to|maybe|perhaps|possibly|insufficient|"
    r"not\s+enough|partly|partially|half|mostly|refuse|who\s+knows)(?![A-Za-z])",
    re.IGNORECASE,
)
# an explicit final answer right before a label: "Answer: X", "the final answer is X", "the claim is X"
_FINAL_MARKER = re.compile(
    r"(?:(?:final\s+)?answer|verdict|label|rating|prediction|conclusion)\s*(?:is\s*:?|[:=\-])\s*[\"'*`(\[]*$"
    r"|(?:the\s+)?(?:claim|statement)\s+is\s*[\"'*`(\[]*$",
    re.IGNORECASE,
)
# where a short answer ends and the model starts writing the next demonstration
_DEMO_LINE = re.compile(
    r"\n\s*\n|\n\s*-{3,}|\n\s*(?:claim|question|contexts?|record|knowledge|statement|passages|"
    r"search\s+result)\s*\d*\s*[:=]",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?;\n]")
_CLAUSE_BREAK = re.compile(
    r"[,:;.!?\n()]|(?<![A-Za-z])(?:but|however|yet|although|though|whereas|rather|"
    r"instead)(?![A-Za-z])",
    re.IGNORECASE,
)


def _label_mentions(text: str, labels: list[str] | tuple[str, ...]) -> list[tuple[int, int, str]]:
    """Whole-word occurrences of the labels, longest label first so "Not Supported" is not also "Supported"."""
    taken: list[tuple[int, int, str]] = []
    for label in sorted(set(labels), key=len, reverse=True):
        if not label.strip():
            continue
        pat = r"(?<![A-Za-z0-9])" + r"\s+".join(map(re.escape, label.split())) + r"(?![A-Za-z0-9])"
        for m in re.finditer(pat, text, flags=re.IGNORECASE):
            if not any(m.start() < e and s < m.end() for s, e, _ in taken):
                taken.append((m.start(), m.end(), label))
    return sorted(taken)


def parse_label(text: str | None, labels: list[str] | tuple[str, ...]) -> str | None:
    """The label that `text` asserts, or None when it does not assert exactly one unambiguously.

    Rules (None means: a parse failure, recorded by the caller, never a guess):
    - the answer ends where the model starts a new demonstration (a blank line, `---`, `Claim =` ...);
    - empty text, or text naming no label: None;
    - a refusal or hedge anywhere ("I cannot tell", "neither", "unknown", "not sure", "maybe"): None;
    - a negated label anywhere ("not true", "isn't supported", "It is not Supported; Refuted.", also "Not true;
      the claim is false."): None, whatever else the text says. A negator counts within the label's clause;
      a label that itself starts with "Not" ("Not Supported", "Not Enough Information") is a label, not a negation;
    - labels inside a question ("True or False? ...") are not asserted;
    - exactly one distinct label asserted: that label;
    - several asserted: the last one wins only when an explicit final-answer marker stands right before it
      ("Answer: X", "the final answer is X", "the claim is X") and no other label follows; otherwise None.
    """
    if not text or not labels:
        return None
    cut = _DEMO_LINE.search(text)
    text = text[: cut.start()] if cut else text
    if not text.strip():
        return None
    mentions = _label_mentions(text, labels)
    if not mentions:
        return None
    chars = list(text)
    for s, e, _ in mentions:  # the labels' own words ("Not Enough Information") are neither hedges nor negations
        chars[s:e] = " " * (e - s)
    blanked = "".join(chars)
    if _UNSURE.search(blanked):
        return None
    asserted: list[tuple[int, int, str]] = []
    for s, e, label in mentions:
        clause_start = max((m.end() for m in _CLAUSE_BREAK.finditer(text, 0, s)), default=0)
        if _NEGATOR.search(blanked, clause_start, s):
            return None  # negated, even within a question
        end = _SENTENCE_END.search(text, e)
        if end is not None and text[end.start()] == "?":
            continue  # asked, not asserted
        asserted.append((s, e, label))
    distinct = {label for _, _, label in asserted}
    if len(distinct) == 1:
        return asserted[0][2]
    if len(distinct) > 1:
        s, _, last = asserted[-1]
        if _FINAL_MARKER.search(text[max(0, s - 40) : s]):
            return last
    return None


RETRY_MARK = "\n---retry---\n"  # between a first reply and its retry in a `raw` (as `Backend.choose` writes it)


def choice_text(raw: str, method: str) -> str:
    """The text a parsed decision was read from: after a retry, only the retry's answer."""
    return raw.rsplit(RETRY_MARK, 1)[-1] if method == "parse-retry" else raw


def is_parsed(method: str) -> bool:
    """Whether a decision was read from generated text (and so must be checked by `parse_label`)."""
    return method in ("parse", "parse-retry")
