"""The on-disk retrieval index: passages plus a BM25 index and, optionally, dense embeddings.

Layout of an index folder:

    manifest.json     format version, counts, build settings, creation time, dense or not
    passages.jsonl    one passage per line, in row order
    bm25/             the bm25s index
    dense.npy         float32 passage embeddings, one row per passage (only with dense)

`Index.build` writes a folder (atomically: into a temporary sibling that replaces the target
at the end); `Index.load` checks it and raises `IndexError_` when it is missing or damaged;
`Index.from_documents` builds in memory only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from veracity import __version__
from veracity.errors import IndexError_, UserError
from veracity.quotes import utc_now
from veracity.retrieval.base import Ranker
from veracity.retrieval.bm25 import STEMMER_LANGUAGE, STOPWORDS, TOKEN_PATTERN, BM25Ranker
from veracity.retrieval.dense import DenseRanker, Encoder, resolve_model_path
from veracity.retrieval.documents import Document, Passage, chunk_document, load_documents
from veracity.retrieval.hybrid import HybridRanker
from veracity.retrieval.subjects import mention_at, names_subject, taken_words
from veracity.storage import FolderFormat
from veracity.types import Evidence

FORMAT = "veracity-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
STORED = FolderFormat("index", FORMAT, FORMAT_VERSION, MANIFEST, "veracity index build")
PASSAGES = "passages.jsonl"
BM25_DIR = "bm25"
DENSE_FILE = "dense.npy"
MODES = ("bm25", "dense", "hybrid")


def check_query(query: str, k: int) -> None:
    """A search's query and k as every index takes them, or a UserError saying what is wrong."""
    if not query or not query.strip():
        raise UserError("the search query is empty")
    if k < 1:
        raise UserError(f"the number of results must be at least 1, got {k}")


class ManifestModes:
    """What an index that reads its size and dense vectors from its manifest answers (a sharded index, one in
    PostgreSQL): whether it has dense vectors, its default search mode, its number of passages."""

    manifest: dict[str, Any]

    @property
    def has_dense(self) -> bool:
        return bool(self.manifest.get("dense"))

    @property
    def default_mode(self) -> str:
        return "hybrid" if self.has_dense else "bm25"

    def __len__(self) -> int:
        return int(self.manifest["passages"])


