"""What `--db`, `VERACITY_DATABASE_URL` or the config's `database_url` names: an SQLite file (a path, or
`sqlite:///PATH`), a PostgreSQL database (`postgresql://...` or `postgres://...`), or a local PostgreSQL started on
demand in a folder (`embedded:DIR`, `db/embedded.py`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ..errors import UserError

ENV = "VERACITY_DATABASE_URL"
POSTGRES_SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True)
class DatabaseURL:
    kind: str  # "sqlite" | "postgresql"
    target: str  # the SQLite file's path, or the PostgreSQL connection URL (libpq form)

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    def shown(self) -> str:
        """For logs and messages: a PostgreSQL URL without its password."""
        return redact(self.target) if self.is_postgres else self.target


def redact(url: str) -> str:
    """`url` with any password replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a database URL that cannot be parsed>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[1]}"))


def parse(spec: str) -> DatabaseURL:
    """The database a `--db` value names, or a one-line UserError. `embedded:DIR` starts (or finds running) the
    local PostgreSQL of DIR (`veracity db start DIR`) and names its database."""
    spec = str(spec).strip()
    if not spec:
        raise UserError("the database is empty: give --db a file (SQLite), postgresql://... or embedded:DIR")
    scheme = spec.split(":", 1)[0].lower() if ":" in spec else ""
    if scheme in POSTGRES_SCHEMES:
        try:
            parts = urlsplit(spec)
            parts.port  # noqa: B018 - raises on a bad port
        except ValueError as e:
            raise UserError(
                f"{redact(spec)[:200]} is not a PostgreSQL URL ({e}): write "
                "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
            ) from None
        return DatabaseURL("postgresql", spec)
    if scheme == "embedded":
        from .embedded import ensure_started

        return DatabaseURL("postgresql", ensure_started(spec.split(":", 1)[1]))
    if scheme == "sqlite":
        path = spec.split(":", 1)[1]
        path = path[2:] if path.startswith("///") else path.lstrip("/") if path.startswith("//") else path
        return DatabaseURL("sqlite", os.path.expanduser(path or ""))
    if len(scheme) > 1 and "/" not in scheme and "\\" not in scheme and scheme.isalpha():
        raise UserError(
            f"unknown database scheme {scheme!r} in {redact(spec)[:200]}: give an SQLite file, "
            "postgresql://... or embedded:DIR"
        )
    return DatabaseURL("sqlite", os.path.expanduser(spec))


def from_env(env: os._Environ[str] | dict[str, str] | None = None) -> str | None:
    """The database URL of the environment (`VERACITY_DATABASE_URL`), if set."""
    value = (os.environ if env is None else env).get(ENV, "").strip()
    return value or None
