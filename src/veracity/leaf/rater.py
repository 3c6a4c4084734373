"""The rater: the model that fact-checks answers, chosen independently of the answering model.

`leaf.rater_model` (config) or `--rater-model` (CLI) names it with the usual model specs
(`embedded`, `gguf:PATH`, `openai:NAME`, `NAME` with `leaf.rater_base_url`, `scripted:FILE`); when
unset, the answering model rates its own answers. Its calls are metered and traced in the same run
as the answering model's, under the stages `leaf_query` and `leaf_rating`.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.model import Model, RunModel
    from ..pipeline import Context

_LOCAL = ("embedded", "gguf:", "openai:", "scripted:")


def rater_config(config: Config) -> Config | None:
    """The configuration of the rater's backend, or None when the answering model rates."""
    spec = config.leaf.rater_model
    if not spec:
        return None
    base_url = config.leaf.rater_base_url
    if base_url is None and not spec.startswith(_LOCAL):
        base_url = config.base_url  # a bare NAME: the same OpenAI-compatible server as the answering model
    return replace(config, model=spec, base_url=base_url)


class Rater:
    """Builds the rater's `Model` once, on first use, and binds it to each run."""

    def __init__(self, config: Config, model: Model | None = None) -> None:
        self.config = rater_config(config)
        self._model = model
        self._lock = threading.Lock()

    @property
    def separate(self) -> bool:
        return self._model is not None or self.config is not None

    def model(self) -> Model | None:
        if self._model is None and self.config is not None:
            with self._lock:
                if self._model is None:
                    from ..llm import make_model

                    self._model = make_model(self.config)
        return self._model

    def bind(self, ctx: Context) -> RunModel:
        m = self.model()
        return ctx.model if m is None else m.bind(ctx.meter, ctx.tracer)
