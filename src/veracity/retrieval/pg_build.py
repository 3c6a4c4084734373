"""Building an index in PostgreSQL (pg_index.py): `veracity index build SRC --to postgresql://.../DB#NAME`.

The corpus streams in (`load_documents`), is chunked as `Index` chunks it, and its passages are written in batches
of `batch_passages` (whole documents: a document never spans two batches), each batch with COPY in one transaction
that also records how far into the corpus the build is (the registry row's `progress`). Memory stays bounded by a
batch, whatever the corpus. A build that is killed at any point leaves the batches it committed and nothing of the
one it was writing; the same command run again reads past the documents already indexed (loaded, not chunked or
written again) and goes on. A different corpus or other settings are refused: the name belongs to the build that
started it (`replace=True`, `--replace`, drops it first). At the end: the GIN index on the full-text vectors, the
document frequencies of the lexemes (terms), the HNSW index on the embeddings (with dense), and the manifest; only
then is the index complete and can be opened. Two builds of one name at once: the second is refused (an advisory
lock held by the first's connection, released when it ends or dies).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from veracity import __version__
from veracity.errors import UserError
from veracity.quotes import utc_now
from veracity.retrieval.documents import Document, Passage, chunk_document, load_documents
from veracity.retrieval.pg_index import (
    FORMAT,
    FORMAT_VERSION,
    REGISTRY,
    TS_CONFIG,
    PgIndex,
    PgSpec,
    connect,
    first_line,
    open_pg_index,
    parse_spec,
    psycopg_module,
    vector_literal,
)

BATCH_PASSAGES = 1000
DIMS = 384  # MiniLM's; another --model sets its own from the first batch


def build_pg(
    source: str | Path,
    spec: str,
    *,
    dense: bool = False,
    max_words: int = 120,
    overlap_words: int = 20,
    model: str | Path | None = None,
    batch_passages: int = BATCH_PASSAGES,
    replace: bool = False,
    progress: bool = False,
) -> PgIndex:
    """Index `source` (anything `load_documents` reads) into the database and name `spec` gives, resuming the build
    of that name already there; returns the finished index."""
    parsed = parse_spec(spec)
    source = Path(source)
    if not source.exists():
        raise UserError(f"no such file or folder: {source}")
    if max_words < 1 or not 0 <= overlap_words < max_words:
        chunk_document(Document("", "", ""), max_words, overlap_words)  # raises the chunker's one-line error
    if batch_passages < 1:
        raise UserError(f"passages per batch must be at least 1, got {batch_passages}")
    encoder = None
    if dense:
        from veracity.retrieval.dense import Encoder, resolve_model_path

        encoder = Encoder(model)
        resolve_model_path(encoder.name)  # a bad model folder fails now, not after the first batch
    settings = {
        "max_words": max_words,
        "overlap_words": overlap_words,
        "dense": dense,
        "dense_model": encoder.name if encoder else None,
        "text_search_config": TS_CONFIG,
    }
    identity = {"path": str(source.resolve()), "bytes": source.stat().st_size if source.is_file() else None}
    psycopg = psycopg_module()
    conn = connect(parsed)
    try:
        lock = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (f"veracity-index:{parsed.name}",))
        if not lock.fetchone()[0]:
            raise UserError(f"another build of the index {parsed.shown()} is running")
        try:
            state = _start(conn, parsed, identity, settings, replace)
            if state is None:  # complete already
                return open_pg_index(parsed.full, model=str(model) if model else None)
            _Build(conn, parsed, source, state, encoder, batch_passages, progress).run()
        except psycopg.Error as e:
            raise UserError(f"the index build into {parsed.shown()} failed: {first_line(e, parsed.url)}") from None
    finally:
        conn.close()
    return open_pg_index(parsed.full, model=str(model) if model else None)


def _start(conn, spec: PgSpec, identity: dict, settings: dict, replace: bool) -> dict[str, Any] | None:
    """The build's progress: new, or the one there (checked to be of this corpus and settings); None when the
    index is complete already."""
    s = spec.schema
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg_module().Error as e:
            raise UserError(
                f"the database {spec.shown()} lacks pgvector and it cannot be installed "
                f"({first_line(e)}): CREATE EXTENSION vector as its owner"
            ) from None
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {REGISTRY} (name text PRIMARY KEY, manifest jsonb, progress jsonb "
        "NOT NULL, complete boolean NOT NULL DEFAULT false, updated timestamptz NOT NULL DEFAULT now())"
    )
    row = conn.execute(f"SELECT progress, complete FROM {REGISTRY} WHERE name = %s", (spec.name,)).fetchone()
    if row is not None and replace:
        with conn.transaction():
            conn.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")
            conn.execute(f"DELETE FROM {REGISTRY} WHERE name = %s", (spec.name,))
        row = None
    if row is None:
        state = {
            "source": identity,
            "settings": settings,
            "documents_read": 0,
            "documents": 0,
            "passages": 0,
            "seconds": 0.0,
        }
        with conn.transaction():
            conn.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")  # a schema of that name, left without its row
            conn.execute(f"CREATE SCHEMA {s}")
            conn.execute(f"""CREATE TABLE {s}.passages (
                row_id bigint PRIMARY KEY, id text NOT NULL, doc_id text NOT NULL, title text, text text NOT NULL,
                url text, date text, start_pos integer, end_pos integer, doc_sha256 text,
                tsv tsvector GENERATED ALWAYS AS
                    (to_tsvector('{TS_CONFIG}'::regconfig, coalesce(title, '') || ' ' || text)) STORED,
                embedding vector)""")  # its dimension is set by the first batch of embeddings
            conn.execute(
                f"CREATE TABLE {s}.documents (id text PRIMARY KEY, first_row bigint NOT NULL, "
                "passages integer NOT NULL)"
            )
            conn.execute(f"INSERT INTO {REGISTRY} (name, progress) VALUES (%s, %s)", (spec.name, json.dumps(state)))
        return state
    state, complete = row
    if state.get("source") != identity:
        raise UserError(
            f"the index {spec.shown()} is the build of another corpus ({state.get('source')}), not of "
            f"{identity['path']}: give that corpus again, another name, or --replace"
        )
    if state.get("settings") != settings:
        was = ", ".join(f"{k}={v!r}" for k, v in state.get("settings", {}).items() if settings.get(k) != v)
        raise UserError(
            f"the index {spec.shown()} was built with other settings ({was}): give the same options, "
            "another name, or --replace"
        )
    return None if complete else state


class _Build:
    def __init__(
        self, conn, spec: PgSpec, source: Path, state: dict[str, Any], encoder, batch: int, progress: bool
    ) -> None:
        self.conn, self.spec, self.source, self.state = conn, spec, source, state
        self.encoder, self.batch, self.progress = encoder, batch, progress
        self.settings = state["settings"]
        self.started = time.perf_counter()
        self.passages: list[Passage] = []
        self.documents: dict[str, tuple[int, int]] = {}

    def run(self) -> None:
        from tqdm import tqdm

        skip, position = self.state["documents_read"], 0
        with tqdm(desc="indexing", unit=" docs", disable=not self.progress, dynamic_ncols=True) as bar:
            for position, document in enumerate(load_documents(self.source), start=1):
                bar.update(1)
                if position <= skip:
                    continue
                self._add(document)
                if len(self.passages) >= self.batch:
                    self._flush(position)
                    bar.set_postfix(passages=self.state["passages"], refresh=False)
            if position < skip:
                raise UserError(
                    f"{self.source} holds {position} documents, but {skip} were indexed: it is not the "
                    f"corpus the build of {self.spec.shown()} started from (give --replace)"
                )
            self._flush(max(position, skip))
        if not self.state["passages"]:
            raise UserError(f"no text to index: {self.source} holds no document with text")
        self._finish()

    def _add(self, document: Document) -> None:
        passages = chunk_document(document, self.settings["max_words"], self.settings["overlap_words"])
        if not passages:
            return
        if document.id in self.documents:
            raise UserError(f"duplicate document id {document.id!r} in {self.source}")
        self.documents[document.id] = (self.state["passages"] + len(self.passages), len(passages))
        self.passages.extend(passages)

    def _flush(self, position: int) -> None:
        """Write the batch and the progress in one transaction."""
        psycopg = psycopg_module()
        s = self.spec.schema
        vectors = (
            self.encoder.encode([p.search_text for p in self.passages]) if self.encoder and self.passages else None
        )
        base = self.state["passages"]
        try:
            with self.conn.transaction():
                if vectors is not None and not self.state.get("dims"):
                    dims = int(vectors.shape[1])
                    self.conn.execute(f"ALTER TABLE {s}.passages ALTER COLUMN embedding TYPE vector({dims})")
                    self.state["dims"] = int(vectors.shape[1])
                with self.conn.cursor() as cur:
                    with cur.copy(
                        f"COPY {s}.passages (row_id, id, doc_id, title, text, url, date, start_pos, "
                        "end_pos, doc_sha256, embedding) FROM STDIN"
                    ) as copy:
                        for i, p in enumerate(self.passages):
                            copy.write_row(
                                (
                                    base + i,
                                    _clean(p.id),
                                    _clean(p.doc_id),
                                    _clean(p.title),
                                    _clean(p.text),
                                    _clean(p.url),
                                    _clean(p.date),
                                    p.start,
                                    p.end,
                                    p.doc_sha256,
                                    vector_literal(vectors[i]) if vectors is not None else None,
                                )
                            )
                    with cur.copy(f"COPY {s}.documents (id, first_row, passages) FROM STDIN") as copy:
                        for doc_id, (first, count) in self.documents.items():
                            copy.write_row((_clean(doc_id), first, count))
                now = time.perf_counter()
                self.state.update(
                    documents_read=position,
                    documents=self.state["documents"] + len(self.documents),
                    passages=base + len(self.passages),
                    seconds=round(self.state["seconds"] + now - self.started, 3),
                )
                self.started = now
                self.conn.execute(
                    f"UPDATE {REGISTRY} SET progress = %s, updated = now() WHERE name = %s",
                    (json.dumps(self.state), self.spec.name),
                )
        except psycopg.errors.UniqueViolation as e:
            raise UserError(f"duplicate document id in {self.source} ({first_line(e)})") from None
        self.passages, self.documents = [], {}

    def _finish(self) -> None:
        s, conn = self.spec.schema, self.conn
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute(f"CREATE INDEX IF NOT EXISTS passages_tsv ON {s}.passages USING gin (tsv)")
        with conn.transaction():
            conn.execute(f"DROP TABLE IF EXISTS {s}.terms")
            conn.execute(
                f"CREATE TABLE {s}.terms AS SELECT word, ndoc AS df FROM ts_stat('SELECT tsv FROM {s}.passages')"
            )
            conn.execute(f"ALTER TABLE {s}.terms ADD PRIMARY KEY (word)")
        if self.settings["dense"]:
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS passages_embedding ON {s}.passages "
                "USING hnsw (embedding vector_cosine_ops)"
            )
        conn.execute(f"ANALYZE {s}.passages")
        conn.execute(f"ANALYZE {s}.terms")
        avg, shortest = conn.execute(
            f"SELECT avg(length(tsv)), min(length(tsv)) FROM {s}.passages WHERE length(tsv) > 0"
        ).fetchone()
        self.state["seconds"] = round(self.state["seconds"] + time.perf_counter() - self.started, 3)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "veracity_version": __version__,
            "created": utc_now(),
            "documents": self.state["documents"],
            "passages": self.state["passages"],
            "dense": self.settings["dense"],
            "avg_lexemes": float(avg or 1.0),
            "min_lexemes": int(shortest or 1),  # for the bound of pruned full-text search
            "settings": {"source": str(self.source), **self.settings, "dense_dim": self.state.get("dims")},
            "build_seconds": self.state["seconds"],
        }
        conn.execute(
            f"UPDATE {REGISTRY} SET manifest = %s, progress = %s, complete = true, updated = now() WHERE name = %s",
            (json.dumps(manifest), json.dumps(self.state), self.spec.name),
        )


def _clean(text: str | None) -> str | None:
    """PostgreSQL text holds no NUL: one stands as U+FFFD (one character: the offsets stay right)."""
    return text.replace("\x00", "\ufffd") if text and "\x00" in text else text
