"""What a verifier returns (`Verification`), the `Verifier` protocol, and how per-passage scores become one
conclusion (`aggregate`); shared by the trained verifier (model.py) and the lexical baseline (lexical.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

#: the three classes, in the order of every three-way reading (the model's outputs, a row of probabilities)
LABELS = ("supported", "refuted", "nei")

#: how a two-label set (supported / refuted) is decided from three-way probabilities: "supported_vs_refuted",
#: "supported_vs_rest", or a rule fitted on calibration pairs of two-label sources (verify/training/fits.py
#: `fit_two_label_rule`): {"name": "fitted", "weights": [w_supported, w_refuted, w_nei], "bias": b}, the
#: probability of supported being the logistic function of b + the weights times the log-probabilities; or, for
#: sets whose other label is "not supported" (refuted or not settled), one fitted on calibration pairs of such
#: sources (`fit_rest_rule`): {"name": "fitted_vs_rest", "weight": w, "bias": b}, the logistic function of
#: b + w times the log-odds of supported against the rest
TwoLabelRule = str | Mapping
#: the floor under each probability before a fitted rule takes its logarithm: one value for fitting and reading
RULE_FLOOR = 1e-6
#: a reading whose not-enough-information is at least this does not address the claim: it decides nothing
#: (decide.py), and the rule for retrieved evidence counts no such verdict as decided (training/open_world.py)
NOT_ADDRESSED = 0.5

#: the temperature on the deciding reading when several passages are read: one number, or one that depends on how
#: many passages there are, {"alpha": a, "beta": b}: exp(a + b ln n) for n passages
#: (verify/training/fits.py `fit_aggregate_temperature`; the most decisive of ten retrieved sentences looks far
#: surer than it is, the most decisive of two gold sentences hardly)
SeveralTemperature = float | Mapping
#: at least 1: choosing the most decisive of several readings can only make it look surer, never less sure (fitted
#: freely, two gold sentences got 0.74, sharpening readings that were no more often right than single ones)
SEVERAL_TEMPERATURE_RANGE = (1.0, 20.0)


def several_temperature(setting: SeveralTemperature, n_passages: int) -> float:
    """The temperature for a reading of `n_passages` passages under `setting` (verifier.json
    `aggregate_temperature`)."""
    if isinstance(setting, Mapping):
        low, high = SEVERAL_TEMPERATURE_RANGE
        return min(max(math.exp(setting["alpha"] + setting["beta"] * math.log(max(n_passages, 1))), low), high)
    return float(setting)


def describe_several(setting: SeveralTemperature) -> str:
    """The several-passages temperature in words, for the model card and `veracity verifier info`."""
    if isinstance(setting, Mapping):
        at = ", ".join(f"{several_temperature(setting, n):.2f} for {n}" for n in (2, 3, 5, 10))
        return f"exp({setting['alpha']:.3f} + {setting['beta']:.3f} ln n) for n passages ({at})"
    return f"{float(setting):g}"


def binary_label(supported: float, refuted: float, rule: TwoLabelRule = "supported_vs_refuted") -> tuple[str, float]:
    """A two-label decision from three-way probabilities: ("supported" | "refuted", its probability).
    supported_vs_refuted sets the not-enough-information mass aside; supported_vs_rest counts it as refuted; a
    fitted rule weighs the three log-probabilities as calibration pairs of two-label sources asked, and a fitted
    rule against the rest tempers and shifts supported's log-odds as calibration pairs of not-supported sources
    asked."""
    if isinstance(rule, Mapping) and rule.get("name") == "fitted_vs_rest":
        s = _logistic(rule["bias"] + rule["weight"] * supported_log_odds(supported))
    elif isinstance(rule, Mapping) and rule.get("name") == "fitted_open":
        nei = max(1.0 - supported - refuted, 0.0)
        z = rule["bias"] + sum(w * x for w, x in zip(rule["weights"], open_world_features(supported, refuted, nei)))
        s = _logistic(z)
    elif isinstance(rule, Mapping):
        nei = max(1.0 - supported - refuted, 0.0)
        z = rule["bias"] + sum(
            w * math.log(max(p, RULE_FLOOR)) for w, p in zip(rule["weights"], (supported, refuted, nei))
        )
        s = _logistic(z)
    else:
        s = supported if rule == "supported_vs_rest" else supported / max(supported + refuted, 1e-9)
    return ("supported", s) if s >= 0.5 else ("refuted", 1 - s)


def open_world_features(supported: float, refuted: float, nei: float) -> list[float]:
    """What the rule for retrieved evidence (verify/training/open_world.py) reads of a reading: the log-odds of
    supported, of refuted and of not enough information, each weighed on its own (a strong "refuted" reading of a
    retrieved passage is right less often than a strong "supported" one: it is often a passage that merely does not
    mention the fact), and supported's log-odds against refuted weighed by how far the reading addresses the claim
    (1 - nei). One function for fitting and reading."""
    odds = math.log(max(supported, RULE_FLOOR)) - math.log(max(refuted, RULE_FLOOR))
    return [supported_log_odds(supported), supported_log_odds(refuted), supported_log_odds(nei), (1.0 - nei) * odds]


def supported_log_odds(supported: float) -> float:
    """log(supported / (1 - supported)), the probability held RULE_FLOOR from 0 and 1: what a fitted rule against
    the rest reads, one function for fitting (verify/training/fits.py `fit_rest_rule`) and reading."""
    p = min(max(supported, RULE_FLOOR), 1.0 - RULE_FLOOR)
    return math.log(p) - math.log(1.0 - p)


def _logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def describe_rule(rule: TwoLabelRule) -> str:
    """The two-label rule in words, for the model card and `veracity verifier info`."""
    if isinstance(rule, Mapping) and rule.get("name") == "fitted_vs_rest":
        said = (
            f"fitted: supported with probability logistic({rule['bias']:.3f} + {rule['weight']:.3f} "
            f"log(supported / (1 - supported)))"
        )
        if rule["weight"] <= 0:  # (a fit on readings that say nothing of the label: it decides by its bias alone)
            return f"{said}, {'supported' if rule['bias'] >= 0 else 'not supported'} at any reading"
        at = _logistic(-rule["bias"] / rule["weight"])  # the supported probability where it crosses one half
        return f"{said}, supported from {at:.2f}"
    if isinstance(rule, Mapping) and rule.get("name") == "fitted_open":
        ws, wr, wn, wa = rule["weights"]
        return (
            f"fitted on retrieved evidence: supported with probability logistic({rule['bias']:.3f} {ws:+.3f} "
            f"logit(supported) {wr:+.3f} logit(refuted) {wn:+.3f} logit(nei) {wa:+.3f} (1 - nei) "
            "log(supported / refuted))"
        )
    if isinstance(rule, Mapping):
        ws, wr, wn = rule["weights"]
        return (
            f"fitted: supported with probability logistic({rule['bias']:.3f} + {ws:.3f} log supported "
            f"{wr:+.3f} log refuted {wn:+.3f} log nei)"
        )
    return rule


@dataclass
class Verification:
    """What the verifier concluded about one claim."""

    probabilities: dict[str, float]  # supported / refuted / nei, summing to 1
    passage: int | None  # index of the passage that decided it (None: no passage, or only all of them together)
    per_passage: list[dict[str, float]] = field(default_factory=list)
    #: a sentence of the deciding passage that read the other label (verify/conflict.py): its text, that label and
    #: probability, and the passage's own label and probability before the two readings were averaged; else None
    conflict: dict | None = None

    @property
    def label(self) -> str:
        return max(self.probabilities, key=self.probabilities.get)

    @property
    def confidence(self) -> float:
        return self.probabilities[self.label]

    def binary(self, rule: TwoLabelRule = "supported_vs_refuted") -> tuple[str, float]:
        """("supported" | "refuted", probability) for two-label sets, by the artifact's chosen rule."""
        return binary_label(self.probabilities["supported"], self.probabilities["refuted"], rule)

    def to_dict(self) -> dict:
        out = {
            "probabilities": {k: round(v, 4) for k, v in self.probabilities.items()},
            "label": self.label,
            "confidence": round(self.confidence, 4),
            "passage": self.passage,
        }
        if self.conflict:
            out["conflict"] = self.conflict
        return out


