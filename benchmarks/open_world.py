"""Verdicts in the open world: how often those shown as decided are right, and how many are decided.

    python benchmarks/open_world.py [--pipeline verifier --pipeline lexical] [--out DIR] [--skip-averitec]

Each set is run with `veracity eval` (the knowledge base on, as a check is by default) and summed up in one table:
accuracy beside the majority class, the share of verdicts shown as decided (not uncertain) and how often they are
right, accuracy against coverage (all verdicts, then the most confident half and fifth), ECE, and how many decided
verdicts rest on a reading that does not address the claim (the trained verifier's last reading: not enough
information at least one half; the goal is none).

Sets (claims with their truth, supported / refuted, unless said):
- written real-world claims, split B: benchmarks/data/open_world_claims.jsonl, written for the project before any
  system was run on them, kept apart from every fit (split A is fitted on by `veracity verifier
  calibrate-retrieved`, and shown marked as such);
- FEVEROUS-S dev (600; ../shared/benchmarks): open-domain (the knowledge base searched) and with its gold evidence;
- AVeriTeC dev (200, 4 labels; ../shared/benchmarks) with the knowledge base as its only source (`--setting
  open-domain`): real-world claims the knowledge base mostly does not address.
Run it on two commits to compare (the same --out resumes a run; use one folder per commit).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from kb_open_domain import run_eval

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks"
FEVEROUS = SHARED / "feverous_s" / "dev_600.json"
AVERITEC = SHARED / "averitec" / "dev_200.json"
WRITTEN = ROOT / "benchmarks" / "data" / "open_world_claims.jsonl"
NOT_ADDRESSED = 0.5


def written_split(out: Path, split: str) -> Path:
    path = out / f"written_{split}.jsonl"
    rows = [json.loads(x) for x in WRITTEN.read_text().splitlines() if x.strip()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["split"] == split))
    return path


def accuracy_at(rows: list[dict], share: float) -> float:
    ranked = sorted(rows, key=lambda r: -(r["verdict"].get("confidence") or 0.0))
    top = ranked[: max(1, round(len(ranked) * share))]
    return 100 * sum(r["correct"] for r in top) / len(top)


def figures(rows: list[dict]) -> dict:
    from veracity.metrics import expected_calibration_error

    n = len(rows)
    gold = [r["gold"] for r in rows]
    decided = [r for r in rows if not r["verdict"].get("uncertain")]
    on_nei = 0
    for r in decided:
        readings = [s for s in r["trace"] if s["stage"] == "evidence_verifier"]
        on_nei += bool(readings) and readings[-1]["probabilities"]["nei"] >= NOT_ADDRESSED
    conf = [r["verdict"].get("confidence") or 0.0 for r in rows]
    return {
        "n": n,
        "accuracy": 100 * sum(r["correct"] for r in rows) / n,
        "majority": 100 * max(gold.count(g) for g in set(gold)) / n,
        "decided": 100 * len(decided) / n,
        "decided_right": 100 * statistics.mean(r["correct"] for r in decided) if decided else float("nan"),
        "at50": accuracy_at(rows, 0.5),
        "at20": accuracy_at(rows, 0.2),
        "ece": expected_calibration_error(conf, [bool(r["correct"]) for r in rows]),
        "on_nei": on_nei,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipeline", action="append", help="pipelines to run (default: verifier, lexical)")
    p.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "veracity-open-world"))
    p.add_argument("--skip-averitec", action="store_true")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = [
        ("written claims, B (held apart)", ["--dataset", "jsonl", "--path", str(written_split(out, "B"))]),
        ("written claims, A (fitted on)", ["--dataset", "jsonl", "--path", str(written_split(out, "A"))]),
    ]
    if FEVEROUS.is_file():
        sets.append(("FEVEROUS-S dev, open-domain", ["--dataset", "feverous-s", "--path", str(FEVEROUS), "--setting",
                                                     "open-domain"]))  # fmt: skip
        sets.append(("FEVEROUS-S dev, gold evidence", ["--dataset", "feverous-s", "--path", str(FEVEROUS)]))
    if AVERITEC.is_file() and not a.skip_averitec:
        sets.append(("AVeriTeC dev, the KB as source", ["--dataset", "averitec", "--path", str(AVERITEC), "--setting",
                                                        "open-domain"]))  # fmt: skip
    print(
        "| claims | pipeline | n | accuracy | majority | decided | decided right | accuracy at 100 / 50 / 20% "
        "coverage | ECE | decided on a not-addressed reading |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for name, args in sets:
        for pipeline in a.pipeline or ["verifier", "lexical"]:
            folder = out / f"{name.split(',')[0].replace(' ', '_')}-{name.split()[-1]}-{pipeline}"
            f = figures(run_eval(args + ["--pipeline", pipeline], folder))
            print(
                f"| {name} | {pipeline} | {f['n']} | {f['accuracy']:.1f} | {f['majority']:.1f} | {f['decided']:.1f}% "
                f"| {f['decided_right']:.1f} | {f['accuracy']:.1f} / {f['at50']:.1f} / {f['at20']:.1f} | "
                f"{f['ece']:.3f} | {f['on_nei']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
