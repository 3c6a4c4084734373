"""The fact-check store in a database, for teams: every `veracity serve` worker, MCP server and proxy of a team reads
the same fact-checks, and an import by one is seen by all (each reloads when the store's stamp changes).

    veracity factchecks import feed.json --store postgresql://me@db.example/veracity
    VERACITY_FACTCHECKS=postgresql://me@db.example/veracity veracity serve

Tables (PostgreSQL, or SQLite through the same code, `sqlite:FILE`):

    veracity_factchecks(key PRIMARY KEY, position, record JSON text, claim_vec float32 bytes)
    veracity_factcheck_store(id = 1, manifest JSON text, stamp)     what the store holds, and a counter of writes

An import writes its new and changed rows and the manifest in one transaction (a failed import changes nothing) and
bumps the stamp. Opening reads every row (15,000 fact-checks: about 25 MB of embeddings) and builds the BM25 index in
memory.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..db.connection import Database
from ..db.url import redact
from ..errors import UserError
from .record import FactCheck
from .store import FIELDS, FactCheckStore

TABLE = "veracity_factchecks"
META = "veracity_factcheck_store"
LOCK = 7_100_071  # the advisory lock an import holds (PostgreSQL), so that two imports do not interleave


class DatabaseStore(FactCheckStore):
    def __init__(self, db: Database, spec: str, records: list[FactCheck], manifest: dict[str, Any],
                 vectors: dict[str, np.ndarray] | None, stamp: int) -> None:  # fmt: skip
        super().__init__(records, manifest)
        self.db = db
        self.spec = spec
        self._stamp = stamp
        if vectors is not None:
            self.__dict__["_vectors"] = vectors

    @classmethod
    def open(cls, spec: str, *, create: bool = False) -> DatabaseStore:
        db = Database(spec)
        _create_tables(db)
        meta = db.row(f"SELECT manifest, stamp FROM {META} WHERE id = 1")
        if meta is None:
            if create:
                return cls(db, spec, [], {"records": 0}, None, 0)
            raise UserError(
                f"no fact-check store in {redact(spec)}: import published fact-checks first "
                f"(veracity factchecks import FILE --store {redact(spec)})"
            )
        manifest = json.loads(meta["manifest"])
        rows = db.rows(f"SELECT record, claim_vec FROM {TABLE} ORDER BY position")
        records = [FactCheck.from_dict(json.loads(r["record"])) for r in rows]
        dim = int(manifest.get("dim") or 384)
        claim = np.frombuffer(b"".join(bytes(r["claim_vec"]) for r in rows), dtype=np.float32)
        vectors = {"claim": claim.reshape(len(rows), dim) if rows else np.zeros((0, dim), np.float32)}
        return cls(db, spec, records, manifest, vectors, int(meta["stamp"]))

    @property
    def where(self) -> str:
        return redact(self.spec)

    def stamp(self) -> Any:
        return self.db.value(f"SELECT stamp FROM {META} WHERE id = 1")

    def _load_bm25(self):
        from ..retrieval.bm25 import BM25Ranker

        return BM25Ranker.build([r.match_text for r in self.records])

    def _load_vectors(self) -> dict[str, np.ndarray]:
        return {f: np.zeros((0, 384), np.float32) for f in FIELDS}  # an empty store (open() loads them otherwise)

    def _save(self, merged, changed, vectors, bm25, manifest) -> None:
        rows = [
            (
                merged[i].key,
                i,
                json.dumps(merged[i].to_dict(), ensure_ascii=False),
                np.ascontiguousarray(vectors["claim"][i], dtype=np.float32).tobytes(),
            )
            for i in changed
        ]
        with self.db.transaction() as db:
            db.lock(LOCK)
            current = db.value(f"SELECT stamp FROM {META} WHERE id = 1", default=0)
            if current != self._stamp:
                raise UserError(
                    f"the fact-check store in {self.where} was changed by another import meanwhile: run this one again"
                )
            db.executemany(f"DELETE FROM {TABLE} WHERE key = ?", [(r[0],) for r in rows])
            db.executemany(f"INSERT INTO {TABLE} (key, position, record, claim_vec) VALUES (?, ?, ?, ?)", rows)
            db.execute(f"DELETE FROM {META} WHERE id = 1")
            db.execute(
                f"INSERT INTO {META} (id, manifest, stamp) VALUES (1, ?, ?)",
                (json.dumps(manifest), int(current or 0) + 1),
            )
        self._stamp = int(current or 0) + 1


def _create_tables(db: Database) -> None:
    blob = "BYTEA" if db.is_postgres else "BLOB"
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, position INTEGER NOT NULL, record TEXT NOT NULL, "
        f"claim_vec {blob} NOT NULL)"
    )
    db.execute(f"CREATE TABLE IF NOT EXISTS {META} (id INTEGER PRIMARY KEY, manifest TEXT NOT NULL, stamp BIGINT)")
