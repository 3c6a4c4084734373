"""The seeded split of a dataset's questions: some held apart for evaluation, the rest to train on.

Written once to OUT/split.json; later commands read it back, so every step sees the same split.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from ..errors import UserError

SPLIT = "split.json"


def make_split(ids: list[str], n_eval: int, seed: int) -> dict[str, Any]:
    if n_eval < 0 or n_eval >= len(ids):
        raise UserError(f"cannot hold {n_eval} of {len(ids)} questions apart: keep some to train on")
    order = list(ids)
    random.Random(seed).shuffle(order)
    return {"seed": seed, "n_eval": n_eval, "eval_ids": order[:n_eval], "train_ids": order[n_eval:]}


def load_or_make_split(out: Path, dataset: str, ids: list[str], n_eval: int, seed: int) -> dict[str, Any]:
    """The split in OUT (checked against the request), or a new one written there."""
    path = out / SPLIT
    if path.is_file():
        split = json.loads(path.read_text(encoding="utf-8"))
        if (split.get("dataset"), split.get("seed"), split.get("n_eval")) != (dataset, seed, n_eval):
            raise UserError(
                f"{path} holds a split of {split.get('dataset')} (seed {split.get('seed')}, "
                f"{split.get('n_eval')} held apart); use the same settings or another --out"
            )
        return split
    split = {"dataset": dataset, **make_split(ids, n_eval, seed)}
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(split, indent=1), encoding="utf-8")
    return split


def read_split(out: Path) -> dict[str, Any]:
    path = out / SPLIT
    if not path.is_file():
        raise UserError(f"{path} not found: run `veracity selftrain sample --out {out}` first")
    return json.loads(path.read_text(encoding="utf-8"))
