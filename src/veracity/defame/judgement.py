"""DEFAME's judge: a label of the caller's set from the trained verifier's reading of each source, the language
model's own pick as one input, and a confidence calibrated for this judge's own output on held-apart data.

The rules (`combine`), over the verifier's reading of each finding's source, one by one:

- a source *decides* when its supported or its refuted probability reaches `decisive_at` (and beats the other);
- decisive sources that all support: Supported; that all refute: Refuted;
- decisive sources on both sides: Conflicting Evidence/Cherrypicking (where the set has that label);
- no source decides: Not Enough Evidence (where the set has that label; before the last round this sends the check
  back to planning). Where it has none (a set of two labels), or in the `verifier+model` combination, the model's
  pick stands instead, else the side the sources lean to;
- no source decides after the last round, the config asks for it (`defame.undecided = "prior"`, the default;
  "nei" keeps not enough evidence) and the calibration names an `undecided` label: that label, the one most
  often right for an undecided claim under the stated label prior (chosen on held-apart data with that prior, a
  Bayes decision stated in the calibration file and the report; none without a prior). Its confidence is that
  label's share of the prior among the labels on offer (`JudgeCalibration.prior_share`): where nothing decides, the
  claim is taken for one drawn from the stream the prior describes. It is not fitted on the held-apart sets, whose
  undecided claims are mostly truly undecided (there the verifier reads most sources decisively; on real-world
  sources it decides few claims, and the strength of its undecided readings did not rank them: AVeriTeC dev, 92
  claims, fitted confidence 0.54 on average for 69% right), so an undecided verdict never borrows the confidence
  of a decided one.

The confidence is the calibrated probability that the label is right: a logistic function of the deciding score
(the strongest deciding probability; for a conflict the weaker side; for not-enough-evidence one minus the
strongest probability of either side), one intercept per label, fitted on held-apart claim sets
(`judge_calibration.json`, written by `benchmarks/defame_judge_calibration.py`, which says what it was fitted on,
with which stated label prior, and how each combination did). The verifier's own pair calibration is not reused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..verify.decide import _names

CALIBRATION_FILE = Path(__file__).resolve().parent / "judge_calibration.json"
COMBINATIONS = ("verifier", "verifier+model", "model")
DEFAULT_DECISIVE_AT = 0.5


@dataclass(frozen=True)
class JudgeCalibration:
    """What the judge needs from its calibration: the combination and threshold chosen on held-apart data, and the
    confidence's logistic function (`intercepts` per canonical label, one `slope` on the score's log-odds)."""

    combination: str = "verifier"
    decisive_at: float = DEFAULT_DECISIVE_AT
    intercepts: Mapping[str, float] = field(default_factory=dict)  # supported / refuted / nei / conflicting
    slope: float = 1.0
    prior: Mapping[str, float] | None = None  # the stated label prior the fit was weighted by (None: none)
    fitted_on: str = ""  # what it was fitted on, in words
    #: the label (kind) given when no source decides after the last round: the prior's Bayes decision (None: nei)
    undecided: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JudgeCalibration:
        return cls(
            combination=data["combination"],
            decisive_at=float(data["decisive_at"]),
            intercepts=dict(data["intercepts"]),
            slope=float(data["slope"]),
            prior=data.get("prior"),
            fitted_on=data.get("fitted_on", ""),
            undecided=data.get("undecided"),
        )

    def prior_share(self, kind: str, kinds: Sequence[str]) -> float | None:
        """`kind`'s share of the stated prior among `kinds` (the labels on offer); None without a prior."""
        if not self.prior or kind not in self.prior:
            return None
        total = sum(self.prior.get(k, 0.0) for k in dict.fromkeys(kinds))
        return self.prior[kind] / total if total > 0 else None

    def confidence(self, kind: str, score: float) -> float | None:
        """The calibrated probability that a verdict of `kind` (supported/refuted/nei/conflicting) with this deciding
        score is right; None without a fit."""
        if kind not in self.intercepts:
            return None
        return _logistic(self.intercepts[kind] + self.slope * _logit(score))


