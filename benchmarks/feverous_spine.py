"""QACheck (retriever-reader), direct and chain-of-thought on a FEVEROUS-S slice, embedded model.

Each claim's gold evidence sentences (link markup cleaned) form that claim's own index, as in the
gold-evidence setting of QACheck's Table 1. Prints macro-F1 and accuracy per pipeline, and per claim:
seconds, model calls, prompt/completion tokens, and the ratio of wall time to the token-throughput
floor (tokens divided by the model's measured prompt and generation speeds).

    python benchmarks/feverous_spine.py --n 50 --out runs/feverous_spine

Results go to OUT/items.jsonl one line per (pipeline, claim); a killed run resumes where it stopped.
No response cache is used, so the timings are real.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from veracity.check import run_check
from veracity.config import load_config
from veracity.eval.datasets.feverous import FEVEROUS_GOLD as GOLD
from veracity.eval.datasets.feverous import feverous_evidence_docs as evidence_docs
from veracity.llm import make_model
from veracity.metrics import accuracy, macro_f1
from veracity.registry import get_pipeline
from veracity.retrieval import Index
from veracity.types import BINARY_LABELS, Claim

DATA = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "feverous_s" / "dev_600.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--n", type=int, default=50, help="first N claims of the file")
    ap.add_argument("--pipelines", default="qacheck-retriever-reader,direct,cot")
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="runs/feverous_spine")
    ap.add_argument(
        "--no-keep-states",
        action="store_true",
        help="re-evaluate every prompt from scratch (to measure what kept prefix states save)",
    )
    args = ap.parse_args()
    if not Path(args.data).is_file():
        print(f"benchmark data not found: {args.data}", file=sys.stderr)
        return 2
    items = json.loads(Path(args.data).read_text())[: args.n]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "items.jsonl"
    done = set()
    if log.exists():
        for line in log.read_text().splitlines():
            try:
                r = json.loads(line)
                done.add((r["pipeline"], r["id"]))
            except (ValueError, KeyError):
                pass  # a line cut off by a kill is redone
    config = load_config(
        overrides={
            "model": args.model,
            "n_threads": args.threads,
            "cache": False,
            "keep_states": not args.no_keep_states,
        },
        env={},
    )
    model = make_model(config)
    speed = model.backend.speed() if hasattr(model.backend, "speed") else None
    (out / "speed.json").write_text(json.dumps(speed))
    print(f"model {model.model_id}; measured speed {speed}", flush=True)
    with log.open("a") as f:
        for name in args.pipelines.split(","):
            pipe = get_pipeline(name, config)
            for k, item in enumerate(items):
                if (name, item["id"]) in done:
                    continue
                retriever = Index.from_documents(evidence_docs(item)).retriever("bm25")
                res = run_check(Claim(item["claim"], id=str(item["id"])), pipe, model, config, retriever=retriever)
                t = res.usage["total"]
                row = {
                    "pipeline": name,
                    "id": item["id"],
                    "gold": GOLD[item["label"]],
                    "pred": res.verdict.label,
                    "seconds": res.seconds,
                    "calls": t["calls"],
                    "prompt_tokens": t["prompt_tokens"],
                    "completion_tokens": t["completion_tokens"],
                    "reused_prompt_tokens": t["reused_prompt_tokens"],
                    "steps": len(res.verdict.steps),
                    "parse_failures": len(res.verdict.parse_failures),
                }
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(
                    f"{name} {k + 1}/{len(items)} gold={row['gold']} pred={row['pred']} {res.seconds:.1f}s", flush=True
                )
    report(log, speed, args)
    return 0


def report(log: Path, speed: dict | None, args) -> None:
    rows = [json.loads(l) for l in log.read_text().splitlines() if l.strip()]
    print(
        f"\nFEVEROUS-S dev, first {args.n} claims, gold-evidence index per claim, model {args.model}, "
        f"kept prefix states {'off' if args.no_keep_states else 'on'}; measured speed {speed}\n"
    )
    print(
        "| pipeline | n | macro-F1 | accuracy | s/claim | calls | prompt tok | compl. tok | reused tok "
        "| wall / floor | wall / floor (evaluated tokens) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.pipelines.split(","):
        rs = [r for r in rows if r["pipeline"] == name]
        if not rs:
            continue
        gold, pred = [r["gold"] for r in rs], [r["pred"] for r in rs]
        m = lambda k: statistics.mean(r[k] for r in rs)  # noqa: E731
        ratio = ratio_eval = float("nan")
        if speed:
            floor = [r["prompt_tokens"] / speed["prompt_tps"] + r["completion_tokens"] / speed["gen_tps"] for r in rs]
            floor_e = [
                (r["prompt_tokens"] - r["reused_prompt_tokens"]) / speed["prompt_tps"]
                + r["completion_tokens"] / speed["gen_tps"]
                for r in rs
            ]
            ratio = statistics.mean(r["seconds"] / f for r, f in zip(rs, floor))
            ratio_eval = statistics.mean(r["seconds"] / f for r, f in zip(rs, floor_e))
        print(
            f"| {name} | {len(rs)} | {100 * macro_f1(gold, pred, BINARY_LABELS):.2f} | "
            f"{100 * accuracy(gold, pred):.2f} | {m('seconds'):.1f} | {m('calls'):.1f} | {m('prompt_tokens'):.0f} | "
            f"{m('completion_tokens'):.0f} | {m('reused_prompt_tokens'):.0f} | {ratio:.2f} | {ratio_eval:.2f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
