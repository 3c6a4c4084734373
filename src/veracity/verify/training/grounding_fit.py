"""Calibrating and measuring grounding (verify/grounding.py): a sentence against a whole document, supported when
some part of it supports the sentence.

The pairs are the grounding-shaped training sources, each a sentence someone wrote against the document it should
rest on: BEGIN (dialogue responses and their knowledge snippet), SummEdits (summaries against the whole document),
Factcheck-GPT (claims of ChatGPT answers against retrieved web passages; refuted and not enough information are
both "not supported"), and Citation-Integrity (citing sentences against about five sentences of the cited article).
The first three are split as the verifier's training splits them (sources.py): the rule is fitted on their
calibration parts and measured on their held-apart parts, which the verifier never trained on; Citation-Integrity,
on which the verifier never trained at all, is fitted on its dev split and measured on its test split.

`veracity verifier calibrate-grounding [--write]` (`write_rule(folder, rule_entry(result), "grounding_rule")`) reads the pairs, fits the rule (`fit_rest_rule`: a logistic
regression on the log-odds of the highest support, each source and each label weighing the same, so that it decides
for balanced accuracy, as LLM-AggreFact scores), chooses its uncertain threshold on the fitting pairs (the verdicts
at or above it right 90% of the time, the lower end of a one-sided 90% Wilson interval), prints the figures on the
measuring pairs, and with --write keeps it in verifier.json as `grounding_rule`.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ...metrics import expected_calibration_error
from ..grounding import PART_TOKENS, SUPPORTED, GroundingRule, ground_sentences
from .fits import fit_rest_rule
from .open_world import CONFIDENCE_Z, MIN_DECIDED, TARGET, wilson_lower
from .sources import SourcePair, capped, read_sources

SPLIT_SOURCES = ("begin", "summedits", "factcheck_gpt")  # split with the verifier's training (sources.py)
CITATION = "citation_integrity"  # never trained on: its dev split to fit, its test split to measure
SOURCES = (*SPLIT_SOURCES, CITATION)
FIT_CAP, MEASURE_CAP = 400, 600  # pairs per source (reading them takes minutes on 2 cores)
PER_SOURCE_MIN = 5  # a source's verdicts above a threshold count against it from this many


@dataclass(frozen=True)
class GroundingPair:
    sentence: str
    document: str
    grounded: bool
    source: str
    half: str  # fit | measure


def grounding_pairs(root: Path, *, fit_cap: int = FIT_CAP, measure_cap: int = MEASURE_CAP, seed: int = 5):
    """The pairs of every grounding source, `fit_cap` to fit and `measure_cap` to measure per source (drawn with
    the labels kept in their proportions, seeded)."""
    out: list[GroundingPair] = []
    caps = {"fit": fit_cap, "measure": measure_cap}
    rows = read_sources(root, SPLIT_SOURCES)
    for name in SPLIT_SOURCES:
        for part, half in (("calibration", "fit"), ("heldout", "measure")):
            chosen = [r for r in rows if r.source == name and r.part == part]
            for r in capped(chosen, caps[half], random.Random(seed)):
                out.append(GroundingPair(r.claim, r.evidence, r.label == SUPPORTED, name, half))
    for split, half in (("dev", "fit"), ("test", "measure")):
        path = root / CITATION / f"{split}.jsonl"
        if not path.is_file():
            continue
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        items = [SourcePair(r["claim"], r["evidence"], r["label"], CITATION, split) for r in rows]
        for r in capped(items, caps[half], random.Random(seed)):
            out.append(GroundingPair(r.claim, r.evidence, r.label == SUPPORTED, CITATION, half))
    return out


def read_pairs(
    verifier, pairs: list[GroundingPair], *, part_tokens: int = PART_TOKENS, progress: Callable | None = None
) -> list[dict]:
    """Each pair read as grounding reads it: the highest support any part of the document gives the sentence (the
    rule is fitted on it), the label the verifier's three-way reading of the most refuting part would add, and how
    many parts were read."""
    rule = GroundingRule(part_tokens=part_tokens)
    todo: Iterable[GroundingPair] = progress(pairs) if progress else pairs
    out = []
    for p in todo:
        g = ground_sentences(verifier, [p.sentence], [p.document], rule)[0]
        out.append(
            {
                "source": p.source,
                "half": p.half,
                "grounded": p.grounded,
                "support": g.support.probabilities["supported"] if g.support else 0.0,
                "parts": g.parts,
            }
        )
    return out


def fit_rule(rows: list[dict], *, seed: int = 7) -> dict:
    """The grounding rule fitted on the rows of the fitting half (each source and label weighing the same)."""
    fit = [r for r in rows if r["half"] == "fit"]
    return fit_rest_rule(
        [[r["support"], 0.0, 0.0] for r in fit],
        [SUPPORTED if r["grounded"] else "not_supported" for r in fit],
        [r["source"] for r in fit],
        seed=seed,
        balanced=True,
    )


def verdicts(rows: list[dict], rule: GroundingRule) -> list[tuple[bool, float]]:
    """(grounded?, the confidence of that verdict) of each row under `rule`."""
    out = []
    for r in rows:
        p = rule.probability(r["support"])
        out.append((p >= 0.5, p if p >= 0.5 else 1.0 - p))
    return out


def threshold_for(rows: list[dict], rule: GroundingRule, target: float = TARGET, z: float = CONFIDENCE_Z) -> float:
    """The lowest confidence at which the verdicts on `rows` are right `target` of the time, pooled with a margin
    (the lower end of a one-sided Wilson interval must reach it) AND in each source on its own (its verdicts at or
    above it right `target` of the time, where it has at least PER_SOURCE_MIN): pooled alone, the threshold was set by
    the sets where reading is easy (BEGIN, Factcheck-GPT) and the verdicts it let through on SummEdits and
    Citation-Integrity were right 51-58% of the time. 1.0: never."""
    v = verdicts(rows, rule)
    scored = [(c, g == r["grounded"], r["source"]) for (g, c), r in zip(v, rows)]
    best = 1.0
    for step in range(200, 99, -1):  # 1.0 down to 0.5 by 0.0025
        t = step / 200
        kept = [(ok, source) for c, ok, source in scored if c >= t]
        if len(kept) < MIN_DECIDED or wilson_lower(sum(ok for ok, _ in kept), len(kept), z) < target:
            continue
        by_source: dict[str, list[bool]] = {}
        for ok, source in kept:
            by_source.setdefault(source, []).append(ok)
        if all(len(xs) < PER_SOURCE_MIN or sum(xs) / len(xs) >= target for xs in by_source.values()):
            best = t
        else:
            break  # lower thresholds only let more of that source's wrong verdicts through
    return max(best, 0.5)


def figures(rows: list[dict], rule: GroundingRule) -> dict:
    """Balanced accuracy, the share shown as decided and how often right, and ECE, on `rows`."""
    if not rows:
        return {"n": 0}
    v = verdicts(rows, rule)
    correct = [g == r["grounded"] for (g, _), r in zip(v, rows)]
    conf = [c for _, c in v]
    decided = [c >= rule.uncertain_below for c in conf]
    pos = [ok for ok, r in zip(correct, rows) if r["grounded"]]
    neg = [ok for ok, r in zip(correct, rows) if not r["grounded"]]
    recall = [sum(x) / len(x) for x in (pos, neg) if x]
    nd = sum(decided)
    return {
        "n": len(rows),
        "balanced_accuracy": sum(recall) / len(recall),
        "accuracy": sum(correct) / len(rows),
        "decided_share": nd / len(rows),
        "decided_accuracy": sum(ok for ok, d in zip(correct, decided) if d) / nd if nd else float("nan"),
        "ece": expected_calibration_error(conf, correct),
        "parts": sum(r["parts"] for r in rows) / len(rows),
    }


def calibrate(rows: list[dict], *, part_tokens: int = PART_TOKENS) -> dict:
    """The rule and threshold fitted on the fitting half, and the figures per source on the measuring half."""
    fitted = fit_rule(rows)
    rule = GroundingRule(rule=fitted, part_tokens=part_tokens)
    rule.uncertain_below = threshold_for([r for r in rows if r["half"] == "fit"], rule)
    measure = [r for r in rows if r["half"] == "measure"]
    by_source = {s: figures([r for r in measure if r["source"] == s], rule) for s in SOURCES}
    by_source = {s: f for s, f in by_source.items() if f["n"]}
    return {
        "rule": fitted,
        "uncertain_below": round(rule.uncertain_below, 4),
        "part_tokens": part_tokens,
        "fit_pairs": sum(r["half"] == "fit" for r in rows),
        "measure_pairs": len(measure),
        "by_source": by_source,
        "mean_balanced_accuracy": sum(f["balanced_accuracy"] for f in by_source.values()) / max(len(by_source), 1),
    }


def rule_entry(result: dict) -> dict:
    """What verifier.json keeps as `grounding_rule`."""

    def clean(f: dict) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) and not math.isnan(v) else v) for k, v in f.items()}

    return {
        **result["rule"],
        "uncertain_below": result["uncertain_below"],
        "part_tokens": result["part_tokens"],
        "fit_pairs": result["fit_pairs"],
        "measure_pairs": result["measure_pairs"],
        "measured": {s: clean(f) for s, f in result["by_source"].items()},
    }


def render(result: dict) -> str:
    lines = [
        f"Pairs: {result['fit_pairs']} to fit, {result['measure_pairs']} to measure; parts of at most "
        f"{result['part_tokens']} word pieces; fitted: {result['rule']}, uncertain below "
        f"{result['uncertain_below']:.4f}",
        "",
        "| measured on | pairs | balanced accuracy | shown as decided | of them right | ECE | parts a pair |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, f in result["by_source"].items():
        lines.append(
            f"| {name} | {f['n']} | {100 * f['balanced_accuracy']:.1f} | {100 * f['decided_share']:.1f}% | "
            f"{100 * f['decided_accuracy']:.1f} | {f['ece']:.3f} | {f['parts']:.1f} |"
        )
    lines.append(f"| mean | | {100 * result['mean_balanced_accuracy']:.1f} | | | | |")
    return "\n".join(lines)
