"""Evidence indexes in PostgreSQL: the passages of a corpus, their full-text vectors and (with --dense) their MiniLM
embeddings, held in a database that several processes, machines and Ray workers read at once.

    veracity index build corpus/ --to 'postgresql://me@db.example/veracity#news'        (pg_build.py)
    veracity check --index 'postgresql://me@db.example/veracity#news' "..."
    open_index("postgresql://postgres@/veracity?host=/tmp/pg&port=5432#news").search("...")

Naming: an index is named by the URL's fragment, `#NAME` (any URL form: TCP, a Unix socket given as `?host=/dir`),
or, for URLs without a query, by a last path segment after the database (`postgresql://host/DB/NAME`); `?index=NAME`
is accepted too. NAME: lower-case letters, digits and _, starting with a letter, at most 48 characters.

Layout, per index: the schema `veracity_index_NAME` with
    passages(row_id, id, doc_id, title, text, url, date, start_pos, end_pos, doc_sha256,
             tsv GENERATED from title and text (english), embedding vector(384) or NULL)   GIN on tsv, HNSW on embedding
    documents(id, first_row, passages)      where each document's passages are (`veracity recheck` reads them again)
    terms(word, df)                          each lexeme's document frequency, for BM25's IDF (written at the end)
and a row of the shared table `public.veracity_indexes` (name, manifest, build progress, complete or not).

Ranking: full-text search ranks like the in-memory index's BM25 (bm25s, k1 1.5, b 0.75, Lucene's IDF): the query's
lexemes (PostgreSQL's english stemmer and stopwords) are OR-ed, the passages matching any are scored by the sum of
the IDFs of the lexemes they hold, times BM25's length normalisation, term frequency taken as 1 (a tsvector holds
positions, but reading them per candidate is slow; benchmarks/pg_index.py measures recall@5 against bm25s). Dense
search is pgvector's HNSW (cosine, the same score as the local index's dot product of normalised vectors); hybrid
fuses the two rankings with the local index's `HybridRanker` (reciprocal rank fusion). Reading never loads the
passages: a search fetches only the passages it returns.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from veracity.db.url import redact
from veracity.errors import IndexError_, UserError
from veracity.retrieval.base import Hit
from veracity.retrieval.documents import Passage
from veracity.retrieval.hybrid import HybridRanker
from veracity.retrieval.index import MODES, ManifestModes, ModeRetriever, SubjectRetriever, check_query, document_text
from veracity.retrieval.index import _evidence as evidence_of
from veracity.types import Evidence

SCHEMES = ("postgresql://", "postgres://")
REGISTRY = "public.veracity_indexes"
SCHEMA_PREFIX = "veracity_index_"
FORMAT = "veracity-pg-index"
FORMAT_VERSION = 1
TS_CONFIG = "english"
K1, B = 1.5, 0.75  # bm25s's defaults
#: full-text search scores the passages of the rarest query lexemes first, these many at most (by their document
#: frequencies), and all matching passages only when that cannot be the top k (`PgIndex.rank_fulltext`)
CANDIDATES = 10_000
EF_SEARCH = 100  # pgvector's default is 40: hybrid search asks for DEPTH (100) dense results
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
PASSAGE_COLUMNS = "row_id, id, doc_id, title, text, url, date, start_pos, end_pos, doc_sha256"


def is_pg_spec(spec: Any) -> bool:
    """Whether an index setting names a PostgreSQL index (postgresql://... or postgres://...)."""
    return isinstance(spec, str) and spec.strip().lower().startswith(SCHEMES)


@dataclass(frozen=True)
class PgSpec:
    url: str  # the connection URL (libpq form), without the index name
    name: str

    @property
    def schema(self) -> str:
        return SCHEMA_PREFIX + self.name

    @property
    def full(self) -> str:
        return f"{self.url}#{self.name}"

    def shown(self) -> str:
        """For messages and evidence records: the spec without the URL's password."""
        return f"{redact(self.url)}#{self.name}"


def parse_spec(spec: str, *, need_name: bool = True) -> PgSpec:
    """The database URL and index name of `spec`, or a one-line UserError."""
    spec = spec.strip()
    try:
        parts = urlsplit(spec)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as e:
        raise UserError(f"{redact(spec)[:200]} is not a PostgreSQL URL ({e})") from None
    names = []
    if parts.fragment:
        names.append(unquote(parts.fragment))
    query = [q for q in parts.query.split("&") if q]
    kept = [q for q in query if not q.startswith("index=")]
    names += [unquote(q.split("=", 1)[1]) for q in query if q.startswith("index=")]
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) == 2:
        names.append(unquote(segments[1]))
        segments = segments[:1]
    elif len(segments) > 2:
        raise UserError(f"{redact(spec)[:200]}: give postgresql://HOST/DATABASE#INDEX (too many path segments)")
    url = urlunsplit(
        parts._replace(path="/" + "/".join(segments) if segments else "", query="&".join(kept), fragment="")
    )
    if len(set(names)) > 1:
        raise UserError(f"{redact(spec)[:200]} names two indexes ({', '.join(sorted(set(names)))}): give one")
    if not names:
        if need_name:
            raise UserError(f"{redact(spec)[:200]} names no index: add its name, e.g. {redact(url)}#wiki")
        return PgSpec(url, "")
    name = names[0]
    if not _NAME.match(name):
        raise UserError(
            f"bad index name {name[:60]!r}: use lower-case letters, digits and _ (starting with a letter, "
            "at most 48 characters)"
        )
    return PgSpec(url, name)


