"""`veracity db`: a local PostgreSQL for one machine, and the run store's schema.

    veracity db start DIR [--listen ADDR --port N]   start (initialising on first use); print the database URL
    veracity db stop DIR                             stop it cleanly
    veracity db migrate [--db URL]                   bring a run store (SQLite or PostgreSQL) to the current schema
    veracity db status [--db URL]                    reachable? server version, pgvector, schema, runs by status

Then: veracity serve --db "$(veracity db start ~/pg)"   (as many workers as wanted, each with the same URL)
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def describe(db_spec: str) -> dict[str, Any]:
    """What `veracity doctor` and `veracity db status` say of a run database: where it is, whether it can be
    reached, the server's version and pgvector (PostgreSQL), the schema version, runs by status. Never raises."""
    from ..errors import UserError
    from .connection import Database
    from .migrations import LATEST, current_version
    from .url import redact

    out: dict[str, Any] = {"database": redact(db_spec)}
    try:
        db = Database(db_spec)
    except UserError as e:
        return {**out, "reachable": False, "error": str(e)}
    try:
        out["kind"] = db.kind
        out["reachable"] = True
        if db.is_postgres:
            out["server"] = db.value("SHOW server_version")
            vector = db.value("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            available = db.value("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
            out["pgvector"] = (f"{vector} (installed)" if vector else
                               f"{available} available, not installed (CREATE EXTENSION vector)" if available
                               else "not available (evidence indexes with --dense need it)")
        version = current_version(db)
        out["schema"] = (f"{version} (current)" if version == LATEST else
                         f"{version}: older than {LATEST}, run `veracity db migrate`" if version < LATEST else
                         f"{version}: newer than this veracity ({LATEST})")
        if version:
            out["runs"] = {r["status"]: int(r["n"]) for r in db.rows("SELECT status, COUNT(*) AS n FROM runs "
                                                                     "GROUP BY status")} or "none"
    except db.errors() as e:
        out["error"] = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    finally:
        db.close()
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("db", help="a local PostgreSQL (start/stop) and the run store's schema (migrate)",
                              description=__doc__.split("\n\n", 1)[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="db_command", required=True, metavar="{start,stop,migrate,status}")
    s = sub.add_parser("start", help="start a local PostgreSQL in DIR (initialised on first use); print its URL")
    s.add_argument("dir", metavar="DIR")
    s.add_argument("--listen", metavar="ADDR", help="also take TCP connections on ADDR (e.g. 0.0.0.0), for workers "
                                                    "on other machines; they authenticate with the generated password")
    s.add_argument("--port", type=int, help="port (default: a free one, kept for later starts)")
    s.set_defaults(func=cmd_db)
    s = sub.add_parser("stop", help="stop the PostgreSQL of DIR")
    s.add_argument("dir", metavar="DIR")
    s.set_defaults(func=cmd_db)
    for name, what in (("migrate", "bring the run store to the current schema"),
                       ("status", "whether the run store can be reached, its server, pgvector, schema and runs")):
        s = sub.add_parser(name, help=what)
        s.add_argument("--db", metavar="URL", help="SQLite file, postgresql://... or embedded:DIR (default: "
                                                   "VERACITY_DATABASE_URL, else the default SQLite file)")
        s.add_argument("--config", help="TOML configuration file (its database_url)")
        s.set_defaults(func=cmd_db)


def cmd_db(args: argparse.Namespace) -> int:
    from . import embedded

    if args.db_command == "start":
        print(embedded.start(args.dir, port=args.port, listen=args.listen), flush=True)
        return 0
    if args.db_command == "stop":
        stopped = embedded.stop(args.dir)
        print(f"stopped the PostgreSQL of {args.dir}" if stopped else f"the PostgreSQL of {args.dir} was not running",
              file=sys.stderr)
        return 0
    from ..config import load_config
    from ..server.settings import database_of

    spec = database_of(args.db, load_config(args.config))
    if args.db_command == "status":
        info = describe(spec)
        for k, v in info.items():
            print(f"{k:10s} {v}")
        return 0 if info.get("reachable") and "error" not in info else 1
    from .connection import Database
    from .migrations import migrate

    db = Database(spec)
    try:
        before, after = migrate(db)
    finally:
        db.close()
    print(f"{db.shown()}: schema {before} -> {after}" if before != after else
          f"{db.shown()}: schema {after}, already current")
    return 0
