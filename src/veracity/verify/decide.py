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
from .result import NOT_ADDRESSED, TwoLabelRule, Verification

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


def _against_the_rest(refuted: str) -> bool:
    """Whether a set's other label is "Not Supported" (LEAF): refuted or not settled, not refuted alone."""
    return refuted.lower() == "not supported"


def _two_label_rule(refuted: str, binary_rule: TwoLabelRule, rest_rule: TwoLabelRule) -> TwoLabelRule:
    """The rule for a set without a not-enough-information label: "Not Supported" (LEAF) means refuted or not
    settled, the supported mass against all the rest (the artifact's rule for that); otherwise the artifact's rule
    for two-label sets."""
    return rest_rule if _against_the_rest(refuted) else binary_rule


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


STATED = 0.99  # the reading of a passage that holds the claim word for word as one of its sentences
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})


def _normal(sentence: str) -> str:
    return " ".join(sentence.translate(_QUOTES).casefold().split()).rstrip(" .!?;:")


def stated_verbatim(claim: str, passages: Sequence[str]) -> int | None:
    """The index of the first passage that holds the claim word for word as one of its sentences (case, spacing,
    curly quotes and the final full stop aside), else None. A whole sentence, not a stretch of one: "Critics said
    that X" or "It is not true that X" holds X but does not state it."""
    from ..claims.sentences import split_sentences

    wanted = _normal(claim)
    if len(wanted.split()) < 4:  # "It rained." is a sentence of too many texts to stand for a source's statement
        return None
    for n, text in enumerate(passages):
        # split (the sentence splitter claims and LEAF use) only a passage that holds the words at all
        if wanted in _normal(text) and any(_normal(s) == wanted for s in split_sentences(text)):
            return n
    return None


def evidence_setting(passages: Sequence[Evidence]) -> str:
    """ "given" (the evidence given with the claim: a benchmark's gold sentences, a user's --evidence) or
    "retrieved" (what a search found: an index, the knowledge base, the web), which the verdict's confidence and
    uncertain threshold are calibrated for (verifier.json `retrieved_rule`)."""
    return "given" if passages and all(e.found_by.get("given") for e in passages) else "retrieved"


def _cited(ev: Evidence, n: int) -> str:
    """A passage as a rationale cites it: its number, source, quote, and URL and license when it has them."""
    quote = ev.text if len(ev.text) <= 220 else ev.text[:217] + "..."
    out = f"passage [{n}]" + (f" ({ev.source})" if ev.source else "") + f': "{quote}"'
    attribution = [x for x in (ev.url, evidence_license({"found_by": ev.found_by})) if x]
    return out + (f" ({', '.join(attribution)})" if attribution else "")  # a Wikipedia article: its URL and license


def explain(
    v: Verification, label: str, passages: Sequence[Evidence], verifier: str, *, two_label: float | None = None
) -> str:
    """A rationale that says what decided, and never contradicts the label. `two_label`: the label's probability
    when the set has no not-enough-information label (its two-label rule may choose the label that is not the more
    probable of the three printed, so the reading it made is said too). A reading that does not address the claim
    (not enough information at least one half) decided nothing: its passages are named as read, not as deciding."""
    probs = ", ".join(f"{k} {v.probabilities[k]:.2f}" for k in ("supported", "refuted", "nei"))
    if two_label is not None:
        probs += f"; read for a choice of two labels (the two-label rule), {label} {two_label:.2f}"
    if not passages:
        return f"No evidence was found for the claim, so the {verifier} verifier could not check it ({probs})."
    if v.probabilities["nei"] >= NOT_ADDRESSED:
        read = "; ".join(_cited(ev, n) for n, ev in enumerate(passages, 1))
        return (
            f"Label {label}, undecided: the sources read do not address the claim; read: {read}; "
            f"the {verifier} verifier's probabilities: {probs}."
        )
    if v.passage is None:
        each = "; ".join(_cited(ev, n) for n, ev in enumerate(passages, 1))
        where = f"the {len(passages)} passages read together: {each}"
    else:
        where = _cited(passages[v.passage], v.passage + 1)
    if v.conflict:
        from .conflict import describe

        where += f"; {describe(v.conflict)}"
    return f"Label {label}: decided by {where}; the {verifier} verifier's probabilities: {probs}."


def not_addressed(v: Verification) -> str:
    """The reason a verdict is uncertain when its sources do not say: in words, with the reading behind it (or that
    there was nothing to read)."""
    if not v.per_passage:
        return "no source was found for the claim"
    return (
        f"the sources read do not address the claim (the trained verifier reads not enough information, "
        f"{v.probabilities['nei']:.2f})"
    )


