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
        try:
            model = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        except OSError:
            raise
        except Exception as e:  # a damaged file fails in many ways: a list for the vocabulary, a bad .npy header
            raise ValueError(" ".join(f"{type(e).__name__}: {e}".split())[:200]) from None
        _check_model(model)
        return cls(model)

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


def _check_model(model) -> None:
    """Raise ValueError unless the loaded bm25s arrays are consistent (a damaged file would crash a search
    or, worse, give wrong scores without a word): a vocabulary of token -> column ids, an `indptr` that starts
    at 0, never decreases and ends at the number of entries, passage rows inside the passage count."""
    for name, kinds in (("dtype", "f"), ("int_dtype", "iu")):
        try:
            ok = np.dtype(getattr(model, name)).kind in kinds
        except (TypeError, ValueError, AttributeError):
            ok = False
        if not ok:
            raise ValueError(f"its parameter {name} is {str(getattr(model, name, None))[:40]!r}, not a numeric type")
    vocab = model.vocab_dict
    if not isinstance(vocab, dict):
        raise ValueError(f"its vocabulary is a {type(vocab).__name__}, not a mapping of tokens to ids")
    scores = model.scores
    if not isinstance(scores, dict) or not all(k in scores for k in ("data", "indices", "indptr", "num_docs")):
        raise ValueError("its score matrix is incomplete")
    num_docs = scores["num_docs"]
    if not isinstance(num_docs, (int, np.integer)) or isinstance(num_docs, bool) or num_docs < 0:
        raise ValueError(f"its passage count {num_docs!r} is not a count")
    data, indices, indptr = (np.asarray(scores[k]) for k in ("data", "indices", "indptr"))
    for name, array, kind in (("data", data, "fc"), ("indices", indices, "iu"), ("indptr", indptr, "iu")):
        if array.ndim != 1 or array.dtype.kind not in kind:
            raise ValueError(f"its {name} array has the wrong shape or type ({array.dtype}, {array.ndim}-d)")
    if len(data) != len(indices):
        raise ValueError(f"its data and indices arrays differ in length ({len(data)} vs {len(indices)})")
    n_tokens = len(indptr) - 1
    if n_tokens < 0 or indptr[0] != 0 or indptr[-1] != len(data) or np.any(np.diff(indptr) < 0):
        raise ValueError(
            "its indptr array is inconsistent (it must start at 0, never decrease and end at "
            f"the number of entries, {len(data)})"
        )
    if np.iinfo(np.dtype(model.int_dtype)).max < n_tokens:
        raise ValueError(f"its parameter int_dtype {model.int_dtype!r} cannot hold {n_tokens} token ids")
    if len(indices) and (indices.min() < 0 or indices.max() >= num_docs):
        raise ValueError(f"its indices point outside the {num_docs} passages")
    if not np.all(np.isfinite(data)):
        raise ValueError("its scores hold non-finite numbers")
    for token, column in vocab.items():
        top = n_tokens if token == "" else n_tokens - 1  # bm25s keeps "" (no token) just past the last column
        if (
            not isinstance(token, str)
            or not isinstance(column, int)
            or isinstance(column, bool)
            or not 0 <= column <= top
        ):
            raise ValueError(
                f"its vocabulary maps {str(token)[:40]!r} to {str(column)[:40]}, not a token id below {n_tokens}"
            )
