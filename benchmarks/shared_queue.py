"""Several `veracity serve` workers on one PostgreSQL database (the shared queue of runs): throughput, and what a
worker killed with SIGKILL leaves behind.

Starts its own PostgreSQL (`veracity.db.embedded` in a temporary folder, or `--db URL` of a server you run: one
fresh database per scenario is created there, with pgvector, and dropped afterwards), an OpenAI-compatible stub on
127.0.0.1 answering the scripted QACheck rules after `--delay` seconds a call (7 model calls per check), and
`veracity serve` worker subprocesses (`--max-concurrent K` each).

1. Throughput: `--checks` checks posted at once (a thread pool, spread round-robin over the workers) to 1 worker,
   then to 4 (each on a fresh database). Wall seconds from the first POST to the last run's `finished`.
2. Queued on a dead worker: 2 workers A and B, 30 checks posted to A only, A killed (SIGKILL) right after: the
   queued runs are to finish on B, those A was running to be marked interrupted.
3. SIGKILL mid-run, `--rounds` times on one database: 2 workers; each round posts 20 checks, kills one worker
   (alternately the older and the newer) while it runs checks, starts a replacement, waits until every run ended.

Every run is audited from the database (`runs` and `steps`): its steps numbered 0..n-1 in order, and its stages a
complete QACheck trace (a done run) or a prefix of one (an interrupted run), as a single run's reference trace;
never more than 7 model calls. The stub counts the model calls it answered. Prints Markdown tables; exits 1 when an
invariant breaks (a run lost, run twice, left unfinished, a trace incomplete), after writing the workers' logs and
the audited runs to `--log-dir`.

    python benchmarks/shared_queue.py                          # 200 checks, 0.5 s a model call, K=2
    python benchmarks/shared_queue.py --checks 40 --delay 0.1 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
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
UNFINISHED = ("queued", "running")


def model_calls(stub: StubServer) -> int:
    """The calls of checks the stub answered: without the capability probe each worker sends once (2 requests)."""
    probe = PROBE_MESSAGES[-1]["content"]
    return sum(message_text(b) != probe for b in list(stub.requests))


def cpu_line() -> str:
    try:
        names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")]
    except OSError:
        names = []
    return f"{names[0] if names else 'unknown CPU'}, {os.cpu_count()} cores"


class Bench:
    """The PostgreSQL server, the databases made on it, the workers started, the logs."""

    def __init__(self, args: argparse.Namespace) -> None:
        import psycopg  # noqa: F401 - fail early: the `postgres` extra is needed

        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="veracity-sq-"))
        self.pg_folder: Path | None = None
        if args.db:
            self.url = args.db
        else:
            from veracity.db import embedded

            self.pg_folder = self.tmp / "pg"
            self.url = embedded.start(self.pg_folder)
        self.databases: list[str] = []
        self.workers: list[tuple[str, VeracityServer]] = []
        self.log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="veracity-sq-logs-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.failures: list[str] = []

    # -- databases -------------------------------------------------------------------------------

    def _db_url(self, name: str) -> str:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path="/" + name))

    def fresh_database(self, label: str) -> str:
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

        for _, w in self.workers:
            w.stop(timeout=10)
        try:
            with psycopg.connect(self._db_url("postgres"), autocommit=True) as conn:
                for name in self.databases:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except Exception as e:  # noqa: BLE001
            print(f"(could not drop the benchmark's databases: {e})", file=sys.stderr)
        if self.pg_folder is not None:
            from veracity.db import embedded

            embedded.stop(self.pg_folder)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- workers ---------------------------------------------------------------------------------

    def worker(self, db: str, stub: StubServer, name: str) -> VeracityServer:
        base = self.tmp / "workers" / name
        base.mkdir(parents=True, exist_ok=True)
        args = ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0",
                "--max-queue", "1000", "--max-concurrent", str(self.args.max_concurrent)]
        srv = VeracityServer(args, db=db, env=server_env(base), cwd=base)
        self.workers.append((name, srv))
        return srv.start(timeout=90)

    def save_logs(self) -> None:
        for name, w in self.workers:
            (self.log_dir / f"{name}.log").write_text("\n".join(w.log) + "\n")


def worker_pattern(w: VeracityServer) -> str:
    """A LIKE pattern for the `worker` column of this process (HOST:PID:RANDOM)."""
    return f"%:{w.proc.pid}:%"


def worker_of(w: VeracityServer) -> str:
    return f"pid {w.proc.pid}"


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


def statuses(db: str, ids: list[str]) -> dict[str, str]:
    import psycopg

    with psycopg.connect(db) as conn:
        return dict(conn.execute("SELECT id, status FROM runs WHERE id = ANY(%s)", (ids,)).fetchall())


def wait_ended(db: str, ids: list[str], timeout: float, watch=None) -> tuple[bool, float]:
    """Poll until every run of `ids` has ended (none queued or running, none missing); (ended, seconds)."""
    t0 = time.monotonic()
    while True:
        st = statuses(db, ids)
        if watch:
            watch(st)
        if len(st) == len(ids) and not any(s in UNFINISHED for s in st.values()):
            return True, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return False, time.monotonic() - t0
        time.sleep(0.2)


def audit(db: str, ids: list[str], reference: list[str]) -> dict[str, dict]:
    """Each run of `ids` as stored: status, worker, error, timestamps, its steps' seq numbers and stages, and what
    they mean: `ordered` (seq 0..n-1 in order), `complete` (the reference trace), `prefix` (a prefix of it)."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(db, row_factory=dict_row) as conn:
        runs = {r["id"]: r for r in conn.execute(
            "SELECT id, status, worker, error, created, started, finished FROM runs WHERE id = ANY(%s)", (ids,))}
        steps: dict[str, list[tuple[int, str]]] = {}
        for r in conn.execute("SELECT run_id, seq, stage, data FROM steps WHERE run_id = ANY(%s) "
                              "ORDER BY run_id, seq", (ids,)):
            try:
                t = float(json.loads(r["data"]).get("t"))
            except (TypeError, ValueError):
                t = float("nan")
            steps.setdefault(r["run_id"], []).append((r["seq"], r["stage"], t))
    out = {}
    for run_id in ids:
        r = runs.get(run_id)
        if r is None:
            out[run_id] = {"status": "missing", "steps": 0, "model_calls": 0, "ordered": True, "prefix": True,
                           "complete": False, "worker": None, "error": None}
            continue
        # in order: seq 0..n-1, and each step's time into the run ("t", from its tracer) never goes back
        rows = steps.get(run_id, [])
        seqs, stages, ts = [s for s, _, _ in rows], [g for _, g, _ in rows], [t for _, _, t in rows]
        out[run_id] = {**r, "steps": len(seqs), "model_calls": stages.count("model_call"),
                       "ordered": seqs == list(range(len(seqs))) and all(a <= b for a, b in zip(ts, ts[1:])),
                       "prefix": stages == reference[:len(stages)], "complete": stages == reference,
                       "stages": stages}
    return out


