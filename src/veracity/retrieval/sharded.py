"""Sharded indexes: a corpus too large to index in memory (a whole Wikipedia), built shard by shard with bounded
memory, resumable after a kill, and searched as one index.

    build_sharded("enwiki-latest-pages-articles.xml.bz2", "wiki-index", max_memory=2_000_000_000)
    index = open_index("wiki-index")          # any index folder: a plain one (`Index`) or a sharded one
    index.search("who painted the Mona Lisa?", k=5)

Building: documents stream in (a Wikipedia dump through `wikidump.read_dump`, any other corpus through
`load_documents`) and are chunked as `Index` chunks them; their passages fill a shard. When the shard holds
`shard_passages` passages (after the document that filled it: a document never spans two shards) it is indexed
(BM25; with dense, embeddings too) and written as a complete veracity index folder under DIR/shards/NNNN, and then
progress.json records how far into the corpus is safely indexed: each shard's last page position and page id.
Memory stays bounded by the shard: `--max-memory` sets the shard size from the measured cost of a passage in a
build (`shard_size_for`); `--shard-passages` sets it directly. A build killed at any point and started again with
the same command resumes after the last complete shard: the pages already indexed are read past (decompressed and
parsed as XML, not converted or indexed again), the partial shard is redone, and the completed shards are left as
they are. A different corpus (another file size, another page where the last shard ended) or other settings are
refused: the folder belongs to the build that started it. The build is complete when manifest.json is written
(format veracity-sharded-index: totals, settings and the shard list); until then the folder is not an index.

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
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from veracity import __version__
from veracity.errors import IndexError_, UserError
from veracity.evidence.quotes import utc_now
from veracity.retrieval.base import Hit, top_hits
from veracity.retrieval.bm25 import BM25Ranker
from veracity.retrieval.dense import DenseRanker, Encoder, resolve_model_path
from veracity.retrieval.documents import Document, Passage, chunk_document, load_documents
from veracity.retrieval.hybrid import HybridRanker
from veracity.retrieval.index import (BM25_DIR, DENSE_FILE, MODES, PASSAGES, Index, ManifestModes, ModeRetriever,
                                      check_query, document_text)
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
PROGRESS_FORMAT = "veracity-sharded-index-progress"
SHARDS_DIR = "shards"
OFFSETS = "passages.offsets.npy"
DOCUMENTS = "documents.jsonl"
DEFAULT_MAX_MEMORY = 2_000_000_000
#: The build's peak resident memory is about BASE + shard passages * PER_PASSAGE (measured with
#: benchmarks/wikidump_build.py: ~120-word Wikipedia passages; the BM25 build of a shard is the peak).
BASE_BYTES = 200_000_000
BYTES_PER_PASSAGE = 6_000
#: with --dense: torch and the model, and each passage's embedding while its shard is built (estimated, not
#: measured: MiniLM encodes ~25-100 passages/s on CPU, so a dense Wikipedia is a GPU's or a cluster's job)
DENSE_BASE_BYTES = 1_200_000_000
DENSE_BYTES_PER_PASSAGE = 8_000
MIN_SHARD_PASSAGES = 1_000  # what --max-memory may go down to
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from "2GB", "1.5G", "512MiB", "300000000" (k, M, G, T are powers of 1000; with i, of 1024)."""
    m = _SIZE.match(text)
    if not m:
        raise UserError(f"not a memory size: {text!r} (write it like 2GB, 512MB or 1.5GiB)")
    number, unit, suffix = float(m.group(1)), m.group(2).lower(), m.group(3).lower()
    base = 1024 if suffix.startswith("i") else 1000
    return int(number * base ** " kmgt".index(unit or " "))


