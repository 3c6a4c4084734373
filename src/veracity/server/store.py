"""Storage of runs and their steps, in SQLite (the embedded default) or PostgreSQL (`--db postgresql://...`,
shared by several workers): one code path for both (`veracity.db.connection`), the schema kept by numbered
migrations (`veracity.db.migrations`).

One row per run (what was asked, its status, the verdict and usage once finished) and one row per
trace step, in the order the run's tracer emitted them: the steps table *is* the run's trace, written
by the tracer listener as each step happens, never rebuilt from anything else.

Every queued or running run has a `worker` that holds it and a lease (`lease_until`, on the database's clock)
that the worker's heartbeat renews; a run in the shared queue (PostgreSQL, `veracity serve`) has no worker until
one claims it (`claim`). A finished run keeps the worker that ran it. A run whose worker died cannot resume (the model state is gone): `reap` marks it
`interrupted` once its lease has run out (at once when its worker was a process of this machine that is no longer
alive), keeping the steps it got through; it is never silently lost, and never run twice.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from ..db.connection import Database
from ..db.migrations import migrate
from .safe import mend, mend_text

QUEUED, RUNNING, DONE, FAILED, INTERRUPTED = "queued", "running", "done", "failed", "interrupted"
#: why a run was interrupted: its worker is gone, or the run database was unreachable while it ran
WORKER_GONE = "the server stopped before this run finished (the worker running it is gone; its steps so far are kept)"
LOST_DATABASE = (
    "the run database became unreachable while this run ran, so it stopped (its steps so far are kept); start it again"
)
STATUSES = (QUEUED, RUNNING, DONE, FAILED, INTERRUPTED)
UNFINISHED = (QUEUED, RUNNING)
LEASE_SECONDS = 15.0  # a worker that has not renewed its runs' leases for this long is taken for dead

_RUN_COLUMNS = (
    "id",
    "created",
    "started",
    "finished",
    "status",
    "claim",
    "pipeline",
    "qa",
    "model",
    "options",
    "label",
    "confidence",
    "result",
    "seconds",
    "error",
    "uncertain",
)
_LIST_COLUMNS = ", ".join(k for k in _RUN_COLUMNS if k != "result")


def _json_or(text: str | None, default: Any) -> Any:
    """Stored JSON, or `default` when the column is empty or not JSON (a damaged database still reads)."""
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def worker_id() -> str:
    """This process as a worker: its machine, its process id and a random part (a process id can come back)."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{os.urandom(3).hex()}"


def _dead_here(worker: str | None) -> bool:
    """Whether `worker` was a process of this machine that is no longer alive."""
    host, _, rest = (worker or "").partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname()[:60] or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


