"""Near-identical claims merged into one (the first), which keeps the spans of all of them.

Two claims are the same when their words (lower-cased, punctuation and articles ignored) overlap almost fully
(Jaccard >= 0.85) and they name the same numbers: "born in 1949" and "born in 1950" stay two claims.
"""

from __future__ import annotations

import re

from .types import ExtractedClaim

SAME = 0.85
_IGNORED = frozenset("a an the".split())


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[^\W_]+", text.lower()) if w not in _IGNORED)


def _numbers(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\d+(?:[.,]\d+)*", text))


def near_identical(a: str, b: str) -> bool:
    wa, wb = _words(a), _words(b)
    if not wa or not wb or _numbers(a) != _numbers(b):
        return wa == wb
    return len(wa & wb) / len(wa | wb) >= SAME


def deduplicate(claims: list[ExtractedClaim]) -> list[ExtractedClaim]:
    """The claims without near-identical repeats, in order; a repeat's spans join the first's."""
    kept: list[ExtractedClaim] = []
    for claim in claims:
        same = next((k for k in kept if k.status == claim.status and near_identical(k.text, claim.text)), None)
        if same is None:
            kept.append(claim)
        else:
            same.spans = sorted(set(same.spans) | set(claim.spans))
    return kept
