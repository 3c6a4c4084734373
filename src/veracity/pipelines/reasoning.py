"""Shared step for the reasoner and chain-of-thought: free-text reasoning, then a constrained label."""

from __future__ import annotations

from ..llm.base import fewshot
from ..prompts.parsers import FINAL_ANSWER_CUE, TRUE_FALSE, TRUTH_TO_LABEL, parse_rationale
from ..types import Verdict
from .base import Context

UNVERIFIED = "Unverified"  # the label when the model's final answer matched no allowed label


def decide_label(ctx: Context, prompt: str, *, stage: str) -> tuple[str, float | None, list[str]]:
    """Ask for True/False after `prompt`; returns (label, confidence, parse failures)."""
    choice = ctx.model.choose(fewshot(prompt, max_tokens=8), TRUE_FALSE, stage=stage)
    if choice.option is None:
        ctx.tracer.emit("parse_failure", for_stage=stage, raw=choice.raw,
                        fallback=f"label {UNVERIFIED!r}: the model named neither True nor False")
        return UNVERIFIED, None, [f"{stage}: no True/False in {choice.raw[:120]!r}"]
    label = TRUTH_TO_LABEL[choice.option]
    return label, choice.confidence, []


def reason_then_label(ctx: Context, prompt: str, *, stage: str, max_tokens: int = 200) -> Verdict:
    """Generate a rationale for `prompt`, then decide the label with the rationale in view."""
    out = ctx.model.complete(fewshot(prompt, max_tokens=max_tokens, stop=["Therefore", "\n\n", "final answer"]),
                             stage=stage)
    rationale = parse_rationale(out.text)
    label_prompt = f"{prompt}\n{rationale}\n{FINAL_ANSWER_CUE}" if rationale else f"{prompt}\n{FINAL_ANSWER_CUE}"
    label, confidence, failures = decide_label(ctx, label_prompt, stage=stage)
    ctx.tracer.emit(stage, label=label, rationale=rationale, confidence=confidence)
    return Verdict(label=label, rationale=rationale, confidence=confidence, parse_failures=failures)
