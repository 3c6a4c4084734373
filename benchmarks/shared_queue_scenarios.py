"""The scenarios of shared_queue.py, each on fresh databases of one PostgreSQL server (`Bench`): the reference
trace (one check run alone), 1. throughput, 2. checks queued on a worker killed at once, 3. SIGKILL mid-run, several
rounds. Each returns its table's rows and adds what broke to `Bench.failures`.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from servers import MODEL_CALLS, Postgres, model_calls, post_checks, start_worker, stub_model, stub_options
from shared_queue_audit import UNFINISHED, audit, judged, names_of, wait_ended, worker_pattern

if TYPE_CHECKING:
    from conftest import VeracityServer
    from stub_server import StubServer


class Bench:
    """The PostgreSQL server and the databases made on it (`pg`), the workers started, the logs."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="veracity-sq-"))
        self.pg = Postgres(self.tmp / "pg", args.db)
        self.workers: list[tuple[str, VeracityServer]] = []
        self.log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="veracity-sq-logs-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.failures: list[str] = []

    def close(self) -> None:
        for _, w in self.workers:
            w.stop(timeout=10)
        self.pg.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def worker(self, db: str, stub: StubServer, name: str) -> VeracityServer:
        args = [*stub_options(stub), "--max-queue", "1000", "--max-concurrent", str(self.args.max_concurrent)]
        return start_worker(args, db, self.tmp / "workers" / name, keep=self.workers, name=name)

    def save_logs(self) -> None:
        for name, w in self.workers:
            (self.log_dir / f"{name}.log").write_text("\n".join(w.log) + "\n")


# -- the reference trace ---------------------------------------------------------------------------------


def reference_trace(bench: Bench) -> list[str]:
    """The stages of one check run alone, by one worker: what every run of the benchmarks is compared with."""
    stub = stub_model()
    db = bench.pg.database("reference")
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
    stub = stub_model(args.delay)
    db = bench.pg.database(f"tp{n_workers}")
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
    out = {
        "workers": n_workers,
        "checks": args.checks,
        "accepted": len(ids),
        "done": sum(r["status"] == "done" for r in runs.values()),
        "wall": wall,
        "posted": posted,
        "rate": sum(r["status"] == "done" for r in runs.values()) / wall,
        "calls": calls,
        "per_worker": per_worker,
        "ended": ended,
        "bad": bad,
    }
    report_failures(
        bench,
        f"throughput {n_workers} workers",
        db,
        runs,
        {k: [i for i in v if i in runs] for k, v in bad.items()},
        names,
    )
    if refused:
        bench.failures.append(f"throughput {n_workers} workers: {len(refused)} refused")
        print(f"refused: {refused[:5]}")
    if calls != MODEL_CALLS * out["done"]:
        bench.failures.append(f"throughput {n_workers} workers: {calls} model calls for {out['done']} runs")
    return out


# -- 2. queued on a dead worker ---------------------------------------------------------------------------


def dead_worker_queue(bench: Bench, reference: list[str], n: int = 30) -> dict:
    args = bench.args
    stub = stub_model(args.delay)
    db = bench.pg.database("deadq")
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
    return {
        "submitted": n,
        "accepted": len(ids),
        "kill_after_post": killed - posted,
        "done_b": done_b,
        "done_other": sum(r["status"] == "done" for r in runs.values()) - done_b,
        "interrupted": len(interrupted),
        "interrupted_steps": sum(r["steps"] >= 1 for r in interrupted),
        "interrupted_a": sum(pat_a in (r["worker"] or "") for r in interrupted),
        "steps_each": sorted(r["steps"] for r in interrupted),
        "lost": len(bad["lost"]),
        "unfinished": len(bad["left unfinished"]),
        "twice": len(bad["run twice"]),
        "incomplete": len(bad["incomplete"]),
        "seconds": settled,
        "ended": ended,
        "calls": calls,
        "stored_calls": stored_calls,
    }


# -- 3. SIGKILL mid-run, several rounds -------------------------------------------------------------------


def kill_rounds(bench: Bench, reference: list[str]) -> list[dict]:
    args = bench.args
    rng = random.Random(args.seed)
    stub = stub_model(args.delay)
    db = bench.pg.database("kills")
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
                    held = conn.execute(
                        "SELECT r.id, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) FROM runs r "
                        "WHERE r.status='running' AND r.worker LIKE %s",
                        (pattern,),
                    ).fetchall()
                if held:
                    break
                time.sleep(0.05)
            time.sleep(rng.uniform(0, MODEL_CALLS * args.delay))  # somewhere in its runs' traces
            victim.kill()  # SIGKILL, and waited for: nothing it held changes from now on
            killed = time.monotonic()
            with psycopg.connect(db) as conn:  # what it held when it died (reaped or not yet)
                held = conn.execute(
                    "SELECT r.id, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) FROM runs r "
                    "WHERE r.status IN ('running', 'interrupted') AND r.worker LIKE %s",
                    (pattern,),
                ).fetchall()
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
            rows.append(
                {
                    "round": rnd,
                    "victim": victim_name,
                    "held": len(held),
                    "held_steps": [h[1] for h in held],
                    "done": sum(r["status"] == "done" for r in runs.values()),
                    "interrupted": len(interrupted),
                    "interrupted_steps": sum(r["steps"] >= 1 for r in interrupted.values()),
                    "steps_each": sorted(r["steps"] for r in interrupted.values()),
                    "unfinished": len(bad["left unfinished"]),
                    "anywhere": anywhere,
                    "lost": len(bad["lost"]),
                    "twice": len(bad["run twice"]),
                    "incomplete": len(bad["incomplete"]),
                    "reaped": reaped_at[0],
                    "settle": settle,
                    "replacement_start": rep_start,
                    "calls": calls,
                    "stored_calls": stored,
                    "ended": ended,
                }
            )
            if anywhere:
                bench.failures.append(f"kill round {rnd}: {anywhere} runs unfinished in the database after settling")
    finally:
        for _, w in alive:
            w.stop()
        stub.close()
    return rows


def report_failures(
    bench: Bench, scenario: str, db: str, runs: dict[str, dict], bad: dict[str, list[str]], names: dict[str, str]
) -> None:
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
            who = next(
                (n for pat, n in names.items() if r.get("worker") and f":{pat}:" in r["worker"]), r.get("worker")
            )
            print(
                f"- {kind}: run {run_id} status={r['status']} worker={who} steps={r['steps']} "
                f"model_calls={r['model_calls']} ordered={r['ordered']} error={r.get('error')!r} "
                f"stages={r.get('stages')}"
            )
        if len(ids) > 10:
            print(f"- {kind}: ... {len(ids) - 10} more")