def judged(runs: dict[str, dict], allowed: tuple[str, ...]) -> dict[str, list[str]]:
    """The runs breaking an invariant, by kind."""
    return {
        "lost": [i for i, r in runs.items() if r["status"] not in allowed and r["status"] not in UNFINISHED],
        "left unfinished": [i for i, r in runs.items() if r["status"] in UNFINISHED],
        "run twice": [i for i, r in runs.items()
                      if not r["ordered"] or not r["prefix"] or r["model_calls"] > MODEL_CALLS],
        "incomplete": [i for i, r in runs.items() if r["status"] == "done" and not r["complete"]],
    }


def report_failures(bench: Bench, scenario: str, db: str, runs: dict[str, dict], bad: dict[str, list[str]],
                    names: dict[str, str]) -> None:
    broken = {k: v for k, v in bad.items() if v}
    if not broken:
        return
    bench.failures.append(scenario)
    path = bench.log_dir / f"{scenario.replace(' ', '_')}.runs.json"
    path.write_text(json.dumps(runs, indent=1, default=str))
    print(f"\n**{scenario}: invariant broken** ({db}; all runs audited in {path})")
    for kind, ids in broken.items():
        for run_id in ids[:10]:
            r = runs[run_id]
            who = next((n for pat, n in names.items() if r.get("worker") and f":{pat}:" in r["worker"]),
                       r.get("worker"))
            print(f"- {kind}: run {run_id} status={r['status']} worker={who} steps={r['steps']} "
                  f"model_calls={r['model_calls']} ordered={r['ordered']} error={r.get('error')!r} "
                  f"stages={r.get('stages')}")
        if len(ids) > 10:
            print(f"- {kind}: ... {len(ids) - 10} more")


