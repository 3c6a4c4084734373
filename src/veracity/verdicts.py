"""Choosing a verdict label through the model, shared by QACheck, the baselines, DEFAME and LEAF.

The label set shown to a prompt (`label_block`, `claim_line`), a strict reading of the model's choice
(`strict_choose`, in `prompts/spec.py`: a label only when the model asserts exactly one, never a guess), a
label among any set (`choose_label`, falling back to e.g. `UNVERIFIED`), the True/False decision after a
reasoning prompt mapped to Supported/Refuted (`final_answer`, `truth_label`), and the shared step of
QACheck's reasoner and chain-of-thought: free-text reasoning, then a constrained label (`reason_then_label`).
"""

from __future__ import annotations

from typing import Any

from .pipeline import Context
from .prompts.parsers import FINAL_ANSWER_CUE, TRUE_FALSE, TRUTH_TO_LABEL, stated_conclusion
from .prompts.spec import Prompt, PromptSpec, Reply, strict_choose
from .types import REFUTED, SUPPORTED, Claim, Verdict

__all__ = [
    "UNVERIFIED",
    "LABEL_MEANINGS",
    "NO_TRUE_FALSE",
    "choose_label",
    "claim_line",
    "final_answer",
    "label_block",
    "no_label",
    "reason_then_label",
    "strict_choose",
    "truth_label",
]

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
    return "\n".join(
        f"- {x}" + (f": {LABEL_MEANINGS[x.lower()]}" if x.lower() in LABEL_MEANINGS else "") for x in labels
    )


NO_TRUE_FALSE = f"label {UNVERIFIED!r}: the model asserted neither True nor False unambiguously"


def no_label(fallback: str) -> str:
    """The trace's word for a label decision that fell back to `fallback`."""
    return f"label {fallback!r}: the model asserted none of the labels unambiguously"


def _rationale_line(rationale: str) -> str:
    return f"{rationale}\n" if rationale else ""


def final_answer(spec: PromptSpec, name: str) -> PromptSpec:
    """The True/False decision after a reasoning prompt (QACheck's reasoner, the chain-of-thought baseline):
    the prompt, the rationale on its own line when there is one, then `Therefore, the final answer is:`."""
    return spec.follow(
        name,
        "\n[[RATIONALE]]" + FINAL_ANSWER_CUE,
        formats={"RATIONALE": _rationale_line},
        max_tokens=8,
        options=TRUE_FALSE,
        strict=True,
        problem="no True/False",
        fallback=NO_TRUE_FALSE,
    )


def truth_label(reply: Reply) -> str:
    """Supported / Refuted for a True/False decision; `UNVERIFIED` when it asserted neither."""
    return TRUTH_TO_LABEL.get(reply.value, UNVERIFIED) if reply.ok else UNVERIFIED


def choose_label(
    ctx: Context,
    prompt: Prompt,
    labels: list[str] | tuple[str, ...],
    *,
    fallback: str,
    failures: list[str],
    images: tuple[str, ...] = (),
    **slots: Any,
) -> tuple[str, float | None, dict[str, float] | None]:
    """Pick one of `labels` with `prompt` (a decision spec, e.g. one ending in "Verdict:").

    Returns (label, confidence, probabilities); when the model asserts none of them unambiguously (see
    `strict_choose`), `fallback`, with the parse failure recorded, never a guess.
    """
    reply = prompt.ask(
        ctx.model, options=list(labels), failures=failures, fallback=no_label(fallback), images=images, **slots
    )
    if not reply.ok:
        return fallback, None, None
    return reply.value, reply.confidence, reply.probabilities


def note_disagreement(rationale: str, label: str, decided_by: str = "the scored decision") -> str:
    """The rationale, with a note when its own words conclude otherwise than the label (so the shown text never
    silently contradicts the verdict)."""
    stated = stated_conclusion(rationale)
    if stated is None or stated == label or label not in (SUPPORTED, REFUTED):
        return rationale
    return f"{rationale}\n[Note: this reasoning concludes {stated}, but the label is {label}, decided by {decided_by}.]"


def reason_then_label(
    ctx: Context, reasoning: Prompt, decision: Prompt, *, failures: list[str], **slots: Any
) -> Verdict:
    """Generate a rationale with `reasoning`, then decide True/False with `decision` (its `final_answer`),
    the rationale in view."""
    rationale = reasoning.ask(ctx.model, failures=failures, **slots).value
    reply = decision.ask(ctx.model, failures=failures, RATIONALE=rationale, **slots)
    label = truth_label(reply)
    rationale = note_disagreement(rationale, label)
    ctx.tracer.emit(decision.spec.stage, label=label, rationale=rationale, confidence=reply.confidence)
    return Verdict(label=label, rationale=rationale, confidence=reply.confidence, parse_failures=list(failures))
