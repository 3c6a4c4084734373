"""Baselines from the QACheck paper's comparison: direct prompting and chain-of-thought."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..prompts import load_prompt
from ..types import Claim, Verdict
from .base import Context, Pipeline, register
from .reasoning import decide_label, reason_then_label

if TYPE_CHECKING:
    from ..config import Config


class Direct(Pipeline):
    """Ask for the label right away, with ten labelled demonstrations."""

    def __init__(self, config: "Config") -> None:
        self.prompt = load_prompt("direct", config.prompts_dir)

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        label, confidence, failures = decide_label(ctx, self.prompt.render(CLAIM=claim.text), stage="direct")
        ctx.tracer.emit("direct", label=label, confidence=confidence)
        return Verdict(label=label, confidence=confidence, parse_failures=failures)


class ChainOfThought(Pipeline):
    """Reason step by step (ten demonstrations with explanations), then give the label."""

    def __init__(self, config: "Config") -> None:
        self.prompt = load_prompt("cot", config.prompts_dir)

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        return reason_then_label(ctx, self.prompt.render(CLAIM=claim.text), stage="cot")


register("direct", "Direct prompting baseline: the label straight from the claim")(Direct)
register("cot", "Chain-of-thought baseline: step-by-step reasoning, then the label")(ChainOfThought)
