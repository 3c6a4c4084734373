"""DEFAME's judge rules (defame/judgement.py): on readings as numbers, and on the shipped verifier's readings of
small evidence sets."""

from __future__ import annotations

import pytest

from veracity.defame.judgement import JudgeCalibration, Reading, combine, load_calibration
from veracity.eval.datasets.averitec import AVERITEC_LABELS as LABELS
from veracity.verify.model import WEIGHTS_DIR

SUP, REF, NEI, CON = LABELS
CAL = JudgeCalibration(
    combination="verifier",
    decisive_at=0.5,
    intercepts={"supported": 0.0, "refuted": 0.0, "nei": 0.0, "conflicting": 0.0},
)


def r(s: float, f: float) -> Reading:
    return Reading(s, f, 1 - s - f)


@pytest.mark.parametrize(
    "readings, label",
    [
        ([r(0.9, 0.05), r(0.1, 0.1)], SUP),
        ([r(0.05, 0.8), r(0.1, 0.1)], REF),
        ([r(0.9, 0.05), r(0.05, 0.8)], CON),  # decisive sources disagree
        ([r(0.3, 0.2), r(0.1, 0.45)], NEI),  # nothing decides
        ([], NEI),  # nothing found
    ],
)
def test_rules(readings, label):
    out = combine(readings, LABELS, "Supported", CAL)
    assert out.label == label and out.decided_by == "verifier"


def test_the_models_pick_where_a_decision_is_due_and_the_stronger_side_without_a_conflict_label():
    assert combine([r(0.3, 0.2)], ("Supported", "Refuted"), "Refuted", CAL).label == "Refuted"
    out = combine([r(0.3, 0.2)], LABELS, "Refuted", CAL, nei_allowed=False)
    assert out.label == REF and out.decided_by == "model"
    assert combine([r(0.9, 0.05), r(0.05, 0.8)], ("Supported", "Refuted", NEI), None, CAL).label == "Supported"
    mixed = JudgeCalibration("verifier+model", 0.5, CAL.intercepts)
    assert combine([r(0.3, 0.2)], LABELS, CON, mixed).label == CON  # the model's pick where nothing decides


def test_the_confidence_is_the_calibrated_one():
    cal = load_calibration()
    assert cal.intercepts and cal.fitted_on and cal.prior  # shipped, fitted on held-apart sets, its prior stated
    out = combine([r(0.95, 0.01)], LABELS, None, cal)
    assert out.confidence == pytest.approx(cal.confidence("supported", 0.95))
    assert out.confidence != pytest.approx(0.95)


def test_a_label_the_model_picked_gets_no_calibrated_confidence():
    """The calibration was fitted on labels the sources decide (or the prior's): a label the model picked where no
    source was read (score 0, far outside the fit) must not come out as a 0.99 confidence."""
    cal = load_calibration()
    verite = ("true", "miscaptioned", "out-of-context")  # no not-enough-evidence label: the model's pick decides
    out = combine([], verite, "true", cal)
    assert out.label == "true" and out.decided_by == "model" and out.confidence is None
    out = combine([r(0.3, 0.2)], LABELS, "Refuted", cal, nei_allowed=False)
    assert out.decided_by == "model" and out.confidence is None
    assert combine([r(0.95, 0.01)], LABELS, None, cal).confidence is not None  # decided by a source: calibrated


@pytest.mark.skipif(not (WEIGHTS_DIR / "verifier.json").is_file(), reason="no trained verifier")
def test_rules_on_the_verifiers_readings_of_small_evidence_sets():
    from veracity.config import load_config
    from veracity.verify import get_verifier

    verifier = get_verifier(load_config(env={}).verifier)
    claim = "The Eiffel Tower is in Paris."
    sets = {
        SUP: ["The Eiffel Tower is a wrought-iron tower in Paris, France."],
        REF: ["The Eiffel Tower is located in Berlin."],
        CON: ["The Eiffel Tower is a wrought-iron tower in Paris, France.", "The Eiffel Tower is located in Berlin."],
        NEI: ["Bananas are rich in potassium and grow in tropical climates."],
    }
    for label, passages in sets.items():
        v = verifier.verify(claim, passages)
        out = combine([Reading.of(p) for p in v.per_passage], LABELS, None, load_calibration())
        assert out.label == label, (label, v.per_passage)


def test_an_undecided_claim_takes_the_priors_label_only_after_the_last_round_with_the_priors_share():
    prior = {"refuted": 0.61, "supported": 0.244, "nei": 0.07, "conflicting": 0.076}
    cal = JudgeCalibration(
        "verifier", 0.5, {**CAL.intercepts, "refuted": 3.0}, slope=0.0, prior=prior, undecided="refuted"
    )
    weak = [r(0.3, 0.2)]
    assert combine(weak, LABELS, None, cal).label == NEI  # an earlier round: back to planning
    out = combine(weak, LABELS, None, cal, final=True)
    assert out.label == REF and out.decided_by == "prior"
    assert out.confidence == pytest.approx(0.61)  # the prior's share: not a decided Refuted's confidence
    assert out.confidence < cal.confidence("refuted", 0.9)
    # however strong or weak the undecided reading, the same: its strength did not rank real-world claims
    assert combine([r(0.45, 0.1)], LABELS, None, cal, final=True).confidence == pytest.approx(0.61)
    # the share is among the labels on offer
    assert cal.prior_share("refuted", ["supported", "refuted"]) == pytest.approx(0.61 / 0.854)
    assert combine([r(0.05, 0.8)], LABELS, None, cal, final=True).decided_by == "verifier"  # decided: unchanged
    shipped = load_calibration()
    assert shipped.undecided in (None, "refuted", "supported", "conflicting") and shipped.prior
    assert "undecided" not in shipped.intercepts  # no fitted confidence for it


def test_the_stated_prior_decides_an_undecided_claim_by_default_and_nei_can_be_asked():
    from veracity.config import ConfigError, load_config

    assert load_config(env={}).defame.undecided == "prior"
    assert load_config(overrides={"defame.undecided": "nei"}, env={}).defame.undecided == "nei"
    with pytest.raises(ConfigError, match="undecided"):
        load_config(overrides={"defame.undecided": "refuted"}, env={})
