"""The executor: runs checks in worker threads, a bounded number at a time, with a queue beyond that.

Each run's tracer gets one listener. For every step it (1) writes the step to the store and (2) hands it to every
live subscriber (an SSE stream), in the order the tracer emitted it. A subscriber that arrives late takes, under the
same lock, the steps so far and its place among the subscribers, so it sees each step exactly once and in order.
Nothing else produces steps: what the page and the API show is what the tracer emitted.

A run's live state and its followers (`LiveRun`, `Subscriber`, `watch_remote`, `subscribe_remote`) are in live.py.
Two ways runs reach the worker threads. Locally (SQLite; the MCP server and the proxy always): a run accepted here
is queued in this process and run by it. Over a shared queue (`veracity serve --db postgresql://...`, started N
times on one or several machines): an accepted run waits in the database with how it was asked (`request`), and
whichever worker has a free slot claims it (`RunStore.claim`), rebuilds its pipeline (`requests.job_for`) and runs
it. Either way a heartbeat renews the leases of this worker's runs (a run deleted meanwhile, or taken for dead by
another worker, stops at its next step) and marks interrupted the runs of workers that died (`RunStore.reap`). A
page or event stream served by one worker follows a run another worker executes by polling its steps
(`watch_remote`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..check import run_check
from ..errors import BackendError, DatabaseUnavailable, UserError, is_search_error
from ..failures import INTERNAL_ERROR, backend_error, short_error
from ..types import Claim
from . import store as st
from .errors import ApiError
from .live import DONE_MARK, LiveRun, RunStopped, Subscriber, final_event, subscribe_remote

if TYPE_CHECKING:
    from ..config import Config
    from ..pipeline import Pipeline
    from ..retrieval.base import Retriever
    from ..trace import Step
    from .catalog import Catalog
    from .store import RunStore

log = logging.getLogger("veracity.server")


@dataclass
class Job:
    run_id: str
    claim: str
    pipeline: Pipeline
    config: Config
    model: str
    metadata: dict[str, Any] = field(default_factory=dict)  # e.g. {"answer": ...} for an answer check
    images: list[str] = field(default_factory=list)  # the claim's images: paths of the stored uploads
    date: str | None = None  # the claim's date (YYYY-MM-DD)
    evidence: list[str] = field(default_factory=list)  # passages sent to be read instead of the server's index
    request: dict[str, Any] | None = None  # how it was asked (requests.py): what another worker rebuilds it from


def new_run_id() -> str:
    return secrets.token_hex(8)


class RunManager:
    def __init__(
        self,
        store: RunStore,
        catalog: Catalog,
        *,
        max_concurrent: int = 2,
        max_queue: int = 100,
        retriever: Retriever | None = None,
        rebuild: Callable[[dict[str, Any]], Job] | None = None,
    ) -> None:
        """`rebuild`: a shared queue (the store is shared and this is a `veracity serve` worker): how a claimed
        run's stored request becomes a Job (requests.job_for). Without it, runs accepted here run here."""
        self.store = store
        self.catalog = catalog
        self.retriever = retriever
        self.max_concurrent = max_concurrent
        self.max_queue = max_queue
        self.rebuild = rebuild
        self._executor = ThreadPoolExecutor(max_workers=max_concurrent, thread_name_prefix="veracity-run")
        self._live: dict[str, LiveRun] = {}
        self._waiting: deque[str] = deque()  # queued run ids, oldest first
        self._lock = threading.Lock()
        self._closed = False
        self._wake = threading.Event()  # a run was queued: a free claimer looks at once
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._heartbeat, name="veracity-heartbeat", daemon=True)]
        if self.shared:
            self._threads += [
                threading.Thread(target=self._claim_loop, name=f"veracity-claim-{n}", daemon=True)
                for n in range(max_concurrent)
            ]
        for t in self._threads:
            t.start()

    @property
    def shared(self) -> bool:
        """Whether runs go through the database's shared queue (several workers)."""
        return self.rebuild is not None

    # -- submitting --------------------------------------------------------------------------------

    def submit(
        self,
        *,
        claim: str,
        pipeline: Pipeline,
        config: Config,
        qa: str | None,
        options: dict[str, Any] | None = None,
        date: str | None = None,
        images: list[tuple[str, dict[str, Any]]] | None = None,
        evidence: list[str] | None = None,
        request: dict[str, Any] | None = None,
    ) -> tuple[str, int]:
        """Store a new queued run and schedule it; returns (run id, position in the queue, 0 = starting).
        `images`: (path, description) of each stored upload (uploads.ImageUploads.save); the run keeps the
        descriptions, the date and the evidence sent with the claim (`evidence`) in its options."""
        stored = dict(options or {})
        if date:
            stored["date"] = date
        if evidence:
            stored["evidence"] = list(evidence)
        if images:
            stored["images"] = [info for _, info in images]
        if self.shared:
            return self._submit_shared(
                claim=claim, pipeline=pipeline, config=config, qa=qa, options=stored, images=images, request=request
            )
        with self._lock:
            if self._closed:
                raise ApiError(
                    503,
                    "shutting_down",
                    "the server is shutting down: try again in a moment",
                    headers={"Retry-After": "5"},
                )
            running = len(self._live) - len(self._waiting)
            if running >= self.max_concurrent and len(self._waiting) >= self.max_queue:
                raise ApiError(
                    503,
                    "queue_full",
                    f"{len(self._waiting)} checks are already waiting (the limit): try again in a minute",
                    headers={"Retry-After": "60"},
                )
            run_id = new_run_id()
            self.store.create(
                run_id,
                claim=claim,
                pipeline=pipeline.name,
                qa=qa,
                model=config.model,
                options=stored,
                image_files=[info["file"] for _, info in images or []],
                request=request,
            )
            live = LiveRun(run_id)
            self._live[run_id] = live
            self._waiting.append(run_id)
            position = max(0, len(self._waiting) - max(0, self.max_concurrent - running))
            job = Job(
                run_id,
                claim,
                pipeline,
                config,
                config.model,
                dict(options or {}),
                images=[path for path, _ in images or []],
                date=date,
                evidence=list(evidence or []),
            )
            live.future = self._executor.submit(self._execute, job)
        return run_id, position

    def _submit_shared(
        self,
        *,
        claim: str,
        pipeline: Pipeline,
        config: Config,
        qa: str | None,
        options: dict[str, Any],
        images: list[tuple[str, dict[str, Any]]] | None,
        request: dict[str, Any] | None,
    ) -> tuple[str, int]:
        """Put the run in the database's queue, for whichever worker is free (this one included)."""
        if self._closed:
            raise ApiError(
                503, "shutting_down", "the server is shutting down: try again in a moment", headers={"Retry-After": "5"}
            )
        if request is None:
            raise ApiError(400, "not_shareable", f"pipeline {pipeline.name!r} cannot run on the shared queue")
        waiting = self.store.queued_count()
        if waiting >= self.max_queue:
            raise ApiError(
                503,
                "queue_full",
                f"{waiting} checks are already waiting (the limit): try again in a minute",
                headers={"Retry-After": "60"},
            )
        run_id = new_run_id()
        self.store.create(
            run_id,
            claim=claim,
            pipeline=pipeline.name,
            qa=qa,
            model=config.model,
            options=options,
            image_files=[info["file"] for _, info in images or []],
            request=request,
            owned=False,
        )
        self._wake.set()
        with self._lock:
            free = self.max_concurrent - len(self._live)
        position = self.store.queue_position(run_id) or 0
        return run_id, 0 if position <= free else position

    def queue_position(self, run_id: str) -> int | None:
        """1 for the next to start; None when not waiting."""
        if self.shared:
            return self.store.queue_position(run_id)
        with self._lock:
            try:
                return self._waiting.index(run_id) + 1
            except ValueError:
                return None

    def counts(self) -> dict[str, int]:
        if self.shared:  # running here; waiting for any worker
            with self._lock:
                running = len(self._live)
            return {"running": running, "queued": self.store.queued_count()}
        with self._lock:
            return {"running": len(self._live) - len(self._waiting), "queued": len(self._waiting)}

    # -- the shared queue and the leases (threads) ---------------------------------------------------------

    def _claim_loop(self) -> None:
        """One of `max_concurrent` slots: claim the oldest waiting run of the database, run it, again."""
        while not self._stop.is_set():
            try:
                run = self.store.claim()
            except Exception:  # noqa: BLE001 - the database is unreachable for a moment: try again
                log.exception("could not read the shared queue")
                self._stop.wait(2.0)
                continue
            if run is None:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            self._wake.set()  # there may be more: the next free slot looks at once
            live = LiveRun(run["id"], status=st.RUNNING)
            with self._lock:
                self._live[run["id"]] = live
            try:
                job = self.rebuild(run)
            except (ApiError, UserError) as e:  # e.g. this worker does not offer the run's model
                error = short_error(getattr(e, "detail", None) or str(e))
                with live.lock:
                    self.store.fail(run["id"], error)
                    self._finish(live, {"status": st.FAILED, "error": error})
                continue
            except Exception:  # noqa: BLE001
                log.exception("run %s could not be rebuilt", run["id"])
                with live.lock:
                    self.store.fail(run["id"], INTERNAL_ERROR)
                    self._finish(live, {"status": st.FAILED, "error": INTERNAL_ERROR})
                continue
            self._run(job, live)

    def _heartbeat(self) -> None:
        """Renew the leases of this worker's runs, stop those it no longer holds, mark dead workers' runs
        interrupted. Every third of a lease."""
        while not self._stop.wait(st.LEASE_SECONDS / 3):
            try:
                with self._lock:
                    ids = list(self._live)
                for run_id in self.store.renew(ids):
                    with self._lock:
                        live = self._live.get(run_id)
                    if live is not None:
                        run = self.store.get(run_id)
                        with live.lock:
                            live.stopped = live.stopped or "deleted"
                            if live.final is None:
                                self._finish(live, final_event(run) if run else {"status": "deleted"})
                with self._lock:
                    still = set(self._live)
                reaped = self.store.reap(still)
                if reaped:
                    log.warning("marked %d run(s) of stopped workers interrupted: %s", len(reaped), ", ".join(reaped))
            except Exception:  # noqa: BLE001 - the database is unreachable for a moment: next beat
                log.exception("heartbeat failed")

    # -- running (worker threads) --------------------------------------------------------------------

    def _execute(self, job: Job) -> None:
        live = self._live.get(job.run_id)
        if live is None:
            return
        with self._lock:
            try:
                self._waiting.remove(job.run_id)
            except ValueError:
                pass
        with live.lock:
            if live.stopped:
                return
            live.status = st.RUNNING
            self.store.mark_running(job.run_id)
            live.publish("status", None, {"status": st.RUNNING})
        self._run(job, live)

    def _run(self, job: Job, live: LiveRun) -> None:
        """Run a job this worker holds (running, leased): its steps to the store and the subscribers, then its
        verdict or its failure."""

        def listener(step: Step) -> None:
            d = step.to_dict()
            with live.lock:
                if live.stopped:
                    raise RunStopped(live.stopped)
                seq = len(live.steps)
                if not self.store.add_step(job.run_id, seq, d):  # deleted, or taken for dead meanwhile
                    live.stopped = "deleted"
                    raise RunStopped(live.stopped)
                live.steps.append(d)
                live.publish("step", seq, d)

        try:
            model = self.catalog.model(job.model)
            claim = Claim(text=job.claim, images=list(job.images), date=job.date, metadata=job.metadata)
            from ..retrieval.index import given_evidence

            retriever = given_evidence([("", t) for t in job.evidence]) if job.evidence else self.retriever
            result = run_check(claim, job.pipeline, model, job.config, retriever=retriever, listeners=[listener])
            out = result.to_dict()
            with live.lock:
                if live.stopped:
                    return
                self.store.finish(job.run_id, out)
                final = {
                    "status": st.DONE,
                    "verdict": out["verdict"],
                    "usage": out["usage"],
                    "seconds": out["seconds"],
                    "model": out["model"],
                }
                self._finish(live, final)
            return
        except RunStopped:
            with live.lock:
                if live.final is None:  # stopped by the store (deleted, or reaped), not by this process
                    run = self.store.get(job.run_id)
                    self._finish(live, final_event(run) if run else {"status": "deleted"})
            return
        except BackendError as e:  # unreachable included: the page says it plainly (errors.failure_view)
            error = backend_error(str(e), search=is_search_error(e))
            log.warning("run %s failed: %s", job.run_id, e)
        except DatabaseUnavailable as e:  # its steps can be neither stored nor failed: interrupted, as it will read
            log.warning("run %s stopped: %s", job.run_id, e)
            with live.lock:
                if not live.stopped:
                    self._finish(live, {"status": st.INTERRUPTED, "error": st.LOST_DATABASE})
            return
        except UserError as e:
            log.warning("run %s failed: %s", job.run_id, e)
            error = short_error(str(e))
        except Exception:  # noqa: BLE001 - a failed run is stored and shown, never lost
            # the exception's text may quote a prompt: it stays in this log, the user gets a short line
            log.exception("run %s failed", job.run_id)
            error = INTERNAL_ERROR
        with live.lock:
            if live.stopped:
                return
            try:
                self.store.fail(job.run_id, error)
            except Exception:  # noqa: BLE001 - e.g. the disk is full: still end the live run
                log.exception("could not store the failure of run %s", job.run_id)
            self._finish(live, {"status": st.FAILED, "error": error})

    def _finish(self, live: LiveRun, final: dict[str, Any]) -> None:
        """Call with live.lock held: tell the subscribers, forget the live run (the store has it all)."""
        live.final = final
        live.status = final["status"]
        live.publish(DONE_MARK, None, final)
        live.subscribers.clear()
        with self._lock:
            self._live.pop(live.run_id, None)

    # -- watching ----------------------------------------------------------------------------------

    def subscribe(
        self, run_id: str, loop: asyncio.AbstractEventLoop
    ) -> tuple[list[dict[str, Any]], str, Subscriber | None, dict[str, Any] | None] | None:
        """For a live run: (steps so far, status, a subscriber for what follows, final event if it just ended).
        None when the run is not live (finished earlier, or unknown): read it from the store instead."""
        with self._lock:
            live = self._live.get(run_id)
        if live is None:
            return subscribe_remote(self.store, run_id, loop) if self.shared else None
        with live.lock:
            snapshot = list(live.steps)
            if live.final is not None:
                return snapshot, live.status, None, live.final
            sub = Subscriber(loop)
            live.subscribers.append(sub)
            return snapshot, live.status, sub, None

    async def follow(self, run_id: str, on_step: Callable[[dict[str, Any]], Awaitable[None]]) -> dict[str, Any] | None:
        """Wait for a live run to end: each of its steps (those so far, then each as it is emitted) goes to
        `on_step`; returns its final event. None when the run is not live (it ended before, or never was): the
        store has it."""
        live = self.subscribe(run_id, asyncio.get_running_loop())
        if live is None:
            return None
        snapshot, _, sub, final = live
        for data in snapshot:
            await on_step(data)
        if sub is None:
            return final or {}
        try:
            while True:
                kind, _, data = await sub.queue.get()
                if kind == "step":
                    await on_step(data)
                elif kind == DONE_MARK:
                    return data
        finally:
            self.unsubscribe(run_id, sub)

    def unsubscribe(self, run_id: str, sub: Subscriber) -> None:
        if sub.task is not None:
            sub.task.cancel()
        with self._lock:
            live = self._live.get(run_id)
        if live is not None:
            with live.lock:
                if sub in live.subscribers:
                    live.subscribers.remove(sub)

    # -- stopping ----------------------------------------------------------------------------------

    def delete(self, run_id: str) -> bool:
        """Delete a run; a queued one never starts, a running one stops at its next step."""
        with self._lock:
            live = self._live.get(run_id)
        if live is None:
            return self.store.delete(run_id)
        with live.lock:
            live.stopped = "deleted"
            if live.future is not None:
                live.future.cancel()
            self.store.delete(run_id)
            self._finish(live, {"status": "deleted"})
        with self._lock:
            if run_id in self._waiting:
                self._waiting.remove(run_id)
        return True

    def shutdown(self) -> None:
        """Stop taking runs; mark the live ones interrupted (their threads stop at their next step)."""
        self._stop.set()
        self._wake.set()
        with self._lock:
            self._closed = True
            lives = list(self._live.values())
            self._waiting.clear()
        for live in lives:
            self._interrupt(live, "shutdown", "the server stopped before this run finished")
        self._executor.shutdown(wait=False, cancel_futures=True)

    def cancel(self, run_id: str, reason: str) -> None:
        """Stop a live run and keep it as interrupted, with `reason` (e.g. the client that waited for it went
        away): a queued one never starts, a running one stops at its next step. A finished run stays as it is."""
        with self._lock:
            live = self._live.get(run_id)
            if run_id in self._waiting:
                self._waiting.remove(run_id)
        if live is not None:
            self._interrupt(live, "cancelled", reason)

    def _interrupt(self, live: LiveRun, why: str, reason: str) -> None:
        with live.lock:
            if live.final is not None:
                return
            live.stopped = why
            if live.future is not None:
                live.future.cancel()
            self.store.fail(live.run_id, reason, status=st.INTERRUPTED)
            self._finish(live, {"status": st.INTERRUPTED, "error": reason})
