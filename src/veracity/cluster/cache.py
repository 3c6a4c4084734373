"""One response cache for the whole cluster: an actor on the driver's machine owns the SQLite file.

The cache (llm/cache.py) is SQLite in WAL mode: safe for the threads and processes of one machine, but not over
a network filesystem (WAL needs shared memory), and a separate file per node would make a re-run's cache hits
depend on which node an item lands on. So the file stays where a run without Ray keeps it (the driver's
`cache_path`), one actor pinned to the driver's node opens it, and every worker on every node reads and writes
through that actor (`RemoteCache`: a round trip per model call, small next to the call itself). A run with and a
run without Ray share their cache.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..llm.cache import ResponseCache

log = logging.getLogger(__name__)

#: calls the cache actor serves at once (threads; SQLite serializes the writes)
CACHE_CONCURRENCY = 16


class CacheServer:
    def __init__(self, path: str) -> None:
        self.cache = ResponseCache(path)

    def get(self, key: str) -> dict[str, Any] | None:
        return self.cache.get(key)

    def put(self, key: str, value: dict[str, Any], kind: str, model: str) -> None:
        self.cache.put(key, value, kind=kind, model=model)


class RemoteCache:
    """What a worker's Model holds instead of a ResponseCache: the same get and put, answered by the cache actor.

    A cache that cannot be reached (its actor is being restarted and the call failed) is a miss, with a warning in
    the worker's log: the cache saves work, it never decides a result.
    """

    def __init__(self, name: str) -> None:
        self.handle = ray.get_actor(name)  # by name: a handle among an actor's arguments would pin it in the
        # object store, where Ray cannot guarantee it for the actor's restarts (ray-project/ray#53727)

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return ray.get(self.handle.get.remote(key))
        except ray.exceptions.RayError as e:
            log.warning("response cache unreachable (%s): treated as a miss", type(e).__name__)
            return None

    def put(self, key: str, value: dict[str, Any], *, kind: str = "", model: str = "") -> None:
        try:
            ray.get(self.handle.put.remote(key, value, kind, model))
        except ray.exceptions.RayError as e:
            log.warning("response cache unreachable (%s): this response is not stored", type(e).__name__)


def start_cache(path: str) -> tuple[Any, str]:
    """The cache actor for the SQLite file `path` of this (the driver's) machine, and the name workers find it by."""
    node = ray.get_runtime_context().get_node_id()
    name = f"veracity-cache-{uuid.uuid4().hex}"
    actor = ray.remote(CacheServer).options(
        name=name,
        num_cpus=0,
        max_concurrency=CACHE_CONCURRENCY,
        max_restarts=-1,
        max_task_retries=-1,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
    )
    return actor.remote(str(Path(path).expanduser().resolve())), name
