"""Checking one evaluation item into its items.jsonl row: the one place rows are built.

A `CheckPlan` says what to check with (the dataset's labels and rules, the pipelines by name, the configuration,
the shared retriever); it holds no model, so it can travel to another process (a Ray actor) and be checked
there with that process's own model. `ItemChecker(plan, model)` turns (pipeline, item) into the row that
`veracity eval` and `veracity check-batch` write, wherever it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..check import run_check
from ..registry import get_pipeline
from ..retrieval import Index
from .datasets.records import Dataset, EvalItem

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.model import Model
    from ..retrieval.base import Retriever


@dataclass(frozen=True)
class DatasetHeader:
    """What a row needs of its dataset (no items): picklable and small."""

    name: str
    setting: str
    labels: tuple[str, ...]
    label_rules: str = ""
    label_map: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, dataset: Dataset) -> DatasetHeader:
        return cls(dataset.name, dataset.setting, tuple(dataset.labels), dataset.label_rules, dict(dataset.label_map))


@dataclass(frozen=True)
class CheckPlan:
    """Everything but the model: what every process that checks items of one run is given."""

    dataset: DatasetHeader
    pipelines: tuple[str, ...]
    config: Config
    retriever: Retriever | None = None  # the run's shared retriever (an index, a pooled knowledge base)


class ItemChecker:
    """`checker(pipeline, item) -> row`: one item checked by one pipeline with this process's model."""

    def __init__(self, plan: CheckPlan, model: Model) -> None:
        self.plan = plan
        self.model = model
        self.pipes = {name: get_pipeline(name, plan.config) for name in plan.pipelines}

    def __call__(self, name: str, item: EvalItem) -> dict[str, Any]:
        plan, ds = self.plan, self.plan.dataset
        retriever = plan.retriever
        if item.evidence:
            retriever = Index.from_documents(item.evidence).given_evidence()  # read even when no word matches
        res = run_check(
            item.claim,
            self.pipes[name],
            self.model,
            plan.config,
            retriever=retriever,
            labels=ds.labels,
            label_rules=ds.label_rules,
            published=False,  # the benchmarks exclude fact-checking sites
        )
        pred = ds.label_map.get(res.verdict.label, res.verdict.label)
        return {
            "dataset": ds.name,
            "setting": ds.setting,
            "pipeline": name,
            "id": item.id,
            "gold": item.gold,
            "pred": pred,
            "correct": pred == item.gold if item.gold else None,
            "seconds": round(res.seconds, 3),
            "usage": res.usage,
            "verdict": res.verdict.to_dict(),
            "trace": res.trace,
        }
