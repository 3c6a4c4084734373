"""Choosing a verdict label through the model, shared by QACheck, the baselines, DEFAME and LEAF.

The label set shown to a prompt (`label_block`, `claim_line`), a strict reading of the model's choice
(`strict_choose`: a label only when the model asserts exactly one, never a guess), a label among any set
(`choose_label`, falling back to e.g. `UNVERIFIED`), True/False mapped to Supported/Refuted (`decide_label`),
and the shared step of QACheck's reasoner and chain-of-thought: free-text reasoning, then a constrained
label (`reason_then_label`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .llm.base import FORMAT_REMINDER, Choice, CompletionRequest, fewshot
from .pipeline import Context
from .prompts.parsers import (FINAL_ANSWER_CUE, TRUE_FALSE, TRUTH_TO_LABEL, choice_text, is_parsed, parse_label,
                              parse_rationale)
from .types import Claim, Verdict

if TYPE_CHECKING:
    from .llm.model import RunModel

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


def strict_choose(model: "RunModel", request: CompletionRequest, labels: list[str], *, stage: str) -> Choice:
    """The model's choice among `labels`, read strictly when it was read from text.

    Scored decisions (log-probabilities) stand as they are. A decision the backend read from free text
    is re-read with `parse_label`, which takes a label only when the text asserts exactly one: a
    negated label, several labels, a refusal or a hedge give `option=None` (after one retry with the
    format reminder when the backend had not retried), never a guessed label.
    """
    choice = model.choose(request, list(labels), stage=stage)
    if not is_parsed(choice.method):
        return choice
    option = parse_label(choice_text(choice.raw, choice.method), labels)
    if option is not None or choice.method == "parse-retry":
        return replace(choice, option=option, probabilities=choice.probabilities if option else None)
    # the backend's first-match reading took a label from an answer that does not assert one: ask once more
    retry = model.complete(replace(request.with_reminder(FORMAT_REMINDER.format(options=", ".join(labels))),
                                   n=1, max_tokens=16), stage=stage)
    option = parse_label(retry.text, labels)
    return replace(choice, option=option, probabilities=None, raw=f"{choice.raw}\n---retry---\n{retry.text}",
                   method="parse-retry")


def decide(ctx: Context, request: CompletionRequest, labels: list[str], *, stage: str) -> Choice:
    """`strict_choose` with the run's model."""
    return strict_choose(ctx.model, request, labels, stage=stage)


def choose_label(ctx: Context, prompt: str, labels: list[str], *, stage: str, fallback: str,
                 images: tuple[str, ...] = ()) -> tuple[str, float | None, dict[str, float] | None, list[str]]:
    """Pick one of `labels` after `prompt` (which ends where the label goes).

    Returns (label, confidence, probabilities, parse failures); when the model asserts none of them
    unambiguously (see `decide`), `fallback` with the failure recorded, never a guess.
    """
    choice = decide(ctx, fewshot(prompt, max_tokens=16, images=images), list(labels), stage=stage)
    if choice.option is None:
        ctx.tracer.emit("parse_failure", for_stage=stage, raw=choice.raw,
                        fallback=f"label {fallback!r}: the model asserted none of the labels unambiguously")
        return fallback, None, None, [f"{stage}: no label in {choice.raw[:120]!r}"]
    return choice.option, choice.confidence, choice.probabilities, []


def decide_label(ctx: Context, prompt: str, *, stage: str) -> tuple[str, float | None, list[str]]:
    """Ask for True/False after `prompt`; returns (label, confidence, parse failures)."""
    choice = decide(ctx, fewshot(prompt, max_tokens=8), TRUE_FALSE, stage=stage)
    if choice.option is None:
        ctx.tracer.emit("parse_failure", for_stage=stage, raw=choice.raw,
                        fallback=f"label {UNVERIFIED!r}: the model asserted neither True nor False unambiguously")
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
