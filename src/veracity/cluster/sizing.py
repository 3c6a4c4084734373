"""How many actors a run starts and what each one gets.

An actor that runs the model itself (embedded, gguf:PATH, hf:PATH) reserves `cpus` CPUs of its node and runs
the model with that many threads; it checks one item at a time (one model instance). An actor that calls a
server (an OpenAI-compatible URL, openai:NAME) or a scripted model reserves no CPU by default and checks
`concurrency` items at once (Ray's max_concurrency: that many threads in the actor).

`place` spreads the actors over the nodes evenly (round robin, within each node's CPUs), so that every node
works from the start; Ray's own SPREAD strategy may stack actors that reserve no CPU on one node.

Each actor keeps QUEUE_DEPTH items per slot sent ahead, so it never waits for the driver between items; the
items in flight are count x concurrency x QUEUE_DEPTH, which is also how far a budget can be overshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UserError

if TYPE_CHECKING:
    from ..config import Config

QUEUE_DEPTH = 2


def runs_model_locally(config: Config) -> bool:
    """Whether the configured model runs inside the checking process (it then needs CPUs of its own)."""
    spec = config.model.strip()
    return spec == "embedded" or spec.startswith(("gguf:", "hf:"))


@dataclass(frozen=True)
class ActorShape:
    count: int  # actors
    cpus: float  # CPUs Ray reserves for each
    threads: int | None  # model threads of each (a model run in the actor), else None
    concurrency: int  # items one actor checks at once

    @property
    def capacity(self) -> int:
        """Items in flight at most over all actors."""
        return self.count * self.concurrency * QUEUE_DEPTH


def shape_actors(
    config: Config,
    node_cpus: dict[str, float],
    *,
    actors: int | None = None,
    cpus: float | None = None,
    concurrency: int = 1,
) -> ActorShape:
    """The actors for `config` on nodes with these CPUs; `actors` and `cpus` as the user gave them (or None).

    Defaults: a model run in the actor gets 1 CPU (and 1 thread), and as many actors as the nodes' CPUs hold;
    an actor calling a server reserves no CPU, checks `concurrency` items at once, and there is one per CPU.
    """
    if actors is not None and actors < 1:
        raise UserError(f"--ray-actors must be at least 1, not {actors}")
    if cpus is not None and cpus < 0:
        raise UserError(f"--ray-cpus must not be negative, not {cpus}")
    total = sum(node_cpus.values())
    if runs_model_locally(config):
        cpus = 1.0 if cpus is None else cpus
        if cpus < 1:
            raise UserError(
                f"a model run in each actor ({config.model}) needs at least 1 CPU per actor, not --ray-cpus {cpus:g}"
            )
        fits = sum(int(c // cpus) for c in node_cpus.values())
        return ActorShape(actors or max(1, fits), cpus, max(1, int(cpus)), 1)
    return ActorShape(actors or max(1, int(total)), 0.0 if cpus is None else cpus, None, max(1, concurrency))


def place(shape: ActorShape, node_cpus: dict[str, float]) -> list[str]:
    """A node for each actor: round robin over the nodes that have CPUs, skipping a node once its CPUs are taken."""
    nodes = [n for n, c in node_cpus.items() if c > 0] or list(node_cpus)
    if not nodes:
        raise UserError("the Ray cluster has no live node")
    free = {n: node_cpus[n] for n in nodes}
    out: list[str] = []
    while len(out) < shape.count:
        placed = False
        for n in nodes:
            if len(out) < shape.count and free[n] + 1e-9 >= shape.cpus:
                free[n] -= shape.cpus
                out.append(n)
                placed = True
        if not placed:
            raise UserError(
                f"{shape.count} actors x {shape.cpus:g} CPUs do not fit on the cluster's nodes "
                f"({', '.join(f'{c:g}' for c in node_cpus.values())} CPUs): give fewer --ray-actors "
                "or --ray-cpus"
            )
    return out
