"""The standard comparison: each pipeline on each offline benchmark set, N items each, one model.

    python benchmarks/standard_comparison.py --n 100 --out runs/standard            # embedded model
    python benchmarks/standard_comparison.py --model m --base-url http://127.0.0.1:8080/v1 --workers 4

Runs `veracity eval` (resumable: re-run the same command to continue) and writes OUT/report.md
with one table per set. Sets whose data is missing are skipped with a note.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from veracity.config import load_config
from veracity.eval.datasets import load_dataset
from veracity.eval.report import build_report
from veracity.eval.runner import run_eval
from veracity.llm import make_model

BENCH = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"

# (dataset name, file, setting, pipelines)
SETS = [
    ("feverous-s", "feverous_s/dev_600.json", "gold-evidence", ["qacheck-retriever-reader", "direct", "cot"]),
    ("feverous-s", "feverous_s/dev_600.json", "pooled", ["qacheck-retriever-reader"]),
    ("hover-2", "hover/two_hop_100.json", "closed-book", ["qacheck", "direct", "cot"]),
    ("hover-3", "hover/three_hop_100.json", "closed-book", ["qacheck", "direct", "cot"]),
    ("hover-4", "hover/four_hop_100.json", "closed-book", ["qacheck", "direct", "cot"]),
    ("averitec", "averitec/dev_200.json", "pooled", ["defame", "qacheck-retriever-reader", "direct", "cot"]),
    ("verite", "verite/VERITE.csv", "closed-book", ["defame", "qacheck", "direct", "cot"]),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100, help="items per set (drawn with --seed)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--base-url")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="runs/standard")
    ap.add_argument("--only", help="comma-separated dataset names to run")
    args = ap.parse_args()
    config = load_config(overrides={"model": args.model, "base_url": args.base_url, "n_threads": args.threads}, env={})
    model = make_model(config)
    t0 = time.perf_counter()
    for name, rel, setting, pipelines in SETS:
        if args.only and name not in args.only.split(","):
            continue
        path = BENCH / rel
        if not path.exists():
            print(f"skipping {name}: {path} not found")
            continue
        ds = load_dataset(name, path, setting=setting)
        if setting == "pooled" and name == "feverous-s":
            ds.name = "feverous-s-pooled"  # its own rows beside the gold-evidence ones
        t = time.perf_counter()
        s = run_eval(ds, pipelines, model, config, args.out, limit=args.n, seed=args.seed, workers=args.workers)
        print(
            f"{ds.name} ({setting}): {s.done} done, {s.skipped} already there, {s.errors} failed, "
            f"{time.perf_counter() - t:.0f} s",
            flush=True,
        )
    print(f"\nwall time {time.perf_counter() - t0:.0f} s\n")
    print(build_report(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