class Index:
    """Passages with their BM25 (and optionally dense) index; searchable by query.

    An `Index` is itself a `Retriever`; `retriever(mode)` gives one fixed to a search mode.
    """

    def __init__(
        self,
        passages: list[Passage],
        bm25: BM25Ranker,
        dense: DenseRanker | None,
        manifest: dict[str, Any],
        path: Path | None = None,
    ) -> None:
        self._rows = passages
        self.passages: dict[str, Passage] = {p.id: p for p in passages}  # by passage id
        self._by_document: dict[str, list[Passage]] | None = None  # built on the first `document` lookup
        self._bm25 = bm25
        self._dense = dense
        self.manifest = manifest
        self.path = path

    # ------------------------------------------------------------------ building

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        dense: bool = False,
        *,
        max_words: int = 120,
        overlap_words: int = 20,
        model: str | Path | None = None,
        progress: bool = False,
        source: str = "the given documents",
        knowledge_base: str | None = None,
    ) -> Index:
        """Chunk and index `documents` in memory. Quiet unless `progress` is set. `knowledge_base`: the spec of the
        knowledge base these documents are (retrieval/knowledge_base.py), kept in the manifest and in every
        evidence record's `found_by`."""
        start = time.perf_counter()
        if dense:
            resolve_model_path(Encoder(model).name)  # a bad model folder fails now, not after the BM25 build
        n_documents, passages = _chunk_all(documents, max_words, overlap_words, source)
        return cls.from_passages(
            passages,
            n_documents,
            dense,
            max_words=max_words,
            overlap_words=overlap_words,
            model=model,
            progress=progress,
            source=source,
            knowledge_base=knowledge_base,
            started=start,
        )

    @classmethod
    def from_passages(
        cls,
        passages: list[Passage],
        n_documents: int,
        dense: bool = False,
        *,
        max_words: int = 120,
        overlap_words: int = 20,
        model: str | Path | None = None,
        progress: bool = False,
        source: str = "the given documents",
        knowledge_base: str | None = None,
        started: float | None = None,
    ) -> Index:
        """Index passages already chunked (`chunk_document`'s, of `n_documents` documents, with these settings) in
        memory: what `from_documents` does after chunking, and what a sharded build does with each shard."""
        start = time.perf_counter() if started is None else started
        encoder = Encoder(model) if dense else None
        texts = [p.search_text for p in passages]
        bm25 = BM25Ranker.build(texts, progress=progress)
        dense_ranker = DenseRanker.build(texts, encoder, progress=progress) if encoder else None
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "veracity_version": __version__,
            "created": utc_now(),
            "documents": n_documents,
            "passages": len(passages),
            "dense": dense_ranker is not None,
            "settings": {
                "source": source,
                "max_words": max_words,
                "overlap_words": overlap_words,
                "token_pattern": TOKEN_PATTERN,
                "stemmer": STEMMER_LANGUAGE,
                "stopwords": STOPWORDS,
                "dense_model": encoder.name if encoder else None,
                "dense_dim": dense_ranker.dim if dense_ranker else None,
            },
            "build_seconds": round(time.perf_counter() - start, 3),
        }
        if knowledge_base:
            manifest["knowledge_base"] = knowledge_base
        return cls(passages, bm25, dense_ranker, manifest)

    @classmethod
    def build(
        cls,
        documents_or_path: Iterable[Document] | str | Path,
        out_dir: str | Path,
        *,
        dense: bool = False,
        max_words: int = 120,
        overlap_words: int = 20,
        model: str | Path | None = None,
        progress: bool = False,
    ) -> Index:
        """Index a corpus (a path `load_documents` reads, or documents) and save it to `out_dir`."""
        out_dir = Path(out_dir)
        STORED.check_can_write(out_dir)  # fail before the (possibly long) build, not after
        if isinstance(documents_or_path, (str, Path)):
            documents, source = load_documents(documents_or_path), str(documents_or_path)
        else:
            documents, source = documents_or_path, "the given documents"
        index = cls.from_documents(
            documents,
            dense,
            max_words=max_words,
            overlap_words=overlap_words,
            model=model,
            progress=progress,
            source=source,
        )
        index.save(out_dir)
        return index

    def save(self, out_dir: str | Path, *, extra: Callable[[Path], None] | None = None) -> None:
        """Write the index to `out_dir`, replacing an index already there; `extra(folder)` writes more files into
        the folder before it takes the place of `out_dir` (a sharded build's lookup files)."""
        out_dir = Path(out_dir).resolve()

        def fill(tmp: Path) -> None:
            with (tmp / PASSAGES).open("w", encoding="utf-8") as f:
                for passage in self._rows:
                    f.write(json.dumps(passage.to_dict(), ensure_ascii=False) + "\n")
            self._bm25.save(tmp / BM25_DIR)
            if self._dense is not None:
                self._dense.save(tmp / DENSE_FILE)
            if extra is not None:
                extra(tmp)

        STORED.write(out_dir, fill, self.manifest)
        self.path = out_dir

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, path: str | Path, *, model: str | Path | None = None) -> Index:
        """Open a saved index; `model` overrides the embedding model recorded at build time.

        Raises IndexError_ (one line) when the folder is missing, not an index, or damaged.
        """
        path = Path(path)
        if not path.exists():
            raise IndexError_(f"no index at {path}: build one with `veracity index build CORPUS --out {path}`")
        if not (path / MANIFEST).is_file():
            raise IndexError_(f"{path} is not a veracity index (no {MANIFEST})")
        manifest = _read_manifest(path)
        passages = _read_passages(path, manifest["passages"])
        try:
            bm25 = BM25Ranker.load(path / BM25_DIR)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            detail = " ".join(str(e).split())[:300]
            raise _corrupt(path, f"its BM25 index is unreadable ({detail})") from None
        if len(bm25) != len(passages):
            raise _corrupt(path, f"its BM25 index covers {len(bm25)} passages, not {len(passages)}")
        dense = None
        if manifest["dense"]:
            encoder = Encoder(model or manifest["settings"].get("dense_model"))
            if not (path / DENSE_FILE).is_file():
                raise _corrupt(path, f"its manifest lists dense embeddings but {DENSE_FILE} is missing")
            try:
                dense = DenseRanker.load(path / DENSE_FILE, encoder)
            except (OSError, ValueError) as e:
                raise _corrupt(path, f"its {DENSE_FILE} is unreadable ({e})") from e
            if len(dense) != len(passages):
                raise _corrupt(path, f"{DENSE_FILE} has {len(dense)} rows for {len(passages)} passages")
        return cls(passages, bm25, dense, manifest, path)

    # ------------------------------------------------------------------ searching

    @property
    def has_dense(self) -> bool:
        return self._dense is not None

    @property
    def default_mode(self) -> str:
        return "hybrid" if self.has_dense else "bm25"

    def __len__(self) -> int:
        return len(self._rows)

    def search(self, query: str, k: int = 5, mode: str | None = None) -> list[Evidence]:
        """The `k` best passages for `query` as evidence, best first (fewer if fewer match)."""
        found_by = {
            "retriever": mode or self.default_mode,
            "index": str(self.path.resolve()) if self.path else None,
            "knowledge_base": self.manifest.get("knowledge_base"),
        }
        return [
            _evidence(passage, score, self.manifest.get("created"), {**found_by, "query": query, "rank": rank})
            for rank, (passage, score) in enumerate(self.search_passages(query, k, mode), start=1)
        ]

    def search_passages(self, query: str, k: int = 5, mode: str | None = None) -> list[tuple[Passage, float]]:
        """Like `search`, but returns the passages themselves with their scores."""
        check_query(query, k)
        return [(self._rows[row], score) for row, score in self._ranker(mode).rank(query, k)]

    def retriever(self, mode: str | None = None) -> ModeRetriever:
        """A `Retriever` that always searches this index in `mode` (checked now); over a knowledge base, one that
        keeps the passages of the articles a query names (knowledge_base.SubjectRetriever)."""
        self._ranker(mode)
        return SubjectRetriever(self, mode) if self.manifest.get("knowledge_base") else ModeRetriever(self, mode)

    def given_evidence(self) -> GivenEvidenceRetriever:
        """A `Retriever` for an index of the evidence given with one claim: every passage can be found, the ones
        that share a word with the query first (`GivenEvidenceRetriever`)."""
        return GivenEvidenceRetriever(self)

    def _ranker(self, mode: str | None) -> Ranker:
        mode = mode or self.default_mode
        if mode not in MODES:
            raise UserError(f"unknown search mode {mode!r}: choose one of {', '.join(MODES)}")
        if mode == "bm25":
            return self._bm25
        if self._dense is None:
            where = f"the index {self.path}" if self.path else "this index"
            raise UserError(
                f"{mode} search needs dense embeddings, but {where} was built without them: rebuild it with --dense"
            )
        return self._dense if mode == "dense" else HybridRanker([self._bm25, self._dense])

    def document(self, doc_id: str) -> tuple[str, str | None] | None:
        """A document as its passages hold it, and the SHA-256 of its text (None from an index built before
        passages kept it); None when the index has no such document. Each passage stands at its offsets; what
        chunking left between passages (whitespace) reads as spaces. From an index without offsets: the passages'
        texts joined by blank lines."""
        if self._by_document is None:  # a recheck looks up many documents: one pass over the passages, not one each
            self._by_document = {}
            for p in self._rows:
                self._by_document.setdefault(p.doc_id, []).append(p)
        rows = self._by_document.get(doc_id)
        return document_text(rows) if rows else None

    # ------------------------------------------------------------------ describing

    def info(self) -> dict[str, Any]:
        """What the index holds and how it was built (the manifest, flattened), plus its size."""
        manifest = dict(self.manifest)
        settings = manifest.pop("settings", {})
        info: dict[str, Any] = {
            "path": str(self.path) if self.path else None,
            **manifest,
            **settings,
            "default_mode": self.default_mode,
        }
        if self.path:
            info["size_bytes"] = sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())
        return info


