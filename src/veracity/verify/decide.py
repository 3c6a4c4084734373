"""How the systems decide with the verifier: when it is used, its conclusion as a label of any label set,
and a rationale that says what decided (and never contradicts the label).

`check_evidence` is the one call QACheck's reasoner, LEAF's rater, DEFAME's judge and the evidence-only
baselines make: it verifies, maps the result onto the caller's labels, and records an `evidence_verifier` step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..steps import evidence_license
from . import evidence_text, get_verifier, uncertain_threshold
from .result import TwoLabelRule, Verification

if TYPE_CHECKING:
    from ..config import VerifierConfig
    from ..trace import Tracer
    from ..types import Evidence

EMBEDDED_DEFAULT = "SmolLM2-135M-Instruct.Q4_1.gguf"  # llm/embedded.py's DEFAULT_MODEL_NAME (not imported: no llama)
_NEI_NAMES = ("not enough information", "not enough evidence", "not enough info", "nei")
_CONFLICT_PREFIX = "conflicting"


def verifier_enabled(settings: VerifierConfig, model_id: str) -> bool:
    """verifier.use: on, off, or auto: on when the deciding model is the embedded 135M default (whose own
    decisions are near chance), off with any other model (`model_id` is the run's model, e.g. ctx.model.model_id)."""
    use = settings.use
    return use == "on" or (use == "auto" and model_id == f"gguf:{EMBEDDED_DEFAULT}")


def _names(labels: Sequence[str]) -> tuple[str, str, str | None, str | None]:
    """Which of `labels` are supported, refuted, not enough information and conflicting (the last two or None)."""
    by_lower = {x.lower(): x for x in labels}
    supported = by_lower.get("supported") or by_lower.get("true") or labels[0]
    refuted = (
        by_lower.get("refuted")
        or by_lower.get("false")
        or by_lower.get("not supported")
        or next(x for x in labels if x != supported)
    )
    nei = next((by_lower[n] for n in _NEI_NAMES if n in by_lower), None)
    conflict = next((x for x in labels if x.lower().startswith(_CONFLICT_PREFIX)), None)
    return supported, refuted, nei, conflict


def _strongest(v: Verification) -> tuple[float, float]:
    """The strongest support and the strongest refutation among the passages read one by one (0, 0 with none):
    one passage supporting and another refuting is a conflict, of probability their product."""
    if not v.per_passage:
        return 0.0, 0.0
    return max(p["supported"] for p in v.per_passage), max(p["refuted"] for p in v.per_passage)


def _two_label_rule(refuted: str, binary_rule: TwoLabelRule, rest_rule: TwoLabelRule) -> TwoLabelRule:
    """The rule for a set without a not-enough-information label: "Not Supported" (LEAF) means refuted or not
    settled, the supported mass against all the rest (the artifact's rule for that); otherwise the artifact's rule
    for two-label sets."""
    return rest_rule if refuted.lower() == "not supported" else binary_rule


def label_for(
    v: Verification, labels: Sequence[str], binary_rule: TwoLabelRule, rest_rule: TwoLabelRule = "supported_vs_rest"
) -> tuple[str, float]:
    """The verifier's conclusion as one of `labels` (a pipeline's or an evaluation's set), with its probability.

    Two labels (Supported/Refuted, or True/False): the artifact's rule for two-label sets (Supported/Not
    Supported: its rule for supported against the rest, `rest_rule`). With a
    not-enough-information label: the most probable of the three. With a "conflicting" label: chosen when one
    passage supports and another refutes the claim, each with probability above one half.
    """
    labels = tuple(dict.fromkeys(labels))
    if len(labels) < 2:
        raise ValueError(f"the verifier chooses between two labels or more, not {labels!r}")
    supported, refuted, nei, conflict = _names(labels)
    best_s, best_r = _strongest(v)
    if conflict and best_s > 0.5 and best_r > 0.5:
        return conflict, best_s * best_r
    if nei is None:
        name, p = v.binary(_two_label_rule(refuted, binary_rule, rest_rule))
        return (supported if name == "supported" else refuted), p
    return {"supported": supported, "refuted": refuted, "nei": nei}[v.label], v.confidence


def probability_of(
    v: Verification,
    label: str,
    labels: Sequence[str],
    binary_rule: TwoLabelRule,
    rest_rule: TwoLabelRule = "supported_vs_rest",
) -> float | None:
    """The verifier's probability of `label`, one of `labels`, read as `label_for` reads it (None for a label
    outside the set, such as a parse failure's)."""
    labels = tuple(dict.fromkeys(labels))
    if label not in labels or len(labels) < 2:
        return None
    supported, refuted, nei, conflict = _names(labels)
    if label == conflict:
        best_s, best_r = _strongest(v)
        return best_s * best_r
    if nei is None:
        name, p = v.binary(_two_label_rule(refuted, binary_rule, rest_rule))
        return p if (label == supported) == (name == "supported") else 1.0 - p
    key = {supported: "supported", refuted: "refuted", nei: "nei"}.get(label)
    return None if key is None else v.probabilities[key]


def explain(
    v: Verification, label: str, passages: Sequence[Evidence], verifier: str, *, two_label: float | None = None
) -> str:
    """A rationale that says what decided, and never contradicts the label. `two_label`: the label's probability
    when the set has no not-enough-information label (its two-label rule may choose the label that is not the more
    probable of the three printed, so the reading it made is said too)."""
    probs = ", ".join(f"{k} {v.probabilities[k]:.2f}" for k in ("supported", "refuted", "nei"))
    if two_label is not None:
        probs += f"; read for a choice of two labels (the two-label rule), {label} {two_label:.2f}"
    if not passages:
        return f"No evidence was found for the claim, so the {verifier} verifier could not check it ({probs})."
    if v.passage is None:
        where = f"the {len(passages)} passages read together"
    else:
        ev = passages[v.passage]
        quote = ev.text if len(ev.text) <= 220 else ev.text[:217] + "..."
        where = f"passage [{v.passage + 1}]" + (f" ({ev.source})" if ev.source else "") + f': "{quote}"'
        attribution = [x for x in (ev.url, evidence_license({"found_by": ev.found_by})) if x]
        where += f" ({', '.join(attribution)})" if attribution else ""  # a Wikipedia article: its URL and license
    if v.conflict:
        from .conflict import describe

        where += f"; {describe(v.conflict)}"
    return f"Label {label}: decided by {where}; the {verifier} verifier's probabilities: {probs}."


@dataclass
class EvidenceDecision:
    label: str
    confidence: float
    verification: Verification
    rationale: str
    labels: tuple[str, ...] = ()
    binary_rule: TwoLabelRule = "supported_vs_refuted"
    threshold: float | None = None  # the uncertain threshold (verifier.uncertain_below) the pipeline reports with
    rest_rule: TwoLabelRule = "supported_vs_rest"

    @property
    def decisive(self) -> bool:
        """The evidence settles the claim one way or the other: not-enough-information below one half, or, in a
        set without a not-enough-information label, a two-label reading sure enough not to be uncertain (at least
        `threshold`). Without the second, a reading of Refuted 0.81 with nei 0.55 was "not decisive", and the
        model's Supported stood, with 0.19 and a reason that quoted the 0.81."""
        if self.verification.probabilities["nei"] < 0.5:
            return True
        two_label = len(self.labels) >= 2 and _names(self.labels)[2] is None
        return two_label and self.threshold is not None and self.confidence >= self.threshold

    def undecided(self, label: str) -> tuple[str, float | None, str]:
        """The evidence is not decisive and `label` is the language model's choice: the label the verdict takes, its
        confidence, and why it is uncertain ("" when the model and the verifier's reading agree).

        In a set of two labels (no not-enough-information label) the verifier's reading is taken when it reads the
        other label: it then gives that one more than one half and the model's less, and the small model's choices
        are near chance (on 150 held-out FM2 claims with their gold evidence, QACheck's model label stood against
        such a reading 13 times and was right 6; on 100 FEVEROUS-S claims 5 times, right 2). Otherwise `label`
        stands. Either way the confidence is the verifier's probability of the label (calibrated on held-apart
        data; the small model's own probability is not, and on AVeriTeC its surest verdicts were its least
        accurate); such a verdict stays below the uncertain threshold."""
        p = probability_of(self.verification, label, self.labels, self.binary_rule, self.rest_rule)
        if label == self.label:
            return label, p, ""
        given = f", and gives {label} {p:.2f}" if p is not None else ""
        read = (
            f"the sources read do not settle the claim (the trained verifier reads {self.label}, {self.confidence:.2f}"
        )
        if len(self.labels) == 2 and _names(self.labels)[2] is None and p is not None and p < 0.5:
            return self.label, self.confidence, f"{read}{given}); the language model chose {label}"
        return label, p, f"{read}{given}); {label} is the language model's choice"


def check_evidence(
    settings: VerifierConfig,
    tracer: Tracer,
    claim: str,
    passages: Sequence[Evidence],
    labels: Sequence[str],
    *,
    kind: str = "verifier",
) -> EvidenceDecision:
    """Verify `claim` against `passages`, map onto `labels`, record an `evidence_verifier` step."""
    verifier = get_verifier(settings, kind)
    v = verifier.verify(claim, [evidence_text(e.text, e.source) for e in passages])
    label, confidence = label_for(v, labels, verifier.binary_rule, verifier.rest_rule)
    _, _, nei, conflict = _names(tuple(dict.fromkeys(labels)))
    rationale = explain(
        v, label, passages, verifier.name, two_label=confidence if nei is None and label != conflict else None
    )
    decision = EvidenceDecision(
        label,
        confidence,
        v,
        rationale,
        tuple(dict.fromkeys(labels)),
        verifier.binary_rule,
        uncertain_threshold(settings),
        verifier.rest_rule,
    )
    extra = {"conflict": v.conflict} if v.conflict else {}  # a sentence of the deciding passage read otherwise
    tracer.emit(
        "evidence_verifier",
        verifier=verifier.name,
        label=label,
        confidence=confidence,
        probabilities={k: round(x, 4) for k, x in v.probabilities.items()},
        passage=v.passage,
        rationale=rationale,
        decisive=decision.decisive,
        sources=list(dict.fromkeys(e.source for e in passages if e.source)),
        **extra,
    )
    return decision
