"""What a calibration fits (numpy, seeded, deterministic): the logistic regressions behind the lexical baseline
and the stacker, the temperature, the rules for two-label and supported / not-supported sets, the temperature on
the deciding reading of several passages, and the uncertain threshold."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

import numpy as np

from ..lexical import LexicalModel, features
from ..model import Stack
from ..result import (
    LABELS,
    RULE_FLOOR,
    SEVERAL_TEMPERATURE_RANGE,
    SeveralTemperature,
    TwoLabelRule,
    candidates,
    supported_log_odds,
)
from .data import Pair
from .metrics import figures, softmax
from .sources import NOT_SUPPORTED


def fit_softmax(
    X: np.ndarray,
    y: list[int] | np.ndarray,
    classes: int,
    *,
    seed: int,
    l2: float,
    steps: int,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A multinomial logistic regression by full-batch gradient descent (numpy, seeded, deterministic):
    (coef, intercept, mean, scale) over standardised features. Shared by the lexical baseline and the stacker.

    `y`: a class index per row, or a 0/1 matrix (rows x classes) of the classes each row allows (a two-way
    source's not_supported allows refuted and nei: the loss is minus the log of their summed probability).
    `weights`: per-row weights (e.g. so that every source counts the same), default equal."""
    mean, std = X.mean(0), X.std(0)
    scale = np.where(std > 1e-3, std, 1.0)  # a feature constant in training must not blow up on new input
    X = (X - mean) / scale
    y = np.asarray(y)
    allowed = np.eye(classes)[y] if y.ndim == 1 else y.astype(float)
    w = np.ones(len(X)) if weights is None else np.asarray(weights, float)
    w = w / w.sum()
    W = np.random.default_rng(seed).normal(0, 0.01, (classes, X.shape[1]))
    b = np.zeros(classes)
    n = len(X)
    for _ in range(steps):
        Z = X @ W.T + b
        Z -= Z.max(1, keepdims=True)
        P = np.exp(Z)
        P /= P.sum(1, keepdims=True)
        Q = P * allowed
        Q /= np.maximum(Q.sum(1, keepdims=True), 1e-12)
        G = (P - Q) * w[:, None]
        W -= 0.5 * (G.T @ X + l2 * W / n)
        b -= 0.5 * G.sum(0)
    return W, b, mean, scale


def fit_lexical(
    pairs: list[tuple[str, str]], labels: list[str], classes: tuple[str, ...], *, seed: int = 0, l2: float = 1.0
) -> LexicalModel:
    """Fit the lexical baseline's logistic regression on `features` of the pairs."""
    X = np.asarray([features(c, e) for c, e in pairs], float)
    W, b, mean, scale = fit_softmax(
        X, [classes.index(lab) for lab in labels], len(classes), seed=seed, l2=l2, steps=800
    )
    return LexicalModel(classes, W, b, mean, scale)


def allowed_classes(label: str) -> list[int]:
    """The classes a gold label allows, as a 0/1 row over LABELS (`not_supported`: refuted or nei)."""
    return [0, 1, 1] if label == "not_supported" else [int(label == x) for x in LABELS]


def fit_stack(
    probs: list[list[float]],
    lexical: list[list[float]],
    gold: list[str],
    *,
    seed: int = 0,
    groups: list[str] | None = None,
) -> Stack:
    """Fit the stacker (numpy gradient descent, L2, deterministic) on held-apart pairs: a two-way source's
    not_supported counts as refuted-or-nei; with `groups` (each pair's source) every source weighs the same."""
    X = np.asarray([[math.log(max(p, 1e-6)) for p in pr] + list(lx) for pr, lx in zip(probs, lexical)], float)
    weights = None
    if groups is not None:
        size = Counter(groups)
        weights = np.asarray([1.0 / size[g] for g in groups])
    W, b, mean, scale = fit_softmax(
        X, np.asarray([allowed_classes(g) for g in gold]), len(LABELS), seed=seed, l2=1e-2, steps=1500, weights=weights
    )
    return Stack(W.tolist(), b.tolist(), mean.tolist(), scale.tolist())


