"""A run while it is live, and who follows it: the in-memory state of a queued or running run (`LiveRun`), the SSE
streams subscribed to it (`Subscriber`), the `done` event of a run that ended (`final_event`), and the poller that
follows a run another worker of a shared queue executes (`watch_remote`). The executor (runs.py) drives them.

Deleting a running run, or stopping the server, makes the run's tracer listener raise `RunStopped` at the run's
next step, which unwinds the pipeline without writing anything more.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..failures import short_error
from . import store as st

if TYPE_CHECKING:
    from .store import RunStore

DONE_MARK = "done"


class RunStopped(BaseException):
    """Raised inside a run's pipeline (from its tracer listener) to stop it. A BaseException, so that no
    `except Exception` in a pipeline or backend swallows it."""


class Subscriber:
    """One SSE stream: events are put on an asyncio queue of the server's event loop, from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[tuple[str, int | None, dict[str, Any]]] = asyncio.Queue()
        self.task: asyncio.Task | None = None  # the poller of a run another worker executes (watch_remote)

    def push(self, kind: str, seq: int | None, data: dict[str, Any]) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, seq, data))
        except RuntimeError:  # the loop is closed: the server is going away
            pass


@dataclass
class LiveRun:
    """A queued or running run, held in memory while it is live."""

    run_id: str
    status: str = st.QUEUED
    steps: list[dict[str, Any]] = field(default_factory=list)
    subscribers: list[Subscriber] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopped: str | None = None  # "deleted" | "shutdown" | "cancelled"
    final: dict[str, Any] | None = None  # the `done` event, once finished
    future: Future | None = None

    def publish(self, kind: str, seq: int | None, data: dict[str, Any]) -> None:
        """Call with `lock` held."""
        for s in self.subscribers:
            s.push(kind, seq, data)


def final_event(run: dict[str, Any]) -> dict[str, Any]:
    """The `done` event of a run that ended, as the store has it."""
    r = run.get("result") or {}
    if run["status"] == st.DONE:
        return {
            "status": st.DONE,
            "verdict": r.get("verdict"),
            "usage": r.get("usage"),
            "seconds": r.get("seconds"),
            "model": r.get("model"),
        }
    return {"status": run["status"], "error": short_error(run.get("error"))}


POLL_SECONDS = 0.25  # how often a follower of another worker's run reads its new steps


async def watch_remote(store: RunStore, run_id: str, sub: Subscriber, after: int, status: str) -> None:
    """Feed `sub` the steps after `after` of a run another worker executes, its start, and its end, by polling the
    store (the one way every worker, on any machine, sees the same run)."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(POLL_SECONDS)
        run = await loop.run_in_executor(None, store.get, run_id)
        for seq, data in await loop.run_in_executor(None, store.steps, run_id, after):
            sub.queue.put_nowait(("step", seq, data))
            after = seq
        if run is None:
            sub.queue.put_nowait((DONE_MARK, None, {"status": "deleted"}))
            return
        if run["status"] != status and run["status"] == st.RUNNING:
            status = st.RUNNING
            sub.queue.put_nowait(("status", None, {"status": st.RUNNING}))
        if run["status"] not in st.UNFINISHED:
            sub.queue.put_nowait((DONE_MARK, None, final_event(run)))
            return


def subscribe_remote(
    store: RunStore, run_id: str, loop: asyncio.AbstractEventLoop
) -> tuple[list[dict[str, Any]], str, Subscriber | None, dict[str, Any] | None] | None:
    """A run of the shared queue that this worker does not run: waiting, or run by another worker. Its steps so far
    from the store, then a poller (watch_remote) feeding the subscriber; None when it is not unfinished."""
    run = store.get(run_id)
    if run is None or run["status"] not in st.UNFINISHED:
        return None
    steps = store.steps(run_id)
    sub = Subscriber(loop)
    sub.task = loop.create_task(watch_remote(store, run_id, sub, steps[-1][0] if steps else -1, run["status"]))
    return [d for _, d in steps], run["status"], sub, None
