"""Evidence-only baselines: the trained verifier (`verifier`) and the word-overlap baseline (`lexical`).

Both retrieve the top-k passages for the claim from the index (or from the claim's own evidence in a
benchmark's gold-evidence setting) and let a verifier (verify/) decide, with no language model call: the
fast evidence-only reference every evaluation can show beside the prompting systems.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..pipeline import Context, Pipeline, register
from ..types import BINARY_LABELS, REFUTED, SUPPORTED, Claim, Verdict
from ..verify.decide import check_evidence

if TYPE_CHECKING:
    from ..config import Config


class EvidenceVerifier(Pipeline):
    """Retrieve top-k passages, then one verifier decides (no language model call)."""

    verifier_kind = "verifier"
    asks_model = False
    #: a claim pipeline that can answer any label set with supported/refuted/not-enough-information meanings
    labels = BINARY_LABELS

    def __init__(self, config: Config, name: str = "") -> None:
        self.name = name or self.verifier_kind
        self.config = config
        self.top_k = config.verifier.top_k

    def needs_retriever(self, config: Config) -> bool:
        return True

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        passages = ctx.retriever.search(claim.text, k=self.top_k) if ctx.retriever is not None else []
        ctx.tracer.emit("retrieval", query=claim.text, results=[e.to_dict() for e in passages])
        labels = tuple(ctx.labels) if ctx.labels else (SUPPORTED, REFUTED)
        d = check_evidence(ctx.config.verifier, ctx.tracer, claim.text, passages, labels, kind=self.verifier_kind)
        return Verdict(
            label=d.label, rationale=d.rationale, confidence=d.confidence, uncertain_reason=d.uncertain_reason
        )


class LexicalBaseline(EvidenceVerifier):
    """The same, decided by the word-overlap logistic regression."""

    verifier_kind = "lexical"


register(
    "verifier",
    "Evidence-only: retrieve top-k passages, the trained verifier decides (no LLM call)",
    kind=EvidenceVerifier,
    index="always",
)(EvidenceVerifier)
register(
    "lexical",
    "Word-overlap baseline: retrieve top-k passages, a logistic regression on overlap decides",
    kind=LexicalBaseline,
    index="always",
)(LexicalBaseline)
