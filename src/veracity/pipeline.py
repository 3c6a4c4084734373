"""The pipeline protocol, the run context, and the registry of pipelines by name.

Shared, below the systems: each system (`qacheck/`, `baselines/`, `defame/`, `leaf/`) registers its
pipelines and ablations here with `register`; `veracity.registry` imports the systems and builds one by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .errors import UserError
from .types import BINARY_LABELS, Claim, Verdict

if TYPE_CHECKING:
    from .config import Config
    from .llm.model import RunModel
    from .llm.usage import UsageMeter
    from .retrieval.base import Retriever
    from .trace import Tracer


@dataclass
class Context:
    """Everything one check may use: the metered model, retrieval, the tracer and the config."""

    model: "RunModel"
    tracer: "Tracer"
    meter: "UsageMeter"
    config: "Config"
    retriever: "Retriever | None" = None
    #: the label set the caller scores against (an evaluation's dataset), and its rules; None: the
    #: pipeline's own. Pipelines that can predict any label set (DEFAME) judge with these.
    labels: tuple[str, ...] | None = None
    label_rules: str = ""


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
    """Class decorator of a system's pipeline factory; `veracity.registry` imports every system and looks them up."""
    def deco(factory: Factory) -> Factory:
        REGISTRY[name] = (factory, description)
        return factory
    return deco
