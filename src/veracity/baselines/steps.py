"""The baselines' steps: the direct label, and chain-of-thought's rationale and label (see `veracity.steps`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..steps import Fold, Reasoning, Step, step_type


@step_type
@dataclass(kw_only=True)
class Direct(Step):
    """The label asked for right away."""

    kind: ClassVar[str] = "direct"
    label: str = ""
    confidence: float | None = None

    def fold(self, view: Fold) -> None:
        view.append(
            {
                "kind": "reasoning",
                "stage": self.kind,
                "label": self.label,
                "rationale": "",
                "confidence": self.confidence,
            }
        )


@step_type
@dataclass(kw_only=True)
class ChainOfThought(Reasoning):
    """Step-by-step reasoning, then the label."""

    kind: ClassVar[str] = "cot"
