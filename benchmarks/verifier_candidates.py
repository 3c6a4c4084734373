"""Candidate verifier models compared on the same held-apart data (issue 13: "compare at least two").

    python benchmarks/verifier_candidates.py [--limit N]

- cross-encoder: the shipped verifier (MiniLM-L6 fine-tuned as a cross-encoder, `veracity verifier train`);
- bi-encoder probe: the frozen MiniLM sentence embeddings of claim and evidence (u*v, |u-v|, cosine) plus the
  lexical features, and a multinomial logistic regression on top, trained here on the same training pairs;
- lexical: the shipped word-overlap logistic regression.
All three see the same training pairs (verify/training/data.py) and are measured on FM2's held-out pages (gold
evidence, two labels) and CAD-SNLI test (three labels). Prints one table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from veracity.metrics import accuracy, macro_f1
from veracity.retrieval.dense import Encoder
from veracity.verify import load_lexical, load_verifier
from veracity.verify.lexical import features
from veracity.verify.result import LABELS, binary_label
from veracity.verify.training.data import build, default_training_dir


def probe_features(enc: Encoder, claims: list[str], evidence: list[str]) -> np.ndarray:
    u = enc.encode(claims, batch_size=64)
    v = enc.encode(evidence, batch_size=64)
    lex = np.asarray([features(c, e) for c, e in zip(claims, evidence)])
    return np.hstack([u * v, np.abs(u - v), (u * v).sum(1, keepdims=True), lex])


def fit_softmax(X: np.ndarray, y: np.ndarray, classes: int, *, l2: float = 1e-3, epochs: int = 300) -> tuple:
    mean, std = X.mean(0), X.std(0)
    std = np.where(std > 1e-6, std, 1.0)
    Xs = (X - mean) / std
    W = np.zeros((classes, X.shape[1]))
    b = np.zeros(classes)
    Y = np.eye(classes)[y]
    lr = 0.5
    for _ in range(epochs):
        Z = Xs @ W.T + b
        Z -= Z.max(1, keepdims=True)
        P = np.exp(Z)
        P /= P.sum(1, keepdims=True)
        G = (P - Y) / len(X)
        W -= lr * (G.T @ Xs + l2 * W)
        b -= lr * G.sum(0)
    return W, b, mean, std


def predict(model: tuple, X: np.ndarray) -> np.ndarray:
    W, b, mean, std = model
    Z = ((X - mean) / std) @ W.T + b
    Z -= Z.max(1, keepdims=True)
    P = np.exp(Z)
    return P / P.sum(1, keepdims=True)


def scores(name: str, probs: np.ndarray, pairs, rule: str) -> tuple:
    gold = [p.label for p in pairs]
    if set(gold) <= {"supported", "refuted"}:
        pred = [binary_label(s, r, rule)[0] for s, r, _ in probs.tolist()]
        labels = ["supported", "refuted"]
    else:
        pred = [LABELS[i] for i in probs.argmax(1)]
        labels = list(LABELS)
    return 100 * macro_f1(gold, pred, labels), 100 * accuracy(gold, pred)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="training pairs for the probe (default all)")
    args = ap.parse_args()
    data = build(default_training_dir())
    train = data.train[: args.limit] if args.limit else data.train
    enc = Encoder()
    t = time.time()
    X = probe_features(enc, [p.claim for p in train], [p.evidence for p in train])
    y = np.asarray([LABELS.index(p.label) for p in train])
    probe = fit_softmax(X, y, 3)
    probe_seconds = time.time() - t
    ce, lex = load_verifier(), load_lexical()
    rows = []
    for set_name, pairs in (("fm2 held-out pages", data.heldout_fm2), ("cad-snli test", data.cad_test)):
        claims, evidence = [p.claim for p in pairs], [p.evidence for p in pairs]
        vs = ce.verify_many([(c, [e]) for c, e in zip(claims, evidence)])
        p_ce = np.asarray([[v.probabilities[k] for k in LABELS] for v in vs])
        ls = lex.verify_many([(c, [e]) for c, e in zip(claims, evidence)])
        p_lex = np.asarray([[v.probabilities[k] for k in LABELS] for v in ls])
        p_probe = predict(probe, probe_features(enc, claims, evidence))
        for name, probs in (("cross-encoder (shipped)", p_ce), ("bi-encoder probe", p_probe), ("lexical", p_lex)):
            rows.append((set_name, name, len(pairs), *scores(name, probs, pairs, ce.binary_rule)))
    print(f"training pairs: {len(train)}; probe trained in {probe_seconds:.0f} s")
    print("| set | model | n | macro-F1 | accuracy |")
    print("|---|---|---:|---:|---:|")
    for s, m, n, f1, acc in rows:
        print(f"| {s} | {m} | {n} | {f1:.1f} | {acc:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
