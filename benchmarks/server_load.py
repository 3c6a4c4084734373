"""A bounded load test of `veracity serve` on 127.0.0.1 with scripted model replies.

1. GET throughput: the server with the scripted backend and some finished runs; `--clients` concurrent
   clients (keep-alive) send at most `--requests` requests or for at most `--seconds` per endpoint
   (history page, one run, pipelines, the run's HTML page). Requests per second and latencies.
2. Concurrent checks: `--checks` checks submitted at once to a server running `--max-concurrent` at a
   time, model replies from an OpenAI-compatible stub on 127.0.0.1 answering the same rules after
   `--delay` seconds. Each check's SSE stream is followed to its `done` event; the rest wait in the
   queue. Counts how many finish without an error and the most model calls in flight at once.

Loopback only, bounded in requests and time. Prints Markdown tables.

    python benchmarks/server_load.py                       # defaults: 8 clients, 40 checks, 4 at once
    python benchmarks/server_load.py --checks 100 --max-concurrent 8 --delay 0.02
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from servers import CLAIM, post_checks, start_worker, stub_model, stub_options
from stub_server import QACHECK_RULES as RULES  # tests/stub_server.py (servers.py puts tests/ on the path)

# -- 1. GET throughput ---------------------------------------------------------------------------------


async def hammer(url: str, path: str, clients: int, max_requests: int, max_seconds: float) -> dict:
    latencies: list[float] = []
    errors = 0
    sent = 0
    deadline = time.perf_counter() + max_seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal sent, errors
            while sent < max_requests and time.perf_counter() < deadline:
                sent += 1
                t0 = time.perf_counter()
                try:
                    r = await client.get(path)
                    ok = r.status_code == 200
                except httpx.HTTPError:
                    ok = False
                latencies.append(time.perf_counter() - t0)
                errors += not ok

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - t0
    lat = sorted(latencies)
    return {
        "requests": len(lat),
        "errors": errors,
        "seconds": elapsed,
        "rps": len(lat) / elapsed,
        "p50_ms": 1000 * statistics.median(lat),
        "p95_ms": 1000 * lat[int(0.95 * (len(lat) - 1))],
    }


def get_throughput(args: argparse.Namespace, workdir: Path) -> list[tuple[str, dict]]:
    rules = workdir / "rules.json"
    rules.write_text(json.dumps(RULES))
    srv = start_worker(
        ["--model", f"scripted:{rules}", "--rate-limit", "0", "--max-concurrent", "2"],
        workdir / "get.sqlite",
        workdir / "get",
    )
    try:
        ids, refused = post_checks([srv], args.seed_runs, "seed", threads=1)
        if refused:
            raise SystemExit(f"the seed runs were refused: {refused[:3]}")
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            while c.get("/api/health").json()["running"] or c.get("/api/health").json()["queued"]:
                time.sleep(0.05)
            n_steps = len(c.get(f"/api/checks/{ids[0]}").json()["steps"])
        endpoints = [
            ("GET /api/checks?limit=20 (history)", "/api/checks?limit=20"),
            (f"GET /api/checks/{{id}} (one run, {n_steps} steps)", f"/api/checks/{ids[0]}"),
            ("GET /api/pipelines", "/api/pipelines"),
            ("GET /checks/{id} (run page, HTML)", f"/checks/{ids[0]}"),
        ]
        out = []
        for name, path in endpoints:
            asyncio.run(hammer(srv.url, path, args.clients, 50, 2))  # warm up
            out.append((name, asyncio.run(hammer(srv.url, path, args.clients, args.requests, args.seconds))))
        return out
    finally:
        srv.stop()


# -- 2. concurrent checks --------------------------------------------------------------------------------


async def follow(client: httpx.AsyncClient, run_id: str, tries: int = 3) -> dict:
    """Follow one run's SSE stream to `done` the way a browser's EventSource does: on a dropped connection,
    reconnect with Last-Event-ID (counted in `reconnects`)."""
    steps, last_id, reconnects = 0, None, 0
    while True:
        kind, ev_id, data = None, None, []
        headers = {"Last-Event-ID": last_id} if last_id is not None else {}
        try:
            async with client.stream("GET", f"/api/checks/{run_id}/events", headers=headers) as r:
                async for line in r.aiter_lines():
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("id:"):
                        ev_id = line[3:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].strip())
                    elif line == "" and data:
                        if kind == "step":
                            steps += 1
                            last_id = ev_id
                        if kind == "done":
                            return {**json.loads("\n".join(data)), "steps": steps, "reconnects": reconnects}
                        kind, ev_id, data = None, None, []
            return {"status": "stream ended without done", "steps": steps, "reconnects": reconnects}
        except httpx.TransportError as e:
            reconnects += 1
            if reconnects >= tries:
                return {"status": f"gave up: {e!r}", "steps": steps, "reconnects": reconnects}
            await asyncio.sleep(0.5)


async def burst(url: str, n: int, timeout: float) -> dict:
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        t0 = time.perf_counter()
        posts = await asyncio.gather(*(client.post("/api/checks", json={"claim": f"{CLAIM} #{i}"}) for i in range(n)))
        accepted = [r.json() for r in posts if r.status_code == 202]
        max_position = max((a["queue_position"] for a in accepted), default=0)
        health = (await client.get("/api/health")).json()
        results = await asyncio.wait_for(
            asyncio.gather(*(follow(client, a["id"]) for a in accepted), return_exceptions=True), timeout
        )
        elapsed = time.perf_counter() - t0
    done = [r for r in results if isinstance(r, dict) and r.get("status") == "done"]
    for r in results:
        if not (isinstance(r, dict) and r.get("status") == "done"):
            print(f"not done: {r!r}", file=sys.stderr)
    reconnects = sum(r.get("reconnects", 0) for r in results if isinstance(r, dict))
    return {
        "submitted": n,
        "accepted": len(accepted),
        "done": len(done),
        "errors": n - len(done),
        "reconnects": reconnects,
        "max_queue_position": max_position,
        "queued_after_submit": health["queued"],
        "steps_each": sorted({r["steps"] for r in done}),
        "seconds": elapsed,
    }


def concurrent_checks(args: argparse.Namespace, workdir: Path) -> tuple[dict, int]:
    stub = stub_model(args.delay)
    srv = start_worker(
        [*stub_options(stub), "--max-concurrent", str(args.max_concurrent), "--max-queue", str(args.checks)],
        workdir / "burst.sqlite",
        workdir / "burst",
    )
    try:
        return asyncio.run(burst(srv.url, args.checks, args.timeout)), stub.max_active
    finally:
        srv.stop()
        stub.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=8, help="concurrent GET clients (default 8)")
    ap.add_argument("--requests", type=int, default=2000, help="GET requests per endpoint at most (default 2000)")
    ap.add_argument("--seconds", type=float, default=8, help="seconds per endpoint at most (default 8)")
    ap.add_argument("--seed-runs", type=int, default=30, help="finished runs in the history first (default 30)")
    ap.add_argument("--checks", type=int, default=40, help="checks submitted at once (default 40)")
    ap.add_argument("--max-concurrent", type=int, default=4, help="the server's --max-concurrent (default 4)")
    ap.add_argument("--delay", type=float, default=0.05, help="seconds per model reply (default 0.05)")
    ap.add_argument("--timeout", type=float, default=120, help="give up on the burst after this (default 120)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="veracity-load-") as tmp:
        workdir = Path(tmp)
        rows = get_throughput(args, workdir)
        burst_result, max_active = concurrent_checks(args, workdir)

    print(
        f"\nGET throughput: {args.clients} concurrent clients, keep-alive, scripted backend, "
        f"{os.cpu_count()} CPUs (client and server on the same machine)\n"
    )
    print("| endpoint | requests | errors | req/s | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['requests']} | {r['errors']} | {r['rps']:.0f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |")
    b = burst_result
    print(
        f"\nConcurrent checks: {b['submitted']} QACheck runs submitted at once, --max-concurrent "
        f"{args.max_concurrent}, 7 model calls each at {args.delay * 1000:.0f} ms, every run's SSE stream followed\n"
    )
    print(
        "| submitted | accepted (202) | finished `done` | errors | queued right after submit | "
        "most model calls in flight | steps per run | SSE reconnects | seconds |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {b['submitted']} | {b['accepted']} | {b['done']} | {b['errors']} | {b['queued_after_submit']} | "
        f"{max_active} | {', '.join(map(str, b['steps_each']))} | {b['reconnects']} | {b['seconds']:.1f} |"
    )
    if b["reconnects"]:
        print(
            "\n(an SSE reconnect: a kept-alive connection the client reused just as the server closed it as "
            "idle; the stream resumed with Last-Event-ID, as a browser's EventSource does)"
        )
    ok = b["errors"] == 0 and max_active <= args.max_concurrent and all(r["errors"] == 0 for _, r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
