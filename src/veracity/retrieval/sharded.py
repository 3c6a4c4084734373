"""Sharded indexes: a corpus too large to index in memory (a whole Wikipedia), built shard by shard with bounded
memory, resumable after a kill (sharded_build.py), and searched as one index.

    build_sharded("enwiki-latest-pages-articles.xml.bz2", "wiki-index", max_memory=2_000_000_000)  # sharded_build
    index = open_index("wiki-index")          # any index folder: a plain one (`Index`) or a sharded one
    index.search("who painted the Mona Lisa?", k=5)

Reading: `open_index` opens either kind. A sharded index searches every shard and merges their hits by score. BM25's
IDF (and bm25s's average passage length) are per shard: a word's weight is what it is in its shard, so scores from
different shards are close to, but not exactly, what one index over everything would give (benchmarks/
wikidump_build.py measures how much the top 5 differ). Dense scores are cosines, the same in every shard; hybrid
search fuses the merged BM25 and dense rankings (reciprocal rank fusion, as `Index` does). A shard is opened without
reading its passages: BM25 and embeddings are memory-mapped, and a passage is read from passages.jsonl at its byte
offset (passages.offsets.npy) only when it is among the results, so that an index of tens of millions of passages
opens in seconds in little memory. `document(doc_id)` finds a document's rows through each shard's documents.jsonl
(read on the first lookup). Document ids are expected to be unique across the corpus (Wikipedia page ids are): a
repeated id is refused within a shard, and across shards the first one is found.

Layout:

    manifest.json      format, version, totals, settings, the shards (written last)
    progress.json      the build's state: corpus identity, settings, the shards written and where each ends
    shards/0000/       a veracity index (see index.py) of consecutive documents, plus
                       passages.offsets.npy (byte offset of each line of passages.jsonl, and the file's length)
                       and documents.jsonl ([doc_id, first row, passage count] per document)
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from veracity.errors import IndexError_, UserError
from veracity.retrieval.base import Hit, top_hits
from veracity.retrieval.bm25 import BM25Ranker
from veracity.retrieval.dense import DenseRanker, Encoder
from veracity.retrieval.documents import Passage
from veracity.retrieval.hybrid import HybridRanker
from veracity.retrieval.index import (
    BM25_DIR,
    DENSE_FILE,
    MODES,
    PASSAGES,
    Index,
    ManifestModes,
    ModeRetriever,
    check_query,
    document_text,
)
from veracity.retrieval.index import MANIFEST as INDEX_MANIFEST
from veracity.retrieval.index import STORED as INDEX_STORED
from veracity.retrieval.index import _evidence as evidence_of
from veracity.storage import FolderFormat
from veracity.types import Evidence

if TYPE_CHECKING:
    from veracity.retrieval.pg_index import PgIndex

FORMAT = "veracity-sharded-index"
FORMAT_VERSION = 1
MANIFEST = INDEX_MANIFEST
STORED = FolderFormat("sharded index", FORMAT, FORMAT_VERSION, MANIFEST, "veracity index build")
PROGRESS = "progress.json"
SHARDS_DIR = "shards"
OFFSETS = "passages.offsets.npy"
DOCUMENTS = "documents.jsonl"


def open_index(path: str | Path, *, model: str | Path | None = None) -> Index | ShardedIndex | PgIndex:
    """The index at `path`, plain or sharded, the knowledge base a `kb:` name names (built on first use:
    knowledge_base.py), or an index in PostgreSQL (postgresql://.../DB#NAME: pg_index.py); `model` overrides the
    embedding model recorded at build time. Raises IndexError_ (one line) when there is none, or it is damaged, or
    its build is not finished."""
    from veracity.retrieval.knowledge_base import is_spec, load_knowledge_base
    from veracity.retrieval.pg_index import is_pg_spec, open_pg_index

    if is_spec(path):
        return load_knowledge_base(str(path))
    if is_pg_spec(path):
        return open_pg_index(str(path), model=str(model) if model else None)
    path = Path(path)
    if (path / MANIFEST).is_file() and STORED.is_ours(path):
        return ShardedIndex.load(path, model=model)
    if (path / PROGRESS).is_file() and not (path / MANIFEST).is_file():
        raise IndexError_(
            f"the index build in {path} is not finished: run the same `veracity index build` command again to resume it"
        )
    return Index.load(path, model=model)


class _Shard:
    """One shard, opened without reading its passages."""

    def __init__(self, folder: Path, entry: dict[str, Any], base: int, encoder: Encoder | None) -> None:
        self.name, self.path, self.base = entry["name"], folder, base
        self.manifest = INDEX_STORED.read_manifest(folder)
        n = entry["passages"]
        if self.manifest.get("passages") != n:
            raise _corrupt(folder, f"its {MANIFEST} says {self.manifest.get('passages')} passages, not {n}")
        try:
            self.bm25 = BM25Ranker.load(folder / BM25_DIR)
            self.offsets = np.load(folder / OFFSETS, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise _corrupt(folder, " ".join(str(e).split())[:200]) from None
        if len(self.bm25) != n or self.offsets.shape != (n + 1,):
            raise _corrupt(folder, f"its BM25 index or {OFFSETS} does not cover its {n} passages")
        self.dense = None
        if encoder is not None:
            try:
                self.dense = DenseRanker.load(folder / DENSE_FILE, encoder)
            except (OSError, ValueError) as e:
                raise _corrupt(folder, f"its {DENSE_FILE} is unreadable ({e})") from None
            if len(self.dense) != n:
                raise _corrupt(folder, f"{DENSE_FILE} has {len(self.dense)} rows for {n} passages")

    def passage(self, row: int) -> Passage:
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        try:
            with (self.path / PASSAGES).open("rb") as f:
                f.seek(start)
                return Passage.from_dict(json.loads(f.read(end - start)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise _corrupt(self.path, f"{PASSAGES} line {row + 1} is unreadable") from None

    def documents(self) -> Iterator[tuple[str, int, int]]:
        try:
            with (self.path / DOCUMENTS).open(encoding="utf-8") as f:
                for line in f:
                    doc_id, first, count = json.loads(line)
                    yield str(doc_id), int(first), int(count)
        except (OSError, ValueError, TypeError) as e:
            raise _corrupt(self.path, f"its {DOCUMENTS} is unreadable ({e})") from None


class ShardedIndex(ManifestModes):
    """The shards of a sharded build, searched as one index: the interface of `Index` that callers use (search,
    search_passages, retriever, document, info, has_dense, default_mode, len, path, manifest)."""

    def __init__(self, path: Path, manifest: dict[str, Any], shards: list[_Shard]) -> None:
        self.path = path
        self.manifest = manifest
        self._shards = shards
        self._bases = [s.base for s in shards]
        self._by_document: dict[str, tuple[int, int, int]] | None = None

    @classmethod
    def load(cls, path: str | Path, *, model: str | Path | None = None) -> ShardedIndex:
        path = Path(path).resolve()
        manifest = STORED.read_manifest(path)
        entries = manifest.get("shards")
        if not isinstance(entries, list) or not entries or not isinstance(manifest.get("settings"), dict):
            raise _corrupt(path, f"its {MANIFEST} lacks the shard list or the build settings")
        encoder = Encoder(model or manifest["settings"].get("dense_model")) if manifest.get("dense") else None
        shards, base = [], 0
        for entry in entries:
            folder = path / SHARDS_DIR / str(entry.get("name"))
            if not folder.is_dir():
                raise _corrupt(path, f"its shard {SHARDS_DIR}/{entry.get('name')} is missing")
            shards.append(_Shard(folder, entry, base, encoder))
            base += entry["passages"]
        return cls(path, manifest, shards)

    # ------------------------------------------------------------------ searching

    def search(self, query: str, k: int = 5, mode: str | None = None) -> list[Evidence]:
        """The `k` best passages of all shards for `query` as evidence, best first."""
        found_by = {
            "retriever": mode or self.default_mode,
            "index": str(self.path),
            "knowledge_base": self.manifest.get("knowledge_base"),
        }
        out = []
        for rank, (row, score) in enumerate(self._hits(query, k, mode), start=1):
            shard = self._shard_of(row)
            out.append(
                evidence_of(
                    shard.passage(row - shard.base),
                    score,
                    shard.manifest.get("created"),
                    {**found_by, "query": query, "rank": rank},
                )
            )
        return out

    def search_passages(self, query: str, k: int = 5, mode: str | None = None) -> list[tuple[Passage, float]]:
        """Like `search`, but returns the passages themselves with their scores."""
        out = []
        for row, score in self._hits(query, k, mode):
            shard = self._shard_of(row)
            out.append((shard.passage(row - shard.base), score))
        return out

    def retriever(self, mode: str | None = None) -> ModeRetriever:
        """A `Retriever` that always searches this index in `mode` (checked now)."""
        self._ranker(mode)
        return ModeRetriever(self, mode)

    def _hits(self, query: str, k: int, mode: str | None) -> list[Hit]:
        check_query(query, k)
        return self._ranker(mode).rank(query, k)

    def _ranker(self, mode: str | None) -> _MergedBM25 | _MergedDense | HybridRanker:
        mode = mode or self.default_mode
        if mode not in MODES:
            raise UserError(f"unknown search mode {mode!r}: choose one of {', '.join(MODES)}")
        if mode == "bm25":
            return _MergedBM25(self._shards)
        if not self.has_dense:
            raise UserError(
                f"{mode} search needs dense embeddings, but the index {self.path} was built without "
                "them: rebuild it with --dense"
            )
        dense = _MergedDense(self._shards)
        return dense if mode == "dense" else HybridRanker([_MergedBM25(self._shards), dense])

    def _shard_of(self, row: int) -> _Shard:
        return self._shards[bisect.bisect_right(self._bases, row) - 1]

    def document(self, doc_id: str) -> tuple[str, str | None] | None:
        """A document as its passages hold it, and the SHA-256 of its text; None when no shard has it."""
        if self._by_document is None:  # one pass over every shard's documents.jsonl, on the first lookup
            self._by_document = {}
            for n, shard in enumerate(self._shards):
                for found, first, count in shard.documents():
                    self._by_document.setdefault(found, (n, first, count))
        where = self._by_document.get(doc_id)
        if where is None:
            return None
        shard = self._shards[where[0]]
        return document_text([shard.passage(row) for row in range(where[1], where[1] + where[2])])

    # ------------------------------------------------------------------ describing

    def info(self) -> dict[str, Any]:
        """Totals and settings (the manifest, flattened), the size on disk, and each shard's counts."""
        manifest = dict(self.manifest)
        settings = manifest.pop("settings", {})
        shards = manifest.pop("shards", [])
        info: dict[str, Any] = {
            "path": str(self.path),
            **manifest,
            **settings,
            "shards": len(shards),
            "default_mode": self.default_mode,
        }
        sizes = {s.name: sum(f.stat().st_size for f in s.path.rglob("*") if f.is_file()) for s in self._shards}
        info["size_bytes"] = sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())
        info["shard_list"] = [{**entry, "size_bytes": sizes.get(entry["name"])} for entry in shards]
        return info