@dataclass(frozen=True)
class ModeRetriever:
    """An index bound to one search mode (None: the index's default)."""

    index: Any  # an Index, or a ShardedIndex (sharded.py), which searches as one
    mode: str | None = None

    def search(self, query: str, k: int = 5) -> list[Evidence]:
        return self.index.search(query, k, self.mode)


#: how many passages a knowledge base ranks for each one it returns: a query's subject may rank below passages of
#: other articles that share more of its words
CANDIDATES_PER_RESULT = 8
#: the articles a knowledge base search returns passages of: the one the query names first, its subject (QACheck
#: asks a question per hop, so each hop's article is searched by a query of its own). The shipped verifier's macro-F1
#: on 23 FEVEROUS-S dev claims the knowledge base covers and 60 written ones (benchmarks/kb_open_domain.py): 68.6 and
#: 88.3 with one article, as with the gold evidence (68.6, 88.3); 78.1 and 79.9 with two; 68.6 and 78.0 with every
#: article named: unrelated leads read together read as support ("Mozart was born in London" beside London's lead)
MAX_ARTICLES = 1


@dataclass(frozen=True)
class SubjectRetriever(ModeRetriever):
    """A knowledge base (retrieval/knowledge_base.py) searched for the articles a query names: of the passages
    ranked, those of the MAX_ARTICLES articles the query names first (`subjects.names_subject`), the first named
    first and each article's by rank. A lead section about something else is no source for a claim, and the verifier
    reads such passages as deciding it all the same more often than not, so a query that names no article finds
    nothing, and the check says it found no source."""

    def search(self, query: str, k: int = 5) -> list[Evidence]:
        ranked = self.index.search(query, k * CANDIDATES_PER_RESULT, self.mode)
        taken = taken_words(query, [e.source for e in ranked])
        named = [e for e in ranked if names_subject(query, e.source, taken)]
        first = sorted(dict.fromkeys(e.source for e in named), key=lambda title: mention_at(query, title))
        order = {title: n for n, title in enumerate(first[:MAX_ARTICLES])}
        kept = sorted((e for e in named if e.source in order), key=lambda e: order[e.source])[:k]
        return [replace(e, found_by={**e.found_by, "rank": rank}) for rank, e in enumerate(kept, start=1)]


