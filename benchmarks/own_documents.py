"""Claims checked against a user's own documents: stated word for word, paraphrased, contradicted, or not addressed.

    python benchmarks/own_documents.py [--pipeline verifier]

benchmarks/data/own_documents/ holds five short documents about made-up subjects (a river, a bridge, an architect, a
novel, an observatory: nothing a model could know), as a user would index them (HTML, Markdown, plain text);
benchmarks/data/own_documents_claims.jsonl 30 claims written against them before any run: 8 stated word for word, 8
paraphrased, 8 contradicted (one fact changed), 6 the documents do not address. Each claim is checked as `veracity
check --index DIR` checks it (the documents indexed, the claim's passages retrieved, the `verifier` pipeline by
default: no model call). The table gives, per kind, how often the label is right and how many verdicts are shown as
decided (not uncertain), and how often those are right; a decided verdict on a claim the documents do not address is
wrong whatever its label. Run it on two commits to compare.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "benchmarks" / "data" / "own_documents"
CLAIMS = ROOT / "benchmarks" / "data" / "own_documents_claims.jsonl"
KINDS = ("verbatim", "paraphrased", "contradicted", "unaddressed")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipeline", default="verifier")
    a = p.parse_args()

    from veracity.check import run_check
    from veracity.config import load_config
    from veracity.llm import make_model
    from veracity.registry import get_pipeline
    from veracity.retrieval import Index, load_documents

    config = load_config(overrides={"cache": False})
    index = Index.from_documents(list(load_documents(DOCS)))
    pipeline = get_pipeline(a.pipeline, config)
    model = make_model(config, lazy=True)
    rows = []
    for line in CLAIMS.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        result = run_check(item_claim(item), pipeline, model, config, retriever=index.retriever())
        v = result.verdict
        rows.append({**item, "pred": v.label.lower(), "uncertain": v.uncertain, "confidence": v.confidence})
    print(f"| kind | n | label right | decided | decided right | ({a.pipeline} pipeline) |")
    print("|---|---:|---:|---:|---:|---|")
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        decided = [r for r in mine if not r["uncertain"]]
        right = [r["pred"] == r["label"] for r in mine]
        decided_right = [r["pred"] == r["label"] and kind != "unaddressed" for r in decided]
        label_right = "-" if kind == "unaddressed" else f"{100 * sum(right) / len(mine):.0f}%"
        shown = f"{sum(decided_right)} of {len(decided)}" if decided else "-"
        print(f"| {kind} | {len(mine)} | {label_right} | {len(decided)} of {len(mine)} | {shown} | |")


def item_claim(item: dict):
    from veracity.types import Claim

    return Claim(text=item["claim"], id=item["id"])


if __name__ == "__main__":
    main()
