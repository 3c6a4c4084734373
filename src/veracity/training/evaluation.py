"""Before/after accuracy on the held-apart questions, with the evaluation runner (answer:plain)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..eval.leaf_figures import read_rows, summarize
from ..eval.runner import run_eval
from .split import read_split

if TYPE_CHECKING:
    from ..config import Config
    from ..eval.datasets.records import Dataset
    from ..retrieval.base import Retriever

PIPELINE = "answer:plain"


def held_apart(dataset: Dataset, split: dict[str, Any]) -> Dataset:
    keep = set(split["eval_ids"])
    return replace(dataset, items=[it for it in dataset.items if it.id in keep])


def evaluate(
    out: Path,
    dataset: Dataset,
    models: dict[str, str],
    config: Config,
    retriever: Retriever,
    *,
    limit: int | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run answer:plain for each (name -> model spec) on the held-apart questions; one summary each."""
    from ..llm import make_model

    ds = held_apart(dataset, read_split(out))
    table = []
    for name, spec in models.items():
        cfg = replace(config, model=spec)
        folder = out / "eval" / name
        run_eval(ds, [PIPELINE], make_model(cfg), cfg, folder, index=retriever, limit=limit, progress=progress)
        rows = read_rows(folder)
        s = next(
            iter(summarize(rows)),
            {"n": 0, "accuracy": None, "mean_score": None, "passing": 0, "filtered_accuracy": None},
        )
        gold = Counter(r["gold"] for r in rows)
        table.append(
            {
                "model": name,
                "spec": spec,
                **{k: s.get(k) for k in ("n", "accuracy", "mean_score", "passing", "filtered_accuracy")},
                # a model that learned to say the majority option scores this much without knowing more
                "predicted": dict(Counter(r["pred"] for r in rows).most_common()),
                "majority": gold.most_common(1)[0][1] / len(rows) if rows else None,
            }
        )
    return table


def to_text(table: list[dict[str, Any]]) -> str:
    def pct(v):
        return "–" if v is None else f"{100 * v:.1f}"

    lines = [
        "| model | n | accuracy | mean LEAF | passing | filtered acc. | predicted options |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table:
        mean = "–" if r["mean_score"] is None else f"{r['mean_score']:.3f}"
        predicted = ", ".join(f"{k} {v}" for k, v in (r.get("predicted") or {}).items())
        lines.append(
            f"| {r['model']} | {r['n']} | {pct(r['accuracy'])} | {mean} | {r['passing']} | "
            f"{pct(r['filtered_accuracy'])} | {predicted} |"
        )
    majority = next((r["majority"] for r in table if r.get("majority") is not None), None)
    if majority is not None:
        lines.append(
            f"\nAlways answering the most frequent gold option would score {pct(majority)}: a gain that "
            "only moves the answers toward that option is a label shift, not knowledge."
        )
    return "\n".join(lines)
