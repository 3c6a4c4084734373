"""Building the training sets from scored samples.

- `sft.jsonl`: {prompt, completion} for every sampled answer with LEAF score 1.0 (repeats dropped).
- `pairs.jsonl`: SimPO preference pairs {prompt, chosen, rejected}: per question the highest- vs the
  lowest-scoring answer; questions whose answers all score the same are skipped (no preference).

The prompt is the plain answering prompt (a user message); `train` wraps it in the model's chat
template, as the backends do when answering.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from .sampling import SAMPLES, read_samples

SFT = "sft.jsonl"
PAIRS = "pairs.jsonl"


@dataclass
class BuildResult:
    questions: int
    answers: int
    sft: int
    pairs: int
    ties: int  # questions skipped for pairs: every answer scored the same

    @property
    def message(self) -> str:
        lines = [f"{self.questions} questions, {self.answers} sampled answers"]
        if self.sft:
            lines.append(f"SFT set: {self.sft} answers scoring 1.0 -> {SFT}")
        else:
            lines.append(
                f"SFT set: no answer scored 1.0, so {SFT} is empty and `selftrain train --method sft` "
                "has nothing to train on (use --method simpo, or sample more answers)"
            )
        lines.append(
            f"SimPO pairs: {self.pairs} (highest vs lowest LEAF score) -> {PAIRS}; "
            f"{self.ties} question(s) skipped: all their answers scored the same"
        )
        return "\n".join(lines)


def sft_rows(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    out, seen = [], set()
    for r in rows:
        for s in r["samples"]:
            text = s["text"].strip()
            if s["score"] >= 1.0 and text and (r["id"], text) not in seen:
                seen.add((r["id"], text))
                out.append({"id": r["id"], "prompt": r["prompt"], "completion": text})
    return out


def pair_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    out, ties = [], 0
    for r in rows:
        samples = [s for s in r["samples"] if s["text"].strip()]
        if len(samples) < 2:
            ties += 1
            continue
        best = max(samples, key=lambda s: s["score"])  # the first among equals
        worst = min(samples, key=lambda s: s["score"])
        if best["score"] == worst["score"]:
            ties += 1
            continue
        out.append(
            {
                "id": r["id"],
                "prompt": r["prompt"],
                "chosen": best["text"].strip(),
                "rejected": worst["text"].strip(),
                "chosen_score": best["score"],
                "rejected_score": worst["score"],
            }
        )
    return out, ties


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def build_sets(out: Path) -> BuildResult:
    rows = read_samples(out / SAMPLES)
    if not rows:
        raise UserError(f"{out / SAMPLES} has no samples: run `veracity selftrain sample --out {out}` first")
    sft = sft_rows(rows)
    pairs, ties = pair_rows(rows)
    write_jsonl(out / SFT, sft)
    write_jsonl(out / PAIRS, pairs)
    return BuildResult(
        questions=len(rows), answers=sum(len(r["samples"]) for r in rows), sft=len(sft), pairs=len(pairs), ties=ties
    )
