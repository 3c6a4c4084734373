"""DEFAME against the direct and chain-of-thought baselines on AVeriTeC (and VERITE captions).

    python benchmarks/defame_averitec.py --n 20 --out runs/defame_averitec               # embedded model
    python benchmarks/defame_averitec.py --n 50 --model m --base-url http://127.0.0.1:8080/v1 --workers 4
    python benchmarks/defame_averitec.py --n 20 --verite 20                             # add VERITE captions
    python benchmarks/defame_averitec.py --n 20 --pipelines defame --retrieval hybrid --out runs/defame_hybrid
    python benchmarks/defame_averitec.py --n 40 --pipelines defame --verifier off --out runs/defame_no_verifier

AVeriTeC dev (first N of a seeded draw of ../shared/benchmarks/averitec/dev_200.json), pooled setting:
DEFAME's web search is `--search local` over the knowledge base pooled from all 200 claims' annotated
answers (BM25); direct and CoT are closed-book; all judge among the 4 AVeriTeC labels with the
benchmark's label rules. VERITE: captions only (the images are not available offline), no search.
Resumable (re-run the same command); prints one table: accuracy, actions, rounds, model calls, tokens
and seconds per claim, and the predicted label distribution; then DEFAME's judge (its calibration and stated label
prior, defame/judgement.py), its confusion matrix beside the majority class and its parse failures per stage, and
with --report the evaluation report (AVeriTeC score, ECE, accuracy against coverage, per-class recall).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from veracity.config import load_config
from veracity.eval.datasets import load_dataset
from veracity.eval.runner import ITEMS, run_eval
from veracity.llm import make_model

BENCH = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
PIPELINES = ["defame", "direct", "cot"]


def rows_table(out: Path) -> str:
    rows = [json.loads(x) for x in (out / ITEMS).read_text().splitlines() if x.strip()]
    lines = [
        "| dataset | pipeline | n | accuracy | actions / claim | rounds / claim | calls / claim | "
        "prompt tok / claim | compl. tok / claim | s / claim | predicted labels |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["pipeline"]), []).append(r)
    for (ds, pipe), rs in sorted(groups.items()):
        n = len(rs)
        acc = 100 * sum(r["correct"] for r in rs) / n
        actions = sum(len(s["actions"]) for r in rs for s in r["trace"] if s["stage"] == "plan") / n
        rounds = sum(len({s["round"] for s in r["trace"] if s["stage"] == "judge"}) for r in rs) / n
        tot = [r["usage"].get("total", {}) for r in rs]
        calls = sum(t.get("calls", 0) for t in tot) / n
        ptok = sum(t.get("prompt_tokens", 0) for t in tot) / n
        ctok = sum(t.get("completion_tokens", 0) for t in tot) / n
        secs = sum(r["seconds"] for r in rs) / n
        dist = ", ".join(f"{k} {v}" for k, v in Counter(r["pred"] for r in rs).most_common())
        lines.append(
            f"| {ds} | {pipe} | {n} | {acc:.1f} | {actions:.1f} | {rounds:.1f} | {calls:.1f} | "
            f"{ptok:.0f} | {ctok:.0f} | {secs:.1f} | {dist} |"
        )
    for ds in sorted({d for d, _ in groups}):  # the constant answers on the same items, for scale
        items = {r["id"]: r["gold"] for (d, _), rs in groups.items() if d == ds for r in rs}
        for label in dict.fromkeys([Counter(items.values()).most_common(1)[0][0], "Refuted"]):
            hits = sum(g == label for g in items.values())
            lines.append(
                f"| {ds} | always {label} | {len(items)} | {100 * hits / len(items):.1f} | – | – | 0 | 0 | 0 | 0 | – |"
            )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20, help="AVeriTeC claims (drawn with --seed)")
    ap.add_argument("--verite", type=int, default=0, help="VERITE captions to add (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--base-url")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pipelines", default=",".join(PIPELINES))
    ap.add_argument(
        "--retrieval",
        choices=["bm25", "hybrid"],
        default="bm25",
        help="DEFAME's local search over the knowledge base (hybrid adds MiniLM embeddings)",
    )
    ap.add_argument(
        "--verifier",
        choices=["auto", "on", "off"],
        default="auto",
        help="the trained evidence verifier (verifier.use; auto: on with the embedded model): DEFAME's "
        "judge sees its scores and takes its label when the evidence is decisive",
    )
    ap.add_argument(
        "--undecided",
        choices=["nei", "prior"],
        help="defame.undecided (default: the config's, prior): a claim no source decides after the last round "
        "takes the label the judge calibration's stated prior makes likelier (prior), or is Not Enough Evidence (nei)",
    )
    ap.add_argument(
        "--summarize",
        choices=["auto", "model", "excerpt"],
        help="defame.summarize (default: the config's, auto): who writes each search result's summary",
    )
    ap.add_argument("--no-cache", action="store_true", help="no response cache: every model call is made (for timings)")
    ap.add_argument("--out", default="runs/defame_averitec")
    ap.add_argument(
        "--report",
        action="store_true",
        help="also print the evaluation report (AVeriTeC score, ECE, accuracy against coverage, per-class recall)",
    )
    args = ap.parse_args()
    config = load_config(
        overrides={
            "model": args.model,
            "base_url": args.base_url,
            "n_threads": args.threads,
            "verifier.use": args.verifier,
            **({"defame.undecided": args.undecided} if args.undecided else {}),
            **({"defame.summarize": args.summarize} if args.summarize else {}),
            **({"cache": False} if args.no_cache else {}),
        },
        env={},
    )
    model = make_model(config)
    pipelines = args.pipelines.split(",")
    out = Path(args.out)
    t0 = time.perf_counter()
    for name, rel, setting, n in (
        ("averitec", "averitec/dev_200.json", "pooled", args.n),
        ("verite", "verite/VERITE.csv", "closed-book", args.verite),
    ):
        path = BENCH / rel
        if not n:
            continue
        if not path.exists():
            print(f"skipping {name}: {path} not found")
            continue
        ds = load_dataset(name, path, setting=setting)
        s = run_eval(
            ds,
            pipelines,
            model,
            config,
            out,
            limit=n,
            seed=args.seed,
            workers=args.workers,
            retrieval_mode=args.retrieval,
        )
        print(f"{name}: {s.done} done, {s.skipped} already there, {s.errors} failed", flush=True)
    print(f"\nmodel {model.model_id}, wall time {time.perf_counter() - t0:.0f} s\n")
    print(rows_table(out))
    print(judge_lines(out))
    if args.report:
        from veracity.eval.report import build_report

        print("\n" + build_report(out, plots=False))
    return 0


def judge_lines(out: Path) -> str:
    """DEFAME's confusion matrix per dataset beside the majority class, how its verdicts were decided and its
    judge's calibration with the stated label prior, and its parse failures per stage (as the evaluation report)."""
    from veracity.eval.report import confusion_lines, parse_failure_lines

    rows = [json.loads(x) for x in (out / ITEMS).read_text().splitlines() if x.strip()]
    lines = []
    for ds in sorted({r["dataset"] for r in rows}):
        rs = [r for r in rows if r["dataset"] == ds and r["pipeline"].startswith("defame")]
        if rs:
            lines += ["", f"## {ds}", *confusion_lines(rs), *parse_failure_lines(rs)]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
