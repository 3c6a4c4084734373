"""One event stream for everything that happens during a check.

Every stage of a pipeline emits typed steps (`veracity.steps`) to the run's `Tracer`: `emit(step)`, or
`emit(stage, **fields)`, which builds the step type declared for that stage. The CLI prints them as they
arrive, the server streams and stores them, the report renders them, the JSON output and the evaluation
runner store them (`to_list`: each step's `to_dict()`). Nothing re-derives a trace from anything else.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .steps import Listener, Step, make_step

__all__ = ["Listener", "Step", "Tracer"]


class Tracer:
    def __init__(self, listeners: list[Listener] | None = None) -> None:
        self.steps: list[Step] = []
        self._listeners = list(listeners or [])
        self._t0 = time.perf_counter()
        self._lock = threading.Lock()

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def emit(self, step: Step | str, /, **data: Any) -> Step:
        """Record a step: a typed step, or a stage name and its fields (the stage's declared type is built)."""
        if isinstance(step, str):
            step = make_step(step, data)
        elif data:
            raise TypeError("emit(step) takes no fields besides the step")
        step.t = time.perf_counter() - self._t0
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
