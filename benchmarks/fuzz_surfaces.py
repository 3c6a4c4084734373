"""A bounded fuzz pass over the surfaces agents and applications call (issue 61): `veracity mcp` over stdio (raw
JSON-RPC lines) and over HTTP, `veracity proxy`, and `veracity recheck`; loopback only, the scripted model.

    .venv/bin/python benchmarks/fuzz_surfaces.py [--src DIR] [--seed 0] [--out fuzz.json]

`--src` runs another source tree's `veracity` (e.g. an unpacked older commit: `git archive HEAD src | tar -x -C
/tmp/orig`, then `--src /tmp/orig/src`), so that the counts before and after a fix are taken with the same inputs.
Inputs: lone UTF-16 surrogate escapes in every string argument of every tool and in chat requests, deep nesting,
huge strings, wrong types, foreign Origins, malformed JSON, run ids and run stores no file can be. Counted per
surface: hangs (no answer within the bound), HTTP 500s, foreign Origins served, tracebacks (in the processes'
stderr), and for the CLI exits other than 2 for bad input.

The inputs are made in fuzz_inputs.py; the drivers of `veracity mcp` are in fuzz_mcp.py, of `veracity proxy` in
fuzz_proxy.py; `veracity recheck`'s is below.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from fuzz_inputs import RULES
from fuzz_mcp import fuzz_mcp_http, fuzz_stdio
from fuzz_proxy import fuzz_proxy


def env_for(base: Path, src: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_") and k != "OPENAI_API_KEY"}
    env.update(
        XDG_CACHE_HOME=str(base / "cache"),
        XDG_DATA_HOME=str(base / "data"),
        PYTHONUNBUFFERED="1",
        PYTHONIOENCODING="utf-8",
        VERACITY_KB="off",
    )
    if src:
        env["PYTHONPATH"] = src
    return env


# -- veracity recheck ---------------------------------------------------------------------------------------------


def fuzz_recheck(base: Path, env: dict[str, str], rng: random.Random, bound: float) -> dict:
    db = base / "runs.sqlite"  # made by the MCP runs above: a real store
    notes = base / "notes.txt"
    notes.write_text("not a database\n" * 100)
    (base / "empty.sqlite").write_bytes(b"")
    (base / "bad.json").write_text("{not json")
    (base / "list.json").write_text("[1, 2]")
    (base / "deep.json").write_text("[" * 100000 + "]" * 100000)
    cases = [
        ["a" * 1024, "--db", str(db)],
        ["a" * 10000, "--db", str(db)],
        ["ab\x01cd", "--db", str(db)],
        ["../../etc/passwd", "--db", str(db)],
        ["x" * 300 + ".json"],
        ["0123456789abcdef", "--db", str(notes)],
        ["0123456789abcdef", "--db", str(base)],
        ["0123456789abcdef", "--db", str(base / "empty.sqlite")],
        ["0123456789abcdef", "--db", "/dev/null"],
        [str(base / "bad.json")],
        [str(base / "list.json")],
        [str(base / "deep.json")],
        [str(base)],
        ["", "--db", str(db)],
        ["\u00e9\u6f22", "--db", str(db)],
    ]
    counts = {"inputs": len(cases), "tracebacks": 0, "exit_not_2": 0, "hangs": 0, "failed": []}
    for args in cases:
        try:
            r = subprocess.run(
                [sys.executable, "-m", "veracity.cli", "recheck", *args],
                capture_output=True,
                text=True,
                env=env,
                cwd=base,
                timeout=bound * 3,
            )
        except subprocess.TimeoutExpired:
            counts["hangs"] += 1
            continue
        tb = "Traceback (most recent call last)" in r.stderr
        counts["tracebacks"] += tb
        counts["exit_not_2"] += r.returncode != 2
        if tb or r.returncode != 2:
            counts["failed"].append(
                (args[0][:30], r.returncode, r.stderr.strip().splitlines()[-1][:120] if r.stderr.strip() else "")
            )
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", help="the source tree whose veracity to run (default: the installed one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bound", type=float, default=20.0, help="seconds an answer may take before it is a hang")
    ap.add_argument("--out", help="also write the counts here as JSON")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="veracity-fuzz-") as tmp:
        base = Path(tmp)
        (base / "rules.json").write_text(json.dumps(RULES))
        env = env_for(base, args.src)
        result = {
            "stdio": fuzz_stdio(base, env, rng, args.bound),
            "mcp_http": fuzz_mcp_http(base, env, rng, args.bound),
            "proxy": fuzz_proxy(base, env, rng, args.bound),
            "recheck": fuzz_recheck(base, env, rng, args.bound),
        }
    total = sum(r["inputs"] for r in result.values())
    print(f"{total} inputs ({args.src or 'installed veracity'})")
    print("| surface | inputs | hangs | HTTP 500 | foreign Origin served | tracebacks | CLI exit not 2 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in result.items():
        origin = (
            f"{r['foreign_origin_served']} of {r['foreign_origin_inputs']}" if "foreign_origin_inputs" in r else "–"
        )
        print(
            f"| {name} | {r['inputs']} | {r['hangs']} | {r.get('http_500', '–')} | {origin} | {r['tracebacks']} | "
            f"{r.get('exit_not_2', '–')} |"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
