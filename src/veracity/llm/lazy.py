"""A backend loaded on its first call: for runs that may never call the model (`veracity check-text --pipeline
verifier` with the claims split by the rules), so that an in-process model is not loaded for nothing.

Its `model_id` is known before loading (the cache keys and the run's record need it), and is the id the loaded
backend reports, so a lazy model and an eager one share cache entries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .base import Backend, Choice, Completion, CompletionRequest


class LazyBackend(Backend):
    def __init__(self, build: Callable[[], Backend], model_id: str) -> None:
        self._build = build
        self._backend: Backend | None = None
        self._lock = threading.Lock()
        self.model_id = model_id

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def backend(self) -> Backend:
        """The real backend, built on the first call (once, whichever thread asks first)."""
        with self._lock:
            if self._backend is None:
                self._backend = self._build()
            return self._backend

    def _complete(self, request: CompletionRequest) -> Completion:
        return self.backend().complete(request)

    def complete(self, request: CompletionRequest) -> Completion:
        return self.backend().complete(request)

    def choose(self, request: CompletionRequest, options: list[str]) -> Choice:
        return self.backend().choose(request, options)

    def gives_confidences(self) -> bool | None:
        return self._backend.gives_confidences() if self._backend is not None else None

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()

    def __getattr__(self, name: str) -> Any:  # anything else a caller reads from the backend (e.g. `runtime`)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.backend(), name)
