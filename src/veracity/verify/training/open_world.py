"""Calibration on retrieved evidence: the passages a check would retrieve, not the gold sentences a data set gives.

On gold evidence a passage that "does not say" often comes with a false claim (FEVER-style sets are built that way),
so the rules fitted there read not-enough-information as leaning "refuted". With retrieved passages it mostly means
"this passage is about something else": the lead section of the claim's subject that does not mention the fact. So
the confidence of a verdict on retrieved evidence, and the threshold below which it is shown as uncertain, are
fitted here on what the checks themselves read:

- claims with their truth (supported / refuted) from the training sources' calibration and held-apart parts, never
  their training part: FM2 (by page), Factcheck-GPT, Check-COVID (`open_world_claims`; not the FEVER family, whose
  labels are about edited evidence, not about the world), and real-world claims written for the project about the
  knowledge base's subjects (`written_claims`: benchmarks/data, the part not kept apart for measuring), all fitted
  on: the training sources' claims are about facts a lead section rarely states, the written ones about facts it
  states, contradicts or leaves out, as users' claims are;
- each searched in an index the way the `verifier` pipeline searches (by default the Wikipedia knowledge base,
  k = verifier.top_k) and read by the verifier as the pipelines read (`read_claims`);
- split by group (page, claim) into a fitting half and a measuring half (`half_of`), the rule fitted on the first
  (`fit_retrieved_rule`: a logistic regression on the reading's log-odds, the same log-odds where the reading
  addresses the claim, and not-enough-information's log-odds), its threshold chosen there so that the verdicts it
  shows as decided, which must also be read as addressing the claim (not-enough-information below one half), are
  right 90% of the time, and every figure measured on the second.

`veracity verifier calibrate-retrieved [--write]` runs it and writes `retrieved_rule` into verifier.json.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import UserError
from ...metrics import expected_calibration_error
from ..result import NOT_ADDRESSED, binary_label, open_world_features
from .data import fm2_part, read_fm2
from .fits import fit_softmax
from .metrics import accuracy_of_most_confident
from .sources import read_sources

#: the sources of claims with a truth label (supported / refuted), and the family each is split with
CLAIM_SOURCES = ("factcheck_gpt", "check_covid")
TARGET = 0.9  # the share of decided verdicts that must be right on the fitting half
CONFIDENCE_Z = 1.2816  # one-sided 90%: the lower end of the Wilson interval of that share must reach TARGET
MIN_DECIDED = 20  # fewer verdicts above a threshold tell nothing


@dataclass(frozen=True)
class OpenClaim:
    claim: str
    label: str  # supported / refuted: the claim's truth
    source: str
    group: str  # what keeps related claims on one side (FM2's page, else the claim itself)


def open_world_claims(root: Path, per_source: int = 1500) -> list[OpenClaim]:
    """Claims with their truth from the parts of the training sources the verifier was not trained on (FM2's
    calibration and test pages, the other sources' calibration and held-apart parts), at most `per_source` each
    (a stable draw), deduplicated by claim."""
    out: list[OpenClaim] = []
    fm2 = [c for c in read_fm2(root) if fm2_part(c.page) != "train"]
    out += [OpenClaim(c.claim, c.label, "fm2", f"fm2:{c.page}") for c in fm2]
    for p in read_sources(root, CLAIM_SOURCES):
        if p.part != "train" and p.label in ("supported", "refuted"):
            out.append(OpenClaim(p.claim.strip(), p.label, p.source, f"claim:{p.claim.strip().casefold()}"))
    seen: set[str] = set()
    by_source: dict[str, list[OpenClaim]] = {}
    for c in sorted(out, key=lambda c: _hash(c.claim)):
        key = c.claim.casefold()
        if key not in seen:
            seen.add(key)
            by_source.setdefault(c.source, []).append(c)
    return [c for claims in by_source.values() for c in claims[:per_source]]


def written_claims(path: Path, split: str | None = "A") -> list[OpenClaim]:
    """Claims written for the project (JSONL: claim, label supported / refuted, any case; `split` when the file
    keeps a part apart): those of `split` where the file has splits, all of them otherwise. All go to the fitting
    half: the other split is what measures."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if split is not None and r.get("split") not in (None, split):
            continue
        label = str(r["label"]).strip().lower()
        if label not in ("supported", "refuted"):
            raise UserError(f"{path}: label {r['label']!r} is neither supported nor refuted")
        out.append(OpenClaim(r["claim"].strip(), label, f"written:{path.stem}", "written"))
    return out


def _hash(text: str, salt: str = "") -> int:
    return int(hashlib.sha1(f"{salt}{text}".encode()).hexdigest()[:8], 16)


def half_of(claim: OpenClaim) -> str:
    """ "fit" or "measure", by the claim's group: a page's claims all on one side; written claims always fit."""
    if claim.group == "written":
        return "fit"
    return "fit" if _hash(claim.group, "open-world:") % 2 == 0 else "measure"


def read_claims(verifier, search: Callable[[str], list[str]], claims: list[OpenClaim], progress=None) -> list[dict]:
    """Each claim searched with `search` (the passages' texts, as the pipelines read them) and read by the verifier:
    a row of its truth, half, the reading's probabilities and how many passages were found (none: nothing read)."""
    rows = []
    for c in claims if progress is None else progress(claims):
        passages = search(c.claim)
        row = {"claim": c.claim, "label": c.label, "source": c.source, "half": half_of(c), "found": len(passages)}
        if passages:
            v = verifier.verify(c.claim, passages)
            row["probs"] = [v.probabilities[k] for k in ("supported", "refuted", "nei")]
        rows.append(row)
    return rows


def fit_retrieved_rule(rows: list[dict], *, seed: int = 7) -> dict:
    """The rule for two labels on retrieved evidence, fitted on `rows` that read something: P(supported) is the
    logistic function of the bias plus the weights times `open_world_features` (every source weighing the same, and
    both labels within it, so that the rule itself leans to neither)."""
    read = [r for r in rows if "probs" in r]
    if len(read) < 100:
        raise UserError(f"only {len(read)} claims found passages: too few to fit the rule on retrieved evidence")
    X = np.asarray([open_world_features(*r["probs"]) for r in read], float)
    size = Counter((r["source"], r["label"]) for r in read)
    weights = np.asarray([1.0 / size[(r["source"], r["label"])] for r in read])
    W, b, mean, scale = fit_softmax(
        X, [int(r["label"] == "supported") for r in read], 2, seed=seed, l2=1e-2, steps=2000, weights=weights
    )
    w = (W[1] - W[0]) / scale
    return {
        "name": "fitted_open",
        "weights": [round(float(x), 4) for x in w],
        "bias": round(float(b[1] - b[0] - (w * mean).sum()), 4),
    }


def verdicts(rows: list[dict], rule: dict | str) -> list[tuple[str, float, bool]]:
    """(label, confidence, addressed) of each row as a check decides it; a row that found nothing: the rule's
    leaning at a reading of nothing but not-enough-information, never addressed."""
    out = []
    for r in rows:
        s, ref, nei = r.get("probs") or (0.0, 0.0, 1.0)
        label, conf = binary_label(s, ref, rule)
        out.append((label, conf, "probs" in r and nei < NOT_ADDRESSED))
    return out


def threshold_for(rows: list[dict], rule: dict | str, target: float = TARGET, z: float = CONFIDENCE_Z) -> float:
    """The lowest confidence at which the verdicts read as addressing the claim are right `target` of the time on
    `rows`, with a margin: the lower end of the Wilson interval of their accuracy (one-sided, `z`) must reach it, not
    their accuracy alone, which on a few dozen verdicts at the top overstates what the next claims will see (the
    point estimate's threshold, 0.84 on the shipped weights, held 82% and 88% on the claims kept apart). 1.0: never."""
    v = verdicts(rows, rule)
    ranked = sorted(((c, label == r["label"]) for (label, c, addressed), r in zip(v, rows) if addressed), reverse=True)
    best, right = 1.0, 0
    for n, (conf, ok) in enumerate(ranked, 1):
        right += ok
        if n >= MIN_DECIDED and wilson_lower(right, n, z) >= target:
            best = conf
    return max(best, 0.5)


def wilson_lower(right: int, n: int, z: float) -> float:
    """The lower end of the Wilson score interval of `right` of `n`."""
    p = right / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - margin) / (1 + z * z / n)


