"""Checking claims on Ray actors (`--ray`) against the in-process runner, on a local Ray cluster.

Starts a throwaway one-node Ray cluster with --cpus CPUs (veracity.cluster.local.LocalCluster; its processes are
killed at the end) and runs the direct baseline through `run_eval` three ways:

1. Server: an OpenAI-compatible stand-in on 127.0.0.1 that answers every call after --latency seconds (as a
   remote API would; the StubServer of the tests), with 1, 2, 4, 8, 16 actors, one item at a time each, and
   --per-actor claims per actor: claims per second and the speed-up over 1 actor. For reference, the in-process
   runner with as many threads as the largest actor count.
2. Embedded model (SmolLM2-135M, llama.cpp) on the --cpus cores, --embedded claims from HoVer: the in-process
   runner with one model on all cores, 1 actor x 2 threads, 2 actors x 1 thread.
3. Ray's overhead per claim: the scripted model (no model time), --overhead claims, in-process (1 thread) vs one
   actor; the difference per claim is what Ray adds (submission, serialization, the result's trip back).

No response cache anywhere. Seconds are the checking time (actors already started); actor start-up is its own
column. Prints one Markdown table.

    python benchmarks/ray_throughput.py                        # everything, about 3 minutes on 2 idle cores
    python benchmarks/ray_throughput.py --skip-embedded --actors 1,8
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from stub_server import StubServer, chat_response, message_text  # noqa: E402

from veracity.cluster.dispatch import RayDispatch  # noqa: E402
from veracity.cluster.local import LocalCluster  # noqa: E402
from veracity.config import load_config  # noqa: E402
from veracity.eval.datasets import load_dataset  # noqa: E402
from veracity.eval.runner import run_eval  # noqa: E402
from veracity.llm import make_model  # noqa: E402

HOVER = ROOT.parent / "shared" / "benchmarks" / "hover" / "two_hop_100.json"
RULES = {
    "rules": [
        {"match": "Claim = [^\\n]*number \\d*[02468]\\.\\nIs this claim true or false\\?\\nAnswer:$", "reply": " True"},
        {"match": "Is this claim true or false\\?\\nAnswer:$", "reply": " False"},
    ]
}


def numbered_claims(path: Path, n: int) -> Path:
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"c{i}",
                    "claim": f"Item {i} has the number {i}.",
                    "label": "supported" if i % 2 == 0 else "refuted",
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    return path


def hover_claims(path: Path, n: int) -> Path:
    data = json.loads(HOVER.read_text())[:n]
    path.write_text(
        "".join(
            json.dumps({"id": f"h{i}", "claim": d["claim"], "label": d["label"]}) + "\n" for i, d in enumerate(data)
        )
    )
    return path


class Bench:
    def __init__(self, work: Path, address: str) -> None:
        self.work, self.address = work, address
        self.rows: list[dict] = []

    def run(self, part: str, setup: str, claims: Path, config, *, dispatch=None, workers: int = 1) -> dict:
        ds = load_dataset("jsonl", claims)
        out = self.work / re.sub(r"\W+", "-", f"{part}-{setup}")
        shutil.rmtree(out, ignore_errors=True)
        model = None if dispatch is not None else make_model(config)
        t0 = time.perf_counter()
        s = run_eval(ds, ["direct"], model, config, out, workers=workers, dispatch=dispatch, progress=False)
        if s.errors or s.done != len(ds.items):
            raise SystemExit(f"{part} / {setup}: {s.done} done, {s.errors} failed (see {out}/errors.jsonl)")
        row = {
            "part": part,
            "setup": setup,
            "claims": s.done,
            "startup": s.started_in,
            "seconds": s.seconds,
            "rate": s.done / s.seconds,
            "wall": time.perf_counter() - t0,
        }
        self.rows.append(row)
        print(
            f"  {part:10s} {setup:34s} {s.done:4d} claims {s.seconds:7.2f} s  {row['rate']:7.2f}/s "
            f"(start-up {s.started_in:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
        return row


def server_part(bench: Bench, actor_counts: list[int], per_actor: int, latency: float) -> None:
    def respond(body):
        number = int(re.findall(r"number (\d+)\.", message_text(body))[-1])
        return 200, chat_response(" True" if number % 2 == 0 else " False"), latency

    srv = StubServer(respond)
    try:
        config = load_config(
            overrides={
                "model": "stub",
                "base_url": srv.url,
                "cache": False,
                "http.decisions": "parse",
                "http.endpoint": "chat",
                "cache_path": str(bench.work / "cache.sqlite"),
            },
            env={},
        )
        base = None
        for n in actor_counts:
            claims = numbered_claims(bench.work / f"server-{n}.jsonl", per_actor * n)
            row = bench.run(
                "server",
                f"Ray, {n} actor{'s' if n > 1 else ''} x 1",
                claims,
                config,
                dispatch=RayDispatch(bench.address, actors=n),
            )
            base = base or row["rate"]
            row["vs"] = f"{row['rate'] / base:.1f}x vs 1 actor"
        top = max(actor_counts)
        claims = numbered_claims(bench.work / "server-threads.jsonl", per_actor * top)
        row = bench.run("server", f"in-process, {top} threads", claims, config, workers=top)
        row["vs"] = f"{row['rate'] / base:.1f}x vs 1 actor"
        calls = len(srv.requests) / sum(r["claims"] for r in bench.rows if r["part"] == "server")
        print(f"  server: {calls:.2f} calls per claim", file=sys.stderr)
    finally:
        srv.close()


def embedded_part(bench: Bench, n: int, cpus: int) -> None:
    claims = hover_claims(bench.work / "hover.jsonl", n)
    config = load_config(
        overrides={
            "model": "embedded",
            "cache": False,
            "n_threads": cpus,
            "cache_path": str(bench.work / "cache.sqlite"),
        },
        env={},
    )
    local = bench.run("embedded", f"in-process, 1 model x {cpus} threads", claims, config)
    local["vs"] = "baseline"
    one = bench.run(
        "embedded",
        f"Ray, 1 actor x {cpus} threads",
        claims,
        config,
        dispatch=RayDispatch(bench.address, actors=1, cpus=cpus),
    )
    one["vs"] = f"{one['rate'] / local['rate']:.2f}x vs in-process"
    many = bench.run(
        "embedded",
        f"Ray, {cpus} actors x 1 thread",
        claims,
        config,
        dispatch=RayDispatch(bench.address, actors=cpus, cpus=1),
    )
    many["vs"] = f"{many['rate'] / local['rate']:.2f}x vs in-process"


def overhead_part(bench: Bench, n: int) -> None:
    rules = bench.work / "rules.json"
    rules.write_text(json.dumps(RULES))
    config = load_config(
        overrides={"model": f"scripted:{rules}", "cache": False, "cache_path": str(bench.work / "cache.sqlite")}, env={}
    )
    claims = numbered_claims(bench.work / "overhead.jsonl", n)
    local = bench.run("overhead", "in-process, 1 thread (scripted)", claims, config)
    local["vs"] = f"{1000 / local['rate']:.2f} ms/claim"
    ray_row = bench.run(
        "overhead", "Ray, 1 actor (scripted)", claims, config, dispatch=RayDispatch(bench.address, actors=1)
    )
    extra = 1000 / ray_row["rate"] - 1000 / local["rate"]
    ray_row["vs"] = f"{1000 / ray_row['rate']:.2f} ms/claim: +{extra:.2f} ms by Ray"


def table(rows: list[dict], cpus: int, latency: float) -> str:
    lines = [
        f"Ray throughput on one node with {cpus} CPUs (server stand-in latency {1000 * latency:.0f} ms/call; "
        "direct baseline, no cache)",
        "",
        "| part | setup | claims | actor start-up s | checking s | claims/s | compared |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        start = f"{r['startup']:.1f}" if r["setup"].startswith("Ray") else "-"
        lines.append(
            f"| {r['part']} | {r['setup']} | {r['claims']} | {start} | {r['seconds']:.2f} | "
            f"{r['rate']:.2f} | {r.get('vs', '')} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the Ray node (default 2)")
    ap.add_argument("--actors", default="1,2,4,8,16", help="actor counts against the server stand-in")
    ap.add_argument("--per-actor", type=int, default=20, help="claims per actor against the server stand-in")
    ap.add_argument("--latency", type=float, default=0.3, help="seconds the stand-in takes per call")
    ap.add_argument("--embedded", type=int, default=48, help="HoVer claims for the embedded model")
    ap.add_argument("--overhead", type=int, default=300, help="claims for the overhead measurement")
    ap.add_argument("--skip-embedded", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="veracity-ray-bench-"))
    try:
        with LocalCluster(nodes=1, cpus=args.cpus, env={"XDG_CACHE_HOME": str(work / "xdg")}) as cluster:
            os.environ.update(cluster.env)  # before Ray is first imported (by the first RayDispatch)
            bench = Bench(work, cluster.address)
            print(f"cluster at {cluster.address}", file=sys.stderr, flush=True)
            server_part(bench, [int(a) for a in args.actors.split(",")], args.per_actor, args.latency)
            if not args.skip_embedded:
                embedded_part(bench, args.embedded, args.cpus)
            overhead_part(bench, args.overhead)
        print(table(bench.rows, args.cpus, args.latency))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
