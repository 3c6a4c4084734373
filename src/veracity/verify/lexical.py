"""The lexical baseline: a small logistic regression on word-overlap features of a claim and its evidence.

It answers "how much of this benchmark does word overlap alone solve?": every evaluation can show it beside
the real pipelines. Its weights are trained by `veracity verifier train` with the verifier and shipped as
JSON (`weights/lexical.json`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .result import aggregate, candidates
from .text import content_words, names, negations, numbers, stem, words

FEATURES = (
    "missing_content", "missing_content_stems", "missing_numbers", "has_numbers", "missing_names",
    "claim_negations", "evidence_negations", "negation_mismatch", "claim_length", "evidence_length",
    "bigram_overlap", "unmatched_numbers_in_evidence",
)


def features(claim: str, evidence: str) -> list[float]:
    """Word-overlap features of one claim against one piece of evidence (all in [0, 1] or small counts)."""
    cw, ew = content_words(claim), content_words(evidence)
    cs, es = {stem(w) for w in cw}, {stem(w) for w in ew}
    cn, en = numbers(claim), numbers(evidence)
    cnames, ewords = names(claim), set(words(evidence))
    cneg, eneg = negations(claim), negations(evidence)
    cwl, ewl = words(claim), words(evidence)
    cb = set(zip(cwl, cwl[1:]))
    eb = set(zip(ewl, ewl[1:]))

    def share_missing(a: set, b: set) -> float:
        return len(a - b) / len(a) if a else 0.0

    return [
        share_missing(cw, ew),
        share_missing(cs, es),
        share_missing(cn, en),
        1.0 if cn else 0.0,
        share_missing(cnames, ewords),
        min(cneg, 3) / 3,
        min(eneg, 3) / 3,
        1.0 if (cneg > 0) != (eneg > 0) else 0.0,
        min(len(cwl), 60) / 60,
        min(len(ewl), 400) / 400,
        len(cb & eb) / len(cb) if cb else 0.0,
        1.0 if (cn and en and not (cn & en)) else 0.0,
    ]


@dataclass
class LexicalModel:
    """Multinomial logistic regression over `features`, classes in `labels` order."""

    labels: tuple[str, ...]
    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray  # (classes,)
    mean: np.ndarray
    scale: np.ndarray

    def probabilities(self, claim: str, evidence: str) -> dict[str, float]:
        x = (np.asarray(features(claim, evidence)) - self.mean) / self.scale
        z = self.coef @ x + self.intercept
        z = z - z.max()
        p = np.exp(z) / np.exp(z).sum()
        return {lab: float(v) for lab, v in zip(self.labels, p)}

    def to_json(self) -> dict:
        return {"features": list(FEATURES), "labels": list(self.labels), "coef": self.coef.tolist(),
                "intercept": self.intercept.tolist(), "mean": self.mean.tolist(), "scale": self.scale.tolist()}

    @classmethod
    def from_json(cls, data: dict) -> "LexicalModel":
        if list(data.get("features", [])) != list(FEATURES):
            raise ValueError("lexical model was trained on other features; retrain it with `veracity verifier train`")
        return cls(tuple(data["labels"]), np.asarray(data["coef"], float), np.asarray(data["intercept"], float),
                   np.asarray(data["mean"], float), np.asarray(data["scale"], float))

    @classmethod
    def load(cls, path: str | Path) -> "LexicalModel":
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def fit_softmax(X: np.ndarray, y: "list[int] | np.ndarray", classes: int, *, seed: int, l2: float, steps: int,
                weights: "np.ndarray | None" = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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


def fit_lexical(pairs: list[tuple[str, str]], labels: list[str], classes: tuple[str, ...], *,
                seed: int = 0, l2: float = 1.0) -> LexicalModel:
    """Fit the lexical baseline's logistic regression on `features` of the pairs."""
    X = np.asarray([features(c, e) for c, e in pairs], float)
    W, b, mean, scale = fit_softmax(X, [classes.index(lab) for lab in labels], len(classes), seed=seed, l2=l2,
                                    steps=800)
    return LexicalModel(classes, W, b, mean, scale)


def log_loss(model: LexicalModel, pairs: list[tuple[str, str]], labels: list[str]) -> float:
    total = 0.0
    for (c, e), lab in zip(pairs, labels):
        total -= math.log(max(model.probabilities(c, e)[lab], 1e-12))
    return total / max(len(labels), 1)


class LexicalVerifier:
    """The lexical baseline behind the same interface as the trained verifier (verify/model.Verifier)."""

    name = "lexical"

    def __init__(self, model: LexicalModel, binary_rule: str = "supported_vs_refuted") -> None:
        self.model = model
        self.binary_rule = binary_rule
        self.rest_rule = "supported_vs_rest"

    def verify_many(self, items):
        out = []
        for claim, passages in items:
            passages, cands = candidates(passages)
            out.append(aggregate([self.model.probabilities(claim, p) for p in cands], len(passages)))
        return out

    def verify(self, claim, passages):
        return self.verify_many([(claim, passages)])[0]
