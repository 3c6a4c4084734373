"""The store of published fact-checks: a folder (the same kind of folder as an index, written atomically), holding
the records and what matching searches them with.

    STORE/
      manifest.json      format, version, record count, the embedding model, when it was last changed
      factchecks.jsonl   one record per line (record.py), the source of truth
      bm25/              BM25 over each record's headline, summary and claim
      claim.npy          embeddings of each record's claim (float32, normalized, one row per record)

`import_records` adds records, replacing those with the same key (a fact-check imported again with a new rating is
updated, never doubled); embeddings of records whose text did not change are kept, so a re-import of a large
collection encodes only what is new. The folder is rewritten into a temporary sibling that replaces it at the end:
a failed or killed import leaves the store as it was.

For teams the store can live in a database instead (`--store postgresql://...`, `embedded:DIR`, `sqlite:FILE`;
db_store.py): the same records and embeddings in one table that every server and worker reads, written in one
transaction; the BM25 index is built in memory when the store is opened (about a second for 15,000).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexError_, UserError
from ..quotes import utc_now
from ..storage import FolderFormat
from ..web.filters import plural
from .record import FactCheck

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
RECORDS = "factchecks.jsonl"
BM25_DIR = "bm25"
#: the embedded fields, each in FIELD.npy: the claim only. Its headline and summary too measured +0.008 MAP@5 on the
#: CheckThat! dev tweets (0.957 -> 0.965) for twice the import time (MiniLM encodes about 260 short texts a second
#: on 2 cores: 15,000 claims take about a minute, the goal for a whole import)
FIELDS = ("claim",)
STORED = FolderFormat("fact-check store", "veracity-factchecks", FORMAT_VERSION, MANIFEST, "veracity factchecks import")


def default_store_path() -> Path:
    """$VERACITY_FACTCHECKS, else $XDG_DATA_HOME/veracity/factchecks (~/.local/share/veracity/factchecks)."""
    if os.environ.get("VERACITY_FACTCHECKS"):
        return Path(os.environ["VERACITY_FACTCHECKS"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "veracity" / "factchecks"


def store_folder(path: str | Path | None) -> Path:
    """The folder a store spec names: `path`, else the default store's."""
    return Path(path).expanduser() if path else default_store_path()


def field_text(record: FactCheck, field: str) -> str:
    return getattr(record, field)


@dataclass(frozen=True)
class ImportSummary:
    added: int
    updated: int
    unchanged: int
    total: int
    seconds: float

    def line(self) -> str:
        return (
            f"{plural(self.added, 'fact-check')} added, {self.updated} updated, {self.unchanged} already there; "
            f"{self.total} in the store ({self.seconds:.1f} s)"
        )


DATABASE_SCHEMES = ("postgresql:", "postgres:", "embedded:", "sqlite:")


def is_database(spec: str | Path | None) -> bool:
    return spec is not None and str(spec).lower().startswith(DATABASE_SCHEMES)