def names_of(pairs: list[tuple[str, VeracityServer]]) -> dict[str, str]:
    return {str(w.proc.pid): n for n, w in pairs}


# -- the reference trace ---------------------------------------------------------------------------------

def reference_trace(bench: Bench) -> list[str]:
    """The stages of one check run alone, by one worker: what every run of the benchmarks is compared with."""
    stub = StubServer(rules_responder(delay=0.0))
    db = bench.fresh_database("reference")
    w = bench.worker(db, stub, "reference")
    try:
        ids, refused = post_checks([w], 1, "reference")
        if not ids or not wait_ended(db, ids, 60)[0]:
            raise SystemExit(f"the reference check did not finish: {refused}")
        import psycopg

        with psycopg.connect(db) as conn:
            stages = [r[0] for r in conn.execute("SELECT stage FROM steps WHERE run_id=%s ORDER BY seq", (ids[0],))]
            status = conn.execute("SELECT status FROM runs WHERE id=%s", (ids[0],)).fetchone()[0]
    finally:
        w.stop()
        stub.close()
    if status != "done" or stages.count("model_call") != MODEL_CALLS:
        raise SystemExit(f"the reference check ended {status} with stages {stages}")
    return stages


# -- 1. throughput ---------------------------------------------------------------------------------------

def throughput(bench: Bench, n_workers: int, reference: list[str]) -> dict:
    args = bench.args
    stub = StubServer(rules_responder(delay=args.delay))
    db = bench.fresh_database(f"tp{n_workers}")
    pairs = []
    try:
        for k in range(n_workers):
            name = f"tp{n_workers}-w{k}"
            pairs.append((name, bench.worker(db, stub, name)))
        ws = [w for _, w in pairs]
        budget = 60 + 3 * args.checks * MODEL_CALLS * args.delay / (n_workers * args.max_concurrent)
        calls_before = model_calls(stub)
        t0 = time.time()
        ids, refused = post_checks(ws, args.checks, f"tp{n_workers}")
        posted = time.time() - t0
        ended, _ = wait_ended(db, ids, budget)
        runs = audit(db, ids, reference)
        last = max((r["finished"] for r in runs.values() if r.get("finished")), default=time.time())
        wall = last - t0
        calls = model_calls(stub) - calls_before
        names = names_of(pairs)
        per_worker = {}
        for r in runs.values():
            pid = (r.get("worker") or "::").split(":")[1]
            per_worker[names.get(pid, pid)] = per_worker.get(names.get(pid, pid), 0) + (r["status"] == "done")
    finally:
        for _, w in pairs:
            w.stop()
        stub.close()
    bad = judged(runs, ("done",))
    bad["lost"] += [f"refused {e}" for e in refused]
    out = {"workers": n_workers, "checks": args.checks, "accepted": len(ids), "done": sum(r["status"] == "done" for r in runs.values()),
           "wall": wall, "posted": posted, "rate": sum(r["status"] == "done" for r in runs.values()) / wall,
           "calls": calls, "per_worker": per_worker, "ended": ended, "bad": bad}
    report_failures(bench, f"throughput {n_workers} workers", db, runs,
                    {k: [i for i in v if i in runs] for k, v in bad.items()}, names)
    if refused:
        bench.failures.append(f"throughput {n_workers} workers: {len(refused)} refused")
        print(f"refused: {refused[:5]}")
    if calls != MODEL_CALLS * out["done"]:
        bench.failures.append(f"throughput {n_workers} workers: {calls} model calls for {out['done']} runs")
    return out


# -- 2. queued on a dead worker ---------------------------------------------------------------------------