def figures(rows: list[dict], rule: dict | str, threshold: float, *, nei_rule: bool = True) -> dict:
    """What a user sees on `rows`: accuracy, the share of verdicts shown as decided and how often they are right,
    accuracy of the most confident 20% against all, and ECE. `nei_rule`: a reading that does not address the claim
    is never decided (the rule now), else only the confidence decides (as before it)."""
    v = verdicts(rows, rule)
    correct = [label == r["label"] for (label, _, _), r in zip(v, rows)]
    conf = [c for _, c, _ in v]
    decided = [c >= threshold and (addressed or not nei_rule) for _, c, addressed in v]
    n, nd = len(rows), sum(decided)
    return {
        "n": n,
        "found": sum(r["found"] > 0 for r in rows) / n,
        "accuracy": sum(correct) / n,
        "decided_share": nd / n,
        "decided_accuracy": sum(ok for ok, d in zip(correct, decided) if d) / nd if nd else float("nan"),
        "top20": accuracy_of_most_confident(conf, correct),
        "ece": expected_calibration_error(conf, correct),
    }


def calibrate_retrieved(rows: list[dict], *, shipped_rule, shipped_threshold: float) -> dict:
    """The rule and threshold fitted on the fitting half, and the figures on the measuring half: the shipped
    two-label rule and threshold as they decided before (a confidence alone), and the fitted ones."""
    fit = [r for r in rows if r["half"] == "fit"]
    measure = [r for r in rows if r["half"] == "measure"]
    rule = fit_retrieved_rule(fit)
    threshold = threshold_for(fit, rule)
    return {
        "rule": rule,
        "uncertain_below": round(threshold, 4),
        "fit_claims": len(fit),
        "measure_claims": len(measure),
        "by_source": dict(Counter(r["source"] for r in rows)),
        "before": figures(measure, shipped_rule, shipped_threshold, nei_rule=False),
        "after": figures(measure, rule, threshold),
    }


