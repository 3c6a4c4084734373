"""Hybrid retrieval: reciprocal rank fusion (RRF) of several rankers, BM25 and dense by default."""

from __future__ import annotations

from collections.abc import Sequence

from veracity.retrieval.base import Hit, Ranker

RRF_K = 60  # the constant of Cormack et al. (2009); damps the weight of the top ranks
DEPTH = 100  # how many results of each ranker are fused (at least k)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[Hit]:
    """Fuse rankings of rows: score(row) = sum over rankings of 1 / (k + rank), rank from 1.

    Ties keep the order in which rows were first seen, so the result is deterministic.
    """
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            scores[row] = scores.get(row, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


class HybridRanker:
    """Ranks with every component ranker and fuses their rankings with RRF."""

    def __init__(self, rankers: Sequence[Ranker], *, rrf_k: int = RRF_K, depth: int = DEPTH) -> None:
        self.rankers = list(rankers)
        self.rrf_k = rrf_k
        self.depth = depth

    def rank(self, query: str, k: int) -> list[Hit]:
        depth = max(k, self.depth)
        rankings = [[row for row, _ in ranker.rank(query, depth)] for ranker in self.rankers]
        return reciprocal_rank_fusion(rankings, self.rrf_k)[:k]
