"""Generate reference/benchmark-results.md: every file of benchmarks/results/ (one per benchmark, each opening with
the command that produced it, the machine and the date), in one page, so that a new result file is published
without editing the docs. The guide pages include the same files where they discuss them (pymdownx.snippets)."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))
from _common import ROOT

RESULTS = ROOT / "benchmarks" / "results"
OUT = "reference/benchmark-results.md"


def main() -> None:
    lines = [
        "# Benchmark results\n",
        (
            "Every measured table the documentation shows, as checked in under `benchmarks/results/`: one file "
            "per benchmark, each opening with the command that produced it, the machine it ran on and the date. "
            "The pages that discuss a result include the same file. How to run the benchmarks is on the "
            "[benchmarks page](../guide/benchmarks.md).\n"
        ),
    ]
    files = sorted(RESULTS.glob("*.md"))
    for f in files:
        lines.append(f"- [`benchmarks/results/{f.name}`](#{f.stem.replace('_', '-')})")
    lines.append("")
    for f in files:
        lines.append(f"## `{f.name}` {{#{f.stem.replace('_', '-')}}}\n")
        lines.append(f.read_text(encoding="utf-8").rstrip() + "\n")
    with mkdocs_gen_files.open(OUT, "w") as fh:
        fh.write("\n".join(lines) + "\n")


main()
