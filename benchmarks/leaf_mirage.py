"""LEAF on a MIRAGE slice: plain, MedRAG-style RAG and Fact-Check-Then-RAG answering, LEAF-checked.

Builds (once, cached under WORK) an index of the medical corpus (`medcorpus.jsonl`, 23,442
passages standing in for MedRAG; BM25 only by default, `--dense` adds MiniLM embeddings for hybrid
search, about 40 minutes on 2 CPU cores), then runs `answer:plain`, `answer:rag` and
`answer:fc-rag` on N questions per task through the evaluation runner, and prints per task and
mode: accuracy, filtered accuracy (answers whose LEAF score is 1.0, with how many passed) and the
AUC of the LEAF score for telling right from wrong answers (rank formula; 0.5 = no separation).

    python benchmarks/leaf_mirage.py --n 20                          # PubMedQA* and BioASQ, embedded model
    python benchmarks/leaf_mirage.py --n 20 --tasks all --work runs/leaf_mirage
    python benchmarks/leaf_mirage.py --n 20 --rater-model qwen2.5-7b-instruct --rater-base-url http://127.0.0.1:8080/v1

The N questions are drawn per task with --seed (a larger N keeps the questions of a smaller one).
Results go to WORK/eval-MODEL/items.jsonl (one line per item and mode; a killed run resumes). The
response cache is on unless --no-cache, so a re-run is fast; the timings printed are those of this
run (cached calls take no time). Note: the corpus holds the PubMedQA abstracts and BioASQ gold
snippets, so PubMedQA* and BioASQ with it are an oracle-in-corpus setting (see the data README).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from veracity.config import load_config
from veracity.eval.datasets import load_dataset
from veracity.eval.datasets.mirage import MIRAGE_TASKS
from veracity.eval.leaf_figures import read_rows, summarize
from veracity.eval.runner import run_eval, select_items
from veracity.llm import make_model
from veracity.retrieval import Index

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "mirage"
ORDER = ("pubmedqa", "bioasq", "medqa", "medmcqa", "mmlu")  # PubMedQA* and BioASQ first


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def get_index(work: Path, corpus: Path, dense: bool) -> tuple[Index, float, bool]:
    """The cached index under WORK, built on first use; (index, seconds, built now)."""
    folder = work / ("medidx-dense" if dense else "medidx")
    t0 = time.perf_counter()
    if (folder / "manifest.json").is_file():
        return Index.load(folder), time.perf_counter() - t0, False
    print(f"Building the {'BM25 + MiniLM' if dense else 'BM25'} index of {corpus} -> {folder} (once) ...", flush=True)
    index = Index.build(corpus, folder, dense=dense, progress=sys.stderr.isatty())
    return index, time.perf_counter() - t0, True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20, help="questions per task (default 20)")
    ap.add_argument(
        "--tasks", default="pubmedqa,bioasq", help="comma-separated MIRAGE tasks, or 'all' (default: pubmedqa,bioasq)"
    )
    ap.add_argument("--modes", default="plain,rag,fc-rag", help="answer modes (default: plain,rag,fc-rag)")
    ap.add_argument("--work", default="runs/leaf_mirage", help="folder for the cached index and the results")
    ap.add_argument("--data", default=str(SHARED / "benchmark_750.json"))
    ap.add_argument("--corpus", default=str(SHARED / "medcorpus.jsonl"))
    ap.add_argument("--dense", action="store_true", help="also MiniLM embeddings; search is then hybrid (slow build)")
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--base-url")
    ap.add_argument("--rater-model", help="fact-checking model (default: the answering model)")
    ap.add_argument("--rater-base-url")
    ap.add_argument("--max-rounds", type=int, default=2, help="Fact-Check-Then-RAG regenerations at most")
    ap.add_argument("--top-k", type=int, default=3, help="passages per sentence's query")
    ap.add_argument("--no-reasoning", action="store_true", help="the rater decides without a reasoning")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1, help="items at a time (HTTP backends)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-cache", action="store_true")
    args = ap.parse_args()

    tasks = list(ORDER) if args.tasks == "all" else [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in MIRAGE_TASKS]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown or not set(modes) <= {"plain", "rag", "fc-rag"}:
        print(f"unknown task(s) {unknown} or mode(s) {modes}", file=sys.stderr)
        return 2
    for f in (args.data, args.corpus):
        if not Path(f).is_file():
            print(f"benchmark data not found: {f}", file=sys.stderr)
            return 2
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    index, t_index, built = get_index(work, Path(args.corpus), args.dense)
    print(
        f"Index: {len(index)} passages, {index.default_mode}, {'built' if built else 'loaded'} in {t_index:.1f} s",
        flush=True,
    )

    overrides = {
        "model": args.model,
        "base_url": args.base_url,
        "n_threads": args.threads,
        "cache": not args.no_cache,
        "leaf.rater_model": args.rater_model,
        "leaf.rater_base_url": args.rater_base_url,
        "leaf.max_rounds": args.max_rounds,
        "leaf.top_k": args.top_k,
        "leaf.rater_reasoning": not args.no_reasoning,
    }
    config = load_config(overrides=overrides)
    model = make_model(config)
    out = work / ("eval-" + re.sub(r"[^A-Za-z0-9.]+", "_", model.model_id).strip("_"))
    pipelines = [f"answer:{m}" for m in modes]
    print(
        f"Model {model.model_id}; rater {args.rater_model or 'the same'}; modes {', '.join(modes)}; "
        f"{args.n} questions per task ({', '.join(tasks)}) -> {out}",
        flush=True,
    )

    selected: dict[str, set[str]] = {}
    timings: dict[str, float] = {}
    references: dict[str, dict[str, float]] = {}
    for task in tasks:
        ds = load_dataset(f"mirage:{task}", args.data)
        selected[ds.name] = {it.id for it in select_items(ds.items, args.n, args.seed)}
        references[ds.name] = ds.reference
        t0 = time.perf_counter()
        summary = run_eval(
            ds,
            pipelines,
            model,
            config,
            out,
            limit=args.n,
            seed=args.seed,
            workers=args.workers,
            index=index.retriever(),
            progress=sys.stderr.isatty(),
        )
        timings[ds.name] = time.perf_counter() - t0
        print(
            f"  {ds.name}: {summary.done} done, {summary.skipped} already there, {summary.errors} failed, "
            f"{timings[ds.name]:.0f} s",
            flush=True,
        )

    rows = [r for r in read_rows(out) if r["id"] in selected.get(r["dataset"], ()) and r["pipeline"] in pipelines]
    sums = {(s["dataset"], s["pipeline"]): s for s in summarize(rows)}
    pooled = {s["pipeline"]: s for s in summarize([{**r, "dataset": "all"} for r in rows])}

    def cell(ds: str, pipe: str, key: str, fmt=pct) -> str:
        s = pooled.get(pipe) if ds == "all" else sums.get((ds, pipe))
        return "–" if s is None else fmt(s[key])

    names = list(selected) + (["all"] if len(selected) > 1 else [])
    print(f"\n## Accuracy (%), {args.n} questions per task; paper = LEAF Table 2 (Llama 3 70B)\n")
    print("| task | " + " | ".join(f"{p} | paper" for p in pipelines) + " |")
    print("|---|" + "---:|---:|" * len(pipelines))
    for ds in names:
        refs = references.get(ds, {})
        print(
            f"| {ds} | "
            + " | ".join(f"{cell(ds, p, 'accuracy')} | {pct(refs[p] / 100) if p in refs else '–'}" for p in pipelines)
            + " |"
        )
    print("\n## Filtered accuracy (%): answers with LEAF score 1.0 (passing / n)\n")
    print("| task | " + " | ".join(pipelines) + " |")
    print("|---|" + "---:|" * len(pipelines))
    for ds in names:
        print(
            f"| {ds} | "
            + " | ".join(
                f"{cell(ds, p, 'filtered_accuracy')} ({cell(ds, p, 'passing', str)}/{cell(ds, p, 'n', str)})"
                for p in pipelines
            )
            + " |"
        )
    print("\n## AUC of the LEAF score, right vs wrong answers (mean LEAF score)\n")
    print("| task | " + " | ".join(pipelines) + " |")
    print("|---|" + "---:|" * len(pipelines))
    auc_fmt = lambda x: "–" if x is None else f"{x:.3f}"  # noqa: E731
    for ds in names:
        print(
            f"| {ds} | "
            + " | ".join(
                f"{cell(ds, p, 'auc', auc_fmt)} ({cell(ds, p, 'mean_score', lambda x: f'{x:.2f}')})" for p in pipelines
            )
            + " |"
        )
    print("\n## The same with the option the answer's text names (not the letter `choose` decided)\n")
    print("| task | " + " | ".join(f"{p} accuracy | AUC" for p in pipelines) + " |")
    print("|---|" + "---:|---:|" * len(pipelines))
    for ds in names:
        print(
            f"| {ds} | "
            + " | ".join(f"{cell(ds, p, 'stated_accuracy')} | {cell(ds, p, 'stated_auc', auc_fmt)}" for p in pipelines)
            + " |"
        )
    print("\n## Time\n")
    for p in pipelines:
        rs = [r for r in rows if r["pipeline"] == p]
        if rs:
            calls = sum(r["usage"]["total"]["calls"] for r in rs) / len(rs)
            print(
                f"- {p}: {sum(r['seconds'] for r in rs) / len(rs):.1f} s per question (as stored; cached calls "
                f"are instant), {calls:.0f} model calls per question"
            )
    print(
        f"- index {'build' if built else 'load'}: {t_index:.1f} s; evaluation: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
        + f"; total wall time {time.perf_counter() - t_start:.0f} s"
    )
    print("\n## Letter decisions\n")
    for p in pipelines:
        answers = [st for r in rows if r["pipeline"] == p for st in r["trace"] if st["stage"] == "mc_answer"]
        named = [a for a in answers if a.get("stated")]
        if named:
            agree = sum(a["stated"] == a["letter"] for a in named)
            print(
                f"- {p}: the chosen letter matches the one the answer's text names in {agree} of {len(named)} "
                f"answers that name one ({len(answers)} answers in all, FC-RAG rounds included)"
            )
    (work / "summary.json").write_text(
        json.dumps(
            {
                "n": args.n,
                "tasks": tasks,
                "modes": modes,
                "model": model.model_id,
                "rater": args.rater_model,
                "seed": args.seed,
                "summaries": list(sums.values()),
                "pooled": list(pooled.values()),
                "seconds": timings,
                "index_seconds": t_index,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