def _gold_probability(row: list[float], gold: str) -> float:
    """The probability a three-way row gives the gold label (`not_supported`: refuted or nei)."""
    return row[1] + row[2] if gold == NOT_SUPPORTED else row[LABELS.index(gold)]


def fit_temperature(logits: list[list[float]], gold: list[str]) -> float:
    """The temperature that minimises the negative log-likelihood (grid, then refined)."""

    def nll(t: float) -> float:
        return -sum(math.log(max(_gold_probability(softmax(r, t), g), 1e-12)) for r, g in zip(logits, gold)) / len(gold)

    grid = [0.5 + 0.05 * i for i in range(91)]
    best = min(grid, key=nll)
    fine = [best - 0.05 + 0.005 * i for i in range(21)]
    return round(min(fine, key=nll), 3)


TWO_LABEL_MIN = 100  # calibration pairs of two-label sources needed to fit the two-label rule (else a named one)


def fit_two_label_rule(probs: list[list[float]], gold: list[str], groups: list[str], *, seed: int) -> dict:
    """The rule for two-label sets fitted on calibration pairs of two-label sources (supported / refuted and
    nothing else): a logistic regression on the log-odds of supported against refuted and the log-probability of
    not enough information, every source weighing the same. supported_vs_refuted is its point (1, 0, bias 0);
    fitted, it also learns how far the not-enough-information mass leans either way in such sets, and how sure the
    two-label decision is (a temperature on it), so its probability is calibrated as the three-way one is.

    Supported and refuted weigh the same and opposite: with free weights on the three log-probabilities, a reading
    of nothing but nei (supported and refuted both near 0, which two-label calibration pairs hardly have) was
    decided by their weights' small difference times a large logarithm (one such reading came out Supported 0.78);
    here it is decided by the bias alone."""
    logs = [[math.log(max(p, RULE_FLOOR)) for p in row] for row in probs]
    X = np.asarray([[s - r, n] for s, r, n in logs], float)
    size = Counter(groups)
    W, b, mean, scale = fit_softmax(
        X,
        [int(g == "supported") for g in gold],
        2,
        seed=seed,
        l2=1e-2,
        steps=1500,
        weights=np.asarray([1.0 / size[g] for g in groups]),
    )
    w = (W[1] - W[0]) / scale  # the standardisation folded into the weights, so the rule reads raw probabilities
    bias = float(b[1] - b[0] - (w * mean).sum())
    odds, nei = (round(float(x), 4) for x in w)
    return {"name": "fitted", "weights": [odds, -odds, nei], "bias": round(bias, 4)}


def labelled_exactly(pairs: list[Pair], labels: set[str]) -> list[int]:
    """The indices of the pairs whose source has exactly `labels` (a two-label source, a not-supported one)."""
    labels_of: dict[str, set[str]] = {}
    for p in pairs:
        labels_of.setdefault(p.source, set()).add(p.label)
    return [i for i, p in enumerate(pairs) if labels_of[p.source] == labels]


def choose_two_label_rule(probs: list[list[float]], pairs: list[Pair], *, seed: int) -> tuple[TwoLabelRule, dict]:
    """The rule for two-label sets, and each candidate's macro-F1 on the calibration pairs of two-label sources:
    the fitted rule when there are TWO_LABEL_MIN such pairs, else the named rule of the higher macro-F1."""
    two = labelled_exactly(pairs, {"supported", "refuted"})
    chosen = [probs[i] for i in two]
    candidates: dict[str, TwoLabelRule] = {x: x for x in ("supported_vs_refuted", "supported_vs_rest")}
    if len(two) >= TWO_LABEL_MIN:
        candidates["fitted"] = fit_two_label_rule(
            chosen, [pairs[i].label for i in two], [pairs[i].source for i in two], seed=seed
        )
    scores = {name: figures(chosen, [pairs[i] for i in two], rule)["macro_f1"] for name, rule in candidates.items()}
    if "fitted" in candidates:
        return candidates["fitted"], scores
    return candidates[max(scores, key=scores.get)], scores