class _MergedBM25:
    """BM25 hits of every shard, merged by score; rows are global (shard base + row in the shard)."""

    def __init__(self, shards: list[_Shard]) -> None:
        self.shards = shards

    def rank(self, query: str, k: int) -> list[Hit]:
        return _merge([(s.base, s.bm25.rank(query, k)) for s in self.shards], k)


class _MergedDense:
    """Dense hits of every shard (the query embedded once), merged by cosine."""

    def __init__(self, shards: list[_Shard]) -> None:
        self.shards = shards

    def rank(self, query: str, k: int) -> list[Hit]:
        first = self.shards[0].dense
        assert first is not None
        vector = first.encoder.encode_query(query)
        if vector.shape[0] != first.dim:
            raise UserError(
                f"the embedding model {first.encoder.name} gives {vector.shape[0]}-dimensional vectors, "
                f"but the index holds {first.dim}-dimensional ones: use the model it was built with"
            )
        return _merge(
            [
                (s.base, top_hits(s.dense.embeddings @ vector, k))
                for s in self.shards  # type: ignore
            ],
            k,
        )


def _merge(hits: list[tuple[int, list[Hit]]], k: int) -> list[Hit]:
    """The `k` best of the shards' hits, best first; ties go to the lower global row."""
    merged = [(base + row, score) for base, found in hits for row, score in found]
    merged.sort(key=lambda hit: (-hit[1], hit[0]))
    return merged[:k]


def _corrupt(path: Path, problem: str) -> IndexError_:
    return STORED.corrupt(path, problem)
