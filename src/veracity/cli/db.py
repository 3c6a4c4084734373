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

from ..db.status import describe


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "db",
        help="a local PostgreSQL (start/stop) and the run store's schema (migrate)",
        description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="db_command", required=True, metavar="{start,stop,migrate,status}")
    s = sub.add_parser("start", help="start a local PostgreSQL in DIR (initialised on first use); print its URL")
    s.add_argument("dir", metavar="DIR")
    s.add_argument(
        "--listen",
        metavar="ADDR",
        help="also take TCP connections on ADDR (e.g. 0.0.0.0), for workers "
        "on other machines; they authenticate with the generated password",
    )
    s.add_argument("--port", type=int, help="port (default: a free one, kept for later starts)")
    s.add_argument(
        "--open-folders",
        action="store_true",
        help="run as root: let the server's own user enter the folders above DIR and its programs where they are "
        "closed to other users (chmod g+rx,o+rx); without it veracity changes no permission and says which folder",
    )
    s.set_defaults(func=cmd_db)
    s = sub.add_parser("stop", help="stop the PostgreSQL of DIR")
    s.add_argument("dir", metavar="DIR")
    s.set_defaults(func=cmd_db)
    for name, what in (
        ("migrate", "bring the run store to the current schema"),
        ("status", "whether the run store can be reached, its server, pgvector, schema and runs"),
    ):
        s = sub.add_parser(name, help=what)
        s.add_argument(
            "--db",
            metavar="URL",
            help="SQLite file, postgresql://... or embedded:DIR (default: "
            "VERACITY_DATABASE_URL, else the default SQLite file)",
        )
        s.add_argument("--config", help="TOML configuration file (its database_url)")
        s.set_defaults(func=cmd_db)


def cmd_db(args: argparse.Namespace) -> int:
    from ..db import embedded

    if args.db_command == "start":
        print(embedded.start(args.dir, port=args.port, listen=args.listen, open_folders=args.open_folders), flush=True)
        return 0
    if args.db_command == "stop":
        stopped = embedded.stop(args.dir)
        print(
            f"stopped the PostgreSQL of {args.dir}" if stopped else f"the PostgreSQL of {args.dir} was not running",
            file=sys.stderr,
        )
        return 0
    from ..config import load_config
    from ..server.settings import database_of

    spec = database_of(args.db, load_config(args.config))
    if args.db_command == "status":
        info = describe(spec)
        for k, v in info.items():
            print(f"{k:10s} {v}")
        return 0 if info.get("reachable") and "error" not in info else 1
    from ..db.connection import Database
    from ..db.migrations import migrate

    db = Database(spec)
    try:
        before, after = migrate(db)
    finally:
        db.close()
    print(
        f"{db.shown()}: schema {before} -> {after}"
        if before != after
        else f"{db.shown()}: schema {after}, already current"
    )
    return 0
