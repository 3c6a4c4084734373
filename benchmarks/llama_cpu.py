"""What llama.cpp's extra buffer types (weight repacking, AMX kernels) cost or save on this CPU.

For each setting (extra buffer types on / off) a child process loads the embedded model and measures
prompt and generation speed (tokens per second, no reuse) and seconds per QACheck claim (the README's
default pipeline, reciter-reader, no response cache) on the first N HoVer claims of each hop count.
A child that crashes (SIGILL from the AMX kernels on some Xeons) is reported as such.

    python benchmarks/llama_cpu.py --claims 2              # 2 claims per hop count -> 6 claims per setting
    python benchmarks/llama_cpu.py --llama-site DIR        # another llama-cpp-python build (DIR/llama_cpp) first

Prints one Markdown table, headed by the CPU model and the flags that pick llama.cpp's kernels. Two
builds or settings can take different paths through QACheck (their numerics differ slightly), so the
table also gives the work per claim: model calls, prompt tokens actually evaluated, tokens generated.
Run it on an idle machine: llama.cpp's threads slow down many times over when the cores are shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HOVER = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "hover"
FALLBACK_CLAIMS = [
    "Lars Onsager won the Nobel prize when he was 30 years old.",
    "The Eiffel Tower is in Rome.",
    "Mount Fuji is the highest mountain in Japan.",
]


def claims(n: int) -> list[str]:
    out: list[str] = []
    for name in ("two_hop_100.json", "three_hop_100.json", "four_hop_100.json"):
        p = HOVER / name
        if p.is_file():
            out += [item["claim"] for item in json.loads(p.read_text())[:n]]
    return out or FALLBACK_CLAIMS[: max(1, n)]


def child(setting: str, threads: int, texts: list[str]) -> dict:
    from veracity.check import run_check
    from veracity.config import load_config
    from veracity.llm import make_model
    from veracity.llm.llama_guard import llama_build_info
    from veracity.registry import get_pipeline
    from veracity.types import Claim

    cfg = load_config(overrides={"n_threads": threads, "cache": False, "llama_extra_buffers": setting}, env={})
    t0 = time.perf_counter()
    model = make_model(cfg)
    load_s = time.perf_counter() - t0
    backend = model.backend
    speeds = [backend.speed(n_prompt=512, n_gen=64) for _ in range(3)]
    pipe = get_pipeline("qacheck", cfg)
    per_claim, work = [], []
    for text in texts:
        r = run_check(Claim(text=text), pipe, model, cfg)
        per_claim.append(r.seconds)
        t = r.usage["total"]
        work.append((t["calls"], t["prompt_tokens"] - t.get("reused_prompt_tokens", 0), t["completion_tokens"]))
    return {
        "ok": True,
        "load_s": load_s,
        "build": llama_build_info().get("system_info", ""),
        "prompt_tps": statistics.median(s["prompt_tps"] for s in speeds),
        "gen_tps": statistics.median(s["gen_tps"] for s in speeds),
        "claims": per_claim,
        "work": work,
    }


def run_setting(setting: str, threads: int, n: int, llama_site: str | None) -> dict:
    env = dict(os.environ)
    if llama_site:
        env["PYTHONPATH"] = os.pathsep.join([llama_site, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, __file__, "--child", setting, "--threads", str(threads), "--claims", str(n)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode == 0 and lines:
        return json.loads(lines[-1])
    from veracity.llm.llama_guard import describe_exit

    return {"ok": False, "error": describe_exit(r.returncode), "stderr": r.stderr[-300:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--claims", type=int, default=2, help="HoVer claims per hop count (default 2: 6 claims)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--settings", default="on,off", help="llama_extra_buffers settings to compare")
    ap.add_argument("--llama-site", help="a folder holding another llama_cpp package build, imported first")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.threads, claims(args.claims))), flush=True)
        return 0
    from veracity.llm.llama_guard import cpu_info, decide, interesting_flags

    cpu = cpu_info()
    print(f"CPU: {cpu['model']}, {cpu['cores']} cores; flags: {' '.join(interesting_flags(cpu['flags']))}")
    if args.llama_site:
        print(f"llama-cpp-python from {args.llama_site}")
    print(
        f"QACheck (reciter-reader) on {len(claims(args.claims))} HoVer claims, embedded SmolLM2-135M Q4_1, "
        f"{args.threads} threads, no response cache\n"
    )
    print(
        "| extra buffer types | prompt tok/s | generation tok/s | s/claim median (min-max) | calls/claim | "
        "evaluated prompt tokens/claim | generated tokens/claim | result |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for setting in args.settings.split(","):
        res = run_setting(setting, args.threads, args.claims, args.llama_site)
        if not res["ok"]:
            print(f"| {setting} | - | - | - | - | - | - | crashed: {res['error']} |", flush=True)
            continue
        c, w = res["claims"], res["work"]
        calls, evaluated, generated = (statistics.median(x[i] for x in w) for i in range(3))
        print(
            f"| {setting} | {res['prompt_tps']:.0f} | {res['gen_tps']:.1f} | "
            f"{statistics.median(c):.1f} ({min(c):.1f}-{max(c):.1f}) | {calls:.0f} | {evaluated:.0f} | "
            f"{generated:.0f} | ok |",
            flush=True,
        )
    if not args.llama_site:
        from veracity.llm.embedded import default_model_path

        d = decide(default_model_path(), "auto", n_threads=args.threads)
        print(f"\nauto (what veracity uses here): {'on' if d.extra_buffers else 'off'} — {d.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
