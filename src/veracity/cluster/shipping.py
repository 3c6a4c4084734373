"""The run's index reaches every worker: its folder travels through Ray's object store.

Why the object store rather than a shared path or a runtime environment: a shared filesystem is not something
every cluster has, and Ray's runtime environments are meant for code and are size-capped (a working_dir is
uploaded through the head node's GCS), while an index is data of any size. `ray.put` stores each file once on the
driver's node, and a node fetches it straight from there, once, only if it needs it. A worker whose node already
has the same folder at the same path (a shared filesystem, or the driver's own machine) reads it in place; the
others write the shipped copy once per node under ~/.cache/veracity/ray-indexes/DIGEST and read that.

A pooled knowledge base (built in memory by the runner) is saved to a temporary folder and shipped the same way; a
sharded index (retrieval/sharded.py) travels as its whole folder, shards and all, and opens as it does here. An
index in PostgreSQL (retrieval/pg_index.py) does not travel: each worker connects to the same database (the
ShippedIndex holds its URL, with no files and no digest).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import default_cache_path
from ..retrieval.index import ModeRetriever
from ..retrieval.pg_index import PgIndex, is_pg_spec
from ..retrieval.sharded import open_index

if TYPE_CHECKING:
    from ..retrieval.base import Retriever

CHUNK = 1 << 20


@dataclass(frozen=True)
class ShippedIndex:
    digest: str  # of the folder's files (names and bytes); "" for an index in PostgreSQL
    source: str  # the folder on the driver's machine, or the PostgreSQL index's spec (postgresql://...#NAME)
    mode: str | None  # the search mode of the run's retriever
    #: relative path -> ObjectRef of the file's bytes; held in a dict so that Ray does not fetch them to a node
    #: before a worker there asks
    files: dict[str, Any]


def folder_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def folder_digest(folder: Path) -> str:
    """SHA-256 over the folder's files: relative names, sizes and contents, in name order."""
    h = hashlib.sha256()
    for path in folder_files(folder):
        h.update(f"{path.relative_to(folder).as_posix()}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
    return h.hexdigest()


def ship(retriever: Retriever | None) -> ShippedIndex | None:
    """Put the retriever's index folder into the object store (driver side); None without a retriever."""
    if retriever is None:
        return None
    if not isinstance(retriever, ModeRetriever):
        raise TypeError(f"cannot send a {type(retriever).__name__} to Ray workers: only an index can travel")
    index, mode = retriever.index, retriever.mode
    if isinstance(index, PgIndex):  # an index in PostgreSQL: every worker connects to the same database
        return ShippedIndex("", index.spec.full, mode, {})
    import ray

    if index.path is not None and Path(index.path).is_dir():
        return _put(Path(index.path), mode, ray)
    with tempfile.TemporaryDirectory(prefix="veracity-ship-") as tmp:  # an index built in memory
        folder = Path(tmp) / "index"
        index.save(folder)
        return _put(folder, mode, ray)


def _put(folder: Path, mode: str | None, ray: Any) -> ShippedIndex:
    files = {p.relative_to(folder).as_posix(): ray.put(p.read_bytes()) for p in folder_files(folder)}
    return ShippedIndex(folder_digest(folder), str(folder.resolve()), mode, files)


def receive(shipped: ShippedIndex | None, cache_root: Path | None = None) -> Retriever | None:
    """The shipped index as a retriever (worker side): read in place when this node has the same folder, else
    from this node's copy, written from the object store the first time."""
    if shipped is None:
        return None
    if is_pg_spec(shipped.source):  # nothing shipped: the worker reads the database (its URL, password and all)
        return open_index(shipped.source).retriever(shipped.mode)
    source = Path(shipped.source)
    if source.is_dir() and folder_digest(source) == shipped.digest:
        folder = source
    else:
        folder = _node_copy(shipped, cache_root or Path(default_cache_path()).parent / "ray-indexes")
    return open_index(folder).retriever(shipped.mode)


def _node_copy(shipped: ShippedIndex, root: Path) -> Path:
    """ROOT/DIGEST, written once per node: into a temporary sibling renamed at the end, so that a worker never
    reads half a copy and two workers writing at once leave one."""
    dest = root / shipped.digest[:32]
    if dest.is_dir():
        return dest
    import ray

    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=root))
    try:
        for rel, ref in shipped.files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(ray.get(ref))
        os.rename(tmp, dest)
    except OSError:
        if not dest.is_dir():  # not another worker's copy that won the race: a real failure
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest
