"""Reading what the model wrote at each DEFAME stage, with the fallbacks small models need.

- `clean_text`: the first paragraph, cut where the model starts a new record block or repeats itself.
- `parse_summary`: a summary, or None for NONE.
- `grounded`: whether a summary is drawn from the result at all (a small model often copies the claim
  instead); an ungrounded summary is replaced by an `excerpt` of the source, marked as such.
"""

from __future__ import annotations

import re

from ..claims.sentences import split_sentences

_LABELS = (
    r"(?:Record|Claim|Search result|Round \d+|Actions|Executed actions|Evidence|Elaboration|Judgement|"
    r"Verdict|Justification|Key findings|Summary)\s*:"
)
# the model repeated the cue, perhaps as a bullet or in bold ("**Key findings:**")
_LEADING_LABEL = re.compile(r"^\s*(?:-\s*)?(?:\*\*)?" + _LABELS + r"(?:\*\*)?\s*", re.IGNORECASE)
_NEXT_BLOCK = re.compile(r"\s" + _LABELS, re.IGNORECASE)  # the model went on writing the next block
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the of in on at to for and or but is are was were be been by with from as that this it its "
    "has have had not no he she they his her their we our you your i what which who when where how "
    "than then there these those also about after before over into more most".split()
)


def _trim_repeats(text: str) -> str:
    """Text up to the first clause the model already wrote (small models loop)."""
    seen: set[str] = set()
    out: list[str] = []
    for part in re.split(r"(?<=[.;!?])\s+|\s+-\s+", text):
        key = " ".join(_WORD.findall(part.lower()))
        if key and key in seen:
            break
        seen.add(key)
        out.append(part)
    return " ".join(out).strip()


def clean_text(text: str, limit: int) -> str:
    """The model's text for one stage: first paragraph, no new record block, no repetition, at most `limit`."""
    text = _LEADING_LABEL.sub("", text.strip().split("\n\n")[0])
    text = _NEXT_BLOCK.split(" " + text, maxsplit=1)[0]
    text = _trim_repeats(" ".join(text.lstrip("-• ").split()))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def parse_summary(text: str, limit: int) -> str | None:
    """A summary, or None when the model said the result is irrelevant (NONE) or wrote nothing."""
    s = clean_text(text, limit)
    if not s or re.match(r"^\W*(none|n/a|irrelevant|not relevant)\b", s, re.IGNORECASE):
        return None
    return s


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def grounded(summary: str, source: str, claim: str, min_share: float = 0.5) -> bool:
    """Whether most of the summary's words that are not the claim's come from the source.

    A summary that only restates the claim (no word beyond the claim's) is not grounded either.
    """
    words = content_words(summary)
    new = words - content_words(claim)
    if not new:
        return False
    return len(new & content_words(source)) >= min_share * len(new)


def excerpt(source: str, claim: str, limit: int) -> str:
    """The source's sentences that share most words with the claim, in their order, within `limit` chars."""
    sentences = [s for s in split_sentences(" ".join(source.split())) if s.strip()]
    if not sentences:
        return ""
    want = content_words(claim)
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(content_words(sentences[i]) & want), i))
    keep: list[int] = []
    size = 0
    for i in ranked:
        if size + len(sentences[i]) > limit and keep:
            break
        keep.append(i)
        size += len(sentences[i]) + 1
        if len(keep) == 2:
            break
    text = " ".join(sentences[i] for i in sorted(keep))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
