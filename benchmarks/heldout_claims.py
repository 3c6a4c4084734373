"""Held-out FM2 claims (Wikipedia pages held apart from the verifier's training, verify/training/data.py) with their gold
evidence, written as a JSONL that `veracity eval --dataset jsonl` reads: a set of claims no part of veracity was
trained or tuned on, to measure whole pipelines with, as the benchmarks are measured (their public sets are
measured only, never tuned on).

    python benchmarks/heldout_claims.py --n 150 --out runs/fm2_heldout_150.jsonl
    veracity eval --dataset jsonl --path runs/fm2_heldout_150.jsonl \\
        --pipeline qacheck-retriever-reader --pipeline verifier --out runs/fm2_qacheck

Claims are drawn with `--seed` (default 0) from the 615 held-out claims; each line: id, claim, label (supported /
refuted), evidence (its gold evidence sentences, one string). Needs ../shared/training.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from veracity.verify.training.data import build, default_training_dir


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=150, help="claims to write (at most the 615 held out)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    root = default_training_dir()
    if not root.is_dir():
        raise SystemExit(f"no training data at {root}: the held-out claims come from it")
    pairs = build(root, sources=()).heldout_fm2
    random.Random(args.seed).shuffle(pairs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for i, p in enumerate(pairs[: args.n]):
            f.write(json.dumps({"id": f"fm2-{i}", "claim": p.claim, "label": p.label, "evidence": [p.evidence]}) + "\n")
    print(f"{min(args.n, len(pairs))} of {len(pairs)} held-out FM2 claims -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
