"""Classification metrics as the papers report them: macro-F1 (QACheck, ProgramFC) and accuracy."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def confusion(gold: Sequence[str], pred: Sequence[str]) -> Counter:
    return Counter(zip(gold, pred))


def per_class(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, float]]:
    c = confusion(gold, pred)
    out = {}
    for lab in labels:
        tp = c[(lab, lab)]
        fp = sum(v for (g, p), v in c.items() if p == lab and g != lab)
        fn = sum(v for (g, p), v in c.items() if g == lab and p != lab)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out[lab] = {"precision": prec, "recall": rec, "f1": f1, "support": tp + fn}
    return out


def macro_f1(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> float:
    """Mean F1 over the gold label set; a prediction outside it (e.g. "Unverified") is simply wrong."""
    pc = per_class(gold, pred, labels)
    return sum(v["f1"] for v in pc.values()) / len(labels) if labels else 0.0


def accuracy(gold: Sequence[str], pred: Sequence[str]) -> float:
    return sum(g == p for g, p in zip(gold, pred)) / len(gold) if gold else 0.0


def expected_calibration_error(confidences: list[float], correct: list[bool], bins: int = 10) -> float:
    """The gap between confidence and accuracy, averaged over equal-width confidence bins weighted by their size."""
    total = len(confidences)
    return sum(n / total * abs(acc - conf) for _, _, n, conf, acc in reliability_bins(confidences, correct, bins))


def reliability_bins(
    confidences: list[float], correct: list[bool], bins: int = 10
) -> list[tuple[float, float, int, float, float]]:
    """(low, high, count, mean confidence, accuracy) per non-empty equal-width confidence bin."""
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, c in enumerate(confidences) if lo < c <= hi or (b == 0 and c == 0)]
        if idx:
            out.append(
                (lo, hi, len(idx), sum(confidences[i] for i in idx) / len(idx), sum(correct[i] for i in idx) / len(idx))
            )
    return out
