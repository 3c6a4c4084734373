"""A passage at odds with its own sentences: read whole, "The Danube is the second-longest river in Europe, after the
Volga. The Yangtze is the longest river in Asia." supported "The Danube is the longest river in Asia." (0.78), while
its first sentence alone refutes it (0.92).

After the passages are read as usual (model.py `verify_many`), the sentences of the passage that decided (of the
window that decided, for a passage too long to be read at once, verify/windows.py) are read one by one. When one of
them reads the other label (refuted against a supported reading, or the reverse) with at least CONFLICT_AT, and more
surely than the passage reads its own, the two readings are averaged: the conclusion then rests on neither alone, and
its confidence falls below the uncertain threshold. Measured on the held-apart sets (README): such conflicts are rare
(113 of 23,634 pairs), the passage's reading was right on 42% of them and the averaged one on 61%, and 49 of them had
been decided (above the threshold), 57% right against 90% for all decided verdicts.

Only the deciding passage's sentences are read, so a claim costs a few more pairs only when its deciding passage has
several sentences; reading every sentence of every passage, the most decisive deciding, was tried and lost on the
held-apart sets (Factcheck-GPT 55.3 against 58.5 macro-F1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .result import Verification

#: the probability of the other label at which one sentence's reading puts its passage's reading in doubt
CONFLICT_AT = 0.8
_OTHER = {"supported": "refuted", "refuted": "supported"}


def sentences_to_read(
    v: Verification, passages: Sequence[str], split: Callable[[str], list[str]] | None = None
) -> list[str]:
    """The sentences of the passage that decided `v` (`passages`: what was read of each passage, the window that
    decided a long one), when it decided supported or refuted and has more than one; else none."""
    if v.passage is None or v.label not in _OTHER or v.passage >= len(passages):
        return []
    if split is None:
        from ..claims.sentences import split_sentences as split
    sentences = [s for s in split(passages[v.passage]) if s.strip()]
    return sentences if len(sentences) > 1 else []


def settle(v: Verification, sentences: Sequence[str], readings: Sequence[dict[str, float]]) -> Verification:
    """`v` as it is, or, when a sentence of its deciding passage reads the other label with at least CONFLICT_AT and
    more surely than the passage reads its own (the surest such sentence), the average of the two readings, with the
    sentence and its reading in `conflict`. (Without the second condition "The Orrin Bridge is a stone bridge in
    Tallinn, Estonia." alone, refuted 0.89, put in doubt "... It was built in 1871.", supported 0.91, for "The Orrin
    Bridge was built in 1871.": a sentence silent on the point can read as the other label.)"""
    other = _OTHER.get(v.label)
    hits = [
        (r[other], s, r)
        for s, r in zip(sentences, readings)
        if other and r[other] >= CONFLICT_AT and r[other] > v.probabilities[v.label]
    ]
    if not hits:
        return v
    _, sentence, reading = max(hits, key=lambda h: h[0])
    mixed = {k: (v.probabilities[k] + reading[k]) / 2 for k in v.probabilities}
    return replace(
        v,
        probabilities=mixed,
        conflict={
            "sentence": sentence,
            "label": other,
            "probability": round(reading[other], 4),
            "passage_label": v.label,
            "passage_probability": round(v.probabilities[v.label], 4),
        },
    )


def describe(conflict: dict) -> str:
    """A conflict in words, for rationales and the terminal."""
    sentence = conflict["sentence"] if len(conflict["sentence"]) <= 160 else conflict["sentence"][:157] + "..."
    return (
        f'its sentence "{sentence}" alone reads {conflict["label"]} ({conflict["probability"]:.2f}) where the '
        f"passage read {conflict['passage_label']} ({conflict['passage_probability']:.2f}), so the two readings "
        "are averaged"
    )
