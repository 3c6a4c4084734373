"""What a retriever is: anything that turns a query into ranked evidence.

`Retriever` is the interface pipelines use. `Ranker` is the lower-level interface of the
scoring components (BM25, dense, hybrid): they rank passage rows of an index, and the
`Index` turns rows into `Evidence`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from veracity.types import Evidence

Hit = tuple[int, float]  # (passage row in the index, score); higher scores rank first


@runtime_checkable
class Retriever(Protocol):
    """Ranked evidence for a query, best first."""

    def search(self, query: str, k: int = 5) -> list[Evidence]: ...


@runtime_checkable
class Ranker(Protocol):
    """Ranked passage rows for a query, best first; only rows that match at all."""

    def rank(self, query: str, k: int) -> list[Hit]: ...


def top_hits(scores: np.ndarray, k: int, rows: np.ndarray | None = None) -> list[Hit]:
    """The `k` best rows by score (among `rows` when given), best first; ties go to the lower row."""
    if rows is None:
        rows = np.arange(len(scores))
    if len(rows) > k:
        rows = rows[np.argpartition(-scores[rows], k - 1)[:k]]
    rows = rows[np.lexsort((rows, -scores[rows]))]
    return [(int(row), float(scores[row])) for row in rows]
