"""Matching a claim, a sentence or a social-media post against the store of published fact-checks.

1. The post is cleaned of its noise (`clean_post`): links, "pic.twitter.com/..." and handles go, hashtags become
   words ("#AustralianFires" -> "Australian Fires"), emoji go.
2. First stage: BM25 over each fact-check's headline, summary and claim, and MiniLM embeddings of its claim, each
   giving its best `DEPTH`; the candidates are their union.
3. Re-ranking: a logistic regression over features of each (post, candidate) pair (`FEATURES`) gives the
   probability that the candidate checks the post's claim. Its weights (`reranker.json`) were fitted on the
   CheckThat! 2022 Task 2A train tweets only (`veracity factchecks train-reranker`), each tweet twice: against the
   whole collection, and with the fact-check it repeats left out, since most claims a user checks have no
   published fact-check and the best candidate of a post that has none must not read as its match. Its
   probability is measured for calibration on the dev tweets, both ways (the file says how it did).
4. Matches at or above the threshold are "published fact-checks of this claim"; below it, none was found, and
   the best candidates are kept as "related" only where a caller asks for them.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..retrieval.hybrid import RRF_K, reciprocal_rank_fusion
from .record import FactCheck
from .store import FactCheckStore

RERANKER_FILE = Path(__file__).resolve().parent / "reranker.json"
DEPTH = 30  # candidates taken from each first-stage ranking
FEATURES = (
    "bm25_log",  # log(1 + BM25 score)
    "cos",  # cosine of the post's and the fact-check's claim's embeddings
    "rrf",  # reciprocal-rank fusion of the two first-stage rankings, x 60
    "covered",  # share of the fact-check's claim words found in the post
    "coverage",  # share of the post's words found in the fact-check
    "numbers_missing",  # the fact-check's claim has numbers the post lacks
)  # no feature relative to the other candidates: in a small store the best of a few is no better a match


@dataclass(frozen=True)
class Match:
    factcheck: FactCheck
    probability: float  # that this fact-check checks the post's claim (the re-ranker's, calibrated on dev)
    rank: int  # 1 = best
    scores: dict[str, float] = field(default_factory=dict)  # the features, for the curious

    def to_dict(self) -> dict[str, Any]:
        return {"probability": round(self.probability, 4), "rank": self.rank, **self.factcheck.to_dict()}


@dataclass(frozen=True)
class Reranker:
    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float = 0.5  # a match at or above it is shown as a published fact-check of the claim
    fitted_on: str = ""
    measured: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        z = ((x - np.asarray(self.mean)) / np.asarray(self.scale)) @ np.asarray(self.weights) + self.bias
        return 1.0 / (1.0 + np.exp(-z))

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(FEATURES),
            "weights": list(self.weights),
            "bias": self.bias,
            "mean": list(self.mean),
            "scale": list(self.scale),
            "threshold": self.threshold,
            "fitted_on": self.fitted_on,
            "measured": self.measured,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reranker:
        if list(data.get("features", [])) != list(FEATURES):
            raise ValueError("its features are not this version's")
        return cls(
            tuple(map(float, data["weights"])),
            float(data["bias"]),
            tuple(map(float, data["mean"])),
            tuple(map(float, data["scale"])),
            float(data.get("threshold", 0.5)),
            str(data.get("fitted_on", "")),
            dict(data.get("measured") or {}),
        )


@lru_cache(maxsize=4)
def load_reranker(path: str | None = None) -> Reranker | None:
    """The shipped re-ranker (or the one at `path`); None where there is none (matching then ranks by fusion and
    gives no probability)."""
    file = Path(path) if path else RERANKER_FILE
    try:
        return Reranker.from_json(json.loads(file.read_text(encoding="utf-8")))
    except FileNotFoundError:
        if path:
            raise UserError(f"no re-ranker at {path}") from None
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"the re-ranker {file} is unreadable ({e})") from None


# ------------------------------------------------------------------------------------------------ the post's text
_URL = re.compile(r"(?:https?://|www\.)\S+|\bpic\.twitter\.com/\S+|\b\w+\.(?:ly|co|gl)/\S+", re.IGNORECASE)
_HANDLE_IN_PARENS = re.compile(r"\(\s*@\w+\s*\)")
_HANDLE = re.compile(r"(?<!\w)@(\w+)")
_HASHTAG = re.compile(r"(?<!\w)#(\w+)")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])")


def clean_post(text: str) -> str:
    """A post as matching reads it: links, pic.twitter.com addresses, emoji and handles in a signature
    ("(@IlhanMN)") dropped; other handles and hashtags kept as words ("#AustralianFires" -> "Australian Fires")."""
    text = text.replace("&amp;", "&").replace("&quot;", '"').replace("&#39;", "'")
    text = _URL.sub(" ", text)
    text = _HANDLE_IN_PARENS.sub(" ", text)
    text = _HASHTAG.sub(lambda m: " " + _CAMEL.sub(" ", m.group(1)), text)
    text = _HANDLE.sub(lambda m: " " + _CAMEL.sub(" ", m.group(1)), text)
    text = "".join(c for c in text if unicodedata.category(c) not in ("So", "Cs", "Co", "Cn") and c != "\ufe0f")
    return " ".join(re.sub(r"\bRT\b:?", " ", text).split())


# ------------------------------------------------------------------------------------------------ matching
class Matcher:
    """Matches texts against a store (see the module's docstring). Loads the embedding model on first use."""

    def __init__(self, store: FactCheckStore, reranker: Reranker | None | str = "shipped") -> None:
        from ..retrieval.dense import Encoder

        self.store = store
        self.reranker = load_reranker() if reranker == "shipped" else reranker
        self.encoder = Encoder(store.encoder_name or None)

    @property
    def threshold(self) -> float:
        return self.reranker.threshold if self.reranker else 1.0

    def candidates(self, text: str, leave_out: frozenset[int] = frozenset()) -> tuple[list[int], np.ndarray]:
        """The first stage's candidate rows and the feature matrix (one row per candidate). `leave_out`: rows taken
        as absent from the store (training: a post whose fact-check is not in the store, as most posts' are not)."""
        query = clean_post(text)
        if not query:
            raise UserError("nothing to match: the text is empty once links, handles and emoji are removed")
        bm25, cos, rankings = self.first_stage(query, leave_out)
        rows = [r for r in dict.fromkeys(r for ranking in rankings for r in ranking) if r not in leave_out]
        if not rows:
            return [], np.zeros((0, len(FEATURES)))
        fused = dict(reciprocal_rank_fusion(rankings, RRF_K))
        words = _words(query)
        numbers = set(re.findall(r"\d+", query))
        x = np.zeros((len(rows), len(FEATURES)))
        for i, row in enumerate(rows):
            record = self.store.records[row]
            claim_words = _words(record.claim)
            all_words = claim_words | _words(record.title) | _words(record.summary)
            x[i] = (
                math.log1p(bm25.get(row, 0.0)),
                float(cos[row]),
                fused.get(row, 0.0) * 60,
                len(claim_words & words) / len(claim_words) if claim_words else 0.0,
                len(all_words & words) / len(words) if words else 0.0,
                float(bool(set(re.findall(r"\d+", record.claim)) - numbers)),
            )
        return rows, x

    def first_stage(
        self, query: str, leave_out: frozenset[int] = frozenset()
    ) -> tuple[dict[int, float], np.ndarray, list[list[int]]]:
        """For a cleaned query: the BM25 scores of its best `DEPTH` rows, the cosine of every row, and the two
        rankings (BM25's, the embeddings'), `leave_out` rows taken as absent."""
        hits = [h for h in self.store.bm25.rank(query, DEPTH + len(leave_out)) if h[0] not in leave_out][:DEPTH]
        cos = np.array(self.store.vectors("claim") @ self.encoder.encode_query(query))
        if leave_out:
            cos[list(leave_out)] = -1.0
        top = np.argpartition(-cos, DEPTH)[:DEPTH] if len(cos) > DEPTH else np.arange(len(cos))
        rankings = [[row for row, _ in hits], [int(r) for r in top[np.argsort(-cos[top], kind="stable")]]]
        return dict(hits), cos, rankings

    def rank(self, text: str, k: int = 5) -> list[Match]:
        """The `k` best candidates, best first, each with its probability (0 without a re-ranker)."""
        if k < 1:
            raise UserError(f"the number of matches must be at least 1, got {k}")
        rows, x = self.candidates(text)
        if not rows:
            return []
        if self.reranker is not None:
            scores = self.reranker.probabilities(x)
        else:  # fusion alone: ranked, no probability
            scores = x[:, FEATURES.index("rrf")] / 1000.0
        order = np.argsort(-scores, kind="stable")[:k]
        return [
            Match(
                self.store.records[rows[i]],
                float(scores[i]) if self.reranker is not None else 0.0,
                n,
                dict(zip(FEATURES, map(float, x[i]))),
            )
            for n, i in enumerate(order, start=1)
        ]

    def match(self, text: str, k: int = 5) -> list[Match]:
        """The published fact-checks of the text's claim: the candidates at or above the threshold, best first."""
        return [m for m in self.rank(text, k) if m.probability >= self.threshold]


@lru_cache(maxsize=20000)
def _words(text: str) -> frozenset[str]:
    from ..retrieval.bm25 import tokenize

    return frozenset(tokenize(text, as_ids=False)[0]) if text.strip() else frozenset()