def dead_worker_queue(bench: Bench, reference: list[str], n: int = 30) -> dict:
    args = bench.args
    stub = StubServer(rules_responder(delay=args.delay))
    db = bench.fresh_database("deadq")
    pairs = [("deadq-A", bench.worker(db, stub, "deadq-A")), ("deadq-B", bench.worker(db, stub, "deadq-B"))]
    a, b = pairs[0][1], pairs[1][1]
    pat_a, pat_b = f":{a.proc.pid}:", f":{b.proc.pid}:"
    try:
        calls_before = model_calls(stub)
        ids, refused = post_checks([a], n, "deadq")
        posted = time.monotonic()
        a.kill()  # SIGKILL, and reaped (waited for): its process id is free, as a dead worker's
        killed = time.monotonic()
        budget = 60 + 3 * n * MODEL_CALLS * args.delay / args.max_concurrent
        ended, _ = wait_ended(db, ids, budget)
        settled = time.monotonic() - killed
        runs = audit(db, ids, reference)
        calls = model_calls(stub) - calls_before
    finally:
        for _, w in pairs:
            w.stop()
        stub.close()
    done_b = sum(r["status"] == "done" and pat_b in (r["worker"] or "") for r in runs.values())
    interrupted = [r for r in runs.values() if r["status"] == "interrupted"]
    bad = judged(runs, ("done", "interrupted"))
    wrong = [i for i, r in runs.items() if r["status"] == "interrupted" and pat_a not in (r["worker"] or "")]
    if wrong:  # an interrupted run that the dead worker did not hold: lost by the survivor
        bad["lost"] += wrong
    report_failures(bench, "queued on a dead worker", db, runs, bad, names_of(pairs))
    if refused:
        bench.failures.append(f"queued on a dead worker: {len(refused)} refused")
    stored_calls = sum(r["model_calls"] for r in runs.values())
    if calls - stored_calls > len(interrupted):
        bench.failures.append(f"queued on a dead worker: {calls} model calls, {stored_calls} stored")
    return {"submitted": n, "accepted": len(ids), "kill_after_post": killed - posted,
            "done_b": done_b, "done_other": sum(r["status"] == "done" for r in runs.values()) - done_b,
            "interrupted": len(interrupted), "interrupted_steps": sum(r["steps"] >= 1 for r in interrupted),
            "interrupted_a": sum(pat_a in (r["worker"] or "") for r in interrupted),
            "steps_each": sorted(r["steps"] for r in interrupted),
            "lost": len(bad["lost"]), "unfinished": len(bad["left unfinished"]), "twice": len(bad["run twice"]),
            "incomplete": len(bad["incomplete"]), "seconds": settled, "ended": ended, "calls": calls, "stored_calls": stored_calls}


# -- 3. SIGKILL mid-run, several rounds -------------------------------------------------------------------

