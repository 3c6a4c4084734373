"""`Model`: a backend plus the persistent cache; `RunModel`: a model bound to one run's meter and tracer."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .base import Backend, Choice, Completion, CompletionRequest
from .cache import ResponseCache, stable_key
from .usage import UsageMeter

if TYPE_CHECKING:
    from ..trace import Tracer


class Model:
    def __init__(self, backend: Backend, cache: ResponseCache | None = None) -> None:
        self.backend = backend
        self.cache = cache

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def accepts_images(self) -> bool:
        return self.backend.accepts_images

    def gives_confidences(self) -> bool | None:
        return self.backend.gives_confidences()

    def _key(self, kind: str, request: CompletionRequest, extra: dict | None = None) -> str:
        return stable_key(
            {"model": self.backend.model_id, "kind": kind, "request": request.key_dict(), **(extra or {})}
        )

    def complete(self, request: CompletionRequest) -> Completion:
        key = self._key("complete", request)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return replace(Completion.from_dict(hit), cached=True)
        out = self.backend.complete(request)
        if self.cache is not None:
            self.cache.put(key, out.to_dict(), kind="complete", model=self.backend.model_id)
        return out

    def choose(self, request: CompletionRequest, options: list[str]) -> Choice:
        key = self._key("choose", request, {"options": list(options)})
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            ch = Choice.from_dict(hit)
            ch.usage.cached = True
            return ch
        out = self.backend.choose(request, list(options))
        if self.cache is not None:
            self.cache.put(key, out.to_dict(), kind="choose", model=self.backend.model_id)
        return out

    def bind(self, meter: UsageMeter, tracer: Tracer | None = None) -> RunModel:
        return RunModel(self, meter, tracer)


class RunModel:
    """What a pipeline holds: every call is metered under its stage and traced as a model_call."""

    def __init__(self, model: Model, meter: UsageMeter, tracer: Tracer | None) -> None:
        self.model = model
        self.meter = meter
        self.tracer = tracer

    @property
    def model_id(self) -> str:
        return self.model.model_id

    @property
    def accepts_images(self) -> bool:
        return self.model.accepts_images

    @property
    def parallel(self) -> bool:
        """Whether calls from several threads run together (a server with parallel slots), so a pipeline may
        send independent calls at once; False: they would only queue on one in-process model."""
        return bool(getattr(self.model.backend, "parallel", False))

    def map_in_order(
        self, fn: Callable[[Any, RunModel, Tracer], Any], items: Iterable[Any], *, workers: int, tracer: Tracer
    ) -> list[Any]:
        """[fn(item, model, tracer) for each item]: one after the other, or, where calls overlap (`parallel`), up to
        `workers` at once, each with a model and tracer of its own whose steps are told on `tracer` in the items'
        order as each is done, so the trace reads as if they had run one after the other."""
        items = list(items)
        workers = min(workers, len(items)) if self.parallel else 1
        if workers <= 1:
            return [fn(item, self, tracer) for item in items]
        from concurrent.futures import ThreadPoolExecutor

        from ..trace import Tracer

        def one(item: Any) -> tuple[Any, Tracer]:
            own = Tracer()
            return fn(item, RunModel(self.model, self.meter, own), own), own

        out = []
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="model-calls") as pool:
            for future in [pool.submit(one, item) for item in items]:
                value, own = future.result()
                for step in own.steps:
                    tracer.emit(step)
                out.append(value)
        return out

    def _record(self, stage: str, c: Completion, method: str = "") -> None:
        self.meter.record(
            stage,
            prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens,
            seconds=c.latency_s,
            cost=c.cost,
            cached=c.cached,
            reused_prompt_tokens=c.reused_prompt_tokens,
        )
        if self.tracer is not None:
            self.tracer.emit(
                "model_call",
                for_stage=stage,
                prompt_tokens=c.prompt_tokens,
                completion_tokens=c.completion_tokens,
                reused=c.reused_prompt_tokens,
                seconds=round(c.latency_s, 4),
                cached=c.cached,
                **({"method": method} if method else {}),
            )

    def complete(self, request: CompletionRequest, *, stage: str) -> Completion:
        out = self.model.complete(request)
        self._record(stage, out)
        return out

    def choose(self, request: CompletionRequest, options: list[str], *, stage: str) -> Choice:
        out = self.model.choose(request, options)
        self._record(stage, out.usage, out.method)
        return out
