"""Where the evaluation runner's items are checked: the dispatch seam.

The runner (runner.py) decides what to check, keeps the budget, writes each row to items.jsonl once and
failures to errors.jsonl; a dispatch only runs checks and hands back what finished:

    started = dispatch.start(plan)   -> Started: how many items may be in flight, and which model checks them
    dispatch.submit(pipeline, item)
    dispatch.wait()                  -> [(pipeline, item, row | Failed)], at least one, as they finish
    dispatch.close()

Two implementations: `ThreadDispatch` here (threads in this process, the default), and
`veracity.cluster.dispatch.RayDispatch` (actors on a Ray cluster, `--ray`). Both check with
`ItemChecker`, so a row is the same wherever it was made.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import BackendError
from .checker import CheckPlan, ItemChecker
from .datasets.records import EvalItem

if TYPE_CHECKING:
    from ..llm.model import Model


@dataclass(frozen=True)
class Failed:
    """An item whose check failed in a way a later run may not repeat (a model backend error, a lost worker)."""

    error: str


Outcome = dict[str, Any] | Failed  # the item's row, or why it has none
Finished = tuple[str, EvalItem, Outcome]


@dataclass(frozen=True)
class Started:
    capacity: int  # items in flight at most: the runner submits no more than this before waiting
    model_id: str
    backend: str  # the backend's class name, for run.json
    where: str  # for the progress bar and the summary: "4 threads", "8 Ray actors on 2 nodes"


class Dispatch(Protocol):
    #: items checked again (after a worker was lost) before they finished; 0 where workers are not lost
    retried: int

    def start(self, plan: CheckPlan) -> Started: ...

    def submit(self, name: str, item: EvalItem) -> None: ...

    def wait(self) -> list[Finished]: ...

    def close(self) -> None: ...


class ThreadDispatch:
    """Items checked by `workers` threads of this process, all with one model."""

    retried = 0

    def __init__(self, model: Model, workers: int = 1) -> None:
        self.model = model
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None
        self._checker: ItemChecker | None = None
        self._pending: dict[Future, tuple[str, EvalItem]] = {}

    def start(self, plan: CheckPlan) -> Started:
        self._checker = ItemChecker(plan, self.model)
        self._pool = ThreadPoolExecutor(max_workers=self.workers)
        return Started(
            self.workers,
            self.model.model_id,
            type(self.model.backend).__name__,
            f"{self.workers} thread{'s' if self.workers > 1 else ''}",
        )

    def submit(self, name: str, item: EvalItem) -> None:
        assert self._pool is not None and self._checker is not None, "start() first"
        self._pending[self._pool.submit(self._checker, name, item)] = (name, item)

    def wait(self) -> list[Finished]:
        finished, _ = wait(self._pending, return_when=FIRST_COMPLETED)
        out: list[Finished] = []
        for fut in finished:
            name, item = self._pending.pop(fut)
            try:
                out.append((name, item, fut.result()))
            except BackendError as e:
                out.append((name, item, Failed(str(e))))
        return out

    def close(self) -> None:
        for fut in self._pending:
            fut.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
