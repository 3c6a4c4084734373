"""Evaluation throughput against an OpenAI-compatible server on 127.0.0.1: --workers 1 vs --workers 4.

Starts llama-cpp-python's server with the embedded SmolLM2 GGUF (or uses --base-url), runs the
same FEVEROUS-S slice through `veracity eval` with 1 and with 4 workers (no response cache, so
every request reaches the server), and prints items per second and the ratio.

    python benchmarks/server_throughput.py --n 30 --pipelines direct,cot
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from veracity.config import load_config
from veracity.eval.datasets import load_dataset
from veracity.eval.runner import run_eval
from veracity.llm import llama_server, make_model
from veracity.llm.embedded import default_model_path

DATA = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "feverous_s" / "dev_600.json"


def start_server(threads: int) -> tuple[subprocess.Popen, str]:
    try:
        return llama_server.start_server(
            str(default_model_path()),
            ["--model_alias", "smollm2", "--n_ctx", "8192", "--n_threads", str(threads)],
            timeout=120,
        )
    except RuntimeError as e:
        raise SystemExit(str(e)) from None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--pipelines", default="direct,cot")
    ap.add_argument("--base-url", help="use this server instead of starting one")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="runs/server_throughput")
    args = ap.parse_args()
    proc = None
    url = args.base_url
    if url is None:
        proc, url = start_server(args.threads)
    try:
        config = load_config(overrides={"model": args.model, "base_url": url, "cache": False}, env={})
        model = make_model(config)
        ds = load_dataset("feverous-s", DATA)
        results = {}
        for workers in (1, 4):
            out = Path(args.out) / f"workers{workers}"
            shutil.rmtree(out, ignore_errors=True)
            t0 = time.perf_counter()
            s = run_eval(
                ds, args.pipelines.split(","), model, config, out, limit=args.n, workers=workers, progress=False
            )
            results[workers] = (s.done, time.perf_counter() - t0, s.errors)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    print(
        f"\nserver {url} (llama-cpp-python, SmolLM2-135M GGUF, {args.threads} threads); "
        f"FEVEROUS-S {args.n} claims x {args.pipelines}\n"
    )
    print("| workers | items | errors | seconds | items/s |\n|---:|---:|---:|---:|---:|")
    for w, (n, sec, err) in results.items():
        print(f"| {w} | {n} | {err} | {sec:.1f} | {n / sec:.3f} |")
    r1, r4 = (results[w][0] / results[w][1] for w in (1, 4))
    print(f"\nthroughput ratio workers 4 / workers 1: {r4 / r1:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
