"""The pipeline protocol, the run context, and the registry of pipelines by name.

Shared, below the systems: each system (`qacheck/`, `baselines/`, `defame/`, `leaf/`) registers its
pipelines and ablations here with `register`; `veracity.registry` imports the systems and builds one by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

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

    model: RunModel
    tracer: Tracer
    meter: UsageMeter
    config: Config
    retriever: Retriever | None = None
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
    #: whether the pipeline calls the language model (the evidence-only `verifier` and `lexical` do not: front ends
    #: then name no model as the one deciding)
    asks_model: bool = True

    @abstractmethod
    def check(self, claim: Claim, ctx: Context) -> Verdict: ...

    def model_shown(self, model_id: str) -> str:
        """The model as a front end names it beside this pipeline: none for one that asks no model."""
        return model_id if self.asks_model else "none (the trained verifier decides: no language model call)"

    def needs_retriever(self, config: Config) -> bool:
        return False


Factory = Callable[["Config", str], Pipeline]  # (config, the registered name) -> the pipeline
INDEX_RULES = ("never", "always", "retriever-reader", "local-search")


@dataclass(frozen=True)
class PipelineSpec:
    """What a registered pipeline needs and accepts, declared once where it is registered, so that the CLI, the
    server and the evaluation ask the registry instead of building pipelines to probe them."""

    name: str
    description: str
    factory: Factory
    kind: type[Pipeline]  # the class the factory builds: its input_kind, accepts_images and labels
    qa: str | None = None  # "choice": follows the configured QA module; a QA module's name: fixed; None: has none
    index: str = "never"  # never | always | retriever-reader (when its QA module is) | local-search (defame.search)

    @property
    def input_kind(self) -> str:
        return self.kind.input_kind

    @property
    def accepts_images(self) -> bool:
        return self.kind.accepts_images

    @property
    def labels(self) -> tuple[str, ...]:
        return self.kind.labels

    def qa_module(self, config: Config, qa: str | None = None) -> str | None:
        """The QA module a run uses: the request's or the configured one where it is a choice."""
        if self.qa == "choice":
            return qa or config.qacheck.qa
        return self.qa

    def needs_index(self, config: Config, qa: str | None = None) -> bool:
        if self.index == "retriever-reader":
            return self.qa_module(config, qa) == "retriever-reader"
        if self.index == "local-search":
            return config.defame.search == "local"
        return self.index == "always"

    def always_needs_index(self, config: Config) -> bool:
        """Needs an index whatever QA module a request picks (so it cannot run where there is none)."""
        return self.needs_index(config, "closed-book") and self.needs_index(config, "reciter-reader")


REGISTRY: dict[str, PipelineSpec] = {}

#: the QA module that answers QACheck's questions when a check is given the evidence to read and names no QA module:
#: the questions are then answered from what was given, not recited from the model's memory
QA_WITH_EVIDENCE = "retriever-reader"


def qa_for(qa: str | None, evidence_given: bool) -> str | None:
    """The QA module a check names, else QA_WITH_EVIDENCE when it gives the evidence to read (else None: the
    configured one). The CLI, the HTTP API, MCP and the page share this rule."""
    return qa or (QA_WITH_EVIDENCE if evidence_given else None)


def register(
    name: str, description: str, *, kind: type[Pipeline], qa: str | None = None, index: str = "never"
) -> Callable[[Factory], Factory]:
    """Register a system's pipeline factory with what it needs and accepts; `veracity.registry` imports every
    system and looks them up."""
    if index not in INDEX_RULES:
        raise ValueError(f"index must be one of {INDEX_RULES}, not {index!r}")

    def deco(factory: Factory) -> Factory:
        REGISTRY[name] = PipelineSpec(name, description, factory, kind, qa, index)
        return factory

    return deco
