"""One event stream for everything that happens during a check.

Every stage of a pipeline emits typed `Step` events to the run's `Tracer`. The CLI prints them as
they arrive, the report renders them, the JSON output and the evaluation runner store them. Nothing
re-derives a trace from anything else.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Step:
    stage: str  # e.g. "verifier", "question", "answer", "validator", "reasoner", "model_call"
    data: dict[str, Any] = field(default_factory=dict)
    t: float = 0.0  # seconds since the run started

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "t": round(self.t, 4), **self.data}


Listener = Callable[[Step], None]


class Tracer:
    def __init__(self, listeners: list[Listener] | None = None) -> None:
        self.steps: list[Step] = []
        self._listeners = list(listeners or [])
        self._t0 = time.perf_counter()
        self._lock = threading.Lock()

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def emit(self, stage: str, **data: Any) -> Step:
        step = Step(stage=stage, data=data, t=time.perf_counter() - self._t0)
        with self._lock:
            self.steps.append(step)
        for fn in self._listeners:
            fn(step)
        return step

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def to_list(self, *, include_calls: bool = True) -> list[dict[str, Any]]:
        return [s.to_dict() for s in self.steps if include_calls or s.stage != "model_call"]