@dataclass(frozen=True)
class GivenEvidenceRetriever:
    """The evidence given with a claim (a benchmark item's gold sentences, the evidence a user gave beside a claim),
    searched with BM25, then topped up to `k` with its passages that share no word with the query (score 0):
    evidence given for the claim is read even where it words things otherwise. BM25 alone returns only passages
    that share a word with the query: 18 of 150 held-out FM2 claims searched their own gold sentence and found
    nothing. When all of it is returned, it comes in the order given, as it was written to be read: its sentences
    refer to each other ("She added the roles...", "This changed, however, when..."), and read together in BM25's
    order they did not follow (FEVEROUS-S gold evidence, the verifier: macro-F1 77.4 in BM25's order, 78.1 as
    given)."""

    index: Index

    def search(self, query: str, k: int = 5) -> list[Evidence]:
        passages = list(self.index.passages.values())
        found = self.index.search(query, k, "bm25")
        whole = len(passages) <= k
        found = [replace(e, found_by={**e.found_by, "given": True}) for e in found]  # evidence_setting: "given"
        if len(found) >= k and not whole:
            return found
        hits = {(e.doc_id, e.quote_start, e.text): e for e in found}
        if whole:  # all of it, in the order given
            out, kept = [], passages
        else:
            out, kept = list(found), [p for p in passages if (p.doc_id, p.start, p.text) not in hits][: k - len(found)]
        found_by = {"retriever": "given", "index": None, "query": query, "given": True}
        for p in kept:
            rank = len(out) + 1
            hit = hits.get((p.doc_id, p.start, p.text))
            out.append(
                replace(hit, found_by={**hit.found_by, "rank": rank})
                if hit is not None
                else _evidence(p, 0.0, self.index.manifest.get("created"), {**found_by, "rank": rank})
            )
        return out


