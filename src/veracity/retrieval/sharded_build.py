"""Building a sharded index (sharded.py reads it): a corpus too large to index in memory (a whole Wikipedia), indexed
shard by shard with bounded memory, resumable after a kill.

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
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from veracity import __version__
from veracity.errors import UserError
from veracity.quotes import utc_now
from veracity.retrieval.dense import Encoder, resolve_model_path
from veracity.retrieval.documents import Document, Passage, chunk_document, load_documents
from veracity.retrieval.index import PASSAGES, Index
from veracity.retrieval.sharded import (
    DOCUMENTS,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    OFFSETS,
    PROGRESS,
    SHARDS_DIR,
    ShardedIndex,
)

PROGRESS_FORMAT = "veracity-sharded-index-progress"
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
        raise UserError(
            f"--max-memory {max_memory / 1e6:.0f}MB is too small for a{' dense' if dense else ''} build: "
            f"give at least {need / 1e6:.0f}MB"
        )
    return int(passages)


def build_sharded(
    source: str | Path,
    out_dir: str | Path,
    *,
    max_memory: int | None = None,
    shard_passages: int | None = None,
    dense: bool = False,
    max_words: int = 120,
    overlap_words: int = 20,
    model: str | Path | None = None,
    language: str | None = None,
    progress: bool = False,
) -> ShardedIndex:
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
    settings = {
        "max_words": max_words,
        "overlap_words": overlap_words,
        "shard_passages": shard_passages,
        "dense": dense,
        "dense_model": encoder_name,
        "language": language,
    }
    state = _start(out, source, settings)
    if state.get("complete") and (out / MANIFEST).is_file():
        return ShardedIndex.load(out, model=model)
    return _Builder(source, out, state, model=model, progress=progress).run()


class _Builder:
    """One run of a sharded build: reads the corpus from where the last complete shard ended."""

    def __init__(
        self, source: Path, out: Path, state: dict[str, Any], *, model: str | Path | None, progress: bool
    ) -> None:
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
                        raise self._changed(f"page {position} is now {page_id!r}, not {shards[-1]['last_page_id']!r}")
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
        index = Index.from_passages(
            self.passages,
            len(self.documents),
            self.settings["dense"],
            max_words=self.settings["max_words"],
            overlap_words=self.settings["overlap_words"],
            model=self.model,
            source=f"{self.source.name}, pages up to {position}",
        )
        documents = self.documents

        def lookups(folder: Path) -> None:
            _write_offsets(folder)
            with (folder / DOCUMENTS).open("w", encoding="utf-8") as f:
                for doc_id, (first, count) in documents.items():
                    f.write(json.dumps([doc_id, first, count], ensure_ascii=False) + "\n")

        index.save(self.out / SHARDS_DIR / name, extra=lookups)
        shards.append(
            {
                "name": name,
                "documents": len(documents),
                "passages": len(self.passages),
                "pages_end": position,
                "last_page_id": page_id,
            }
        )
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
            "settings": {
                "source": str(self.source),
                **self.settings,
                "language": self.settings["language"] or self.state.get("language"),
            },
            "build_seconds": self.state["seconds"],
        }
        _write_json(self.out / MANIFEST, manifest)
        _write_json(self.out / PROGRESS, self.state)
        return ShardedIndex.load(self.out, model=self.model)

    def _changed(self, what: str) -> UserError:
        return UserError(
            f"{self.source} is not the corpus the build in {self.out} started from ({what}): give "
            "that corpus again, or build into another --out folder"
        )


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
        raise UserError(
            f"cannot resume the build in {out}: its {PROGRESS} is unreadable ({e}); delete the folder to start again"
        ) from None
    if state.get("source") != identity:
        raise UserError(
            f"{out} holds the build of another corpus ({state.get('source')}), not of {source} "
            f"({identity}): give that corpus again, or build into another --out folder"
        )
    if state.get("settings") != settings:
        differ = sorted(
            k
            for k in set(settings) | set(state.get("settings", {}))
            if settings.get(k) != state.get("settings", {}).get(k)
        )
        was = ", ".join(f"{k}={state['settings'].get(k)!r}" for k in differ)
        raise UserError(
            f"{out} holds a build with other settings ({was}): resume it with the same options, "
            "or build into another --out folder"
        )
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