def kill_rounds(bench: Bench, reference: list[str]) -> list[dict]:
    args = bench.args
    rng = random.Random(args.seed)
    stub = StubServer(rules_responder(delay=args.delay))
    db = bench.fresh_database("kills")
    pairs = [("kills-w0", bench.worker(db, stub, "kills-w0")), ("kills-w1", bench.worker(db, stub, "kills-w1"))]
    alive = list(pairs)
    rows = []
    import psycopg

    try:
        for rnd in range(1, args.rounds + 1):
            calls_before = model_calls(stub)
            ids, refused = post_checks([w for _, w in alive], 20, f"round{rnd}")
            victim_name, victim = alive[(rnd - 1) % 2]  # alternately the older, the newer
            pattern = worker_pattern(victim)
            deadline = time.monotonic() + 60
            held: list[tuple[str, int]] = []
            while time.monotonic() < deadline:
                with psycopg.connect(db) as conn:
                    held = conn.execute("SELECT r.id, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) FROM runs r "
                                        "WHERE r.status='running' AND r.worker LIKE %s", (pattern,)).fetchall()
                if held:
                    break
                time.sleep(0.05)
            time.sleep(rng.uniform(0, MODEL_CALLS * args.delay))  # somewhere in its runs' traces
            victim.kill()  # SIGKILL, and waited for: nothing it held changes from now on
            killed = time.monotonic()
            with psycopg.connect(db) as conn:  # what it held when it died (reaped or not yet)
                held = conn.execute("SELECT r.id, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) FROM runs r "
                                    "WHERE r.status IN ('running', 'interrupted') AND r.worker LIKE %s",
                                    (pattern,)).fetchall()
            reaped_at = [None]
            held_ids = [h[0] for h in held]

            def watch(st: dict[str, str]) -> None:
                if reaped_at[0] is None and all(st.get(i) not in UNFINISHED for i in held_ids):
                    reaped_at[0] = time.monotonic() - killed

            replacement_name = f"kills-r{rnd}"
            started: dict = {}

            def start_replacement() -> None:  # in a thread: the watch below times the reaping meanwhile
                started["worker"] = bench.worker(db, stub, replacement_name)
                started["seconds"] = time.monotonic() - killed

            starter = threading.Thread(target=start_replacement)
            starter.start()
            budget = 60 + 3 * 20 * MODEL_CALLS * args.delay / args.max_concurrent
            ended, _ = wait_ended(db, ids, budget, watch)
            starter.join()
            if "worker" not in started:
                raise SystemExit(f"round {rnd}: the replacement worker did not start")
            replacement, rep_start = started["worker"], started["seconds"]
            pairs.append((replacement_name, replacement))
            alive = [p for p in alive if p[1] is not victim] + [(replacement_name, replacement)]
            settle = time.monotonic() - killed
            with psycopg.connect(db) as conn:
                anywhere = conn.execute("SELECT COUNT(*) FROM runs WHERE status IN ('queued','running')").fetchone()[0]
            runs = audit(db, ids, reference)
            interrupted = {i: r for i, r in runs.items() if r["status"] == "interrupted"}
            bad = judged(runs, ("done", "interrupted"))
            not_held = [i for i in interrupted if i not in held_ids]
            bad["lost"] += not_held  # interrupted, but the victim was not running it when killed
            report_failures(bench, f"kill round {rnd}", db, runs, bad, names_of(pairs))
            if refused:
                bench.failures.append(f"kill round {rnd}: {len(refused)} refused")
            calls = model_calls(stub) - calls_before
            stored = sum(r["model_calls"] for r in runs.values())
            rows.append({"round": rnd, "victim": victim_name, "held": len(held), "held_steps": [h[1] for h in held],
                         "done": sum(r["status"] == "done" for r in runs.values()),
                         "interrupted": len(interrupted),
                         "interrupted_steps": sum(r["steps"] >= 1 for r in interrupted.values()),
                         "steps_each": sorted(r["steps"] for r in interrupted.values()),
                         "unfinished": len(bad["left unfinished"]), "anywhere": anywhere,
                         "lost": len(bad["lost"]), "twice": len(bad["run twice"]),
                         "incomplete": len(bad["incomplete"]), "reaped": reaped_at[0], "settle": settle,
                         "replacement_start": rep_start, "calls": calls, "stored_calls": stored, "ended": ended})
            if anywhere:
                bench.failures.append(f"kill round {rnd}: {anywhere} runs unfinished in the database after settling")
    finally:
        for _, w in alive:
            w.stop()
        stub.close()
    return rows