def given_evidence(passages: Sequence[tuple[str, str]]) -> GivenEvidenceRetriever:
    """A retriever over the evidence a user gave beside a claim, (title, text) each, in the order given: each one
    document `evidence-N` of an index of its own (a long text chunked as an index chunks it)."""
    docs = [Document(id=f"evidence-{n}", title=title, text=text) for n, (title, text) in enumerate(passages, 1)]
    return Index.from_documents(docs, source="the evidence given").given_evidence()


def document_text(rows: Sequence[Passage]) -> tuple[str, str | None]:
    """A document as its passages (all of them, in order) hold it, and the SHA-256 of its text (`Index.document`)."""
    if any(p.start is None or p.end is None for p in rows):
        return "\n\n".join(p.text for p in rows), None
    chars = [" "] * max(p.end for p in rows)  # type: ignore[type-var]
    for p in rows:
        chars[p.start : p.end] = p.text  # type: ignore[misc]
    return "".join(chars), rows[0].doc_sha256


def _evidence(passage: Passage, score: float, indexed: str | None, found_by: dict[str, Any]) -> Evidence:
    """Evidence from a passage; an untitled passage names its document id as the source. It quotes the document's
    text at the passage's offsets (when the index was built with them), read when the index was built."""
    return Evidence(
        text=passage.text,
        source=passage.title or passage.doc_id,
        doc_id=passage.doc_id,
        url=passage.url,
        score=score,
        date=passage.date,
        quote_start=passage.start,
        quote_end=passage.end,
        source_sha256=passage.doc_sha256,
        retrieved_at=indexed,
        found_by={k: v for k, v in {**found_by, "score": round(score, 4)}.items() if v is not None},
    )


def _chunk_all(
    documents: Iterable[Document], max_words: int, overlap_words: int, source: str
) -> tuple[int, list[Passage]]:
    """Chunk every document; returns the document count and all passages."""
    seen: set[str] = set()
    passages: list[Passage] = []
    for doc in documents:
        if doc.id in seen:
            raise UserError(f"duplicate document id {doc.id!r} in {source}")
        seen.add(doc.id)
        passages.extend(chunk_document(doc, max_words, overlap_words))
    if not seen:
        raise UserError(f"no documents found in {source}")
    if not passages:
        raise UserError(f"no text to index: every document in {source} is empty")
    return len(seen), passages


def _corrupt(path: Path, problem: str) -> IndexError_:
    return STORED.corrupt(path, problem)


def _read_manifest(path: Path) -> dict[str, Any]:
    manifest = STORED.read_manifest(path)
    if not isinstance(manifest.get("passages"), int) or not isinstance(manifest.get("settings"), dict):
        raise _corrupt(path, f"{MANIFEST} lacks the passage count or the build settings")
    manifest["dense"] = bool(manifest.get("dense"))
    return manifest


def _read_passages(path: Path, expected: int) -> list[Passage]:
    passages = STORED.read_rows(path, PASSAGES, Passage.from_dict, expected, "passages")
    seen: set[str] = set()
    for row, passage in enumerate(passages, start=1):
        if passage.id in seen:
            raise _corrupt(path, f"{PASSAGES} line {row} repeats the passage id {passage.id[:80]!r}")
        seen.add(passage.id)
    return passages