class Verifier(Protocol):
    name: str
    binary_rule: TwoLabelRule  # supported against refuted
    rest_rule: TwoLabelRule  # supported against the rest (a set whose other label is "not supported")
    #: supported against refuted on retrieved evidence, with its own "uncertain_below" (None: binary_rule for all)
    retrieved_rule: Mapping | None

    def verify(self, claim: str, passages: Sequence[str]) -> Verification: ...

    def verify_many(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[Verification]: ...


def candidates(passages: Sequence[str]) -> tuple[list[str], list[str]]:
    """The non-empty passages, and what is scored: each of them, then (when there are several) all of them joined."""
    kept = [p for p in passages if p and p.strip()]
    return kept, kept + ([" ".join(kept)] if len(kept) > 1 else [])


def most_decisive(readings: Sequence[dict[str, float]]) -> int:
    """The index of the most decisive reading (the least not-enough-information): how several passages, and the
    windows of one long passage (verify/windows.py), decide."""
    return min(range(len(readings)), key=lambda i: readings[i]["nei"])


def aggregate(
    per_candidate: list[dict[str, float]], n_passages: int, temperature: SeveralTemperature = 1.0
) -> Verification:
    """Candidates are the passages one by one, then (when there are several) all of them together.

    The most decisive candidate (the least not-enough-information) decides; its index is the deciding
    passage, or None when the joined passages decided. Choosing the most decisive of several makes the choice
    look surer than it is: with several candidates its probabilities are tempered by `temperature` (fitted on
    held-apart claims with several passages, a number or one growing with `n_passages`: `several_temperature`;
    1.0: as they are). A passage read in several windows
    (verify/windows.py) is one candidate, its most decisive window, and is not tempered: on held-apart data that
    temperature cost more macro-F1 than it won in calibration.
    """
    if not per_candidate:
        return Verification({"supported": 0.0, "refuted": 0.0, "nei": 1.0}, None, [])
    best = most_decisive(per_candidate)
    passage = best if best < n_passages else None
    probs = dict(per_candidate[best])
    t = several_temperature(temperature, n_passages)
    if len(per_candidate) > 1 and t != 1.0:
        probs = tempered(probs, t)
    return Verification(probs, passage, per_candidate[:n_passages])


def tempered(probs: dict[str, float], temperature: float) -> dict[str, float]:
    """Probabilities raised to 1/temperature and renormalised (a temperature on their logarithms)."""
    import math

    logs = {k: math.log(max(v, 1e-9)) / temperature for k, v in probs.items()}
    top = max(logs.values())
    e = {k: math.exp(v - top) for k, v in logs.items()}
    z = sum(e.values())
    return {k: v / z for k, v in e.items()}
