"""Baselines from the QACheck paper's comparison: direct prompting and chain-of-thought."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..pipeline import Context, Pipeline, register
from ..types import BINARY_LABELS, Claim, Verdict
from ..verdicts import UNVERIFIED, choose_label, label_block, reason_then_label, truth_label
from .prompts import (
    COT,
    COT_EVIDENCE,
    COT_EVIDENCE_LABEL,
    COT_LABEL,
    COT_LABELS,
    COT_LABELS_LABEL,
    DIRECT,
    DIRECT_EVIDENCE,
    DIRECT_LABELS,
)

if TYPE_CHECKING:
    from ..config import Config


def _evidence(claim: Claim, ctx: Context) -> list:
    """Evidence settings (an index, or a benchmark item's own evidence): the claim's top passages, recorded as a
    retrieval step; none without an index, where the baselines stay closed-book as in the paper."""
    if ctx.retriever is None:
        return []
    found = ctx.retriever.search(claim.text, k=ctx.config.verifier.top_k)
    ctx.tracer.emit("retrieval", query=claim.text, results=[e.to_dict() for e in found])
    return found


def _other_labels(ctx: Context) -> tuple[str, ...] | None:
    """The caller's label set when it is not Supported/Refuted (the demonstrations' True/False cannot say it)."""
    if ctx.labels and set(ctx.labels) != set(BINARY_LABELS):
        return tuple(ctx.labels)
    return None


class Direct(Pipeline):
    """Ask for the label right away, with ten labelled demonstrations (True/False), or zero-shot over the
    label set an evaluation asks for (e.g. AVeriTeC's four labels)."""

    def __init__(self, config: Config, name: str = "direct") -> None:
        self.name = name
        self.prompt = DIRECT.load(config.prompts_dir)
        self.labels_prompt = DIRECT_LABELS.load(config.prompts_dir)
        self.evidence_prompt = DIRECT_EVIDENCE.load(config.prompts_dir)

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        failures: list[str] = []
        if labels := _other_labels(ctx):
            label, confidence, _ = choose_label(
                ctx,
                self.labels_prompt,
                labels,
                fallback=UNVERIFIED,
                failures=failures,
                LABELS=label_block(labels, ctx.label_rules),
                CLAIM=claim,
            )
            ctx.tracer.emit("direct", label=label, confidence=confidence)
            return Verdict(label=label, confidence=confidence, parse_failures=failures, basis="memory")
        if evidence := _evidence(claim, ctx):
            reply = self.evidence_prompt.ask(ctx.model, failures=failures, EVIDENCE=evidence, CLAIM=claim.text)
        else:
            reply = self.prompt.ask(ctx.model, failures=failures, CLAIM=claim.text)
        label, confidence = truth_label(reply), reply.confidence
        ctx.tracer.emit("direct", label=label, confidence=confidence)
        return Verdict(
            label=label, confidence=confidence, parse_failures=failures, basis="evidence" if evidence else "memory"
        )


class ChainOfThought(Pipeline):
    """Reason step by step (ten demonstrations with explanations), then give the label; zero-shot over the
    label set an evaluation asks for when it is not Supported/Refuted."""

    def __init__(self, config: Config, name: str = "cot") -> None:
        self.name = name
        self.prompt = COT.load(config.prompts_dir)
        self.label_prompt = COT_LABEL.load(config.prompts_dir)
        self.labels_prompt = COT_LABELS.load(config.prompts_dir)
        self.labels_label_prompt = COT_LABELS_LABEL.load(config.prompts_dir)
        self.evidence_prompt = COT_EVIDENCE.load(config.prompts_dir)
        self.evidence_label_prompt = COT_EVIDENCE_LABEL.load(config.prompts_dir)

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        failures: list[str] = []
        if labels := _other_labels(ctx):
            slots = dict(LABELS=label_block(labels, ctx.label_rules), CLAIM=claim)
            rationale = self.labels_prompt.ask(ctx.model, failures=failures, **slots).value
            label, confidence, _ = choose_label(
                ctx,
                self.labels_label_prompt,
                labels,
                fallback=UNVERIFIED,
                failures=failures,
                RATIONALE=rationale,
                **slots,
            )
            ctx.tracer.emit("cot", label=label, rationale=rationale, confidence=confidence)
            return Verdict(
                label=label, rationale=rationale, confidence=confidence, parse_failures=failures, basis="memory"
            )
        if evidence := _evidence(claim, ctx):
            return reason_then_label(
                ctx,
                self.evidence_prompt,
                self.evidence_label_prompt,
                failures=failures,
                EVIDENCE=evidence,
                CLAIM=claim.text,
            )
        verdict = reason_then_label(ctx, self.prompt, self.label_prompt, failures=failures, CLAIM=claim.text)
        verdict.basis = "memory"
        return verdict


register("direct", "Direct prompting baseline: the label straight from the claim", kind=Direct)(Direct)
register("cot", "Chain-of-thought baseline: step-by-step reasoning, then the label", kind=ChainOfThought)(
    ChainOfThought
)