def fit_rest_rule(probs: list[list[float]], gold: list[str], groups: list[str], *, seed: int, balanced: bool) -> dict:
    """The rule for supported against the rest (sets whose other label is "not supported": refuted or not
    settled), fitted on calibration pairs of such sources: a logistic regression on supported's log-odds against
    the rest, every source weighing the same, and with `balanced` every label within a source too (then it decides
    as if the two labels were equally common, which macro-F1 rewards; else its probability follows the sources'
    own mix). Its weight tempers supported's probability and its bias moves the point where it decides: the
    verifier's supported mass is not the probability of a summary being faithful or an answer grounded."""
    X = np.asarray([[supported_log_odds(row[0])] for row in probs], float)
    size = Counter((g, y) if balanced else g for g, y in zip(groups, gold))
    weights = np.asarray([1.0 / size[(g, y) if balanced else g] for g, y in zip(groups, gold)])
    W, b, mean, scale = fit_softmax(
        X, [int(g == "supported") for g in gold], 2, seed=seed, l2=1e-2, steps=1500, weights=weights
    )
    w = (W[1] - W[0]) / scale
    return {
        "name": "fitted_vs_rest",
        "weight": round(float(w[0]), 4),
        "bias": round(float(b[1] - b[0] - (w * mean).sum()), 4),
    }


def choose_rest_rule(probs: list[list[float]], pairs: list[Pair], *, seed: int) -> tuple[TwoLabelRule, dict]:
    """The rule for supported against the rest, and each candidate's score on the calibration pairs of
    not-supported sources (labels supported / not_supported): supported_vs_rest as it reads, and (when there are
    TWO_LABEL_MIN such pairs) the rule fitted with and without each label weighing the same; the one of the highest
    mean over those sources of its macro-F1 on each, supported_vs_rest on a tie.

    Each source weighs the same, as in the fits: scored on the pairs pooled, the tenth stage's calibration chose the
    rule fitted to the sources' own mix by 0.1 point (76.8 against 76.7), and on the held-apart pairs it cost
    SummEdits 1.8 points and MNLI-doc 2.3; by the mean of the four sources, one half stays (74.4 against 73.8)."""
    rest = labelled_exactly(pairs, {"supported", NOT_SUPPORTED})
    candidates: dict[str, TwoLabelRule] = {"supported_vs_rest": "supported_vs_rest"}
    if len(rest) >= TWO_LABEL_MIN:
        chosen, gold, groups = [probs[i] for i in rest], [pairs[i].label for i in rest], [pairs[i].source for i in rest]
        for name, balanced in (("fitted", False), ("fitted_balanced", True)):
            candidates[name] = fit_rest_rule(chosen, gold, groups, seed=seed, balanced=balanced)
    by_source: dict[str, list[int]] = {}
    for i in rest:
        by_source.setdefault(pairs[i].source, []).append(i)

    def score(rule: TwoLabelRule) -> float:
        each = [
            figures([probs[i] for i in idx], [pairs[i] for i in idx], "supported_vs_refuted", rule)["macro_f1"]
            for idx in by_source.values()
        ]
        return round(sum(each) / len(each), 2)

    scores = {name: score(rule) for name, rule in candidates.items()} if rest else {}
    return candidates[max(candidates, key=lambda name: scores.get(name, 0.0))], scores


