"""Fitting and measuring the matcher's re-ranker on claim-matching data in the CheckThat! shape.

    collection: fact-checks (vclaims.jsonl: {"id", "title", "subtitle", "vclaim", ...}, or any import format)
    queries:    {"id", "text", "split"}  one per post
    qrels:      {"query_id", "vclaim_id", ...}  the fact-check(s) each post repeats

`veracity factchecks train-reranker` fits the logistic regression on the queries of one split (train) and measures
it on another (dev), writing reranker.json with what it was fitted on and how it did. `benchmarks/claim_matching.py`
measures the shipped one with the same functions (MAP@5, as CheckThat! scores it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..metrics import expected_calibration_error
from .matcher import FEATURES, Matcher, Reranker

L2 = 1.0  # the ridge penalty of the fit, on standardized features
#: the threshold is the lowest (in steps of 0.05) at which at most this share of the train posts whose fact-check was
#: left out get a match shown: most claims a user checks have none, and a wrong "published fact-check" misleads
MAX_FALSE_FOUND = 0.03


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    split: str
    relevant: frozenset[str]  # keys of the fact-checks it repeats


def read_queries(queries: str | Path, qrels: str | Path, split: str | None = None) -> list[Query]:
    """The posts of `split` (all without one) that have at least one relevant fact-check."""
    relevant: dict[str, set[str]] = {}
    for n, row in enumerate(_jsonl(qrels), start=1):
        try:
            relevant.setdefault(str(row["query_id"]), set()).add(str(row["vclaim_id"]))
        except (KeyError, TypeError):
            raise UserError(f"{Path(qrels).name}, line {n}: expected query_id and vclaim_id") from None
    out = []
    for n, row in enumerate(_jsonl(queries), start=1):
        try:
            qid, text = str(row["id"]), str(row["text"])
        except (KeyError, TypeError):
            raise UserError(f"{Path(queries).name}, line {n}: expected id and text") from None
        if (split is None or row.get("split") == split) and qid in relevant:
            out.append(Query(qid, text, str(row.get("split", "")), frozenset(relevant[qid])))
    if not out:
        raise UserError(f"no queries{f' of split {split!r}' if split else ''} with relevant fact-checks")
    return out


def _jsonl(path: str | Path) -> Iterable[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise UserError(f"{Path(path).name} is not JSON lines ({e})") from None


def average_precision(ranked: Sequence[str], relevant: frozenset[str] | set[str], k: int = 5) -> float:
    """AP@k as the CheckThat! scorer computes it: precision at each relevant hit in the first k, over
    min(|relevant|, k)."""
    return _average_precision([key in relevant for key in ranked[:k]], len(relevant), k)


def _average_precision(hits: Sequence[bool], relevant: int, k: int) -> float:
    """AP@k of a ranking given as hit or not at each rank, for a query with `relevant` relevant items."""
    found, total = 0, 0.0
    for i, hit in enumerate(hits[:k], start=1):
        if hit:
            found += 1
            total += found / i
    return total / min(relevant, k) if relevant else 0.0


@dataclass(frozen=True)
class Labelled:
    """A query's first-stage candidates as the re-ranker is fitted and measured on them."""

    x: np.ndarray  # their features
    y: np.ndarray  # 1 where the candidate is a fact-check the query repeats
    relevant: int  # how many fact-checks the query repeats (0 when they were left out of the store)


def labelled_candidates(matcher: Matcher, queries: Sequence[Query], *, unmatched: bool = False) -> list[Labelled]:
    """Each query's labelled candidates; `unmatched`: with the fact-checks it repeats left out of the store (every
    label 0: a post with no published fact-check)."""
    position = {r.key: i for i, r in enumerate(matcher.store.records)}
    out = []
    for q in queries:
        leave_out = frozenset(position[k] for k in q.relevant if k in position) if unmatched else frozenset()
        rows, x = matcher.candidates(q.text, leave_out)
        y = np.array([matcher.store.records[r].key in q.relevant for r in rows], dtype=float)
        out.append(Labelled(x, y, 0 if unmatched else len(q.relevant)))
    return out


def fit(x: np.ndarray, y: np.ndarray, *, l2: float = L2) -> Reranker:
    """A ridge-penalized logistic regression on standardized features (L-BFGS)."""
    from scipy.optimize import minimize

    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / scale

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        p = 1.0 / (1.0 + np.exp(-(z @ w[:-1] + w[-1])))
        value = -np.sum(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)) + l2 * np.sum(w[:-1] ** 2)
        return value, np.r_[z.T @ (p - y) + 2 * l2 * w[:-1], np.sum(p - y)]

    w = minimize(loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B").x
    return Reranker(tuple(map(float, w[:-1])), float(w[-1]), tuple(map(float, mean)), tuple(map(float, scale)))


def measure(reranker: Reranker, data: Sequence[Labelled], k: int = 5) -> dict[str, float]:
    """MAP@k of its ranking; how often its best match at or above the threshold is right (and how often there is
    one: for posts whose fact-check was left out, every one shown is wrong); the ECE of the probabilities of the
    first k candidates."""
    aps, top_right, found, probs, right = [], [], [], [], []
    for d in data:
        p = reranker.probabilities(d.x)
        order = np.argsort(-p, kind="stable")[:k]
        hits = [bool(h) for h in d.y[order]]
        aps.append(_average_precision(hits, d.relevant, k))
        if len(order) and p[order[0]] >= reranker.threshold:
            found.append(1.0)
            top_right.append(float(hits[0]))
        else:
            found.append(0.0)
        probs += list(map(float, p[order]))
        right += hits
    return {
        "queries": len(data),
        "map_at_5": round(float(np.mean(aps)), 4),
        "found_share": round(float(np.mean(found)), 4),
        "found_precision": round(float(np.mean(top_right)), 4) if top_right else 0.0,
        "ece_top5": round(expected_calibration_error(probs, right), 4),
    }


def choose_threshold(reranker: Reranker, unmatched: Sequence[Labelled]) -> float:
    """The lowest threshold (0.30 to 0.95 in steps of 0.05) at which at most MAX_FALSE_FOUND of the posts without a
    fact-check in the store get one shown."""
    for threshold in np.round(np.arange(0.30, 0.951, 0.05), 2):
        if measure(replace(reranker, threshold=float(threshold)), unmatched)["found_share"] <= MAX_FALSE_FOUND:
            return float(threshold)
    return 0.95


def train_reranker(matcher: Matcher, train: Sequence[Query], dev: Sequence[Query], *, fitted_on: str) -> Reranker:
    """Fit on `train`, measure on `dev` (and on train, for the record)."""
    matched = labelled_candidates(matcher, train)
    unmatched = labelled_candidates(matcher, train, unmatched=True)
    data = matched + unmatched
    reranker = fit(np.vstack([d.x for d in data]), np.concatenate([d.y for d in data]))
    reranker = replace(reranker, threshold=choose_threshold(reranker, unmatched))
    measured = {"train": measure(reranker, matched), "train_unmatched": measure(reranker, unmatched)}
    if dev:
        measured["dev"] = measure(reranker, labelled_candidates(matcher, dev))
        measured["dev_unmatched"] = measure(reranker, labelled_candidates(matcher, dev, unmatched=True))
    fitted_on += "; each query twice: against the whole collection, and with its fact-check left out (prior 1/2)"
    return replace(reranker, fitted_on=fitted_on, measured=measured)


__all__ = ["FEATURES", "Query", "average_precision", "fit", "measure", "read_queries", "train_reranker"]
