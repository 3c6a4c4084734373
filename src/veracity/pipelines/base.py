"""The pipeline protocol, the run context, and the registry of pipelines by name."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..errors import UserError
from ..types import BINARY_LABELS, Claim, Verdict

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.model import RunModel
    from ..llm.usage import UsageMeter
    from ..retrieval.base import Retriever
    from ..trace import Tracer


@dataclass
class Context:
    """Everything one check may use: the metered model, retrieval, the tracer and the config."""

    model: "RunModel"
    tracer: "Tracer"
    meter: "UsageMeter"
    config: "Config"
    retriever: "Retriever | None" = None


class Pipeline(ABC):
    name: str = ""
    labels: tuple[str, ...] = BINARY_LABELS
    description: str = ""
    #: what the pipeline checks: "claim" (a statement), or "multiple_choice" (a question whose options are in
    #: `claim.metadata["options"]`); front ends offer a pipeline only for inputs it takes
    input_kind: str = "claim"
    #: whether the pipeline looks at `claim.images` (front ends show an image field only then)
    accepts_images: bool = False

    @abstractmethod
    def check(self, claim: Claim, ctx: Context) -> Verdict: ...

    def needs_retriever(self, config: "Config") -> bool:
        return False


Factory = Callable[["Config"], Pipeline]
REGISTRY: dict[str, tuple[Factory, str]] = {}


def register(name: str, description: str) -> Callable[[Factory], Factory]:
    def deco(factory: Factory) -> Factory:
        REGISTRY[name] = (factory, description)
        return factory
    return deco


def get_pipeline(name: str, config: "Config") -> Pipeline:
    from . import baselines, qacheck  # noqa: F401  (registration side effects)
    from ..leaf import pipelines as _leaf  # noqa: F401  (answer:plain, answer:rag, answer:fc-rag, ...)

    if name not in REGISTRY:
        raise UserError(f"unknown pipeline {name!r}; choose one of: {', '.join(sorted(REGISTRY))}")
    pipe = REGISTRY[name][0](config)
    pipe.name = name
    return pipe


def available_pipelines() -> dict[str, str]:
    from . import baselines, qacheck  # noqa: F401
    from ..leaf import pipelines as _leaf  # noqa: F401

    return {k: v[1] for k, v in sorted(REGISTRY.items())}