def psycopg_module():
    try:
        import psycopg
    except ImportError:
        raise UserError("PostgreSQL indexes need psycopg: pip install 'veracity[postgres]'") from None
    return psycopg


def connect(spec: PgSpec, *, autocommit: bool = True):
    """A connection to the spec's database, or a one-line IndexError_ (the password never shown)."""
    psycopg = psycopg_module()
    try:
        return psycopg.connect(spec.url, autocommit=autocommit, connect_timeout=10)
    except (psycopg.OperationalError, psycopg.ProgrammingError) as e:
        raise IndexError_(f"cannot reach the database {redact(spec.url)}: {first_line(e, spec.url)}") from None


def first_line(error: BaseException, url: str = "") -> str:
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    password = urlsplit(url).password if url else None
    return text.replace(password, "***") if password else text


def registry_rows(conn) -> list[tuple[str, bool]]:
    """(name, complete) of every index in the database; none when the registry table is missing."""
    if conn.execute("SELECT to_regclass(%s)", (REGISTRY,)).fetchone()[0] is None:
        return []
    return [(r[0], r[1]) for r in conn.execute(f"SELECT name, complete FROM {REGISTRY} ORDER BY name")]


def open_pg_index(spec: str, *, model: str | None = None) -> PgIndex:
    """The finished index `spec` names; a one-line IndexError_ when the database cannot be reached, or it holds no
    such index (the ones it holds are listed), or its build is not finished."""
    parsed = parse_spec(spec)
    conn = connect(parsed)
    try:
        row = None
        if conn.execute("SELECT to_regclass(%s)", (REGISTRY,)).fetchone()[0] is not None:
            row = conn.execute(f"SELECT manifest, complete FROM {REGISTRY} WHERE name = %s", (parsed.name,)).fetchone()
        if row is None:
            names = [n for n, done in registry_rows(conn) if done]
            there = f"it has {', '.join(names)}" if names else "it has none"
            raise IndexError_(
                f"no index {parsed.name!r} in the database {redact(parsed.url)} ({there}): build one "
                f"with `veracity index build CORPUS --to '{parsed.shown()}'`"
            )
        if not row[1]:
            raise IndexError_(
                f"the index build of {parsed.shown()} is not finished: run the same `veracity index "
                "build` command again to resume it"
            )
        manifest = row[0]
    except BaseException:
        conn.close()
        raise
    return PgIndex(parsed, manifest, conn, model=model)