def uncertain_threshold(conf: list[float], correct: list[bool], target: float) -> tuple[float, float, float]:
    """The lowest confidence t such that the verdicts at or above it are right at least `target` of the time:
    the longest run of most-confident verdicts (at least 20) that holds the target. Returns (t, the accuracy of
    the verdicts at or above t, their share); (1.0, 0, 0) when no such run exists."""
    order = sorted(range(len(conf)), key=lambda i: -conf[i])
    right, best = 0, 0
    for rank, i in enumerate(order, 1):
        right += correct[i]
        if rank >= 20 and right / rank >= target:
            best = rank
    if not best:
        return 1.0, 0.0, 0.0
    t = conf[order[best - 1]]
    kept = [i for i in range(len(conf)) if conf[i] >= t]
    return round(t, 4), sum(correct[i] for i in kept) / len(kept), len(kept) / len(conf)


def fit_aggregate_temperature(
    verifier, claims: list[tuple[str, list[str], str]], rule: TwoLabelRule = "supported_vs_refuted"
) -> SeveralTemperature:
    """The temperature on the deciding candidate's log-probabilities when several passages are read (the most
    decisive of them is chosen, which looks surer than it is): fitted through the pipelines' own path
    (`verifier.verify_many`, its aggregate temperature at 1.0) on calibration claims with several passages and a
    supported / refuted label, whose two-label probability is read as the pipelines read it, by `rule` (a fitted
    rule tempers the odds itself: fitted on the odds alone, the two temperatures would both be applied).
    1.0 without such claims.

    The more passages the choice is among, the surer the chosen one looks: on the fifth stage's calibration claims
    one temperature was 1.82, but 1.03 for two or three passages and 3.6 for seven or more. So it grows with the
    count n: exp(alpha + beta ln n), both fitted (maximum likelihood, grid), {"alpha": a, "beta": b}; with claims
    of one count only, beta is 0."""
    claims = [c for c in claims if c[2] in ("supported", "refuted")]
    if not claims:
        return 1.0
    verdicts = verifier.verify_many([(c, ps) for c, ps, _ in claims])
    logs = np.asarray([[math.log(max(v.probabilities[x], 1e-9)) for x in LABELS] for v in verdicts])
    supported = np.asarray([lab == "supported" for _, _, lab in claims])
    log_n = np.log(np.asarray([max(len(candidates(ps)[0]), 1) for _, ps, _ in claims], float))
    low, high = SEVERAL_TEMPERATURE_RANGE

    def nll(alpha: float, betas: np.ndarray) -> np.ndarray:
        t = np.clip(np.exp(alpha + np.outer(betas, log_n)), low, high)[..., None]  # (betas, claims, 1)
        tempered = logs / t
        tempered = tempered - np.logaddexp.reduce(tempered, axis=-1, keepdims=True)  # (betas, claims, 3)
        p = two_label_probability(tempered, rule)
        return -np.log(np.clip(np.where(supported, p, 1.0 - p), 1e-12, 1.0)).mean(axis=1)

    betas = np.round(np.arange(-1.0, 1.5001, 0.02), 4) if len(set(log_n.tolist())) > 1 else np.zeros(1)
    best = (math.inf, 0.0, 0.0)
    for alpha in np.round(np.arange(-2.0, 3.0001, 0.02), 4):
        losses = nll(alpha, betas)
        i = int(losses.argmin())
        best = min(best, (float(losses[i]), float(alpha), float(betas[i])))
    _, alpha, beta = best
    return {"alpha": round(float(alpha), 3), "beta": round(beta, 3)}


def two_label_probability(logs: np.ndarray, rule: TwoLabelRule) -> np.ndarray:
    """The probability of supported that `rule` gives readings of log-probabilities (the last axis: supported,
    refuted, nei): result.py `binary_label`, for arrays."""
    if isinstance(rule, Mapping):
        clipped = np.maximum(logs, math.log(RULE_FLOOR))
        z = rule["bias"] + (clipped * np.asarray(rule["weights"], float)).sum(axis=-1)
        return 1.0 / (1.0 + np.exp(-z))
    if rule == "supported_vs_rest":
        return np.exp(logs[..., 0])
    return 1.0 / (1.0 + np.exp(logs[..., 1] - logs[..., 0]))
