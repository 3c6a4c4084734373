"""Pipelines by name, above the systems that define them.

Each system (QACheck in `qacheck/`, the baselines in `baselines/`, DEFAME in `defame/`, LEAF in `leaf/`)
registers its pipelines and ablations with `veracity.pipeline.register`; this module imports them all and
builds one by name. The systems import nothing from here, so there is no import circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import UserError
from .pipeline import REGISTRY, Pipeline, PipelineSpec

if TYPE_CHECKING:
    from .config import Config
    from .steps import Step


def _register_all() -> None:
    # imported for their registration side effects
    from .baselines import evidence as _evidence  # noqa: F401  (verifier, lexical)
    from .baselines import pipeline as _baselines  # noqa: F401  (direct, cot)
    from .defame import pipeline as _defame  # noqa: F401  (defame and its ablations)
    from .leaf import pipelines as _leaf  # noqa: F401  (answer:plain, answer:rag, answer:fc-rag, ...)
    from .qacheck import pipeline as _qacheck  # noqa: F401  (qacheck, its QA modes and ablations)


def load_step_types() -> dict[str, type[Step]]:
    """Every system's step types by stage name, so that stored steps read back as their types (each system's
    package registers its `steps` module when imported). The steps of what sits above the systems, a recheck
    (evidence/steps.py) and a checked text (textcheck/steps.py), are registered by their own packages, which the
    server imports at its start (server/views.py)."""
    from . import baselines, defame, leaf, qacheck  # noqa: F401  (imported for their registration)
    from .factchecks import steps  # noqa: F401
    from .steps import STEP_TYPES

    return STEP_TYPES


def get_pipeline(name: str, config: Config) -> Pipeline:
    _register_all()
    if name not in REGISTRY:
        raise UserError(f"unknown pipeline {name!r}; choose one of: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name].factory(config, name)


def available_pipelines() -> dict[str, str]:
    _register_all()
    return {k: v.description for k, v in sorted(REGISTRY.items())}


def pipeline_specs() -> dict[str, PipelineSpec]:
    """Every registered pipeline's declaration (what it needs and accepts), by name."""
    _register_all()
    return dict(sorted(REGISTRY.items()))
