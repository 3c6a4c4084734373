"""Training pairs longer than the model reads, fitted to what the pipelines read (`--long-pairs window`,
`--long-pairs window-or-cut`).

Cut at the maximum length, a long pair's label may not hold for what the model read: a supported pair whose
supporting sentence lay past the cut teaches the model to say supported without seeing why (8% of a training draw,
and most of SummEdits', Factcheck-GPT's and FM2's pairs with distractors). The pipelines read such a passage in
windows of whole sentences (verify/windows.py), the most decisive deciding; so here a long pair becomes its
window that holds most of the claim's content words:

- not enough information, and a two-way source's not_supported (refuted or nei), hold for any part of the evidence:
  the window is kept with the pair's label (the most claim-like window, the hardest such negative);
- supported and refuted hold for the window only when it holds every content word of the claim the whole evidence
  holds; otherwise the pair is dropped (neither its window nor its cut copy is sure to carry its label), or with
  `keep_unsure` (`window-or-cut`) kept cut, as without fitting: dropping them all removes long supported pairs
  much more than long not-supported ones, and the model learns that long evidence does not support;
- a pair that cannot be windowed (a claim leaving too little room, or one long sentence) stays as it was: cut.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..text import content_words, numbers, stem
from ..windows import SPECIAL_TOKENS, windows
from .data import Pair
from .sources import NOT_SUPPORTED

HOLDS_IN_ANY_PART = ("nei", NOT_SUPPORTED)


def claim_terms(text: str) -> set[str]:
    """The stemmed content words and the numbers of a text."""
    return {stem(w) for w in content_words(text)} | numbers(text)


@dataclass
class Fitted:
    """What fitting a draw did, per source: pairs read in a window, pairs dropped, unsure pairs kept cut."""

    windowed: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    kept_cut: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        out = {"windowed": dict(sorted(self.windowed.items())), "dropped": dict(sorted(self.dropped.items()))}
        return {**out, "kept_cut": dict(sorted(self.kept_cut.items()))} if self.kept_cut else out


def fit_long_pairs(
    pairs: list[Pair], count: Callable[[str], int], max_length: int, keep_unsure: bool = False
) -> tuple[list[Pair], Fitted]:
    """`pairs` with each pair longer than `max_length` word pieces (`count` gives a text's pieces, without special
    tokens) replaced by its window, or dropped, or with `keep_unsure` kept as it is (module docstring). Order kept;
    deterministic."""
    out, fitted = [], Fitted()
    for p in pairs:
        n_claim = count(p.claim)
        if n_claim + count(p.evidence) + SPECIAL_TOKENS <= max_length:
            out.append(p)
            continue
        parts = windows(n_claim, p.evidence, count, max_length)
        if len(parts) == 1:
            out.append(p)
            continue
        terms = claim_terms(p.claim)
        held = [terms & claim_terms(w) for w in parts]
        best = max(range(len(parts)), key=lambda i: (len(held[i]), -i))
        if p.label not in HOLDS_IN_ANY_PART and held[best] != terms & claim_terms(p.evidence):
            if keep_unsure:
                fitted.kept_cut[p.source] += 1
                out.append(p)
            else:
                fitted.dropped[p.source] += 1
            continue
        fitted.windowed[p.source] += 1
        out.append(replace(p, evidence=parts[best]))
    return out, fitted
