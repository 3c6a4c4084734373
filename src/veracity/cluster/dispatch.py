"""RayDispatch: the evaluation runner's items checked by actors on a Ray cluster (`--ray [ADDRESS]`).

The runner (eval/runner.py) is unchanged by it: it submits up to `capacity` items, writes each result to
items.jsonl as it comes back (the progress bar and the budget are kept there, on the driver, so they count every
node) and stops submitting when the budget is spent.

No item is lost or written twice when a worker dies: Ray restarts the actor (actors.RESTARTS times); every item
that actor held comes back here as a RayActorError and is sent again, to the least-loaded live actor, up to
ATTEMPTS times (then it goes to errors.jsonl, and the next run tries it again). An item is only written when its
result arrives, and the runner writes a key once, so an item checked twice is still one line. If the driver
itself dies, items.jsonl holds every item finished so far and the same command resumes. When a whole node is
lost, its actors cannot be placed again (each is pinned to its node): Ray says so (ActorUnschedulableError), they
are given up for good and their items go to the actors of the other nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import BackendError
from ..eval.checker import CheckPlan
from ..eval.datasets.records import EvalItem
from ..eval.dispatch import Failed, Finished, Started
from .connect import connect, import_ray, node_cpus
from .sizing import place, shape_actors

#: times one item is sent to a worker before it is recorded as failed (a worker died each time)
ATTEMPTS = 3


def _gone(ray: Any) -> tuple[type[BaseException], ...]:
    """What Ray raises for a call whose actor died, or whose node is gone so it can never run there again."""
    return (ray.exceptions.RayActorError, ray.exceptions.ActorUnschedulableError)


@dataclass
class _Job:
    name: str
    item: EvalItem
    attempts: int = 0


class RayDispatch:
    """Items checked by Ray actors: `actors` of them (default: sized to the cluster, see sizing.py), each with
    `cpus` CPUs, each checking `concurrency` items at once when its model is a server."""

    def __init__(
        self,
        address: str | None = None,
        *,
        actors: int | None = None,
        cpus: float | None = None,
        concurrency: int = 1,
        restarts: int | None = None,
    ) -> None:
        self.address = address
        self.actors, self.cpus, self.concurrency, self.restarts = actors, cpus, concurrency, restarts
        self.retried = 0  # items sent again after their worker was lost
        self.pool: Any = None
        self._connected = False
        self._cache: Any = None
        self._index: Any = None
        self._jobs: dict[Any, tuple[_Job, Any]] = {}  # ObjectRef -> (job, slot)
        self._pings: dict[Any, Any] = {}  # ObjectRef of ready() -> slot, for actors being restarted
        self._backlog: list[_Job] = []  # jobs waiting for a live actor

    def start(self, plan: CheckPlan) -> Started:
        self._connected = connect(self.address)  # first: without Ray installed, a one-line error saying so
        from .actors import RESTARTS, ActorPool  # these import Ray
        from .cache import start_cache
        from .shipping import ship

        nodes = node_cpus()
        shape = shape_actors(plan.config, nodes, actors=self.actors, cpus=self.cpus, concurrency=self.concurrency)
        where = place(shape, nodes)
        self._index = index = ship(plan.retriever)  # held for the run: a restarted actor may fetch it again
        cache_name = None
        if plan.config.cache:
            self._cache, cache_name = start_cache(plan.config.cache_path)
        self.pool = ActorPool(
            replace(plan, retriever=None),
            shape,
            where,
            index,
            cache_name,
            restarts=RESTARTS if self.restarts is None else self.restarts,
        )
        n, k = shape.count, self.pool.nodes
        return Started(
            shape.capacity,
            self.pool.model_id,
            self.pool.backend,
            f"{n} Ray actor{'s' if n > 1 else ''} on {k} node{'s' if k > 1 else ''}",
        )

    def submit(self, name: str, item: EvalItem) -> None:
        self._send(_Job(name, item))

    def _send(self, job: _Job) -> None:
        slot = self.pool.least_loaded()
        if slot is None:
            self._backlog.append(job)
            return
        job.attempts += 1
        slot.load += 1
        self._jobs[slot.handle.check.remote(job.name, job.item)] = (job, slot)

    def wait(self) -> list[Finished]:
        ray = import_ray()
        while True:
            if not self._jobs and not self._pings:
                raise BackendError(
                    f"every Ray actor is dead ({len(self.pool.slots)} started, each restarted up "
                    f"to its limit); {len(self._backlog)} items were not checked: run again"
                )
            refs = [*self._jobs, *self._pings]
            ready, rest = ray.wait(refs, num_returns=1)
            if rest:
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            out: list[Finished] = []
            for ref in ready:
                if ref in self._pings:
                    self._answered(ref)
                else:
                    self._finished(ref, out)
            while self._backlog and self.pool.least_loaded() is not None:
                self._send(self._backlog.pop(0))
            if out:
                return out

    def _finished(self, ref: Any, out: list[Finished]) -> None:
        ray = import_ray()
        job, slot = self._jobs.pop(ref)
        slot.load -= 1
        try:
            out.append((job.name, job.item, ray.get(ref)))
        except _gone(ray) as e:  # the actor died (or could not be reached, or its node is gone) with the item
            if isinstance(e, ray.exceptions.ActorUnschedulableError):
                slot.dead = True  # pinned to a node that is gone: no restart will ever place it
            self._lost(slot)
            if job.attempts >= ATTEMPTS:
                out.append(
                    (
                        job.name,
                        job.item,
                        Failed(f"the Ray worker checking it was lost {job.attempts} times (last: {type(e).__name__})"),
                    )
                )
            else:
                self.retried += 1
                self._send(job)
        except ray.exceptions.RayTaskError as e:  # the check raised: the same error a run without Ray raises
            cause = getattr(e, "cause", None)
            raise cause if isinstance(cause, BaseException) else e  # noqa: B904 (the check's own error, as without Ray)

    def _lost(self, slot: Any) -> None:
        """Stop sending to an actor that lost an item until it answers again (Ray restarts it), or for good."""
        if not slot.available or slot.dead:
            return
        slot.available = False
        self._pings[slot.handle.ready.options(max_task_retries=-1).remote()] = slot

    def _answered(self, ref: Any) -> None:
        ray = import_ray()
        slot = self._pings.pop(ref)
        try:
            info = ray.get(ref)
        except _gone(ray):  # out of restarts, or its node is gone
            slot.dead = True
            return
        if "error" in info:  # restarted, but its constructor failed this time
            slot.dead = True
            ray.kill(slot.handle, no_restart=True)
            return
        slot.pid, slot.node, slot.available = info["pid"], info["node"], True

    def close(self) -> None:
        ray = import_ray()
        try:
            if self.pool is not None:
                self.pool.kill()
            if self._cache is not None:
                ray.kill(self._cache, no_restart=True)
        finally:
            self._jobs.clear()
            self._pings.clear()
            self._index = None
            if self._connected:
                ray.shutdown()
                self._connected = False
