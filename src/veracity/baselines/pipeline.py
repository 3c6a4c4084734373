"""Baselines from the QACheck paper's comparison: direct prompting and chain-of-thought."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..llm.base import fewshot
from ..pipeline import Context, Pipeline, register
from ..prompts import load_prompt
from ..types import BINARY_LABELS, Claim, Verdict
from ..verdicts import UNVERIFIED, choose_label, claim_line, decide_label, label_block, reason_then_label

if TYPE_CHECKING:
    from ..config import Config


def _other_labels(ctx: Context) -> tuple[str, ...] | None:
    """The caller's label set when it is not Supported/Refuted (the demonstrations' True/False cannot say it)."""
    if ctx.labels and set(ctx.labels) != set(BINARY_LABELS):
        return tuple(ctx.labels)
    return None


class Direct(Pipeline):
    """Ask for the label right away, with ten labelled demonstrations (True/False), or zero-shot over the
    label set an evaluation asks for (e.g. AVeriTeC's four labels)."""

    def __init__(self, config: "Config") -> None:
        self.prompt = load_prompt("direct", config.prompts_dir)
        self.labels_prompt = load_prompt("direct_labels", config.prompts_dir)

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        if labels := _other_labels(ctx):
            prompt = self.labels_prompt.render(LABELS=label_block(labels, ctx.label_rules), CLAIM=claim_line(claim))
            label, confidence, _, failures = choose_label(ctx, prompt, list(labels), stage="direct",
                                                          fallback=UNVERIFIED)
            ctx.tracer.emit("direct", label=label, confidence=confidence)
            return Verdict(label=label, confidence=confidence, parse_failures=failures)
        label, confidence, failures = decide_label(ctx, self.prompt.render(CLAIM=claim.text), stage="direct")
        ctx.tracer.emit("direct", label=label, confidence=confidence)
        return Verdict(label=label, confidence=confidence, parse_failures=failures)


class ChainOfThought(Pipeline):
    """Reason step by step (ten demonstrations with explanations), then give the label; zero-shot over the
    label set an evaluation asks for when it is not Supported/Refuted."""

    def __init__(self, config: "Config") -> None:
        self.prompt = load_prompt("cot", config.prompts_dir)
        self.labels_prompt = load_prompt("cot_labels", config.prompts_dir)

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        if labels := _other_labels(ctx):
            prompt = self.labels_prompt.render(LABELS=label_block(labels, ctx.label_rules), CLAIM=claim_line(claim))
            out = ctx.model.complete(fewshot(prompt, max_tokens=160, stop=["\n\n", "Verdict:"]), stage="cot")
            rationale = " ".join(out.text.split())
            label, confidence, _, failures = choose_label(ctx, f"{prompt} {rationale}\nVerdict:", list(labels),
                                                          stage="cot", fallback=UNVERIFIED)
            ctx.tracer.emit("cot", label=label, rationale=rationale, confidence=confidence)
            return Verdict(label=label, rationale=rationale, confidence=confidence, parse_failures=failures)
        return reason_then_label(ctx, self.prompt.render(CLAIM=claim.text), stage="cot")


register("direct", "Direct prompting baseline: the label straight from the claim", kind=Direct)(Direct)
register("cot", "Chain-of-thought baseline: step-by-step reasoning, then the label", kind=ChainOfThought)(ChainOfThought)
