"""Opening the fact-check store a user names: a folder (store.FolderStore) or a database (db_store.DatabaseStore)."""

from __future__ import annotations

from pathlib import Path

from .db_store import DatabaseStore
from .store import STORED, FactCheckStore, FolderStore, is_database, store_folder


def open_store(spec: str | Path | None = None, *, create: bool = False) -> FactCheckStore:
    """The store of `spec` (None: the default folder); `create=True` gives an empty one where none exists yet."""
    if is_database(spec):
        return DatabaseStore.open(str(spec), create=create)
    return FolderStore.open(spec, create=create)


def store_exists(spec: str | Path | None = None) -> bool:
    """Whether `spec` names a store to read (a database is taken as one: one that is down is said when opened)."""
    if is_database(spec):
        return True
    return STORED.is_ours(store_folder(spec))