# -- main ---------------------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checks", type=int, default=200, help="checks of the throughput scenario (default 200)")
    ap.add_argument("--delay", type=float, default=0.5, help="seconds per model call of the stub (default 0.5)")
    ap.add_argument("--max-concurrent", type=int, default=2, help="each worker's --max-concurrent (default 2)")
    ap.add_argument("--workers", type=int, default=4, help="workers of the throughput scenario's second row (default 4)")
    ap.add_argument("--rounds", type=int, default=5, help="SIGKILL rounds of scenario 3 (default 5)")
    ap.add_argument("--seed", type=int, default=7, help="where in a run scenario 3 kills (default 7)")
    ap.add_argument("--db", help="a PostgreSQL server's URL (a database per scenario is made there) instead of one "
                                 "started in a temporary folder")
    ap.add_argument("--log-dir", help="where the workers' logs go (default: a new temporary folder)")
    ap.add_argument("--only", default="1,2,3", help="scenarios to run (default 1,2,3)")
    args = ap.parse_args()
    only = set(args.only.split(","))

    t_all = time.monotonic()
    bench = Bench(args)
    try:
        reference = reference_trace(bench)
        tp = [throughput(bench, n, reference) for n in (1, args.workers)] if "1" in only else []
        dq = dead_worker_queue(bench, reference) if "2" in only else None
        kr = kill_rounds(bench, reference) if "3" in only else []
    finally:
        bench.save_logs()
        bench.close()

    k = args.max_concurrent
    print(f"\nveracity serve workers sharing one PostgreSQL queue; {cpu_line()} (workers, PostgreSQL, stub model and "
          f"client all on this machine); each worker --max-concurrent {k}; stub model {args.delay:g} s a call, "
          f"{MODEL_CALLS} calls a check; reference trace {len(reference)} steps")
    if tp:
        print(f"\n### 1. Throughput: {args.checks} checks posted at once, round-robin over the workers "
              "(fresh database each)\n")
        print("| checks | workers | done | wall s | checks/s | ideal checks/s | model calls | lost | run twice | "
              "incomplete | left unfinished | done per worker |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in tp:
            ideal = r["workers"] * k / (MODEL_CALLS * args.delay)
            b = r["bad"]
            print(f"| {r['checks']} | {r['workers']} | {r['done']} | {r['wall']:.1f} | {r['rate']:.3f} | {ideal:.3f} | "
                  f"{r['calls']} | {len(b['lost'])} | {len(b['run twice'])} | {len(b['incomplete'])} | "
                  f"{len(b['left unfinished'])} | {', '.join(f'{v}' for _, v in sorted(r['per_worker'].items()))} |")
        ratio = tp[1]["rate"] / tp[0]["rate"]
        print(f"\nthroughput ratio {args.workers} workers / 1 worker: **{ratio:.2f}** (goal >= 3.5); "
              f"posting took {tp[0]['posted']:.1f} s and {tp[1]['posted']:.1f} s")
    if dq:
        print(f"\n### 2. Queued on a dead worker: {dq['submitted']} checks posted to worker A only, A killed "
              f"(SIGKILL) {dq['kill_after_post']:.2f} s after the last POST answered; B (same database) runs on\n")
        print("| submitted | done on B | done elsewhere | interrupted (held by A) | interrupted with >= 1 step | "
              "their steps | lost | run twice | incomplete | left unfinished | model calls (stub / stored) | "
              "seconds from kill until all ended |")
        print("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---:|")
        print(f"| {dq['submitted']} | {dq['done_b']} | {dq['done_other']} | {dq['interrupted']} "
              f"({dq['interrupted_a']}) | {dq['interrupted_steps']} | {dq['steps_each']} | {dq['lost']} | "
              f"{dq['twice']} | {dq['incomplete']} | {dq['unfinished']} | {dq['calls']} / {dq['stored_calls']} | "
              f"{dq['seconds']:.1f} |")
    if kr:
        print(f"\n### 3. SIGKILL mid-run, {len(kr)} rounds on one database: 2 workers; each round posts 20 checks "
              "round-robin, kills one worker (alternately) while it runs checks, starts a replacement at once\n")
        print("| round | killed | it was running (steps each) | done | interrupted | interrupted with >= 1 step | "
              "lost | run twice | incomplete | still queued/running (round / db) | s until its runs marked "
              "interrupted | s replacement start | s to settle | model calls (stub / stored) |")
        print("|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
        for r in kr:
            reaped = f"{r['reaped']:.1f}" if r["reaped"] is not None else "never"
            print(f"| {r['round']} | {r['victim']} | {r['held']} ({', '.join(map(str, r['held_steps']))}) | {r['done']} | "
                  f"{r['interrupted']} | {r['interrupted_steps']} | {r['lost']} | {r['twice']} | {r['incomplete']} | "
                  f"{r['unfinished']} / {r['anywhere']} | {reaped} | {r['replacement_start']:.1f} | {r['settle']:.1f} | "
                  f"{r['calls']} / {r['stored_calls']} |")
        print("\n(model calls: the stub answers a call the killed worker was waiting for, whose step is never "
              "stored: stub - stored <= the runs it held; more would mean a run twice)")
        extra = [r for r in kr if r["calls"] - r["stored_calls"] > r["held"]]
        if extra:
            bench.failures.append(f"kill rounds {[r['round'] for r in extra]}: more model calls than stored + held")
    print("\nscenario 4 (the SQLite default unchanged): not measured here")
    print(f"\nworkers' logs: {bench.log_dir}; total {time.monotonic() - t_all:.0f} s")
    if bench.failures:
        print("\nINVARIANTS BROKEN: " + "; ".join(bench.failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