class PgIndex(ManifestModes):
    """An index in PostgreSQL: the interface of `Index` that callers use (search, search_passages, retriever,
    document, info, has_dense, default_mode, len, path, manifest). One connection, shared by threads in turn."""

    def __init__(self, spec: PgSpec, manifest: dict[str, Any], conn=None, *, model: str | None = None) -> None:
        self.spec = spec
        self.manifest = manifest
        self.path = spec.shown()  # what evidence records name as their index (no password)
        self._model = model
        self._conn = conn
        self._lock = threading.Lock()
        self._encoder = None
        self._ef = 0

    def __getstate__(self) -> dict[str, Any]:  # a pickled index reconnects where it is unpickled
        return {**self.__dict__, "_conn": None, "_lock": None, "_encoder": None, "_ef": 0}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _query(self, sql: str, params: Any = None, *, ef: int | None = None) -> list[tuple]:
        psycopg = psycopg_module()
        with self._lock:
            for attempt in (1, 2):
                if self._conn is None or self._conn.closed:
                    self._conn, self._ef = connect(self.spec), 0
                try:
                    if ef is not None and ef > self._ef:
                        self._conn.execute(f"SET hnsw.ef_search = {int(ef)}")
                        self._ef = ef
                    return self._conn.execute(sql, params).fetchall()
                except psycopg.OperationalError as e:  # the server restarted, or the connection dropped: once more
                    self._conn = None
                    if attempt == 2:
                        raise IndexError_(
                            f"the database {redact(self.spec.url)} failed: {first_line(e, self.spec.url)}"
                        ) from None
                except psycopg.Error as e:
                    raise IndexError_(f"the index {self.path} cannot be read: {first_line(e, self.spec.url)}") from None
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ searching

    def search(self, query: str, k: int = 5, mode: str | None = None) -> list[Evidence]:
        found_by = {
            "retriever": mode or self.default_mode,
            "index": self.path,
            "knowledge_base": self.manifest.get("knowledge_base"),
        }
        created = self.manifest.get("created")
        return [
            evidence_of(passage, score, created, {**found_by, "query": query, "rank": rank})
            for rank, (passage, score) in enumerate(self.search_passages(query, k, mode), start=1)
        ]

    def search_passages(self, query: str, k: int = 5, mode: str | None = None) -> list[tuple[Passage, float]]:
        check_query(query, k)
        hits = self._ranker(mode).rank(query, k)
        passages = self.passages([row for row, _ in hits])
        return [(passages[row], score) for row, score in hits if row in passages]

    def retriever(self, mode: str | None = None) -> ModeRetriever:
        self._ranker(mode)
        return SubjectRetriever(self, mode) if self.manifest.get("knowledge_base") else ModeRetriever(self, mode)

    def _ranker(self, mode: str | None):
        mode = mode or self.default_mode
        if mode not in MODES:
            raise UserError(f"unknown search mode {mode!r}: choose one of {', '.join(MODES)}")
        if mode == "bm25":
            return _FullTextRanker(self)
        if not self.has_dense:
            raise UserError(
                f"{mode} search needs dense embeddings, but the index {self.path} was built without "
                "them: rebuild it with --dense"
            )
        return _DenseRanker(self) if mode == "dense" else HybridRanker([_FullTextRanker(self), _DenseRanker(self)])

    def rank_fulltext(self, query: str, k: int) -> list[Hit]:
        """BM25 (tf taken as 1) over the passages holding any of the query's lexemes. Pruned safely: the passages
        holding the rarest lexemes (together at most CANDIDATES by document frequency) are scored first; that top k
        stands when its k-th score beats the best score a passage holding none of them could reach, else more
        lexemes are taken (the cap times 4), up to all of them: the result is the exact top k of all passages."""
        s = self.spec.schema
        terms = self._query(
            f"SELECT t.word, s.df FROM unnest(tsvector_to_array(to_tsvector('{TS_CONFIG}', %s))) "
            f"AS t(word) JOIN {s}.terms s ON s.word = t.word ORDER BY s.df, t.word",
            (query,),
        )
        if not terms:
            return []
        n = max(int(self.manifest["passages"]), 1)
        idf = {word: math.log(1 + (n - df + 0.5) / (df + 0.5)) for word, df in terms}
        shortest = float(self.manifest.get("min_lexemes") or 1)
        cap, taken, last = CANDIDATES, 0, 0
        while True:
            total = 0
            for taken, (_, df) in enumerate(terms, start=1):  # the rarest lexemes, at least one, up to the cap
                total += df
                if taken < len(terms) and total + terms[taken][1] > cap:
                    break
            if taken == last:
                cap *= 4
                continue
            last = taken
            hits = self._score(terms, [word for word, _ in terms[:taken]], k)
            if taken == len(terms):
                return hits
            bound = sum(idf[w] for w, _ in terms[taken:]) * self._length_factor(shortest)
            if len(hits) == k and hits[-1][1] > bound:  # no passage without those lexemes can reach the top k
                return hits
            cap *= 4

    def _length_factor(self, lexemes: float) -> float:
        avgdl = float(self.manifest.get("avg_lexemes") or 1.0)
        return (K1 + 1) / (1 + K1 * (1 - B + B * lexemes / avgdl))

    def _score(self, terms: list[tuple[str, int]], candidates: list[str], k: int) -> list[Hit]:
        n = max(int(self.manifest["passages"]), 1)
        avgdl = float(self.manifest.get("avg_lexemes") or 1.0)
        weights = [math.log(1 + (n - df + 0.5) / (df + 0.5)) for _, df in terms]
        matched = " + ".join("%s * (tsv @@ %s::tsquery)::int" for _ in terms)
        sql = (
            f"SELECT row_id, ({matched}) * {K1 + 1} / (1 + {K1} * (1 - {B} + {B} * length(tsv) / %s)) AS score "
            f"FROM {self.spec.schema}.passages WHERE tsv @@ %s::tsquery ORDER BY score DESC, row_id LIMIT %s"
        )
        params: list[Any] = [x for pair in zip(weights, (tsquery_lexeme(w) for w, _ in terms)) for x in pair]
        params += [avgdl, " | ".join(tsquery_lexeme(w) for w in candidates), k]
        return [(int(row), float(score)) for row, score in self._query(sql, params)]

    def rank_dense(self, query: str, k: int) -> list[Hit]:
        if self._encoder is None:
            from veracity.retrieval.dense import Encoder

            self._encoder = Encoder(self._model or self.manifest.get("settings", {}).get("dense_model"))
        vector = self._encoder.encode_query(query)
        dim = self.manifest.get("settings", {}).get("dense_dim")
        if dim and vector.shape[0] != dim:
            raise UserError(
                f"the embedding model {self._encoder.name} gives {vector.shape[0]}-dimensional vectors, "
                f"but the index holds {dim}-dimensional ones: use the model it was built with"
            )
        literal = vector_literal(vector)
        rows = self._query(
            f"SELECT row_id, 1 - (embedding <=> %s::vector) FROM {self.spec.schema}.passages "
            "ORDER BY embedding <=> %s::vector LIMIT %s",
            (literal, literal, k),
            ef=max(EF_SEARCH, k),
        )
        return [(int(row), float(score)) for row, score in rows]

    def passages(self, rows: list[int]) -> dict[int, Passage]:
        """The passages at these rows, by row (only these are read)."""
        if not rows:
            return {}
        found = self._query(
            f"SELECT {PASSAGE_COLUMNS} FROM {self.spec.schema}.passages WHERE row_id = ANY(%s)", (list(rows),)
        )
        return {int(r[0]): _passage(r) for r in found}

    def document(self, doc_id: str) -> tuple[str, str | None] | None:
        """A document as its passages hold it, and the SHA-256 of its text; None when the index lacks it."""
        s = self.spec.schema
        rows = self._query(
            f"SELECT {', '.join('p.' + c.strip() for c in PASSAGE_COLUMNS.split(','))} "
            f"FROM {s}.documents d JOIN {s}.passages p ON p.row_id >= d.first_row "
            "AND p.row_id < d.first_row + d.passages WHERE d.id = %s ORDER BY p.row_id",
            (doc_id,),
        )
        return document_text([_passage(r) for r in rows]) if rows else None

    # ------------------------------------------------------------------ describing

    def info(self) -> dict[str, Any]:
        manifest = dict(self.manifest)
        settings = manifest.pop("settings", {})
        size = self._query(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN "
            "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (self.spec.schema,),
        )[0][0]
        return {"path": self.path, **manifest, **settings, "default_mode": self.default_mode, "size_bytes": int(size)}


