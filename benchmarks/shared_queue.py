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
import os
import sys
import time
from pathlib import Path

from servers import MODEL_CALLS
from shared_queue_scenarios import Bench, dead_worker_queue, kill_rounds, reference_trace, throughput


def cpu_line() -> str:
    try:
        names = [
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ]
    except OSError:
        names = []
    return f"{names[0] if names else 'unknown CPU'}, {os.cpu_count()} cores"


# -- main ---------------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checks", type=int, default=200, help="checks of the throughput scenario (default 200)")
    ap.add_argument("--delay", type=float, default=0.5, help="seconds per model call of the stub (default 0.5)")
    ap.add_argument("--max-concurrent", type=int, default=2, help="each worker's --max-concurrent (default 2)")
    ap.add_argument(
        "--workers", type=int, default=4, help="workers of the throughput scenario's second row (default 4)"
    )
    ap.add_argument("--rounds", type=int, default=5, help="SIGKILL rounds of scenario 3 (default 5)")
    ap.add_argument("--seed", type=int, default=7, help="where in a run scenario 3 kills (default 7)")
    ap.add_argument(
        "--db",
        help="a PostgreSQL server's URL (a database per scenario is made there) instead of one "
        "started in a temporary folder",
    )
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
    print(
        f"\nveracity serve workers sharing one PostgreSQL queue; {cpu_line()} (workers, PostgreSQL, stub model and "
        f"client all on this machine); each worker --max-concurrent {k}; stub model {args.delay:g} s a call, "
        f"{MODEL_CALLS} calls a check; reference trace {len(reference)} steps"
    )
    if tp:
        print(
            f"\n### 1. Throughput: {args.checks} checks posted at once, round-robin over the workers "
            "(fresh database each)\n"
        )
        print(
            "| checks | workers | done | wall s | checks/s | ideal checks/s | model calls | lost | run twice | "
            "incomplete | left unfinished | done per worker |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in tp:
            ideal = r["workers"] * k / (MODEL_CALLS * args.delay)
            b = r["bad"]
            print(
                f"| {r['checks']} | {r['workers']} | {r['done']} | {r['wall']:.1f} | {r['rate']:.3f} | {ideal:.3f} | "
                f"{r['calls']} | {len(b['lost'])} | {len(b['run twice'])} | {len(b['incomplete'])} | "
                f"{len(b['left unfinished'])} | {', '.join(f'{v}' for _, v in sorted(r['per_worker'].items()))} |"
            )
        ratio = tp[1]["rate"] / tp[0]["rate"]
        print(
            f"\nthroughput ratio {args.workers} workers / 1 worker: **{ratio:.2f}** (goal >= 3.5); "
            f"posting took {tp[0]['posted']:.1f} s and {tp[1]['posted']:.1f} s"
        )
    if dq:
        print(
            f"\n### 2. Queued on a dead worker: {dq['submitted']} checks posted to worker A only, A killed "
            f"(SIGKILL) {dq['kill_after_post']:.2f} s after the last POST answered; B (same database) runs on\n"
        )
        print(
            "| submitted | done on B | done elsewhere | interrupted (held by A) | interrupted with >= 1 step | "
            "their steps | lost | run twice | incomplete | left unfinished | model calls (stub / stored) | "
            "seconds from kill until all ended |"
        )
        print("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---:|")
        print(
            f"| {dq['submitted']} | {dq['done_b']} | {dq['done_other']} | {dq['interrupted']} "
            f"({dq['interrupted_a']}) | {dq['interrupted_steps']} | {dq['steps_each']} | {dq['lost']} | "
            f"{dq['twice']} | {dq['incomplete']} | {dq['unfinished']} | {dq['calls']} / {dq['stored_calls']} | "
            f"{dq['seconds']:.1f} |"
        )
    if kr:
        print(
            f"\n### 3. SIGKILL mid-run, {len(kr)} rounds on one database: 2 workers; each round posts 20 checks "
            "round-robin, kills one worker (alternately) while it runs checks, starts a replacement at once\n"
        )
        print(
            "| round | killed | it was running (steps each) | done | interrupted | interrupted with >= 1 step | "
            "lost | run twice | incomplete | still queued/running (round / db) | s until its runs marked "
            "interrupted | s replacement start | s to settle | model calls (stub / stored) |"
        )
        print("|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
        for r in kr:
            reaped = f"{r['reaped']:.1f}" if r["reaped"] is not None else "never"
            print(
                f"| {r['round']} | {r['victim']} | {r['held']} ({', '.join(map(str, r['held_steps']))}) | {r['done']} | "
                f"{r['interrupted']} | {r['interrupted_steps']} | {r['lost']} | {r['twice']} | {r['incomplete']} | "
                f"{r['unfinished']} / {r['anywhere']} | {reaped} | {r['replacement_start']:.1f} | {r['settle']:.1f} | "
                f"{r['calls']} / {r['stored_calls']} |"
            )
        print(
            "\n(model calls: the stub answers a call the killed worker was waiting for, whose step is never "
            "stored: stub - stored <= the runs it held; more would mean a run twice)"
        )
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
