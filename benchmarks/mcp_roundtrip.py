"""MCP `check_claim` round trips against the same checks through the CLI and in-process.

    python benchmarks/mcp_roundtrip.py --claims 6               # the embedded model, QACheck, HoVer claims
    python benchmarks/mcp_roundtrip.py --claims 6 --model scripted:rules.json

For each claim (the first N/3 of each HoVer hop file), no response cache anywhere:
- in-process: `run_check` in this process (the model loaded once): the check itself;
- MCP: one `check_claim` call to `veracity mcp` over stdio, started once by the SDK's client (the claim a stored
  run, progress notifications on): the check plus the protocol, the run store and the notifications; its first
  call (the model's first use in the server) is timed apart, as in-process's first check is;
- CLI: one `veracity check --no-cache` process per claim, as a shell script would run it: the check plus
  Python's start and the model's load.
Prints seconds per claim (median, p95 over the claims) and MCP's overhead over in-process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"


def claims(n: int) -> list[str]:
    per = [json.loads((SHARED / "hover" / f"{h}_hop_100.json").read_text()) for h in ("two", "three", "four")]
    return [per[i % 3][i // 3]["claim"] for i in range(n)]


def in_process(texts: list[str], model_spec: str) -> list[float]:
    from veracity.check import run_check
    from veracity.config import load_config
    from veracity.llm import make_model
    from veracity.registry import get_pipeline
    from veracity.types import Claim

    config = load_config(overrides={"model": model_spec, "cache": False}, env={})
    model = make_model(config, use_cache=False)
    pipe = get_pipeline("qacheck", config)
    out = []
    for t in texts:
        t0 = time.perf_counter()
        run_check(Claim(text=t), pipe, model, config)
        out.append(time.perf_counter() - t0)
    return out


def over_mcp(texts: list[str], model_spec: str, db: Path) -> tuple[float, list[float], int]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "veracity.cli", "mcp", "--model", model_spec, "--no-cache", "--db", str(db)]
    )
    notes = 0

    async def call(c, text: str) -> float:
        t0 = time.perf_counter()
        r = await c.call_tool("check_claim", {"claim": text}, progress_callback=on_progress)
        if r.is_error:
            sys.exit(f"check_claim failed: {r.content[0].text}")
        return time.perf_counter() - t0

    async def on_progress(done, total, message):
        nonlocal notes
        notes += 1

    async def main() -> tuple[float, list[float]]:

        async with Client(params) as c:
            await c.list_tools()
            first = await call(c, "The Eiffel Tower is in Paris.")
            return first, [await call(c, t) for t in texts]

    first, secs = anyio.run(main)
    return first, secs, notes


def over_cli(texts: list[str], model_spec: str) -> list[float]:
    out = []
    for t in texts:
        t0 = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "veracity.cli", "check", t, "--model", model_spec, "--no-cache", "--json"],
            capture_output=True,
            text=True,
        )
        out.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"veracity check failed: {r.stderr[-500:]}")
    return out


def row(name: str, secs: list[float], base: list[float] | None = None) -> str:
    s = sorted(secs)
    p95 = s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]
    extra = ""
    if base is not None:
        diffs = sorted(a - b for a, b in zip(secs, base))
        extra = f"{1000 * statistics.median(diffs):+.0f} ms"
    return f"| {name} | {len(secs)} | {statistics.median(secs):.2f} | {p95:.2f} | {extra} |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--claims", type=int, default=6)
    ap.add_argument("--model", default="embedded")
    args = ap.parse_args()
    texts = claims(args.claims)
    first, *base = in_process(["The Eiffel Tower is in Paris.", *texts], args.model)
    with tempfile.TemporaryDirectory() as tmp:
        mcp_first, mcp_secs, notes = over_mcp(texts, args.model, Path(tmp) / "runs.sqlite")
    cli_secs = over_cli(texts, args.model)
    print(
        f"QACheck, {args.model}, {len(texts)} HoVer claims, no response cache; {notes} progress notifications; "
        f"first check (model load, empty state cache): in-process {first:.1f} s, MCP {mcp_first:.1f} s"
    )
    print("| path | claims | s/claim median | s/claim p95 | median difference to in-process |")
    print("|---|---:|---:|---:|---:|")
    print(row("in-process run_check", base))
    print(row("MCP check_claim (stdio, server started once)", mcp_secs, base))
    print(row("CLI `veracity check` (a process per claim)", cli_secs, base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
