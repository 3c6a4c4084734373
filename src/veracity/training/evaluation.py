"""Before/after accuracy on the held-apart questions, with the evaluation runner (answer:plain)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..eval.runner import run_eval
from ..leaf.analysis import read_rows, summarize
from .split import read_split

if TYPE_CHECKING:
    from ..config import Config
    from ..eval.datasets import Dataset
    from ..retrieval.base import Retriever

PIPELINE = "answer:plain"


def held_apart(dataset: "Dataset", split: dict[str, Any]) -> "Dataset":
    keep = set(split["eval_ids"])
    return replace(dataset, items=[it for it in dataset.items if it.id in keep])


def evaluate(out: Path, dataset: "Dataset", models: dict[str, str], config: "Config",
             retriever: "Retriever", *, limit: int | None = None, progress: bool = True) -> list[dict[str, Any]]:
    """Run answer:plain for each (name -> model spec) on the held-apart questions; one summary each."""
    from ..llm import make_model

    ds = held_apart(dataset, read_split(out))
    table = []
    for name, spec in models.items():
        cfg = replace(config, model=spec)
        folder = out / "eval" / name
        run_eval(ds, [PIPELINE], make_model(cfg), cfg, folder, index=retriever, limit=limit, progress=progress)
        s = next(iter(summarize(read_rows(folder))), {"n": 0, "accuracy": None, "mean_score": None,
                                                      "passing": 0, "filtered_accuracy": None})
        table.append({"model": name, "spec": spec, **{k: s.get(k) for k in
                                                      ("n", "accuracy", "mean_score", "passing",
                                                       "filtered_accuracy")}})
    return table


def to_text(table: list[dict[str, Any]]) -> str:
    def pct(v):
        return "–" if v is None else f"{100 * v:.1f}"

    lines = ["| model | n | accuracy | mean LEAF | passing | filtered acc. |", "|---|---|---|---|---|---|"]
    for r in table:
        mean = "–" if r["mean_score"] is None else f"{r['mean_score']:.3f}"
        lines.append(f"| {r['model']} | {r['n']} | {pct(r['accuracy'])} | {mean} | {r['passing']} | "
                     f"{pct(r['filtered_accuracy'])} |")
    return "\n".join(lines)
