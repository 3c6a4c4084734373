"""The lexical baseline: a small logistic regression on word-overlap features of a claim and its evidence.

It answers "how much of this benchmark does word overlap alone solve?": every evaluation can show it beside
the real pipelines. Its weights are trained by `veracity verifier train` with the verifier (verify/training/fits.py
`fit_lexical`) and shipped as JSON (`weights/lexical.json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .result import aggregate, candidates
from .text import content_words, names, negations, numbers, stem, words

FEATURES = (
    "missing_content",
    "missing_content_stems",
    "missing_numbers",
    "has_numbers",
    "missing_names",
    "claim_negations",
    "evidence_negations",
    "negation_mismatch",
    "claim_length",
    "evidence_length",
    "bigram_overlap",
    "unmatched_numbers_in_evidence",
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
        return {
            "features": list(FEATURES),
            "labels": list(self.labels),
            "coef": self.coef.tolist(),
            "intercept": self.intercept.tolist(),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
        }

    @classmethod
    def from_json(cls, data: dict) -> LexicalModel:
        if list(data.get("features", [])) != list(FEATURES):
            raise ValueError("lexical model was trained on other features; retrain it with `veracity verifier train`")
        return cls(
            tuple(data["labels"]),
            np.asarray(data["coef"], float),
            np.asarray(data["intercept"], float),
            np.asarray(data["mean"], float),
            np.asarray(data["scale"], float),
        )

    @classmethod
    def load(cls, path: str | Path) -> LexicalModel:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


class LexicalVerifier:
    """The lexical baseline behind the same interface as the trained verifier (verify/model.Verifier)."""

    name = "lexical"
    max_length = 512  # words of a pair: the parts grounding cuts documents into are counted in words (grounding.py)

    def __init__(self, model: LexicalModel, binary_rule: str = "supported_vs_refuted") -> None:
        self.model = model
        self.binary_rule = binary_rule
        self.rest_rule = "supported_vs_rest"
        self.retrieved_rule = None  # no rule fitted on retrieved evidence: the one rule for any evidence

    def verify_many(self, items):
        out = []
        for claim, passages in items:
            passages, cands = candidates(passages)
            out.append(aggregate([self.model.probabilities(claim, p) for p in cands], len(passages)))
        return out

    def verify(self, claim, passages):
        return self.verify_many([(claim, passages)])[0]

    def score_pairs(self, pairs):
        return [self.model.probabilities(claim, evidence) for claim, evidence in pairs]
