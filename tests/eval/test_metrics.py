import pytest

from veracity.metrics import accuracy, macro_f1, per_class

L = ["Supported", "Refuted"]


def test_macro_f1_matches_hand_computation():
    gold = ["Supported", "Supported", "Refuted", "Refuted", "Refuted"]
    pred = ["Supported", "Refuted", "Refuted", "Refuted", "Supported"]
    # Supported: P=1/2 R=1/2 F=0.5 ; Refuted: P=2/3 R=2/3 F=2/3
    assert macro_f1(gold, pred, L) == pytest.approx((0.5 + 2 / 3) / 2)
    assert accuracy(gold, pred) == pytest.approx(3 / 5)


def test_unverified_predictions_count_as_wrong():
    gold = ["Supported", "Refuted"]
    pred = ["Unverified", "Refuted"]
    pc = per_class(gold, pred, L)
    assert pc["Supported"]["recall"] == 0 and pc["Refuted"]["precision"] == 1
    assert accuracy(gold, pred) == 0.5
    assert macro_f1(gold, pred, L) == pytest.approx((0 + 1) / 2)
