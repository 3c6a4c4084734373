"""Following a run: `GET /api/checks/{id}/events`, its steps and what they changed in the run's view as Server-Sent
Events, live or from the store, resumable with Last-Event-ID."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from fastapi import Header, Request
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse, ServerSentEvent

from . import store as st
from .api_routing import api_router
from .api_schemas import ERRORS, get_run
from .live import final_event
from .safe import mend
from .state import state
from .views import LiveView

if TYPE_CHECKING:
    from .state import ServerState

router = api_router()


MAX_STEP_ID = 2**53  # step ids are a run's step numbers: anything larger was never sent
QUEUE_POLL = 1.0  # seconds between looks at a waiting run's place in the queue (a new status event when it moved)


def resume_after(last_event_id: str | None) -> int:
    """The step after which a stream resumes: Last-Event-ID when it is a step id this server could have sent,
    else -1 (a fresh start, every step again), whatever the header holds."""
    text = (last_event_id or "").strip()
    if not text or len(text) > 20 or not text.isascii() or not text.isdigit():
        return -1
    value = int(text)
    return value if value <= MAX_STEP_ID else -1


def elapsed(s: ServerState, run_id: str, status: str) -> dict[str, float]:
    """A running run's seconds so far (`elapsed` of its `status` event: the page counts on from it)."""
    run = s.store.get(run_id) if status == st.RUNNING else None
    started = run.get("started") if run else None
    return {"elapsed": round(max(0.0, time.time() - started), 1)} if isinstance(started, (int, float)) else {}


@router.get(
    "/checks/{run_id}/events",
    responses=ERRORS,
    response_class=EventSourceResponse,
    summary="Follow a run: Server-Sent Events",
)
async def events(
    run_id: str,
    request: Request,
    last_event_id: str | None = Header(None, description="resume after this step (set by EventSource on reconnect)"),
):
    """Events: `status` ({"status", "queue_position", and "elapsed": seconds since it started, while running}; sent
    again while the run waits, each time its place in the queue changes),
    one `step` per trace step in the order the run emitted it (data: the step; id: its sequence number), each
    right after a `view` event with what that step changed in the run's view, already folded ({"items":
    [{"index", "item"}], "status": what the run is doing, "calls": model calls so far}; the page draws these), and a
    final `done` ({"status", "verdict", "usage", "seconds"} or {"status", "error"}), after which the stream ends. A
    client connecting late first gets the steps so far; `Last-Event-ID` skips the steps it already has (and their
    views)."""
    s = state(request)
    after = resume_after(last_event_id)
    live = s.manager.subscribe(run_id, asyncio.get_running_loop())
    run = None
    if live is None:
        run = await run_in_threadpool(get_run, s, run_id)

    def step_event(seq: int, data: dict[str, Any]) -> ServerSentEvent:
        return ServerSentEvent(data=json.dumps(mend(data), ensure_ascii=False, default=str), event="step", id=str(seq))

    def event(kind: str, data: dict[str, Any]) -> ServerSentEvent:
        return ServerSentEvent(data=json.dumps(mend(data), ensure_ascii=False, default=str), event=kind, retry=2000)

    view = LiveView()  # this stream's fold of the run's steps (veracity.steps)

    def step_events(seq: int, data: dict[str, Any]) -> list[ServerSentEvent]:
        """The step's `view` event (what it changed in the view), then the step itself; none for a step the
        client already has (its view included)."""
        update = view.add(data)
        if seq <= after:
            return []
        return [
            ServerSentEvent(data=json.dumps(mend(update), ensure_ascii=False, default=str), event="view"),
            step_event(seq, data),
        ]

    async def stream():
        if live is None:  # finished before: everything is in the store
            yield event("status", {"status": run["status"], "queue_position": None})
            for seq, d in await run_in_threadpool(s.store.steps, run_id):
                for e in step_events(seq, d):
                    yield e
            yield event("done", final_event(run))
            return
        snapshot, status, sub, final = live
        try:
            position = await run_in_threadpool(s.manager.queue_position, run_id)
            yield event(
                "status",
                {"status": status, "queue_position": position, **await run_in_threadpool(elapsed, s, run_id, status)},
            )
            for seq, d in enumerate(snapshot):
                for e in step_events(seq, d):
                    yield e
            if sub is None:
                yield event("done", final or {})
                return
            while True:
                try:  # while it waits, its place in the queue is sent again whenever it moves
                    kind, seq, data = await asyncio.wait_for(sub.queue.get(), QUEUE_POLL if position else None)
                except TimeoutError:
                    now = await run_in_threadpool(s.manager.queue_position, run_id)
                    if now and now != position:
                        yield event("status", {"status": st.QUEUED, "queue_position": now, "elapsed": 0.0})
                    position = now
                    continue
                if kind == "step":
                    for e in step_events(seq, data):
                        yield e
                elif kind == "status":
                    position = None
                    yield event("status", {**data, "queue_position": None, "elapsed": 0.0})
                else:
                    yield event("done", data)
                    return
        finally:
            if sub is not None:
                s.manager.unsubscribe(run_id, sub)

    return EventSourceResponse(stream(), ping=15, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
