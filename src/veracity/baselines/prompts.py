"""The baselines' prompt specs: direct prompting and chain-of-thought, each in the paper's True/False form
(ten demonstrations) and zero-shot over another label set (e.g. AVeriTeC's four labels)."""

from __future__ import annotations

from ..prompts.parsers import TRUE_FALSE, parse_rationale
from ..prompts.quoting import quote_passages
from ..prompts.spec import PromptSpec
from ..verdicts import NO_TRUE_FALSE, claim_line, final_answer


def one_line(text: str) -> str:
    """The reasoning as one line (whitespace collapsed)."""
    return " ".join(text.split())


DIRECT = PromptSpec(
    name="baselines.direct",
    template="direct",
    stage="direct",
    slots=("CLAIM",),
    max_tokens=8,
    options=TRUE_FALSE,
    strict=True,
    problem="no True/False",
    fallback=NO_TRUE_FALSE,
)

# over the caller's labels (given per call); the claim with its date and speaker (`claim_line`)
DIRECT_LABELS = PromptSpec(
    name="baselines.direct_labels",
    template="direct_labels",
    stage="direct",
    slots=("LABELS", "CLAIM"),
    formats={"CLAIM": claim_line},
    max_tokens=16,
    decision=True,
    strict=True,
    problem="no label",
)

COT = PromptSpec(
    name="baselines.cot",
    template="cot",
    stage="cot",
    slots=("CLAIM",),
    max_tokens=200,
    stop=("Therefore", "\n\n", "final answer"),
    parser=parse_rationale,
)
COT_LABEL = final_answer(COT, "baselines.cot.label")

COT_LABELS = PromptSpec(
    name="baselines.cot_labels",
    template="cot_labels",
    stage="cot",
    slots=("LABELS", "CLAIM"),
    formats={"CLAIM": claim_line},
    max_tokens=160,
    stop=("\n\n", "Verdict:"),
    parser=one_line,
)
COT_LABELS_LABEL = COT_LABELS.follow(
    "baselines.cot_labels.label",
    " [[RATIONALE]]\nVerdict:",
    max_tokens=16,
    decision=True,
    strict=True,
    problem="no label",
)

# evidence settings: the claim's own evidence (top passages of its index) as quoted data before the claim
DIRECT_EVIDENCE = PromptSpec(
    name="baselines.direct_evidence",
    template="direct_evidence",
    stage="direct",
    slots=("EVIDENCE", "CLAIM"),
    formats={"EVIDENCE": quote_passages},
    max_tokens=8,
    options=TRUE_FALSE,
    strict=True,
    problem="no True/False",
    fallback=NO_TRUE_FALSE,
)

COT_EVIDENCE = PromptSpec(
    name="baselines.cot_evidence",
    template="cot_evidence",
    stage="cot",
    slots=("EVIDENCE", "CLAIM"),
    formats={"EVIDENCE": quote_passages},
    max_tokens=200,
    stop=("Therefore", "\n\n", "final answer"),
    parser=parse_rationale,
)
COT_EVIDENCE_LABEL = final_answer(COT_EVIDENCE, "baselines.cot_evidence.label")

SPECS = (
    DIRECT,
    DIRECT_LABELS,
    COT,
    COT_LABEL,
    COT_LABELS,
    COT_LABELS_LABEL,
    DIRECT_EVIDENCE,
    COT_EVIDENCE,
    COT_EVIDENCE_LABEL,
)