def rule_entry(result: dict, index: str, top_k: int) -> dict:
    """What verifier.json keeps as `retrieved_rule`: the rule, its threshold, and where its figures came from."""
    after = result["after"]
    return {
        **result["rule"],
        "uncertain_below": result["uncertain_below"],
        "evidence": f"retrieved: {index}, k={top_k}",
        "fit_claims": result["fit_claims"],
        "measure_claims": result["measure_claims"],
        "measured": {k: (round(v, 4) if isinstance(v, float) and not math.isnan(v) else v) for k, v in after.items()},
    }


def write_rule(folder: Path, entry: dict, key: str = "retrieved_rule") -> None:
    """`entry` kept as `key` in the folder's verifier.json (retrieved_rule here; grounding_fit.py's grounding_rule)."""
    path = folder / "verifier.json"
    settings = json.loads(path.read_text(encoding="utf-8"))
    settings[key] = entry
    path.write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")


def render(result: dict) -> str:
    """The figures on the measuring half as a table, before (the two-label rule and threshold fitted on gold
    evidence, a confidence alone deciding) and after."""
    lines = [
        f"Claims: {result['fit_claims']} to fit, {result['measure_claims']} to measure "
        f"({', '.join(f'{k} {v}' for k, v in sorted(result['by_source'].items()))}); "
        f"fitted: {result['rule']}, uncertain below {result['uncertain_below']:.4f}",
        "",
        "| on the measuring half | found a passage | accuracy | shown as decided | of them right | most confident 20% "
        "| ECE |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ("before", "after"):
        f = result[name]
        lines.append(
            f"| {name} | {100 * f['found']:.1f}% | {100 * f['accuracy']:.1f} | {100 * f['decided_share']:.1f}% | "
            f"{100 * f['decided_accuracy']:.1f} | {100 * f['top20']:.1f} | {f['ece']:.3f} |"
        )
    return "\n".join(lines)


def default_written() -> list[Path]:
    """The written claims a checkout has (benchmarks/data beside src/), none in an installed package."""
    data = Path(__file__).resolve().parents[4] / "benchmarks" / "data"
    return [p for p in (data / "kb_realworld_claims.jsonl", data / "open_world_claims.jsonl") if p.is_file()]
