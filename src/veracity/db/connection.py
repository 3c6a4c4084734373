"""One way to talk to either database the server keeps its runs in: SQLite (the standard library's sqlite3) or
PostgreSQL (psycopg 3). The SQL is written once, with `?` placeholders, and rows come back as dicts from both;
what differs between the two (placeholders, transactions, a few types in the schema) is decided here and in
`migrations`, nowhere else.

Thread-safe: one connection per thread, in autocommit; `transaction()` groups statements (SQLite: BEGIN IMMEDIATE,
so writers queue instead of failing; PostgreSQL: a real transaction). A PostgreSQL connection that broke (the
server restarted) is replaced on the next statement.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import DatabaseUnavailable, UserError
from .url import DatabaseURL, parse

log = logging.getLogger(__name__)

Row = dict[str, Any]

_PLACEHOLDER = re.compile(r"\?")


def _sqlite_row(cursor: sqlite3.Cursor, row: tuple) -> Row:
    return {d[0]: v for d, v in zip(cursor.description, row)}


def _pg_text(value: Any) -> Any:
    """PostgreSQL's text holds no NUL character: one becomes U+FFFD (as a damaged byte does in SQLite)."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


class Database:
    """An open database: `execute` a statement, `rows` / `row` / `value` to read, `transaction()` to group."""

    def __init__(self, url: DatabaseURL | str) -> None:
        self.url = parse(url) if isinstance(url, str) else url
        self.kind = self.url.kind
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[Any] = []
        if self.kind == "sqlite":
            path = Path(self.url.target)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.path: Path | None = path
        else:
            self.path = None
        self._conn()  # connect now: a bad URL or an unreachable server fails here, in one line

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    def shown(self) -> str:
        return self.url.shown()

    # -- connections ---------------------------------------------------------------------------------------

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None and not (self.is_postgres and (conn.closed or conn.broken)):
            return conn
        conn = self._connect_sqlite() if self.kind == "sqlite" else self._connect_postgres()
        self._local.conn = conn
        with self._lock:
            self._all.append(conn)
        return conn

    def _connect_sqlite(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise UserError(f"cannot open the run database {self.path}: {e}") from None
        conn.row_factory = _sqlite_row
        # text that is not valid UTF-8 (written by something else) is read with U+FFFD, never an error
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _connect_postgres(self) -> Any:
        try:
            import psycopg
            from psycopg.rows import dict_row
        except ImportError:
            raise UserError("a PostgreSQL database needs psycopg: pip install 'veracity[postgres]'") from None
        try:
            return psycopg.connect(
                self.url.target, autocommit=True, row_factory=dict_row, connect_timeout=10, application_name="veracity"
            )
        except psycopg.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DatabaseUnavailable(f"cannot reach the database {self.shown()}: {first}") from None

    def close(self) -> None:
        """Close every connection this object opened (any thread's)."""
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing what may already be gone
                pass
        self._local = threading.local()

    # -- statements ------------------------------------------------------------------------------------------

    def sql(self, statement: str) -> str:
        """`statement` in this database's placeholder style (`?` for SQLite, `%s` for psycopg)."""
        return _PLACEHOLDER.sub("%s", statement) if self.is_postgres else statement

    def _params(self, params: Sequence[Any]) -> Sequence[Any]:
        return [_pg_text(p) for p in params] if self.is_postgres else params

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        return self._run(statement, params).rowcount

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        conn = self._conn()
        if self.is_postgres:
            with conn.cursor() as cur:
                cur.executemany(self.sql(statement), [self._params(r) for r in rows])
        else:
            conn.executemany(statement, rows)

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[Row]:
        return list(self._run(statement, params).fetchall())

    def row(self, statement: str, params: Sequence[Any] = ()) -> Row | None:
        return self._run(statement, params).fetchone()

    def value(self, statement: str, params: Sequence[Any] = (), default: Any = None) -> Any:
        row = self.row(statement, params)
        return next(iter(row.values())) if row else default

    def _run(self, statement: str, params: Sequence[Any]) -> Any:
        conn = self._conn()
        if not self.is_postgres:
            return conn.execute(statement, params)
        try:
            return conn.execute(self.sql(statement), self._params(params))
        except Exception as e:
            if not (conn.closed or conn.broken) or getattr(self._local, "in_transaction", False):
                raise  # a failed statement, or a transaction whose other statements are gone too
            # the connection died under it (the server restarted since it was opened): once on a new one, which
            # says in one line when the server is still down
            log.info("database connection lost (%s: %s); connecting again", type(e).__name__, e)
            return self._conn().execute(self.sql(statement), self._params(params))

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """Statements run through this object inside the block form one transaction (this thread's connection)."""
        conn = self._conn()
        if self.is_postgres:
            self._local.in_transaction = True
            try:
                with conn.transaction():
                    yield self
            finally:
                self._local.in_transaction = False
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def lock(self, key: int) -> None:
        """Inside a transaction: hold a database-wide lock numbered `key` until it ends (PostgreSQL's advisory
        lock; SQLite's BEGIN IMMEDIATE already excludes every other writer)."""
        if self.is_postgres:
            self.execute("SELECT pg_advisory_xact_lock(?)", (key,))

    def now_sql(self) -> str:
        """The database's clock in seconds since the epoch, as SQL: leases are compared on one clock, the
        database's, whatever the workers' clocks say."""
        return (
            "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
            if self.is_postgres
            else "((julianday('now') - 2440587.5) * 86400.0)"
        )

    def errors(self) -> tuple[type[BaseException], ...]:
        """The exceptions this database's driver raises for a failed statement or a lost connection."""
        if self.is_postgres:
            import psycopg

            return (psycopg.Error,)
        return (sqlite3.Error,)