def shard_size_for(max_memory: int, dense: bool = False) -> int:
    """Passages per shard for a build whose peak memory should stay under `max_memory` bytes."""
    base, per = (DENSE_BASE_BYTES, DENSE_BYTES_PER_PASSAGE) if dense else (BASE_BYTES, BYTES_PER_PASSAGE)
    passages = (max_memory - base) // per
    if passages < MIN_SHARD_PASSAGES:
        need = base + MIN_SHARD_PASSAGES * per
        raise UserError(f"--max-memory {max_memory / 1e6:.0f}MB is too small for a{' dense' if dense else ''} build: "
                        f"give at least {need / 1e6:.0f}MB")
    return int(passages)


# --------------------------------------------------------------------------- building


def build_sharded(source: str | Path, out_dir: str | Path, *, max_memory: int | None = None,
                  shard_passages: int | None = None, dense: bool = False, max_words: int = 120,
                  overlap_words: int = 20, model: str | Path | None = None, language: str | None = None,
                  progress: bool = False) -> ShardedIndex:
    """Index `source` (a Wikipedia dump, or any corpus `load_documents` reads) into shards under `out_dir`, resuming
    the build already there; returns the finished index. `shard_passages` wins over `max_memory` (default 2 GB)."""
    source = Path(source)
    out = Path(out_dir).resolve()
    if not source.exists():
        raise UserError(f"no such file or folder: {source}")
    if max_words < 1 or not 0 <= overlap_words < max_words:
        chunk_document(Document("", "", ""), max_words, overlap_words)  # raises the chunker's one-line error
    if shard_passages is None:
        shard_passages = shard_size_for(DEFAULT_MAX_MEMORY if max_memory is None else max_memory, dense)
    elif shard_passages < 1:
        raise UserError(f"passages per shard must be at least 1, got {shard_passages}")
    encoder_name = Encoder(model).name if dense else None
    if dense:
        resolve_model_path(encoder_name)  # a bad model folder fails now, not after the first shard
    settings = {"max_words": max_words, "overlap_words": overlap_words, "shard_passages": shard_passages,
                "dense": dense, "dense_model": encoder_name, "language": language}
    state = _start(out, source, settings)
    if state.get("complete") and (out / MANIFEST).is_file():
        return ShardedIndex.load(out, model=model)
    return _Builder(source, out, state, model=model, progress=progress).run()


