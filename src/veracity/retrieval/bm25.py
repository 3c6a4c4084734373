"""Lexical retrieval: BM25 over passages with bm25s, English stemming and stopwords."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from veracity.retrieval.base import Hit, top_hits

STOPWORDS = "en"
STEMMER_LANGUAGE = "english"
TOKEN_PATTERN = r"(?u)\b\w+\b"  # keeps one-character tokens: digits matter in claims ("World War 2")
# Files bm25s writes with `save`; an index lacking any of them is incomplete.
BM25_FILES = (
    "params.index.json",
    "vocab.index.json",
    "data.csc.index.npy",
    "indices.csc.index.npy",
    "indptr.csc.index.npy",
)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer(STEMMER_LANGUAGE)


def tokenize(texts: str | Sequence[str], *, as_ids: bool, progress: bool = False):
    """Lowercase, drop English stopwords and stem: the same analysis for passages and queries."""
    import bm25s

    return bm25s.tokenize(
        texts if isinstance(texts, str) else list(texts),
        token_pattern=TOKEN_PATTERN,
        stopwords=STOPWORDS,
        stemmer=_stemmer(),
        return_ids=as_ids,
        show_progress=progress,
    )


class BM25Ranker:
    """A BM25 index over passage texts, ranking passage rows."""

    def __init__(self, model) -> None:
        self._model = model  # a bm25s.BM25 with an index

    @classmethod
    def build(cls, texts: Sequence[str], *, progress: bool = False) -> BM25Ranker:
        import bm25s

        model = bm25s.BM25()
        model.index(tokenize(texts, as_ids=True, progress=progress), show_progress=progress)
        return cls(model)

    @classmethod
    def load(cls, folder: Path) -> BM25Ranker:
        """Load a saved index; raises OSError/ValueError when files are missing or corrupt."""
        import bm25s

        if not folder.is_dir():
            raise FileNotFoundError(f"the folder {folder.name}/ is missing")
        missing = [name for name in BM25_FILES if not (folder / name).is_file()]
        if missing:
            raise FileNotFoundError(f"missing {', '.join(missing)} in {folder}")
        return cls(bm25s.BM25.load(str(folder), mmap=True, show_progress=False))

    def save(self, folder: Path) -> None:
        self._model.save(str(folder), show_progress=False)

    def __len__(self) -> int:
        return int(self._model.scores["num_docs"])

    def rank(self, query: str, k: int) -> list[Hit]:
        tokens = tokenize(query, as_ids=False)[0]
        if not tokens:
            return []  # nothing left after stopword removal: nothing matches
        scores = self._model.get_scores(tokens)
        # Select among matching passages only: it drops non-matches, and numpy's partition
        # is slow on the long runs of equal zeros that a whole-corpus score array holds.
        return top_hits(scores, k, np.flatnonzero(scores > 0))
