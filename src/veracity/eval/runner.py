"""The resumable, concurrent evaluation runner.

One JSONL line per finished (dataset, pipeline, item) goes to OUT/items.jsonl with the prediction,
the gold label, the full trace and the usage. A killed run started again with the same OUT skips
what is there (a line cut off by the kill is dropped, with a warning, and redone), so no item is lost or
duplicated; run.json is replaced atomically, and an empty or damaged one is started afresh.
Items whose model backend failed (or whose worker was lost too often) go to OUT/errors.jsonl and are
retried by the next run.

Where the checks run is a dispatch (dispatch.py): threads of this process by default, or Ray actors
(veracity.cluster); the rows are built by checker.py and written here, the same way for both.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..metrics import accuracy, macro_f1
from ..registry import get_pipeline
from ..retrieval import Index
from .checker import CheckPlan, DatasetHeader
from .datasets.records import Dataset, EvalItem
from .dispatch import Failed, ThreadDispatch

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.model import Model
    from ..retrieval.base import Retriever
    from .dispatch import Dispatch

log = logging.getLogger(__name__)

ITEMS = "items.jsonl"
ERRORS = "errors.jsonl"
MANIFEST = "run.json"


@dataclass
class Budget:
    max_tokens: int | None = None
    max_cost: float | None = None
    tokens: int = 0
    cost: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, usage: dict[str, Any]) -> None:
        t = usage.get("total", {})
        with self._lock:
            uncached = t.get("calls", 0) - t.get("cached_calls", 0)
            if uncached:
                self.tokens += t.get("prompt_tokens", 0) + t.get("completion_tokens", 0)
            self.cost += t.get("cost", 0.0)

    @property
    def exhausted(self) -> str | None:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"token budget reached ({self.tokens} >= {self.max_tokens} tokens)"
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"cost budget reached (${self.cost:.4f} >= ${self.max_cost:.4f})"
        return None


@dataclass
class RunSummary:
    done: int = 0  # items finished in this run
    skipped: int = 0  # already in OUT from an earlier run
    errors: int = 0
    stopped: str | None = None  # why the run stopped early, if it did
    seconds: float = 0.0  # checking, from the first item submitted
    retried: int = 0  # items checked again because the worker checking them was lost (Ray)
    started_in: float = 0.0  # seconds to start the workers (Ray actors), before the first item
    where: str = ""  # what checked the items: "4 threads", "8 Ray actors on 2 nodes"


def select_items(items: list[EvalItem], limit: int | None, seed: int) -> list[EvalItem]:
    """`limit` items drawn with `seed`, in file order; all items when no limit.

    The draw is the first `limit` of one seeded permutation, so a larger limit keeps every item of a
    smaller one: `--limit 30` then `--limit 100` on the same OUT only runs the 70 new items.
    """
    if limit is None or limit >= len(items):
        return list(items)
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    keep = set(order[:limit])
    return [it for i, it in enumerate(items) if i in keep]


def read_done(out: Path) -> set[tuple[str, str, str]]:
    """Keys of finished items; rewrites the file without the lines a kill cut off.

    A last line cut off by a kill (even inside a UTF-8 character) is dropped with a warning and its item
    is redone; every complete line is kept (a complete line that is not a result is dropped with a warning
    too; a result repeated is kept once). The file is rewritten atomically, so a kill during the rewrite
    loses nothing.
    """
    path = out / ITEMS
    if not path.exists():
        return set()
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline, else the part after the last newline
    good, done = [], set()
    bad = 0
    for raw in lines + ([tail] if tail.strip() else []):
        row = _parse_row(raw)
        if row is None:
            if raw.strip():
                if raw is tail:
                    log.warning(
                        "warning: %s: dropped its last line, cut off by a kill (%d bytes); that item will be redone",
                        path,
                        len(raw),
                    )
                else:
                    bad += 1
            continue
        line, key = row
        if key not in done:
            done.add(key)
            good.append(line)
    if bad:
        log.warning(
            "warning: %s: dropped %d line%s that %s not a readable result",
            path,
            bad,
            "" if bad == 1 else "s",
            "is" if bad == 1 else "are",
        )
    text = "".join(g + "\n" for g in good).encode("utf-8")
    if text != data:
        _write_atomically(path, text)
    return done


def _parse_row(raw: bytes) -> tuple[str, tuple[str, str, str]] | None:
    """(line, key) of one items.jsonl line, or None when it is not a complete result."""
    try:
        line = raw.decode("utf-8").strip()
        row = json.loads(line)
        key = (row["dataset"], row["pipeline"], row["id"])
        hash(key)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    return line, key


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a reader (or a kill) sees the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_manifest(out: Path) -> dict[str, Any]:
    """OUT/run.json, or {} when there is none; an empty or damaged one is reported and treated as none."""
    path = Path(out) / MANIFEST
    if not path.exists():
        return {}
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
        if not isinstance(manifest, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError, RecursionError) as e:
        detail = " ".join(str(e).split())[:120] or type(e).__name__
        log.warning("warning: %s is damaged (%s): starting it afresh; the results in %s are kept", path, detail, ITEMS)
        return {}
    return manifest


def _write_manifest(
    out: Path,
    dataset: Dataset,
    model_id: str,
    backend: str,
    selected: int,
    limit: int | None,
    seed: int,
    pipelines: list[str],
    stopped: str | None,
) -> None:
    path = out / MANIFEST
    manifest = read_manifest(out)
    if manifest.get("model") and manifest["model"] != model_id:
        raise UserError(f"{out} holds a run with model {manifest['model']}; use another --out for {model_id}")
    manifest["model"] = model_id
    manifest["backend"] = backend
    datasets = manifest.get("datasets")
    if not isinstance(datasets, dict):
        datasets = manifest["datasets"] = {}
    previous = datasets.get(dataset.name)
    earlier = previous.get("pipelines", []) if isinstance(previous, dict) else []
    datasets[dataset.name] = {
        "setting": dataset.setting,
        "labels": list(dataset.labels),
        "metric": dataset.metric,
        "total_items": len(dataset.items),
        "selected": selected,
        "limit": limit,
        "seed": seed,
        "pipelines": sorted({p for p in earlier if isinstance(p, str)} | set(pipelines)),
        "reference": dataset.reference,
        "reference_note": dataset.reference_note,
        "stopped": stopped,
    }
    manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    _write_atomically(path, json.dumps(manifest, indent=2).encode("utf-8"))


class _Progress:
    """A tqdm bar with the running score per pipeline; silent when tqdm is off."""

    def __init__(self, total: int, enabled: bool, desc: str) -> None:
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="item", dynamic_ncols=True)
        self.scores: dict[str, list[bool]] = {}
        self._lock = threading.Lock()

    def update(self, pipeline: str, correct: bool | None) -> None:
        with self._lock:
            if correct is not None:
                self.scores.setdefault(pipeline, []).append(correct)
            if self.bar is not None:
                self.bar.set_postfix_str(" ".join(f"{p}={100 * sum(v) / len(v):.0f}%" for p, v in self.scores.items()))
                self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_eval(
    dataset: Dataset,
    pipelines: list[str],
    model: Model | None,
    config: Config,
    out: str | Path,
    *,
    limit: int | None = None,
    seed: int = 0,
    workers: int = 1,
    budget: Budget | None = None,
    index: Retriever | None = None,
    retrieval_mode: str = "bm25",
    progress: bool = True,
    dispatch: Dispatch | None = None,
) -> RunSummary:
    """Check `limit` items of `dataset` with each pipeline into OUT (see the module's docstring).

    `dispatch` says where the checks run: None is `workers` threads of this process with `model`; a
    `veracity.cluster.dispatch.RayDispatch` runs them on Ray actors, each with its own model (`model` may then be
    None). Either way this function alone decides what to check and writes the results.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    budget = budget or Budget()
    items = select_items(dataset.items, limit, seed)
    shared = index
    if shared is None and dataset.knowledge_base:
        shared = Index.from_documents(dataset.knowledge_base, dense=retrieval_mode != "bm25").retriever(retrieval_mode)
    plan = CheckPlan(DatasetHeader.of(dataset), tuple(pipelines), config, shared)
    has_evidence = any(it.evidence for it in items) or shared is not None
    for name in pipelines:
        if get_pipeline(name, config).needs_retriever(config) and not has_evidence:
            raise UserError(
                f"pipeline {name!r} needs evidence to retrieve from, but {dataset.name} "
                f"({dataset.setting}) has none: give --index DIR or pick a closed-book pipeline"
            )
    if dispatch is None:
        if model is None:
            raise ValueError("run_eval needs a model, or a dispatch that brings its own")
        dispatch = ThreadDispatch(model, workers)
    done = read_done(out)
    todo = [(name, it) for name in pipelines for it in items if (dataset.name, name, it.id) not in done]
    summary = RunSummary(skipped=len(items) * len(pipelines) - len(todo))
    try:
        t0 = time.perf_counter()
        started = dispatch.start(plan)
        summary.started_in = time.perf_counter() - t0
        summary.where = started.where
        manifest = partial(
            _write_manifest, out, dataset, started.model_id, started.backend, len(items), limit, seed, pipelines
        )
        manifest(None)
        bar = _Progress(len(todo), progress, f"{dataset.name} ({started.where})")
        t0 = time.perf_counter()
        try:
            _drain(dispatch, started.capacity, iter(todo), dataset.name, out, budget, summary, bar, done)
        except KeyboardInterrupt:
            summary.stopped = "interrupted"
            raise
        finally:
            summary.seconds = time.perf_counter() - t0
            bar.close()
            summary.retried = dispatch.retried
            manifest(summary.stopped)
    finally:
        dispatch.close()
    return summary


def _drain(
    dispatch: Dispatch,
    capacity: int,
    queue: Iterator[tuple[str, EvalItem]],
    dataset: str,
    out: Path,
    budget: Budget,
    summary: RunSummary,
    bar: _Progress,
    done: set[tuple[str, str, str]],
) -> None:
    """Keep up to `capacity` items in flight until `queue` is empty or the budget is spent; write each result once.

    The budget is summed here, as results arrive, so it holds across every thread or node: once spent, nothing
    more is submitted, and the items already in flight (at most `capacity`) still finish and are kept.
    """
    in_flight = 0
    with (out / ITEMS).open("a", encoding="utf-8") as items_f:
        while True:
            while in_flight < capacity and not summary.stopped:
                if reason := budget.exhausted:
                    summary.stopped = reason
                    break
                nxt = next(queue, None)
                if nxt is None:
                    break
                dispatch.submit(*nxt)
                in_flight += 1
            if not in_flight:
                return
            for name, item, outcome in dispatch.wait():
                in_flight -= 1
                key = (dataset, name, item.id)
                if key in done:  # an item a dispatch checked twice (at-least-once delivery) is written once
                    continue
                if isinstance(outcome, Failed):
                    summary.errors += 1
                    with (out / ERRORS).open("a", encoding="utf-8") as ef:
                        ef.write(
                            json.dumps({"dataset": dataset, "pipeline": name, "id": item.id, "error": outcome.error})
                            + "\n"
                        )
                    bar.update(name, None)
                    continue
                budget.add(outcome["usage"])
                items_f.write(json.dumps(outcome, ensure_ascii=False) + "\n")
                items_f.flush()
                os.fsync(items_f.fileno())
                done.add(key)
                summary.done += 1
                bar.update(name, outcome["correct"])


def scores(rows: list[dict[str, Any]], labels: tuple[str, ...] | list[str]) -> dict[str, float]:
    gold = [r["gold"] for r in rows]
    pred = [r["pred"] for r in rows]
    return {"macro_f1": macro_f1(gold, pred, list(labels)), "accuracy": accuracy(gold, pred)}
