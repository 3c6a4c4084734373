"""The audit of shared_queue.py's runs, read from the database (`runs` and `steps`): their statuses
(`wait_ended` polls until every run ended), each run's steps against the reference trace (`audit`), the runs that
break an invariant (`judged`: lost, run twice, left unfinished, incomplete); shared_queue_scenarios.py reports
those (`report_failures`).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from servers import MODEL_CALLS

if TYPE_CHECKING:
    from conftest import VeracityServer

UNFINISHED = ("queued", "running")


def worker_pattern(w: VeracityServer) -> str:
    """A LIKE pattern for the `worker` column of this process (HOST:PID:RANDOM)."""
    return f"%:{w.proc.pid}:%"


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
        runs = {
            r["id"]: r
            for r in conn.execute(
                "SELECT id, status, worker, error, created, started, finished FROM runs WHERE id = ANY(%s)", (ids,)
            )
        }
        steps: dict[str, list[tuple[int, str]]] = {}
        for r in conn.execute(
            "SELECT run_id, seq, stage, data FROM steps WHERE run_id = ANY(%s) ORDER BY run_id, seq", (ids,)
        ):
            try:
                t = float(json.loads(r["data"]).get("t"))
            except (TypeError, ValueError):
                t = float("nan")
            steps.setdefault(r["run_id"], []).append((r["seq"], r["stage"], t))
    out = {}
    for run_id in ids:
        r = runs.get(run_id)
        if r is None:
            out[run_id] = {
                "status": "missing",
                "steps": 0,
                "model_calls": 0,
                "ordered": True,
                "prefix": True,
                "complete": False,
                "worker": None,
                "error": None,
            }
            continue
        # in order: seq 0..n-1, and each step's time into the run ("t", from its tracer) never goes back
        rows = steps.get(run_id, [])
        seqs, stages, ts = [s for s, _, _ in rows], [g for _, g, _ in rows], [t for _, _, t in rows]
        out[run_id] = {
            **r,
            "steps": len(seqs),
            "model_calls": stages.count("model_call"),
            "ordered": seqs == list(range(len(seqs))) and all(a <= b for a, b in zip(ts, ts[1:])),
            "prefix": stages == reference[: len(stages)],
            "complete": stages == reference,
            "stages": stages,
        }
    return out


def judged(runs: dict[str, dict], allowed: tuple[str, ...]) -> dict[str, list[str]]:
    """The runs breaking an invariant, by kind."""
    return {
        "lost": [i for i, r in runs.items() if r["status"] not in allowed and r["status"] not in UNFINISHED],
        "left unfinished": [i for i, r in runs.items() if r["status"] in UNFINISHED],
        "run twice": [
            i for i, r in runs.items() if not r["ordered"] or not r["prefix"] or r["model_calls"] > MODEL_CALLS
        ],
        "incomplete": [i for i, r in runs.items() if r["status"] == "done" and not r["complete"]],
    }


def names_of(pairs: list[tuple[str, VeracityServer]]) -> dict[str, str]:
    return {str(w.proc.pid): n for n, w in pairs}