def low_confidence(confidence: float, threshold: float, setting: str = "") -> str:
    """The reason a verdict is uncertain for its confidence: check.LOW_CONFIDENCE's wording, or on retrieved
    evidence what its own threshold means (verifier.json `retrieved_rule`)."""
    if setting != "retrieved":
        return f"its confidence {confidence:.2f} is below {threshold:.2f}"
    return (
        f"the confidence {confidence:.2f} on evidence a search found is below {threshold:.2f}, the threshold at which "
        "such verdicts were right 90% of the time on the claims it was fitted on (claims searched as checks search)"
    )


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

    setting: str = "retrieved"  # evidence_setting: "given" or "retrieved", which rule and threshold were used

    @property
    def decisive(self) -> bool:
        """The evidence addresses the claim: its deciding reading's not-enough-information is below one half. A
        passage that does not say is never read as deciding, whichever way a two-label rule leans on it (that rule
        once turned "Donald Trump ... is the 47th president" with nei 0.87 into a decided "Refuted 0.85")."""
        return self.verification.probabilities["nei"] < NOT_ADDRESSED

    @property
    def uncertain_reason(self) -> str:
        """Why a verdict taking this decision's label and confidence is uncertain ("" when it is decided): the
        sources do not address the claim, or its confidence is below the threshold of its evidence setting."""
        if not self.decisive:
            return f"{not_addressed(self.verification)}; the label is the trained verifier's leaning"
        if self.threshold is not None and self.confidence < self.threshold:
            said = low_confidence(self.confidence, self.threshold, self.setting)
            if self.verification.conflict:  # why it is low: the deciding passage reads both ways
                from .conflict import describe

                said += f": the source reads both ways ({describe(self.verification.conflict)})"
            return said
        return ""

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
        read = not_addressed(self.verification) if not self.decisive else "the sources read do not settle the claim"
        if label == self.label:
            return label, p, f"{read}; the trained verifier and the language model lean {label}"
        given = f", and gives {label} {p:.2f}" if p is not None else ""
        read += f" (the trained verifier leans {self.label}, {self.confidence:.2f}{given})"
        if len(self.labels) == 2 and _names(self.labels)[2] is None and p is not None and p < 0.5:
            return self.label, self.confidence, f"{read}; the language model chose {label}"
        return label, p, f"{read}; {label} is the language model's choice"


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
    texts = [evidence_text(e.text, e.source) for e in passages]
    setting = evidence_setting(passages)
    binary_rule, threshold, rest_rule = verifier.binary_rule, uncertain_threshold(settings), verifier.rest_rule
    grounding = _against_the_rest(_names(tuple(dict.fromkeys(labels)))[1])
    if grounding:  # Supported / Not Supported (LEAF): supported when some part of one passage supports it
        from .grounding import GroundingRule, as_verification, ground_sentences

        rule = GroundingRule.of(verifier)
        v = as_verification(ground_sentences(verifier, [claim], texts, rule)[0])
        rest_rule = rule.rule
        threshold = threshold if settings.uncertain_below is not None else rule.uncertain_below
    else:
        v = verifier.verify(claim, texts)
    stated = stated_verbatim(claim, [e.text for e in passages])
    if stated is not None:  # the source says exactly this: its reading is that (the verifier read 0.84 of one)
        rest = (1.0 - STATED) / 2
        v = Verification({"supported": STATED, "refuted": rest, "nei": rest}, stated, v.per_passage)
    retrieved = getattr(verifier, "retrieved_rule", None)
    if setting == "retrieved" and retrieved and not grounding:
        binary_rule = retrieved
        threshold = threshold if settings.uncertain_below is not None else float(retrieved["uncertain_below"])
    label, confidence = label_for(v, labels, binary_rule, rest_rule)
    _, _, nei, conflict = _names(tuple(dict.fromkeys(labels)))
    rationale = explain(
        v, label, passages, verifier.name, two_label=confidence if nei is None and label != conflict else None
    )
    if stated is not None:
        rationale = f"The claim is stated word for word, as a sentence, in passage [{stated + 1}]. {rationale}"
    decision = EvidenceDecision(
        label,
        confidence,
        v,
        rationale,
        tuple(dict.fromkeys(labels)),
        binary_rule,
        threshold,
        rest_rule,
        setting,
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
        setting=setting,
        threshold=threshold,
        uncertain_reason=decision.uncertain_reason,
        sources=list(dict.fromkeys(e.source for e in passages if e.source)),
        read=[e.to_dict() for e in passages],
        **extra,
    )
    return decision