class _Builder:
    """One run of a sharded build: reads the corpus from where the last complete shard ended."""

    def __init__(self, source: Path, out: Path, state: dict[str, Any], *, model: str | Path | None,
                 progress: bool) -> None:
        self.source, self.out, self.state, self.model = source, out, state, model
        self.settings = state["settings"]
        self.progress = progress
        self.started = time.perf_counter()
        self.passages: list[Passage] = []
        self.documents: dict[str, tuple[int, int]] = {}  # doc id -> (first row, passage count), in order

    def run(self) -> ShardedIndex:
        from tqdm import tqdm

        shards = self.state["shards"]
        skip = shards[-1]["pages_end"] if shards else 0
        total_passages = sum(s["passages"] for s in shards)
        position, page_id = 0, None
        with tqdm(desc="indexing", unit=" pages", disable=not self.progress, dynamic_ncols=True) as bar:
            def show() -> None:
                bar.set_postfix(passages=total_passages + len(self.passages), shards=len(shards), refresh=False)

            show()
            for position, page_id, document in _corpus(self.source, self.settings["language"], skip):
                bar.update(1)
                if position <= skip:
                    if position == skip and page_id != shards[-1]["last_page_id"]:
                        raise self._changed(f"page {position} is now {page_id!r}, not "
                                            f"{shards[-1]['last_page_id']!r}")
                    continue
                if document is not None:
                    self._add(document)
                if len(self.passages) >= self.settings["shard_passages"]:
                    total_passages += len(self.passages)
                    self._flush(position, page_id)
                if position % 100 == 0:
                    show()
            if position < skip:
                raise self._changed(f"it ends after {position} pages, but {skip} were indexed")
            if self.passages:
                total_passages += len(self.passages)
                self._flush(position, page_id)
            show()
        if not shards:
            raise UserError(f"no text to index in {self.source}: it holds no article or document with text")
        return self._finish(max(position, skip))

    def _add(self, document: Document) -> None:
        passages = chunk_document(document, self.settings["max_words"], self.settings["overlap_words"])
        if not passages:
            return
        if document.id in self.documents:
            raise UserError(f"duplicate document id {document.id!r} in {self.source}")
        if document.metadata.get("language") and not self.state.get("language"):
            self.state["language"] = document.metadata["language"]  # a dump's, as its URLs have it
        self.documents[document.id] = (len(self.passages), len(passages))
        self.passages.extend(passages)

    def _flush(self, position: int, page_id: str | None) -> None:
        """Index the shard's passages, write the shard, then record it in progress.json."""
        shards = self.state["shards"]
        name = f"{len(shards):04d}"
        index = Index.from_passages(self.passages, len(self.documents), self.settings["dense"],
                                    max_words=self.settings["max_words"],
                                    overlap_words=self.settings["overlap_words"], model=self.model,
                                    source=f"{self.source.name}, pages up to {position}")
        documents = self.documents

        def lookups(folder: Path) -> None:
            _write_offsets(folder)
            with (folder / DOCUMENTS).open("w", encoding="utf-8") as f:
                for doc_id, (first, count) in documents.items():
                    f.write(json.dumps([doc_id, first, count], ensure_ascii=False) + "\n")

        index.save(self.out / SHARDS_DIR / name, extra=lookups)
        shards.append({"name": name, "documents": len(documents), "passages": len(self.passages),
                       "pages_end": position, "last_page_id": page_id})
        self.state["seconds"] = round(self.state.get("seconds", 0.0) + time.perf_counter() - self.started, 3)
        self.started = time.perf_counter()
        _write_json(self.out / PROGRESS, self.state)
        self.passages, self.documents = [], {}

    def _finish(self, pages: int) -> ShardedIndex:
        shards = self.state["shards"]
        self.state["seconds"] = round(self.state.get("seconds", 0.0) + time.perf_counter() - self.started, 3)
        self.state.update(complete=True, pages=pages)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "veracity_version": __version__,
            "created": utc_now(),
            "documents": sum(s["documents"] for s in shards),
            "passages": sum(s["passages"] for s in shards),
            "pages": pages,
            "dense": self.settings["dense"],
            "shards": [{k: s[k] for k in ("name", "documents", "passages")} for s in shards],
            "settings": {"source": str(self.source), **self.settings,
                         "language": self.settings["language"] or self.state.get("language")},
            "build_seconds": self.state["seconds"],
        }
        _write_json(self.out / MANIFEST, manifest)
        _write_json(self.out / PROGRESS, self.state)
        return ShardedIndex.load(self.out, model=self.model)

    def _changed(self, what: str) -> UserError:
        return UserError(f"{self.source} is not the corpus the build in {self.out} started from ({what}): give "
                         "that corpus again, or build into another --out folder")