class _FullTextRanker:
    def __init__(self, index: PgIndex) -> None:
        self.index = index

    def rank(self, query: str, k: int) -> list[Hit]:
        return self.index.rank_fulltext(query, k)


class _DenseRanker:
    def __init__(self, index: PgIndex) -> None:
        self.index = index

    def rank(self, query: str, k: int) -> list[Hit]:
        return self.index.rank_dense(query, k)


def tsquery_lexeme(word: str) -> str:
    """A lexeme quoted for tsquery input (a cast to tsquery normalises nothing: the lexeme stays as it is)."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def vector_literal(vector) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


def _passage(r: tuple) -> Passage:
    return Passage(
        id=r[1], doc_id=r[2], title=r[3] or "", text=r[4], url=r[5], date=r[6], start=r[7], end=r[8], doc_sha256=r[9]
    )


def shown_index(index: Any) -> Any:
    """An index setting as messages and records show it: a PostgreSQL index's URL without its password; any other
    setting as it is."""
    if not is_pg_spec(index):
        return index
    try:
        return parse_spec(index).shown()
    except UserError:
        return redact(index)


def resolve_shown(shown: str, known: list[str | None]) -> str:
    """The full spec (password included) of a spec recorded without its password, among `known` ones (the run's
    --index): `shown` itself when none matches."""
    for spec in known:
        if is_pg_spec(spec):
            try:
                if parse_spec(spec).shown() == shown:  # type: ignore[arg-type]
                    return parse_spec(spec).full  # type: ignore[arg-type]
            except UserError:
                continue
    return shown


__all__ = ["PgIndex", "PgSpec", "connect", "is_pg_spec", "open_pg_index", "parse_spec", "shown_index"]
