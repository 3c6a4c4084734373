"""The worker actor (one backend, checking items with `ItemChecker`) and the pool that starts a run's actors.

Each actor builds its own model from the run's configuration (an embedded model sized to the actor's CPUs, or an
HTTP client to the shared server), its retriever from the shipped index, and reads and writes the one response
cache. Ray restarts an actor whose process dies (max_restarts) by running its constructor again; the items it
held are sent again by the dispatch (dispatch.py), not by Ray (max_task_retries=0), so that they go to whichever
actor is free and an item that kills every worker it touches is given up after a few tries.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..errors import BackendError, UserError
from ..eval.checker import CheckPlan, ItemChecker
from ..eval.datasets.records import EvalItem
from ..eval.dispatch import Failed, Outcome
from ..llm import Model, make_backend
from .cache import RemoteCache
from .shipping import ShippedIndex, receive
from .sizing import ActorShape

#: times Ray restarts one actor whose process died
RESTARTS = 3
#: seconds the actors may take to start (load their model) before the run gives up
START_TIMEOUT = 600.0


class CheckWorker:
    def __init__(self, plan: CheckPlan, threads: int | None, index: ShippedIndex | None, cache: str | None) -> None:
        self.failure: Exception | None = None
        try:
            config = plan.config if threads is None else replace(plan.config, n_threads=threads)
            plan = replace(plan, config=config, retriever=receive(index))
            model = Model(make_backend(config), RemoteCache(cache) if cache is not None else None)
            self.checker = ItemChecker(plan, model)
        except Exception as e:  # noqa: BLE001  (handed to the driver by ready(), which stops the run with it)
            self.failure = e

    def ready(self) -> dict[str, Any]:
        """Where this actor runs and with which model, or why it could not start."""
        if self.failure is not None:
            return {
                "error": f"{type(self.failure).__name__}: {self.failure}",
                "user_error": isinstance(self.failure, UserError),
            }
        backend = self.checker.model.backend
        return {
            "pid": os.getpid(),
            "node": ray.get_runtime_context().get_node_id(),
            "model_id": backend.model_id,
            "backend": type(backend).__name__,
        }

    def check(self, name: str, item: EvalItem) -> Outcome:
        try:
            return self.checker(name, item)
        except BackendError as e:
            return Failed(str(e))


@dataclass
class Slot:
    """One actor as the dispatch sees it."""

    handle: Any
    pid: int = 0
    node: str = ""
    load: int = 0  # items sent and not yet back
    available: bool = True  # False from a lost item until the actor answers again
    dead: bool = False  # out of restarts: never used again


class ActorPool:
    """`shape.count` actors on the nodes `where` names (one node id per actor), started and checked to be ready.

    The placement is strict (Ray's soft node affinity does not keep actors that reserve no CPU on their node): an
    actor is restarted on its own node, and one whose node is gone dies for good; the dispatch then sends its items
    to the others.
    """

    def __init__(
        self,
        plan: CheckPlan,
        shape: ActorShape,
        where: list[str],
        index: ShippedIndex | None,
        cache: str | None,
        *,
        restarts: int = RESTARTS,
    ) -> None:
        actor = ray.remote(CheckWorker)
        self.slots = []
        for node in where:
            options = actor.options(
                num_cpus=shape.cpus,
                max_concurrency=shape.concurrency,
                max_restarts=restarts,
                max_task_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            )
            self.slots.append(Slot(options.remote(plan, shape.threads, index, cache)))
        try:
            infos = ray.get([s.handle.ready.remote() for s in self.slots], timeout=START_TIMEOUT)
        except ray.exceptions.GetTimeoutError:
            self.kill()
            raise BackendError(f"{shape.count} Ray actors did not start within {START_TIMEOUT:.0f} s") from None
        except ray.exceptions.RayError as e:
            self.kill()
            raise BackendError(f"a Ray actor could not start: {_short(e)}") from None
        for info in infos:
            if "error" in info:
                self.kill()
                raise (UserError if info["user_error"] else BackendError)(
                    f"a Ray worker could not start: {info['error']}"
                )
        models = {(i["model_id"], i["backend"]) for i in infos}
        if len(models) > 1:
            self.kill()
            raise UserError(
                "the Ray workers loaded different models ("
                + ", ".join(sorted(m for m, _ in models))
                + "): give every node the same model file"
            )
        ((self.model_id, self.backend),) = models
        for slot, info in zip(self.slots, infos):
            slot.pid, slot.node = info["pid"], info["node"]

    @property
    def nodes(self) -> int:
        return len({s.node for s in self.slots})

    def least_loaded(self) -> Slot | None:
        live = [s for s in self.slots if s.available and not s.dead]
        return min(live, key=lambda s: s.load) if live else None

    def kill(self) -> None:
        for slot in self.slots:
            ray.kill(slot.handle, no_restart=True)


def _short(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]