class RunStore:
    def __init__(self, db: str | Path | Database) -> None:
        self.db = db if isinstance(db, Database) else Database(str(db))
        self.worker = worker_id()
        migrate(self.db)

    @property
    def path(self) -> str:
        """Where the runs are, as messages name it (a PostgreSQL URL without its password)."""
        return self.db.shown()

    @property
    def shared(self) -> bool:
        """Whether other processes, on other machines too, may work on this store (PostgreSQL)."""
        return self.db.is_postgres

    def close(self) -> None:
        self.db.close()

    # -- writing ----------------------------------------------------------------------------------

    def create(
        self,
        run_id: str,
        *,
        claim: str,
        pipeline: str,
        qa: str | None,
        model: str,
        options: dict[str, Any] | None = None,
        image_files: list[str] | None = None,
        request: dict[str, Any] | None = None,
        owned: bool = True,
    ) -> None:
        """A new queued run. `owned`: this worker runs it (it holds a lease from now); otherwise it waits in the
        shared queue for any worker (`claim`), with `request` saying how to run it."""
        options = mend(options or {})
        rechecks = options.get("rechecks")
        now = self.db.now_sql()
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO runs (id, created, status, claim, pipeline, qa, model, options, request, rechecks, "
                f"worker, lease_until) VALUES (?,?,?,?,?,?,?,?,?,?,?,{now} + ?)",
                (
                    run_id,
                    time.time(),
                    QUEUED,
                    mend_text(claim),
                    pipeline,
                    qa,
                    model,
                    json.dumps(options),
                    json.dumps(mend(request), ensure_ascii=False) if request is not None else None,
                    rechecks if isinstance(rechecks, str) else None,
                    self.worker if owned else None,
                    LEASE_SECONDS if owned else None,
                ),
            )
            self.db.executemany(
                "INSERT INTO run_images (run_id, file) VALUES (?,?) ON CONFLICT DO NOTHING",
                [(run_id, f) for f in image_files or []],
            )

    def mark_running(self, run_id: str) -> None:
        self.db.execute(
            f"UPDATE runs SET status=?, started=?, worker=?, lease_until={self.db.now_sql()} + ? WHERE id=?",
            (RUNNING, time.time(), self.worker, LEASE_SECONDS, run_id),
        )

    def add_step(self, run_id: str, seq: int, step: dict[str, Any]) -> bool:
        """Append a step to a run this worker holds; False (nothing written) when it holds it no more: the run
        was deleted, or another worker took this one for dead and marked the run interrupted."""
        return (
            self.db.execute(
                "INSERT INTO steps (run_id, seq, stage, data) SELECT ?,?,?,? WHERE EXISTS "
                "(SELECT 1 FROM runs WHERE id=? AND worker=?)",
                (
                    run_id,
                    seq,
                    mend_text(str(step.get("stage", ""))),
                    json.dumps(mend(step), ensure_ascii=False, default=str),
                    run_id,
                    self.worker,
                ),
            )
            > 0
        )

    def finish(self, run_id: str, result: dict[str, Any]) -> None:
        """Store a finished run: `result` is CheckResult.to_dict() (its trace is not stored twice). The run's
        `model` stays the name the client chose; the backend's own model id is in the result. Only a run still
        unfinished and this worker's: one marked interrupted meanwhile (its worker taken for dead) stays so."""
        result = mend({k: v for k, v in result.items() if k != "trace"})
        v = result.get("verdict") or {}
        self.db.execute(
            "UPDATE runs SET status=?, finished=?, label=?, confidence=?, result=?, seconds=?, uncertain=?, "
            "lease_until=NULL WHERE id=? AND status IN (?,?) AND (worker=? OR worker IS NULL)",
            (
                DONE,
                time.time(),
                v.get("label"),
                v.get("confidence"),
                json.dumps(result, ensure_ascii=False, default=str),
                result.get("seconds"),
                1 if isinstance(v, dict) and v.get("uncertain") else 0,
                run_id,
                *UNFINISHED,
                self.worker,
            ),
        )

    def fail(self, run_id: str, error: str, status: str = FAILED) -> None:
        self.db.execute(
            "UPDATE runs SET status=?, finished=?, error=?, lease_until=NULL WHERE id=? "
            "AND status IN (?,?) AND (worker=? OR worker IS NULL)",
            (status, time.time(), mend_text(error), run_id, *UNFINISHED, self.worker),
        )

    def interrupt_unfinished(self, reason: str = "the server stopped before this run finished") -> list[str]:
        """Mark every queued or running run as interrupted (whoever holds it): for a store no other process uses."""
        with self.db.transaction():
            ids = [r["id"] for r in self.db.rows("SELECT id FROM runs WHERE status IN (?,?)", UNFINISHED)]
            self.db.execute(
                "UPDATE runs SET status=?, finished=?, error=?, worker=NULL, lease_until=NULL WHERE status IN (?,?)",
                (INTERRUPTED, time.time(), reason, *UNFINISHED),
            )
        return ids

    def delete(self, run_id: str) -> bool:
        with self.db.transaction():
            n = self.db.execute("DELETE FROM runs WHERE id=?", (run_id,))
            self.db.execute("DELETE FROM steps WHERE run_id=?", (run_id,))
            self.db.execute("DELETE FROM run_images WHERE run_id=?", (run_id,))
        return n > 0

    # -- the queue and the leases -------------------------------------------------------------------

    def claim(self) -> dict[str, Any] | None:
        """The oldest run of the shared queue, now this worker's and running (status, start, lease), or None when
        none waits. Two workers never claim the same run (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: one
        writer at a time)."""
        skip = " FOR UPDATE SKIP LOCKED" if self.db.is_postgres else ""
        with self.db.transaction():
            row = self.db.row(
                "SELECT id FROM runs WHERE status=? AND worker IS NULL ORDER BY created, id LIMIT 1" + skip, (QUEUED,)
            )
            if row is None:
                return None
            self.db.execute(
                f"UPDATE runs SET status=?, started=?, worker=?, lease_until={self.db.now_sql()} + ? WHERE id=?",
                (RUNNING, time.time(), self.worker, LEASE_SECONDS, row["id"]),
            )
            run = self.db.row("SELECT * FROM runs WHERE id=?", (row["id"],))
        out = self._row(run)
        out["request"] = _json_or(run.get("request"), None)
        return out

    def renew(self, run_ids: list[str]) -> set[str]:
        """Renew this worker's leases on `run_ids`; the ids it no longer holds (deleted, or reaped as interrupted
        by another worker that took this one for dead): their runs are to stop."""
        if not run_ids:
            return set()
        marks = ",".join("?" for _ in run_ids)
        held = {
            r["id"]
            for r in self.db.rows(
                f"UPDATE runs SET lease_until={self.db.now_sql()} + ? WHERE worker=? AND status IN (?,?) "
                f"AND id IN ({marks}) RETURNING id",
                (LEASE_SECONDS, self.worker, *UNFINISHED, *run_ids),
            )
        }
        return set(run_ids) - held

    def reap(self, live: set[str] | frozenset[str] | None = None) -> list[str]:
        """Mark interrupted the unfinished runs whose worker is gone: its lease ran out, or it was a process of
        this machine that is no longer alive. Their steps stay. Returns their ids.

        With `live` (the runs this worker is executing), this worker's own runs that it no longer executes and whose
        lease ran out too: a run whose thread ended while the database was unreachable (it could store neither its
        verdict nor its failure) stayed `running` for good, since no other worker takes this one for gone."""
        now = self.db.now_sql()
        candidates = self.db.rows(
            f"SELECT id, worker, lease_until < {now} AS expired FROM runs "
            "WHERE status IN (?,?) AND worker IS NOT NULL AND worker <> ?",
            (*UNFINISHED, self.worker),
        )
        gone = [r for r in candidates if r["expired"] or _dead_here(r["worker"])]
        if live is not None:
            own = self.db.rows(
                f"SELECT id, worker FROM runs WHERE status IN (?,?) AND worker = ? AND lease_until < {now}",
                (*UNFINISHED, self.worker),
            )
            gone += [r for r in own if r["id"] not in live]
        out = []
        for r in gone:
            n = self.db.execute(
                "UPDATE runs SET status=?, finished=?, error=?, lease_until=NULL "
                "WHERE id=? AND worker=? AND status IN (?,?)",
                (
                    INTERRUPTED,
                    time.time(),
                    LOST_DATABASE if r["worker"] == self.worker else WORKER_GONE,
                    r["id"],
                    r["worker"],
                    *UNFINISHED,
                ),
            )
            if n:
                out.append(r["id"])
        return out

    def queue_position(self, run_id: str) -> int | None:
        """A run of the shared queue: 1 for the next to start; None when it does not wait there."""
        row = self.db.row("SELECT created, id FROM runs WHERE id=? AND status=? AND worker IS NULL", (run_id, QUEUED))
        if row is None:
            return None
        return 1 + int(
            self.db.value(
                "SELECT COUNT(*) FROM runs WHERE status=? AND worker IS NULL AND "
                "(created < ? OR (created = ? AND id < ?))",
                (QUEUED, row["created"], row["created"], run_id),
                default=0,
            )
        )

    def queued_count(self) -> int:
        """Runs waiting in the shared queue."""
        return int(self.db.value("SELECT COUNT(*) FROM runs WHERE status=? AND worker IS NULL", (QUEUED,), default=0))

    def take_token(self, client: str, rate_per_minute: int, burst: int) -> float:
        """A token bucket shared by every worker: 0 when `client` may start a check now (a token taken), else the
        seconds until it may."""
        per_second = rate_per_minute / 60.0
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO rate_buckets (client, tokens, updated) VALUES (?,?,?) ON CONFLICT DO NOTHING",
                (client, float(burst), time.time()),
            )
            row = self.db.row(
                "SELECT tokens, updated FROM rate_buckets WHERE client=?"
                + (" FOR UPDATE" if self.db.is_postgres else ""),
                (client,),
            )
            now = time.time()
            tokens = min(float(burst), row["tokens"] + max(0.0, now - row["updated"]) * per_second)
            wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) / per_second
            if wait == 0.0:
                tokens -= 1.0
            self.db.execute("UPDATE rate_buckets SET tokens=?, updated=? WHERE client=?", (tokens, now, client))
        return wait

    # -- reading ----------------------------------------------------------------------------------

    @staticmethod
    def _row(row: dict[str, Any]) -> dict[str, Any]:
        """A run as stored, mended (`safe.mend`): nothing read back can make a response fail. `uncertain`: whether
        its verdict is uncertain, so that a history shows it."""
        d = {k: row[k] for k in _RUN_COLUMNS if k in row}
        d["uncertain"] = bool(d.get("uncertain"))
        d["options"] = _json_or(d.get("options"), {})
        if not isinstance(d["options"], dict):
            d["options"] = {}
        if "result" in d:
            d["result"] = _json_or(d["result"], None)
            if not isinstance(d["result"], dict):
                d["result"] = None
        return mend(d)

    def get(self, run_id: str) -> dict[str, Any] | None:
        row = self.db.row("SELECT * FROM runs WHERE id=?", (run_id,))
        return self._row(row) if row else None

    def request(self, run_id: str) -> dict[str, Any] | None:
        """How a run was asked for (what a worker needs to run it), if it was stored."""
        return _json_or(self.db.value("SELECT request FROM runs WHERE id=?", (run_id,)), None)

    def steps(self, run_id: str, after: int = -1) -> list[tuple[int, dict[str, Any]]]:
        rows = self.db.rows("SELECT seq, data FROM steps WHERE run_id=? AND seq>? ORDER BY seq", (run_id, after))
        out = []
        for r in rows:
            step = _json_or(r["data"], None)
            if not isinstance(step, dict):  # a damaged row: shown as what it is, never a failed read
                step = {"stage": "unreadable", "data": str(r["data"])[:200]}
            out.append((r["seq"], mend(step)))
        return out

    def list(self, limit: int = 20, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """A page of runs, newest first (without their results), and the total count."""
        rows = self.db.rows(
            f"SELECT {_LIST_COLUMNS} FROM runs ORDER BY created DESC, id DESC LIMIT ? OFFSET ?", (limit, offset)
        )
        total = self.db.value("SELECT COUNT(*) FROM runs", default=0)
        return [self._row(r) for r in rows], int(total)

    def rechecks_of(self, run_id: str) -> list[dict[str, Any]]:
        """The rechecks of a run (`veracity recheck`, the page's Re-check button), newest first, without results."""
        rows = self.db.rows(
            f"SELECT {_LIST_COLUMNS} FROM runs WHERE pipeline='recheck' AND rechecks=? ORDER BY created DESC, id DESC",
            (run_id,),
        )
        return [self._row(r) for r in rows]

    def image_files(self, run_id: str) -> list[str]:
        """The uploaded image files a run uses."""
        return [r["file"] for r in self.db.rows("SELECT file FROM run_images WHERE run_id=?", (run_id,))]

    def image_in_use(self, file: str) -> bool:
        return self.db.row("SELECT 1 AS used FROM run_images WHERE file=? LIMIT 1", (file,)) is not None

    def all_image_files(self) -> set[str]:
        return {r["file"] for r in self.db.rows("SELECT DISTINCT file FROM run_images")}

    def count_by_status(self) -> dict[str, int]:
        return {
            r["status"]: int(r["n"]) for r in self.db.rows("SELECT status, COUNT(*) AS n FROM runs GROUP BY status")
        }
