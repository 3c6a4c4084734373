"""Shared step for the reasoner and chain-of-thought: free-text reasoning, then a constrained label."""

from __future__ import annotations

from ..llm.base import fewshot
from ..prompts.parsers import FINAL_ANSWER_CUE, TRUE_FALSE, TRUTH_TO_LABEL, parse_rationale
from ..types import Claim, Verdict
from .base import Context

UNVERIFIED = "Unverified"  # the label when the model's final answer matched no allowed label

#: what common labels mean, for prompts that judge among a label set without the set's own rules
LABEL_MEANINGS = {
    "supported": "the evidence confirms the claim",
    "refuted": "the evidence contradicts the claim",
    "not enough information": "the evidence neither confirms nor contradicts the claim",
    "not enough evidence": "the evidence neither confirms nor contradicts the claim",
    "conflicting evidence/cherrypicking": "some evidence confirms and some contradicts the claim, or the claim "
                                          "is technically true but misleading by leaving out context",
}


def claim_line(claim: Claim) -> str:
    """The claim as prompts show it: quoted, with its date, speaker, source and place when known."""
    extras = [f"claim date: {claim.date}"] if claim.date else []
    for key in ("speaker", "reporting_source", "location"):
        if claim.metadata.get(key):
            extras.append(f"{key.replace('_', ' ')}: {claim.metadata[key]}")
    return f'Claim: "{claim.text}"' + (" (" + "; ".join(extras) + ")" if extras else "")


def label_block(labels: list[str] | tuple[str, ...], rules: str) -> str:
    """The labels to choose from for a prompt: the set's own rules when given, else each label's meaning."""
    if rules.strip():
        names = ", ".join(labels)
        return f"{names}\n{rules.strip()}"
    return "\n".join(f"- {x}" + (f": {LABEL_MEANINGS[x.lower()]}" if x.lower() in LABEL_MEANINGS else "")
                     for x in labels)


def choose_label(ctx: Context, prompt: str, labels: list[str], *, stage: str, fallback: str,
                 images: tuple[str, ...] = ()) -> tuple[str, float | None, dict[str, float] | None, list[str]]:
    """Pick one of `labels` after `prompt` (which ends where the label goes).

    Returns (label, confidence, probabilities, parse failures); when the model names none of them,
    `fallback` with the failure recorded, never a guess.
    """
    choice = ctx.model.choose(fewshot(prompt, max_tokens=16, images=images), list(labels), stage=stage)
    if choice.option is None:
        ctx.tracer.emit("parse_failure", for_stage=stage, raw=choice.raw,
                        fallback=f"label {fallback!r}: the model named none of the labels")
        return fallback, None, None, [f"{stage}: no label in {choice.raw[:120]!r}"]
    return choice.option, choice.confidence, choice.probabilities, []


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