@lru_cache(maxsize=4)
def load_calibration(path: str | None = None) -> JudgeCalibration:
    """The shipped calibration (or the file at `path`); an uncalibrated default when the file is missing."""
    file = Path(path) if path else CALIBRATION_FILE
    try:
        return JudgeCalibration.from_json(json.loads(file.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError):
        return JudgeCalibration()


@dataclass(frozen=True)
class Reading:
    """The verifier's reading of one source."""

    supported: float
    refuted: float
    nei: float

    @classmethod
    def of(cls, p: Mapping[str, float]) -> Reading:
        return cls(float(p["supported"]), float(p["refuted"]), float(p["nei"]))


@dataclass(frozen=True)
class Outcome:
    label: str
    kind: str  # supported / refuted / nei / conflicting: what the rules concluded
    score: float  # the deciding score (uncalibrated)
    confidence: float | None  # calibrated (JudgeCalibration.confidence)
    decided_by: str  # "verifier": decisive sources; "model": the model's pick; "verifier-leaning"; "prior"
    supporting: tuple[int, ...] = ()  # the indexes of the decisive sources on each side
    refuting: tuple[int, ...] = ()


def sides(readings: Sequence[Reading], decisive_at: float) -> tuple[list[int], list[int]]:
    """The sources that decide for supported and those that decide for refuted."""
    sup = [i for i, r in enumerate(readings) if r.supported >= decisive_at and r.supported > r.refuted]
    ref = [i for i, r in enumerate(readings) if r.refuted >= decisive_at and r.refuted > r.supported]
    return sup, ref


def rule_kind(readings: Sequence[Reading], decisive_at: float) -> tuple[str, float, list[int], list[int]]:
    """(supported | refuted | conflicting | nei, its deciding score, supporting sources, refuting sources)."""
    sup, ref = sides(readings, decisive_at)
    best_s = max((readings[i].supported for i in sup), default=0.0)
    best_r = max((readings[i].refuted for i in ref), default=0.0)
    if sup and ref:
        return "conflicting", min(best_s, best_r), sup, ref
    if sup:
        return "supported", best_s, sup, ref
    if ref:
        return "refuted", best_r, sup, ref
    strongest = max((max(r.supported, r.refuted) for r in readings), default=0.0)
    return "nei", 1.0 - strongest, sup, ref


def combine(
    readings: Sequence[Reading],
    labels: Sequence[str],
    model_pick: str | None,
    calibration: JudgeCalibration,
    *,
    nei_allowed: bool = True,
    final: bool = False,
) -> Outcome:
    """The judge's label among `labels`, from the readings and (by the calibration's combination) the model's pick.

    `nei_allowed`: False in a last round whose labels have no not-enough-evidence label (a decision is due).
    `final`: the last round: an undecided claim takes the calibration's `undecided` label, if it names one."""
    labels = tuple(dict.fromkeys(labels))
    supported, refuted, nei, conflicting = _names(labels)
    names = {"supported": supported, "refuted": refuted, "nei": nei, "conflicting": conflicting}
    kinds = {v: k for k, v in names.items() if v is not None}
    kind, score, sup, ref = rule_kind(readings, calibration.decisive_at)
    by = "verifier"
    if calibration.combination == "model" and model_pick in kinds:
        kind, by = kinds[model_pick], "model"
        score = _score_of(kind, readings, sup, ref)
    if kind == "conflicting" and conflicting is None:  # the stronger side
        best_s = max(readings[i].supported for i in sup)
        best_r = max(readings[i].refuted for i in ref)
        kind, score = ("supported", best_s) if best_s >= best_r else ("refuted", best_r)
    if kind == "nei" and (nei is None or not nei_allowed or calibration.combination == "verifier+model"):
        pick = kinds.get(model_pick or "")
        if pick is not None and pick != "nei" and (pick != "conflicting" or conflicting is not None):
            kind, by = pick, "model"
        elif nei is None or not nei_allowed:
            s = max((r.supported for r in readings), default=0.0)
            f = max((r.refuted for r in readings), default=0.0)
            kind, by = ("supported" if s > f else "refuted"), "verifier-leaning"
        if kind != "nei":
            score = _score_of(kind, readings, sup, ref)
    if kind == "nei" and final and calibration.undecided and names.get(calibration.undecided):
        kind, by = calibration.undecided, "prior"  # the score stays the undecided one: 1 - the strongest reading
    # the fit saw only the outcomes its combination makes with every label on offer: under "verifier", a label the
    # sources decide; a label the model picked, or the sources' mere leaning, has no calibrated confidence (its
    # deciding score can be 0, far outside the fit): None, and the judge says the model's own. The prior's label
    # has the prior's share.
    if by == "prior":
        confidence = calibration.prior_share(kind, list(kinds.values()))
    elif by == "verifier" or calibration.combination != "verifier":
        confidence = calibration.confidence(kind, score)
    else:
        confidence = None
    return Outcome(names[kind] or labels[0], kind, score, confidence, by, tuple(sup), tuple(ref))


def _score_of(kind: str, readings: Sequence[Reading], sup: Sequence[int], ref: Sequence[int]) -> float:
    """The deciding score of a label the rules did not conclude themselves: the readings' strongest probability
    of it (its weaker side for a conflict; for not-enough-evidence one minus the strongest either way)."""
    s = max((r.supported for r in readings), default=0.0)
    f = max((r.refuted for r in readings), default=0.0)
    return {"supported": s, "refuted": f, "conflicting": min(s, f), "nei": 1.0 - max(s, f)}[kind]


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def _logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def describe(calibration: JudgeCalibration) -> str:
    """The calibration in words, for reports and the eval table."""
    prior = (
        "no label prior"
        if not calibration.prior
        else "label prior " + ", ".join(f"{k} {v:.3f}" for k, v in calibration.prior.items())
    )
    undecided = (
        f"undecided after the last round: {calibration.undecided} (the prior's most likely label, its share of the "
        "prior as the confidence)"
        if calibration.undecided
        else "undecided after the last round: not enough evidence"
    )
    return (
        f"combination {calibration.combination}, a source decides at {calibration.decisive_at:.2f}; "
        f"{undecided}; confidence calibrated on {calibration.fitted_on or 'nothing (uncalibrated)'}; {prior}"
    )
