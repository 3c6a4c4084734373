"""Measuring a verifier on the held-apart sets (never the benchmarks): its readings of pairs, each set's labels
decided the way the set asks, the figures of the model card (macro-F1, accuracy, top-20% accuracy, ECE), and the
sets themselves, of single pairs and of claims read against several passages."""

from __future__ import annotations

import math

from ...metrics import accuracy, expected_calibration_error, macro_f1
from ..result import LABELS, TwoLabelRule, binary_label
from .data import Pair, TrainingData
from .sources import NOT_SUPPORTED


def logits_of(model, tok, pairs: list[Pair], max_length: int, batch_size: int = 64) -> list[list[float]]:
    import torch

    out: list[list[float]] = []
    with torch.inference_mode():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i : i + batch_size]
            enc = tok(
                [p.claim for p in chunk],
                [p.evidence for p in chunk],
                truncation="longest_first",
                max_length=max_length,
                padding=True,
                return_tensors="pt",
            )
            out.extend(model(**enc).logits.tolist())
    return out


def softmax(row: list[float], t: float = 1.0) -> list[float]:
    m = max(row)
    e = [math.exp((v - m) / t) for v in row]
    z = sum(e)
    return [v / z for v in e]


def decisions(
    probs: list[list[float]], gold: list[str], rule: TwoLabelRule, rest_rule: TwoLabelRule = "supported_vs_rest"
) -> tuple[list[str], list[float], list[str]]:
    """(predicted labels, their confidences, the label set) the way a set's labels ask: two labels
    (supported / refuted) by the two-label rule; supported / not_supported by the rule of supported against the
    rest; otherwise the most probable of the three."""
    if set(gold) <= {"supported", "refuted"}:
        decided = [binary_label(s, r, rule) for s, r, _ in probs]
        return [x for x, _ in decided], [c for _, c in decided], ["supported", "refuted"]
    if NOT_SUPPORTED in gold:
        decided = [binary_label(s, r, rest_rule) for s, r, _ in probs]
        pred = [x if x == "supported" else NOT_SUPPORTED for x, _ in decided]
        return pred, [c for _, c in decided], ["supported", NOT_SUPPORTED]
    return ([LABELS[max(range(3), key=row.__getitem__)] for row in probs], [max(row) for row in probs], list(LABELS))


def accuracy_of_most_confident(conf: list[float], correct: list[bool], share: float = 0.2) -> float:
    n = max(1, round(share * len(conf)))
    top = sorted(range(len(conf)), key=lambda i: -conf[i])[:n]
    return sum(correct[i] for i in top) / n if conf else 0.0


def figures(
    probs: list[list[float]], pairs: list[Pair], rule: TwoLabelRule, rest_rule: TwoLabelRule = "supported_vs_rest"
) -> dict[str, float]:
    gold = [p.label for p in pairs]
    pred, conf, labels = decisions(probs, gold, rule, rest_rule)
    correct = [g == p for g, p in zip(gold, pred)]
    return {
        "macro_f1": round(100 * macro_f1(gold, pred, labels), 1),
        "accuracy": round(100 * accuracy(gold, pred), 1),
        "top20_accuracy": round(100 * accuracy_of_most_confident(conf, correct), 1),
        "ece": round(expected_calibration_error(conf, correct), 3),
        "n": len(gold),
    }


def held_apart_sets(data: TrainingData) -> list[tuple[str, list[Pair]]]:
    """Every held-apart set measured (never the benchmarks): FM2's held-out pages, CAD-SNLI test, the synthetic
    edits of held-out pages, two-part and joined claims, held-apart pairs beside their claims against an unrelated
    passage (offtopic_heldout), held-apart Wikipedia pairs beside their evidence made about another subject
    (other_subject_heldout), joined held-apart claims against some of their parts' evidence (partial_heldout), and
    the held-apart part of each JSONL source."""
    return [
        ("fm2_heldout", data.heldout_fm2),
        ("cad_snli_test", data.cad_test),
        ("synthetic_heldout", data.heldout_synthetic),
        ("compound_heldout", data.heldout_compound),
        ("joined_heldout", data.heldout_joined),
        ("offtopic_heldout", data.heldout_offtopic),
        ("other_subject_heldout", data.heldout_other_subject),
        ("partial_heldout", data.heldout_partial),
        ("same_subject_heldout", data.heldout_same_subject),
        *sorted(data.heldout_sources.items()),
    ]


def several_passages(pairs: list[Pair]) -> list[tuple[str, list[str], str]]:
    """Each pair's evidence split into its sentences, one passage each, as a multi-hop claim's gold evidence
    comes (several sentences, each on its own)."""
    from ...claims.sentences import split_sentences

    return [(p.claim, split_sentences(p.evidence) or [p.evidence], p.label) for p in pairs]


def passage_sets(data: TrainingData) -> list[tuple[str, list[tuple[str, list[str], str]]]]:
    """The held-apart claims read against several passages, as the pipelines read them (`verify_many`: each
    passage, in windows when long, and all of them together; the most decisive deciding): held-out FM2 claims
    against their page's ten retrieved sentences, the joined held-apart claims against their evidence
    sentences one by one, and held-apart claims against their evidence among two unrelated passages (their label)
    and against three unrelated passages only (nei)."""
    return [
        ("fm2_heldout_retrieved", data.heldout_retrieved),
        ("joined_heldout_passages", several_passages(data.heldout_joined)),
        ("offtopic_heldout_passages", data.heldout_offtopic_passages),
    ]