def _start(out: Path, source: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The build state in `out`: a new one for an empty or missing folder, else the one there (checked to be of
    this corpus and these settings), with whatever a killed run left half-written removed."""
    identity = {"name": source.name, "bytes": source.stat().st_size if source.is_file() else None}
    if out.exists() and not out.is_dir():
        raise UserError(f"cannot write the index to {out}: it is a file")
    if not (out / PROGRESS).is_file():
        if out.exists() and any(out.iterdir()):
            raise UserError(f"refusing to build into {out}: it is not empty and holds no sharded index build")
        state = {"format": PROGRESS_FORMAT, "source": identity, "settings": settings, "shards": [], "seconds": 0.0}
        out.mkdir(parents=True, exist_ok=True)
        _write_json(out / PROGRESS, state)
        return state
    try:
        state = json.loads((out / PROGRESS).read_text(encoding="utf-8"))
        if state.get("format") != PROGRESS_FORMAT or not isinstance(state.get("shards"), list):
            raise ValueError("not a build's progress file")
    except (OSError, ValueError) as e:
        raise UserError(f"cannot resume the build in {out}: its {PROGRESS} is unreadable ({e}); "
                        "delete the folder to start again") from None
    if state.get("source") != identity:
        raise UserError(f"{out} holds the build of another corpus ({state.get('source')}), not of {source} "
                        f"({identity}): give that corpus again, or build into another --out folder")
    if state.get("settings") != settings:
        differ = sorted(k for k in set(settings) | set(state.get("settings", {}))
                        if settings.get(k) != state.get("settings", {}).get(k))
        was = ", ".join(f"{k}={state['settings'].get(k)!r}" for k in differ)
        raise UserError(f"{out} holds a build with other settings ({was}): resume it with the same options, "
                        "or build into another --out folder")
    shards_dir = out / SHARDS_DIR
    kept = {s["name"] for s in state["shards"]}
    if shards_dir.is_dir():
        for leftover in shards_dir.iterdir():  # a half-written shard, or one written but not yet recorded
            if leftover.name not in kept:
                shutil.rmtree(leftover, ignore_errors=True)
    if not state.get("complete"):
        (out / MANIFEST).unlink(missing_ok=True)
    return state


def _corpus(source: Path, language: str | None, skip: int) -> Iterator[tuple[int, str, Document | None]]:
    """(position, id, document or None) for each page or document of the corpus, positions from 1."""
    from veracity.retrieval.wikidump import is_dump, read_dump  # its libraries are an extra, loaded when needed

    if is_dump(source):
        yield from read_dump(source, language=language, skip=skip)
        return
    if language:
        raise UserError("--language is for Wikipedia dumps (.xml, .xml.bz2): give each JSONL record its own url")
    for position, document in enumerate(load_documents(source), start=1):
        yield position, document.id, document


def _write_offsets(folder: Path) -> None:
    """passages.offsets.npy: where each line of passages.jsonl starts, and the file's length."""
    offsets = [0]
    with (folder / PASSAGES).open("rb") as f:
        for line in f:
            offsets.append(offsets[-1] + len(line))
    np.save(folder / OFFSETS, np.asarray(offsets, dtype=np.int64), allow_pickle=False)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace `path` atomically (a kill leaves the old file or the new one, never half of one)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# --------------------------------------------------------------------------- reading


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
        raise IndexError_(f"the index build in {path} is not finished: run the same `veracity index build` "
                          "command again to resume it")
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
        found_by = {"retriever": mode or self.default_mode, "index": str(self.path),
                    "knowledge_base": self.manifest.get("knowledge_base")}
        out = []
        for rank, (row, score) in enumerate(self._hits(query, k, mode), start=1):
            shard = self._shard_of(row)
            out.append(evidence_of(shard.passage(row - shard.base), score, shard.manifest.get("created"),
                                       {**found_by, "query": query, "rank": rank}))
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
            raise UserError(f"{mode} search needs dense embeddings, but the index {self.path} was built without "
                            "them: rebuild it with --dense")
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
        info: dict[str, Any] = {"path": str(self.path), **manifest, **settings, "shards": len(shards),
                                "default_mode": self.default_mode}
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
            raise UserError(f"the embedding model {first.encoder.name} gives {vector.shape[0]}-dimensional vectors, "
                            f"but the index holds {first.dim}-dimensional ones: use the model it was built with")
        return _merge([(s.base, top_hits(s.dense.embeddings @ vector, k)) for s in self.shards  # type: ignore
                       ], k)


def _merge(hits: list[tuple[int, list[Hit]]], k: int) -> list[Hit]:
    """The `k` best of the shards' hits, best first; ties go to the lower global row."""
    merged = [(base + row, score) for base, found in hits for row, score in found]
    merged.sort(key=lambda hit: (-hit[1], hit[0]))
    return merged[:k]


def _corrupt(path: Path, problem: str) -> IndexError_:
    return STORED.corrupt(path, problem)
