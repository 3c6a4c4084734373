"""Usage accounting: model calls, tokens, seconds and cost, per pipeline stage."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Usage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_prompt_tokens: int = 0  # prompt tokens served from a kept model state (embedded backend)
    seconds: float = 0.0  # model time (latency of uncached calls)
    cost: float = 0.0

    def add(self, other: Usage) -> None:
        for k in asdict(self):
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["seconds"] = round(d["seconds"], 4)
        d["cost"] = round(d["cost"], 6)
        return d


class UsageMeter:
    """Collects usage per stage for one pipeline run. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_stage: dict[str, Usage] = {}

    def record(
        self,
        stage: str,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        seconds: float,
        cost: float = 0.0,
        cached: bool = False,
        reused_prompt_tokens: int = 0,
    ) -> None:
        with self._lock:
            u = self.by_stage.setdefault(stage or "other", Usage())
            u.calls += 1
            u.cached_calls += int(cached)
            u.prompt_tokens += prompt_tokens
            u.completion_tokens += completion_tokens
            u.reused_prompt_tokens += 0 if cached else reused_prompt_tokens
            u.seconds += 0.0 if cached else seconds
            u.cost += 0.0 if cached else cost

    def add(self, usage: dict[str, Any]) -> None:
        """Add another run's usage (`to_dict()`), stage by stage: a text's checks summed on the text's meter."""
        with self._lock:
            for stage, d in (usage.get("by_stage") or {}).items():
                self.by_stage.setdefault(stage, Usage()).add(Usage(**d))

    @property
    def total(self) -> Usage:
        t = Usage()
        with self._lock:
            for u in self.by_stage.values():
                t.add(u)
        return t

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total.to_dict(), "by_stage": {k: v.to_dict() for k, v in self.by_stage.items()}}