class FactCheckStore:
    """Published fact-checks with what matching searches them with: the records (`records`), a BM25 index over
    their match texts (`bm25`) and embeddings of their claims (`vectors`). Open one with `stores.open_store(spec)`:
    a folder (FolderStore, below) or a database URL (db_store.DatabaseStore)."""

    def __init__(self, records: list[FactCheck], manifest: dict[str, Any]) -> None:
        self.records = records
        self.manifest = manifest

    @property
    def where(self) -> str:
        """The store as a user names it (a database's URL without its password)."""
        raise NotImplementedError

    def stamp(self) -> Any:
        """What changes when the store is written (a loaded matcher is rebuilt when it does)."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.records)

    # ------------------------------------------------------------------------------------------ what matching reads
    @cached_property
    def bm25(self):
        return self._load_bm25()

    def vectors(self, field: str) -> np.ndarray:
        return self._vectors[field]

    @cached_property
    def _vectors(self) -> dict[str, np.ndarray]:
        return self._load_vectors()

    @property
    def encoder_name(self) -> str:
        return str(self.manifest.get("encoder") or "")

    def _load_bm25(self):
        raise NotImplementedError

    def _load_vectors(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _save(self, merged: list[FactCheck], changed: list[int], vectors: dict[str, np.ndarray], bm25,
              manifest: dict[str, Any]) -> None:  # fmt: skip
        """Write the store: `merged` records (their `changed` rows new or updated), their vectors, the BM25 index."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------ writing
    def import_records(
        self, records: Iterable[FactCheck], *, encoder: str | None = None, progress: bool = False
    ) -> ImportSummary:
        """Add `records` (a record whose key is already stored replaces it in place) and write the store."""
        from ..retrieval.bm25 import BM25Ranker
        from ..retrieval.dense import Encoder

        t0 = time.perf_counter()
        enc = Encoder(encoder or self.encoder_name or None)
        if self.records and self.encoder_name and enc.name != self.encoder_name:
            raise UserError(
                f"the store was built with the embedding model {self.encoder_name}; import with that one "
                "(or into a new store)"
            )
        position = {r.key: i for i, r in enumerate(self.records)}
        merged = list(self.records)
        changed: dict[int, None] = {}
        added = updated = unchanged = 0
        for record in records:
            i = position.get(record.key)
            if i is None:
                position[record.key] = len(merged)
                changed[len(merged)] = None
                merged.append(record)
                added += 1
            elif _content(merged[i]) != _content(record):
                merged[i] = record
                changed[i] = None
                updated += 1
            else:
                unchanged += 1
        if not added and not updated and self.records:
            return ImportSummary(0, 0, unchanged, len(merged), time.perf_counter() - t0)
        vectors = {field: self._encoded(field, merged, enc, progress) for field in FIELDS}
        bm25 = BM25Ranker.build([r.match_text for r in merged])
        manifest = {
            "format": STORED.format,
            "format_version": FORMAT_VERSION,
            "records": len(merged),
            "encoder": enc.name,
            "dim": int(vectors["claim"].shape[1]),
            "updated_at": utc_now(),
        }
        self._save(merged, list(changed), vectors, bm25, manifest)
        self.records, self.manifest = merged, manifest
        self.__dict__["bm25"] = bm25
        self.__dict__["_vectors"] = vectors
        return ImportSummary(added, updated, unchanged, len(merged), time.perf_counter() - t0)

    def _encoded(self, field: str, records: list[FactCheck], encoder, progress: bool) -> np.ndarray:
        """Embeddings of `field` for `records`, reusing the stored rows of records whose text is unchanged."""
        old: dict[str, np.ndarray] = {}
        if self.records:
            try:
                matrix = self.vectors(field)
                old = {field_text(r, field): matrix[i] for i, r in enumerate(self.records)}
            except (IndexError_, KeyError):
                old = {}
        texts = [field_text(r, field) for r in records]
        todo = list(dict.fromkeys(t for t in texts if t not in old))
        if todo:
            fresh = encoder.encode(todo, progress=progress)
            old.update(zip(todo, fresh))
        return (
            np.stack([np.asarray(old[t], dtype=np.float32) for t in texts]) if texts else np.zeros((0, 384), np.float32)
        )


def _content(record: FactCheck) -> dict[str, Any]:
    """What an import compares to tell an update: every field but the format it came in."""
    return {k: v for k, v in record.to_dict().items() if k != "format"}


class FolderStore(FactCheckStore):
    """The store as a folder (see the module's docstring)."""

    def __init__(self, path: Path, records: list[FactCheck], manifest: dict[str, Any]) -> None:
        super().__init__(records, manifest)
        self.path = path

    @classmethod
    def open(cls, path: str | Path | None = None, *, create: bool = False) -> FolderStore:
        folder = store_folder(path)
        if not (folder / MANIFEST).is_file():
            if create and (not folder.exists() or (folder.is_dir() and not any(folder.iterdir()))):
                return cls(folder, [], {"records": 0})
            if folder.exists() and not STORED.is_ours(folder):
                raise UserError(f"{folder} is not a veracity fact-check store")
            raise UserError(
                f"no fact-check store at {folder}: import published fact-checks first "
                f"(veracity factchecks import FILE{'' if path is None else ' --store ' + str(folder)})"
            )
        manifest = STORED.read_manifest(folder)
        records = STORED.read_rows(folder, RECORDS, FactCheck.from_dict, int(manifest["records"]), "records")
        return cls(folder, records, manifest)

    @property
    def where(self) -> str:
        return str(self.path)

    def stamp(self) -> Any:
        try:
            st = (self.path / MANIFEST).stat()
            return (st.st_mtime_ns, st.st_ino)
        except OSError:
            return None

    def _load_bm25(self):
        from ..retrieval.bm25 import BM25Ranker

        try:
            return BM25Ranker.load(self.path / BM25_DIR)
        except (OSError, ValueError) as e:
            raise STORED.corrupt(self.path, f"its BM25 index is unusable ({e})") from None

    def _load_vectors(self) -> dict[str, np.ndarray]:
        out = {}
        for field in FIELDS:
            try:
                matrix = np.load(self.path / f"{field}.npy", mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError) as e:
                raise STORED.corrupt(self.path, f"{field}.npy is unreadable ({e})") from None
            if matrix.ndim != 2 or matrix.shape[0] != len(self.records) or matrix.dtype != np.float32:
                raise STORED.corrupt(self.path, f"{field}.npy does not hold one float32 row per record")
            out[field] = matrix
        return out

    def _save(self, merged, changed, vectors, bm25, manifest) -> None:
        def fill(tmp: Path) -> None:
            with (tmp / RECORDS).open("w", encoding="utf-8") as f:
                for r in merged:
                    f.write(json.dumps(r.to_dict(), ensure_ascii=False) + "\n")
            bm25.save(tmp / BM25_DIR)
            for field, matrix in vectors.items():
                np.save(tmp / f"{field}.npy", matrix, allow_pickle=False)

        STORED.write(self.path, fill, manifest)
