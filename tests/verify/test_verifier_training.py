"""Training the verifier on the mixed sources: the held-apart split, the two-way label in the loss, a run that
stops mid-epoch and goes on to the same weights, and the uncertain threshold chosen for a stated accuracy."""

import math
import random
import re
from collections import defaultdict

import pytest
from conftest import ROOT

from veracity.metrics import expected_calibration_error, reliability_bins
from veracity.verify.training.data import Pair, TrainingData
from veracity.verify.training.fits import uncertain_threshold
from veracity.verify.training.loop import pair_loss
from veracity.verify.training.metrics import decisions
from veracity.verify.training.settings import TrainSettings
from veracity.verify.training.sources import SOURCES, part_of, read_sources

TRAINING = ROOT.parent / "shared" / "training"


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).strip()


@pytest.mark.skipif(not (TRAINING / "vitaminc").is_dir(), reason="../shared/training is absent")
def test_the_fever_derived_folders_are_split_together_with_no_claim_on_two_sides():
    pairs = read_sources(TRAINING, ("vitaminc_synthetic", "docnli_fever", "fever_symmetric"))
    parts = defaultdict(set)
    for p in pairs:
        parts[_norm(p.claim)].add(p.part)
    assert all(len(v) == 1 for v in parts.values()), "a claim is on two sides"
    # the folders do share claims, and those shared claims still sit on one side each
    by_source = defaultdict(set)
    for p in pairs:
        by_source[p.source].add(_norm(p.claim))
    assert len(by_source["vitaminc_synthetic"] & by_source["docnli_fever"]) > 100
    share = sum(p.part == "heldout" for p in pairs) / len(pairs)
    assert 0.08 < share < 0.25


@pytest.mark.skipif(not (TRAINING / "check_covid").is_dir(), reason="../shared/training is absent")
def test_check_covid_keeps_its_own_splits_and_every_source_has_three_parts():
    pairs = read_sources(TRAINING)
    covid = [p for p in pairs if p.source == "check_covid"]
    assert {p.part for p in covid} == {"train", "calibration", "heldout"}
    assert sum(p.part == "heldout" for p in covid) == 227  # its test file
    for name in SOURCES:
        assert {p.part for p in pairs if p.source == name} == {"train", "calibration", "heldout"}, name
    labels = {p.label for p in pairs}
    assert labels == {"supported", "refuted", "nei", "not_supported"}


def test_part_of_is_stable_and_near_its_shares():
    keys = [f"claim {i}" for i in range(4000)]
    assert [part_of(k) for k in keys[:50]] == [part_of(k) for k in keys[:50]]
    held = sum(part_of(k) == "heldout" for k in keys) / len(keys)
    cal = sum(part_of(k) == "calibration" for k in keys) / len(keys)
    assert 0.12 < held < 0.18 and 0.07 < cal < 0.13


def test_a_two_way_not_supported_label_is_refuted_or_nei_in_the_loss():
    import torch

    logits = torch.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 1.0]])
    logp = torch.log_softmax(logits, -1)
    loss = pair_loss(logits, ["not_supported", "supported"])
    expected = (-torch.logsumexp(logp[0, 1:], 0) - logp[1, 0]) / 2
    assert math.isclose(loss.item(), expected.item(), rel_tol=1e-6)
    # a pair read as not_supported is not pushed towards refuted over nei
    only_nei = pair_loss(torch.tensor([[0.0, -5.0, 5.0]]), ["not_supported"]).item()
    only_ref = pair_loss(torch.tensor([[0.0, 5.0, -5.0]]), ["not_supported"]).item()
    assert math.isclose(only_nei, only_ref, rel_tol=1e-6)


def test_two_way_sets_are_decided_as_supported_against_the_rest():
    probs = [[0.3, 0.3, 0.4], [0.8, 0.1, 0.1]]
    pred, conf, labels = decisions(probs, ["not_supported", "supported"], "supported_vs_refuted")
    assert pred == ["not_supported", "supported"] and labels == ["supported", "not_supported"]
    assert math.isclose(conf[0], 0.7)
    pred, conf, _ = decisions([[0.2, 0.4, 0.4], [0.8, 0.1, 0.1]], ["refuted", "supported"], "supported_vs_refuted")
    assert pred == ["refuted", "supported"] and math.isclose(conf[0], 2 / 3)  # nei set aside


def test_the_uncertain_threshold_holds_the_stated_accuracy_on_the_verdicts_it_keeps():
    # confidences 0.50..0.99: the most confident half is always right, the rest right one time in two
    conf = [0.5 + i / 200 for i in range(100)]
    correct = [True if c >= 0.75 else i % 2 == 0 for i, c in enumerate(conf)]
    t, acc, share = uncertain_threshold(conf, correct, 0.9)
    kept = [ok for c, ok in zip(conf, correct) if c >= t]
    assert acc >= 0.9 and sum(kept) / len(kept) == acc and math.isclose(share, len(kept) / 100)
    assert 0.6 < t <= 0.75
    assert uncertain_threshold([0.9] * 30, [False] * 30, 0.9) == (1.0, 0.0, 0.0)


def test_reliability_bins_and_ece():
    conf = [0.95] * 10 + [0.55] * 10
    correct = [True] * 9 + [False] + [True] * 5 + [False] * 5
    bins = reliability_bins(conf, correct)
    assert [(n, round(acc, 2)) for _, _, n, _, acc in bins] == [(10, 0.5), (10, 0.9)]
    assert math.isclose(expected_calibration_error(conf, correct), 0.05 / 2 + 0.05 / 2)


def _tiny_data() -> TrainingData:
    facts = [
        ("The bridge opened in 1883.", "The bridge was opened in 1883 after years of work."),
        ("The river is 300 km long.", "The river runs for 300 km through the valley."),
        ("Anna was born in Oslo.", "Anna was born in Oslo in 1950 and studied law."),
        ("The tower is red.", "The tower was painted red in 1990."),
    ]
    train = []
    for claim, ev in facts:
        train += [
            Pair(claim, ev, "supported", "t"),
            Pair(
                claim.replace("1883", "1925").replace("300", "900").replace("Oslo", "Rome").replace("red", "blue"),
                ev,
                "refuted",
                "t",
            ),
            Pair(claim, "Bananas grow in warm places.", "not_supported", "t"),
        ]
    return TrainingData(train, [], [], [], [], [], {})


@pytest.mark.timeout(600)
def test_a_run_stopped_mid_epoch_goes_on_from_its_checkpoint_to_the_same_weights(tmp_path, monkeypatch):
    import torch

    from veracity.verify.training import loop

    s = TrainSettings(
        epochs=2, lr=5e-5, batch_size=2, max_length=32, frozen_layers=5, seed=3, threads=1, checkpoint_every=2
    )
    (tmp_path / "whole").mkdir()
    whole, _ = loop.fine_tune(_tiny_data(), tmp_path / "whole", s, progress=False)

    (tmp_path / "stopped").mkdir()
    calls = {"n": 0}
    real = loop.pair_loss

    def stop_after_five(logits, labels):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt  # killed in the first epoch, after the checkpoint at batch 4
        return real(logits, labels)

    monkeypatch.setattr(loop, "pair_loss", stop_after_five)
    with pytest.raises(KeyboardInterrupt):
        loop.fine_tune(_tiny_data(), tmp_path / "stopped", s, progress=False)
    state = torch.load(tmp_path / "stopped" / "checkpoint.pt", weights_only=False)
    assert (state["epoch"], state["batch"]) == (0, 4)
    monkeypatch.setattr(loop, "pair_loss", real)
    resumed, _ = loop.fine_tune(_tiny_data(), tmp_path / "stopped", s, progress=False)
    a, b = whole.state_dict(), resumed.state_dict()
    changed = [k for k in a if k.startswith("classifier.")]
    assert changed and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_the_most_decisive_of_several_passages_is_tempered_and_one_passage_is_not():
    from veracity.verify.result import aggregate

    one = [{"supported": 0.9, "refuted": 0.05, "nei": 0.05}]
    assert aggregate(one, 1, temperature=2.0).probabilities == one[0]
    several = [
        {"supported": 0.3, "refuted": 0.2, "nei": 0.5},
        {"supported": 0.9, "refuted": 0.05, "nei": 0.05},
        {"supported": 0.5, "refuted": 0.1, "nei": 0.4},
    ]
    v = aggregate(several, 2, temperature=2.0)
    assert v.passage == 1 and v.label == "supported"
    assert 0.5 < v.probabilities["supported"] < 0.9 and math.isclose(sum(v.probabilities.values()), 1.0)
    # the odds between any two labels are those of the deciding passage, taken to the power 1/2
    odds = v.probabilities["supported"] / v.probabilities["refuted"]
    assert math.isclose(odds, math.sqrt(0.9 / 0.05), rel_tol=1e-6)


PAGE = [
    "The Brooklyn Bridge was opened to traffic on May 24, 1883, after fourteen years of construction.",
    "John Augustus Roebling designed the bridge and died before construction began in earnest.",
    "Washington Roebling took over the work after his father died in 1869.",
    "The main span of the bridge is 1,595 feet long and was the longest in the world at the time.",
    "Emily Warren Roebling supervised much of the construction while her husband was ill.",
    "The bridge connects the boroughs of Manhattan and Brooklyn across the East River.",
]


def test_two_part_claims_are_supported_only_when_both_parts_are_in_the_evidence():
    from veracity.verify.training.synthetic import compound_pairs

    triples = compound_pairs(PAGE, random.Random(5), count=60)
    assert {lab for _, _, lab in triples} == {"supported", "refuted", "nei"}
    for claim, evidence, label in triples:
        assert ", and " in claim
        parts = claim.split(", and ")
        in_evidence = [any(p.strip(" .").lower() in s.lower() for s in PAGE if s in evidence) for p in parts]
        if label == "supported":
            assert all(in_evidence), (claim, evidence)
        elif label == "nei":  # one part taken from a sentence the evidence does not hold
            assert in_evidence.count(False) == 1, (claim, evidence)
        else:  # one part changed, the other in the evidence or unsettled by it
            assert not all(in_evidence), (claim, evidence, label)
        assert len(evidence.split(". ")) >= 2  # several sentences, as multi-hop evidence reads
    # a changed fact refutes the claim even when its other part is not in the evidence
    refuted = [
        [any(p.strip(" .").lower() in s.lower() for s in PAGE if s in e) for p in c.split(", and ")]
        for c, e, lab in triples
        if lab == "refuted"
    ]
    assert [0 < r.count(False) for r in refuted].count(True) == len(refuted)
    assert 0 < sum(r.count(False) == 2 for r in refuted) < len(refuted)


REAL = [  # (claim, evidence, label) as the sources give them, VitaminC's spacing included
    (
        "The Danube flows through ten countries .",
        "The Danube flows through ten countries , more than any other river .",
        "supported",
    ),
    ("The Danube flows through four countries .", "The Danube flows through ten countries .", "refuted"),
    ("Mount Everest is in Asia.", "Mount Everest is Earth's highest mountain, in the Himalayas of Asia.", "supported"),
    (
        "Mount Everest was first climbed in 1960.",
        "Mount Everest was first climbed in 1953 by Hillary and Norgay.",
        "refuted",
    ),
    ("The Nile is longer than 6,000 km.", "The Nile flows north through eleven countries.", "nei"),
    ("Paris is the capital of France.", "Paris is the capital and largest city of France.", "supported"),
    ("Ottawa is the capital of Canada.", "Ottawa is the capital city of Canada.", "supported"),
    ("Lima has more than 20 million people.", "Lima is the capital of Peru.", "nei"),
]


def test_joined_real_claims_carry_the_label_their_parts_give_and_their_evidence_is_all_there():
    from veracity.verify.training.synthetic import joined_pairs

    triples = joined_pairs(REAL, random.Random(3), count=200)
    assert len(triples) == 200 and {lab for _, _, lab in triples} == {"supported", "refuted", "nei"}
    label_of = {c.rstrip(" ."): lab for c, _, lab in REAL}
    evidence_of = {c.rstrip(" ."): e for c, e, _ in REAL}
    for claim, evidence, label in triples:
        # each part is one whole claim of the input (VitaminC's " ." cleaned, a leading "The" lower-cased)
        found = [c for c in label_of if c.strip(" .").lower() in claim.lower()]
        assert 2 <= len(found) <= 3 and claim.count(", ") == len(found) - 1, claim
        kinds = sorted(label_of[c] for c in found)
        want = "supported" if set(kinds) == {"supported"} else ("refuted" if "refuted" in kinds else "nei")
        assert label == want and kinds.count("refuted") + kinds.count("nei") <= (2 if want == "refuted" else 1)
        assert kinds.count("nei") <= 1, (claim, label)
        for c in found:  # every part's own evidence sentence is in the evidence
            assert " ".join(evidence_of[c].split()).replace(" ,", ",").replace(" .", ".") in evidence
        assert len(claim.split()) + len(evidence.split()) <= 95
    # one false part refutes the claim even beside a part its evidence does not settle, not always
    kinds_of_refuted = [
        sorted(label_of[c] for c in label_of if c.strip(" .").lower() in claim.lower())
        for claim, _, label in triples
        if label == "refuted"
    ]
    beside = sum("nei" in k for k in kinds_of_refuted)
    assert 0 < beside < len(kinds_of_refuted)


def test_training_runs_on_the_cpu_here_and_a_missing_gpu_is_a_clear_error():
    import torch

    from veracity.errors import UserError
    from veracity.verify.training.settings import training_device

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    assert training_device("auto") == "cpu"
    assert training_device("cpu") == "cpu"
    with pytest.raises(UserError, match="no CUDA GPU"):
        training_device("cuda")


def test_the_several_passages_temperature_is_fitted_on_what_verify_many_returns_for_two_label_claims():
    from veracity.verify.result import Verification, several_temperature
    from veracity.verify.training.data import Pair
    from veracity.verify.training.fits import fit_aggregate_temperature
    from veracity.verify.training.metrics import several_passages

    class Overconfident:  # says supported 0.95 to every claim, whatever its passages
        seen: list = []

        def verify_many(self, items):
            self.seen.extend(items)
            return [Verification({"supported": 0.95, "refuted": 0.04, "nei": 0.01}, 0) for _ in items]

    v = Overconfident()
    claims = [(f"claim {i}", ["one.", "two."], "supported" if i % 10 < 7 else "refuted") for i in range(100)]
    fitted = fit_aggregate_temperature(v, claims + [("unsettled", ["three."], "nei")])
    assert len(v.seen) == 100  # the nei claim is not asked: the fit is on the two-label decision
    assert fitted["beta"] == 0  # one count of passages only: one temperature
    t = several_temperature(fitted, 2)
    # right 70% of the time at 0.96: tempered until the supported odds are about 70:30
    odds = (0.95 / 0.04) ** (1 / t)
    assert 2.0 < odds < 2.7 and t > 3
    right = [(f"c {i}", ["x.", "y."], "supported" if i % 100 < 96 else "refuted") for i in range(100)]
    assert 0.8 < several_temperature(fit_aggregate_temperature(v, right), 2) < 1.3
    assert fit_aggregate_temperature(v, []) == 1.0
    # a joined pair's evidence becomes its sentences, one passage each
    [(claim, passages, label)] = several_passages([Pair("A and b.", "A is so. B is so too.", "supported", "joined")])
    assert passages == ["A is so.", "B is so too."] and label == "supported"


def test_the_several_passages_temperature_grows_with_the_count_of_passages_chosen_among():
    """The same 0.96 reading is right 96% of the time when chosen among two passages and 70% among ten (the most
    decisive of many looks surer than it is): the fitted temperature keeps the first and tempers the second, and a
    fixed number still reads as one temperature for every count."""
    from veracity.verify.result import Verification, aggregate, describe_several, several_temperature
    from veracity.verify.training.fits import fit_aggregate_temperature

    class Overconfident:
        def verify_many(self, items):
            return [Verification({"supported": 0.95, "refuted": 0.04, "nei": 0.01}, 0) for _ in items]

    two = [(f"a {i}", ["x."] * 2, "supported" if i % 100 < 96 else "refuted") for i in range(300)]
    ten = [(f"b {i}", ["x."] * 10, "supported" if i % 10 < 7 else "refuted") for i in range(300)]
    fitted = fit_aggregate_temperature(Overconfident(), two + ten)
    assert fitted["beta"] > 0.5
    assert 0.8 < several_temperature(fitted, 2) < 1.3 and several_temperature(fitted, 10) > 3
    for n, share in ((2, 0.96), (10, 0.70)):  # calibrated at both counts
        probs = aggregate([{"supported": 0.95, "refuted": 0.04, "nei": 0.01}] * (n + 1), n, fitted).probabilities
        assert abs(probs["supported"] / (probs["supported"] + probs["refuted"]) - share) < 0.03, (n, probs)
    # read through a fitted two-label rule that already halves the log-odds, half the temperature is left to fit
    halving = {"name": "fitted", "weights": [0.5, -0.5, 0.0], "bias": 0.0}
    through_rule = fit_aggregate_temperature(Overconfident(), two + ten, halving)
    assert 0.4 < several_temperature(through_rule, 10) / several_temperature(fitted, 10) < 0.6
    assert several_temperature(through_rule, 2) == 1.0  # never sharpened: the choice only makes readings look surer
    assert several_temperature(1.82, 2) == several_temperature(1.82, 10) == 1.82
    assert "for 10" in describe_several(fitted) and describe_several(1.82) == "1.82"


def test_the_two_label_probability_for_arrays_is_binary_label_s():
    import numpy as np

    from veracity.verify.result import binary_label
    from veracity.verify.training.fits import two_label_probability

    rng = random.Random(5)
    rules = ["supported_vs_refuted", "supported_vs_rest", {"name": "fitted", "weights": [0.8, -0.8, 0.3], "bias": -0.2}]
    for _ in range(300):
        raw = [rng.random() ** 3 + 1e-9 for _ in range(3)]
        p = [x / sum(raw) for x in raw]
        for rule in rules:
            name, q = binary_label(p[0], p[1], rule)
            assert float(two_label_probability(np.log(np.asarray(p)), rule)) == pytest.approx(
                q if name == "supported" else 1 - q, abs=1e-6
            )


def _two_label_readings(n: int, seed: int) -> tuple[list[list[float]], list[str]]:
    """Readings of a two-label set in which "not enough information" leans refuted: a refuted claim is read as
    nei-heavy (a changed fact among parts the evidence does not mention), a supported one is not."""
    rng = random.Random(seed)
    probs, gold = [], []
    for _ in range(n):
        label = "supported" if rng.random() < 0.5 else "refuted"
        nei = rng.uniform(0.4, 0.9) if (label == "refuted") == (rng.random() < 0.8) else rng.uniform(0.0, 0.3)
        lean = rng.uniform(0.55, 0.8) if rng.random() < 0.7 else rng.uniform(0.2, 0.45)
        s = (1 - nei) * (lean if label == "supported" else 1 - lean)
        probs.append([s, 1 - nei - s, nei])
        gold.append(label)
    return probs, gold


def test_the_fitted_two_label_rule_learns_where_not_enough_information_leans_and_is_calibrated():
    from veracity.metrics import expected_calibration_error
    from veracity.verify.result import binary_label, describe_rule
    from veracity.verify.training.fits import fit_two_label_rule

    probs, gold = _two_label_readings(2000, 1)
    rule = fit_two_label_rule(probs, gold, ["a"] * 1000 + ["b"] * 1000, seed=0)
    assert rule["weights"][2] < 0 and "log nei" in describe_rule(rule)
    # a nei-heavy reading that leans supported is refuted in such a set; the named rule says supported
    assert binary_label(0.25, 0.15, "supported_vs_refuted")[0] == "supported"
    assert binary_label(0.25, 0.15, rule)[0] == "refuted"
    test_probs, test_gold = _two_label_readings(2000, 2)

    def scored(r):
        decided = [binary_label(s, rf, r) for s, rf, _ in test_probs]
        right = [d == g for (d, _), g in zip(decided, test_gold)]
        return sum(right) / len(right), expected_calibration_error([c for _, c in decided], right)

    (acc_fitted, ece_fitted), (acc_named, ece_named) = scored(rule), scored("supported_vs_refuted")
    assert acc_fitted > acc_named + 0.05 and ece_fitted < 0.06 < ece_named
    # its weights (1, -1, 0) and bias 0 are the named rule supported_vs_refuted
    same = {"name": "fitted", "weights": [1.0, -1.0, 0.0], "bias": 0.0}
    assert math.isclose(binary_label(0.3, 0.1, same)[1], binary_label(0.3, 0.1, "supported_vs_refuted")[1])


def test_the_fitted_two_label_rule_leaves_a_reading_of_nothing_but_nei_to_its_bias():
    """Two-label calibration pairs hardly ever read as pure nei; fitted with free weights on the three
    log-probabilities, such a reading was decided by their small difference times log(1e-6) (Supported 0.78 on a
    claim whose evidence says nothing of it). Supported and refuted now weigh the same and opposite."""
    from veracity.verify.result import binary_label
    from veracity.verify.training.fits import fit_two_label_rule

    rng = random.Random(4)
    probs, gold = [], []
    for _ in range(3000):  # refuted readings a little surer than supported ones: free weights would differ
        label = rng.choice(["supported", "refuted"])
        nei = rng.uniform(0.0, 0.3)
        sure = rng.uniform(0.5, 0.8) if label == "supported" else rng.uniform(0.6, 0.95)
        right = (1 - nei) * sure
        probs.append([right, 1 - nei - right, nei] if label == "supported" else [1 - nei - right, right, nei])
        gold.append(label if rng.random() < 0.85 else ({"supported", "refuted"} - {label}).pop())
    rule = fit_two_label_rule(probs, gold, ["a"] * 3000, seed=0)
    assert rule["weights"][0] == -rule["weights"][1] > 0
    by_bias = 1 / (1 + math.exp(-abs(rule["bias"])))  # the probability the bias alone gives
    for tiny in (1e-3, 1e-5, 0.0):
        name, p = binary_label(tiny, tiny, rule)
        assert abs(p - by_bias) < 0.01 and p < 0.65, (tiny, name, p)


def test_the_two_label_rule_is_fitted_only_on_sources_with_two_labels():
    from veracity.verify.training.data import Pair
    from veracity.verify.training.fits import TWO_LABEL_MIN, choose_two_label_rule

    probs, gold = _two_label_readings(400, 3)
    pairs = [Pair("c", "e", g, "fm2") for g in gold]
    # a three-way source whose refuted pairs are read as sure refutations, and its nei pairs as nei
    three = [([0.05, 0.9, 0.05], "refuted"), ([0.1, 0.1, 0.8], "nei"), ([0.9, 0.05, 0.05], "supported")] * 300
    rule, scores = choose_two_label_rule(
        probs + [p for p, _ in three], pairs + [Pair("c", "e", g, "snli") for _, g in three], seed=0
    )
    alone, _ = choose_two_label_rule(probs, pairs, seed=0)
    assert (
        rule == alone
        and rule["name"] == "fitted"
        and set(scores) == {"supported_vs_refuted", "supported_vs_rest", "fitted"}
    )
    few = pairs[: TWO_LABEL_MIN - 1]
    named, scores = choose_two_label_rule(probs[: len(few)], few, seed=0)
    assert named == max(scores, key=scores.get) and "fitted" not in scores


def _rest_readings(n: int, seed: int) -> tuple[list[list[float]], list[str]]:
    """Readings of a supported / not-supported set (a summary faithful or not, an answer grounded or not) in which
    the verifier's supported mass runs low: a faithful one gets 0.15-0.5, an unfaithful one 0.01-0.3; 38% are
    faithful, as in the not-supported sources."""
    rng = random.Random(seed)
    probs, gold = [], []
    for _ in range(n):
        label = "supported" if rng.random() < 0.38 else "not_supported"
        s = rng.uniform(0.15, 0.5) if label == "supported" else rng.uniform(0.01, 0.3)
        probs.append([s, (1 - s) / 2, (1 - s) / 2])
        gold.append(label)
    return probs, gold


def test_the_fitted_rule_against_the_rest_moves_where_supported_is_decided():
    from veracity.metrics import macro_f1
    from veracity.verify.result import binary_label
    from veracity.verify.training.fits import fit_rest_rule

    probs, gold = _rest_readings(3000, 1)
    groups = ["a"] * 1500 + ["b"] * 1500
    balanced = fit_rest_rule(probs, gold, groups, seed=0, balanced=True)
    mixed = fit_rest_rule(probs, gold, groups, seed=0, balanced=False)
    assert balanced["name"] == mixed["name"] == "fitted_vs_rest" and balanced["weight"] > 0

    def at(rule):  # the supported mass from which the rule decides supported
        return 1 / (1 + math.exp(rule["bias"] / rule["weight"]))

    # each label weighing the same decides supported from a lower mass than the sources' own mix does, and both
    # below the one half at which supported_vs_rest decides
    assert 0.15 < at(balanced) < at(mixed) < 0.5
    test_probs, test_gold = _rest_readings(3000, 2)

    def f1(rule):
        pred = [binary_label(s, r, rule)[0] for s, r, _ in test_probs]
        return macro_f1(
            test_gold, [x if x == "supported" else "not_supported" for x in pred], ["supported", "not_supported"]
        )

    assert f1(balanced) > f1("supported_vs_rest") + 0.1


def test_the_rule_against_the_rest_is_fitted_only_on_not_supported_sources():
    from veracity.verify.training.data import Pair
    from veracity.verify.training.fits import TWO_LABEL_MIN, choose_rest_rule
    from veracity.verify.training.metrics import figures

    probs, gold = _rest_readings(600, 3)
    pairs = [Pair("c", "e", g, "summedits") for g in gold]
    # a two-label source read far surer: were it pooled in, the rule would move
    two = [([0.9, 0.05, 0.05], "supported"), ([0.05, 0.9, 0.05], "refuted")] * 300
    rule, chosen = choose_rest_rule(
        probs + [p for p, _ in two], pairs + [Pair("c", "e", g, "fm2") for _, g in two], seed=0
    )
    alone, _ = choose_rest_rule(probs, pairs, seed=0)
    assert rule == alone and rule["name"] == "fitted_vs_rest"
    assert set(chosen) == {"supported_vs_rest", "fitted", "fitted_balanced"}
    assert chosen[max(chosen, key=chosen.get)] > chosen["supported_vs_rest"]
    # each source weighs the same: a second source of 150 pairs read well at one half counts as much as the 600
    few_probs, few_gold = _rest_readings(150, 5)
    sure_few = [[0.8, 0.1, 0.1] if g == "supported" else [0.2, 0.4, 0.4] for g in few_gold]
    both = pairs + [Pair("c", "e", g, "begin") for g in few_gold]
    rule_fitted, mixed = choose_rest_rule(probs + sure_few, both, seed=0)
    each = [
        figures(pr, ps, "supported_vs_refuted", rule_fitted)["macro_f1"]
        for pr, ps in ((probs, pairs), (sure_few, both[len(pairs) :]))
    ]
    assert max(mixed.values()) == round(sum(each) / 2, 2)
    # readings that already decide at one half keep the named rule: a fitted one is no better there
    sure = [[0.9, 0.05, 0.05] if g == "supported" else [0.1, 0.45, 0.45] for g in gold]
    assert choose_rest_rule(sure, pairs, seed=0)[0] == "supported_vs_rest"
    few = pairs[: TWO_LABEL_MIN - 1]
    named, scores = choose_rest_rule(probs[: len(few)], few, seed=0)
    assert named == "supported_vs_rest" and set(scores) == {"supported_vs_rest"}
    # no such source: the named rule
    assert choose_rest_rule([p for p, _ in two], [Pair("c", "e", g, "fm2") for _, g in two], seed=0) == (
        "supported_vs_rest",
        {},
    )

    import json

    from veracity.verify.model import WEIGHTS_DIR
    from veracity.verify.training.card import model_card

    settings = json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8"))
    card = model_card({**settings, "not_supported_rule": rule, "not_supported_rule_on_calibration": chosen})
    at = 1 / (1 + math.exp(rule["bias"] / rule["weight"]))
    assert "Supported / not-supported sets use `fitted: supported with probability logistic(" in card
    assert f"supported from {at:.2f}`" in card and "'fitted_balanced': " in card


def test_joined_claims_against_some_of_their_parts_evidence_are_refuted_only_when_a_false_parts_evidence_is_there():
    from veracity.verify.training.synthetic import joined_pairs

    triples = joined_pairs(REAL, random.Random(5), count=300, partial=True)
    assert len(triples) == 300 and {lab for _, _, lab in triples} == {"refuted", "nei"}
    label_of = {c.rstrip(" ."): lab for c, _, lab in REAL}
    evidence_of = {c.rstrip(" ."): " ".join(e.split()).replace(" ,", ",").replace(" .", ".") for c, e, _ in REAL}
    for claim, evidence, label in triples:
        found = [c for c in label_of if c.strip(" .").lower() in claim.lower()]
        present = [c for c in found if evidence_of[c] in evidence]
        # at least one part's evidence is there, never all of them: the rest of the claim is unsettled
        assert 1 <= len(present) < len(found), (claim, evidence)
        false_there = any(label_of[c] == "refuted" for c in present)
        assert label == ("refuted" if false_there else "nei"), (claim, evidence, label)
    # a supported joined claim read against one part's evidence is among them, and is nei
    assert any(
        all(label_of[c] == "supported" for c in label_of if c.strip(" .").lower() in claim.lower())
        for claim, _, label in triples
        if label == "nei"
    )


def test_training_counts_per_source_the_pairs_it_cuts_at_the_maximum_length_and_the_model_card_says_so():
    import json

    from transformers import AutoTokenizer

    from veracity.verify.model import WEIGHTS_DIR, base_model_path
    from veracity.verify.training.card import model_card
    from veracity.verify.training.draw import cut_by_source

    tok = AutoTokenizer.from_pretrained(base_model_path(), local_files_only=True)
    page = " ".join(["The bridge crosses the river near the old town."] * 6)  # ~60 word pieces
    pairs = [
        Pair("The bridge opened in 1883.", page, "supported", "pages"),
        Pair("The bridge opened in 1883.", "It opened in 1883.", "supported", "pages"),
        Pair("A short claim.", "A short passage.", "nei", "short"),
    ]
    cut = cut_by_source(pairs, tok, 32)
    assert cut == {"pages": [1, 2], "short": [0, 1]} and list(cut) == ["pages", "short"]  # the most cut first
    assert cut_by_source(pairs, tok, 128) == {"pages": [0, 2], "short": [0, 1]}

    settings = json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8"))
    settings["max_length"] = 32
    settings["settings"] = {**settings["settings"], "max_length": 32}  # trained at 32 (the card counts at that length)
    settings.setdefault("data", {})["cut_at_max_length"] = cut
    card = model_card(settings)
    assert "1 of the last training stage's 3 pairs (33.3%) were longer than 32 and were cut" in card
    assert "(pages 50%)" in card


def test_a_draw_with_a_cap_per_source_keeps_the_mix_order_and_no_source_dominates():
    import json

    from veracity.verify.model import WEIGHTS_DIR
    from veracity.verify.training.card import model_card
    from veracity.verify.training.draw import training_draw

    mix = [Pair(f"big {i}", "e", "supported", "vitaminc_real") for i in range(10)] + [
        Pair(f"small {i}", "e", "refuted", "check_covid") for i in range(3)
    ]
    random.Random(5).shuffle(mix)
    drawn = training_draw(mix, per_source=4)
    assert [p.source for p in drawn].count("vitaminc_real") == 4 and [p.source for p in drawn].count("check_covid") == 3
    assert drawn == [p for p in mix if p in drawn]  # the mix's own (seeded) order, nothing reshuffled
    first_four = [p.claim for p in mix if p.source == "vitaminc_real"][:4]  # the first four the mix holds
    assert [p.claim for p in drawn if p.source == "vitaminc_real"] == first_four
    assert training_draw(mix, limit=5, per_source=4) == drawn[:5]
    assert training_draw(mix, limit=5) == mix[:5] and training_draw(mix) == mix

    settings = json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8"))
    settings.pop("averaged_from", None)  # a trained verifier's card (an averaged one's gives its stages' commands)
    settings["settings"] = {**settings["settings"], "limit": 30000, "per_source": 1500}
    assert "--limit 30000 --per-source 1500" in model_card(settings)


def test_the_training_command_refuses_a_cap_per_source_below_one(capsys):
    from veracity.cli import main

    assert main(["verifier", "train", "--per-source", "0", "--out", "/nonexistent"]) != 0
    assert "--per-source must be at least 1" in capsys.readouterr().err


def test_a_calibration_with_another_seed_counts_the_pairs_the_weights_were_trained_on(monkeypatch, tmp_path):
    # weights whose training stopped before its own calibration are counted from the training's draw, not from the
    # calibration's (another seed shuffles the mix otherwise: the model card would list pairs never read)
    from veracity.verify.training import draw

    def mix(seed: int) -> TrainingData:
        pairs = [Pair(f"claim {i}", "e", "supported", "vitaminc_real" if i % 3 else "check_covid") for i in range(30)]
        random.Random(seed).shuffle(pairs)
        return TrainingData(pairs, [], [], [], [], [], {})

    built: list[int] = []
    monkeypatch.setattr(draw, "build", lambda root, seed=13, **kw: (built.append(seed), mix(seed))[1])
    calibration = mix(31)
    s = TrainSettings(seed=31, limit=8, per_source=5)
    pool = draw.trained_pool(tmp_path, {"seed": 37, "limit": 8, "per_source": 5}, s, calibration)
    assert built == [37] and pool == mix(37).train != calibration.train
    assert draw.training_draw(pool, 8, 5) == draw.training_draw(mix(37).train, 8, 5)
    assert draw.trained_pool(tmp_path, {"seed": 31}, s, calibration) is calibration.train and built == [37]


def test_weights_trained_with_same_subject_pairs_are_counted_from_that_mix(monkeypatch, tmp_path, capsys):
    # a calibration of weights trained with `--same-subject N` draws the mix that had those pairs, and its model card
    # gives the flag back; a training asks for them only with the flag
    import json

    from veracity.cli import main
    from veracity.verify.model import WEIGHTS_DIR
    from veracity.verify.training import draw
    from veracity.verify.training.card import model_card

    built: list[tuple[int, int]] = []

    def mix(root, seed=13, same_subject=0, **kw):
        built.append((seed, same_subject))
        pairs = [Pair(f"claim {i}", "e", "nei", "same-subject" if i < same_subject else "fm2") for i in range(20)]
        return TrainingData(pairs, [], [], [], [], [], {})

    monkeypatch.setattr(draw, "build", mix)
    calibration = mix(tmp_path, 31)
    s = TrainSettings(seed=31)
    pool = draw.trained_pool(tmp_path, {"seed": 31, "same_subject": 4}, s, calibration)
    assert built[-1] == (31, 4) and sum(p.source == "same-subject" for p in pool) == 4
    assert draw.trained_pool(tmp_path, {"seed": 31}, s, calibration) is calibration.train
    settings = json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8"))
    settings.pop("averaged_from", None)  # a trained verifier's card (an averaged one's gives its stages' commands)
    assert "--same-subject 4000" not in model_card(settings)
    settings["settings"] = {**settings["settings"], "limit": 30000, "same_subject": 4000}
    assert "--limit 30000 --same-subject 4000" in model_card(settings)
    assert main(["verifier", "train", "--same-subject", "-1", "--out", "/nonexistent"]) != 0
    assert "--same-subject must be at least 0" in capsys.readouterr().err


def _verifier_folder(folder, state, settings):
    import json

    from safetensors.torch import save_file

    from veracity.verify.model import sha256

    folder.mkdir()
    save_file(state, str(folder / "verifier.safetensors"))
    settings = {**settings, "sha256": sha256(folder / "verifier.safetensors")}
    (folder / "verifier.json").write_text(json.dumps(settings), encoding="utf-8")


def test_averaged_verifiers_are_the_mean_of_their_tensors_with_the_base_model_where_one_did_not_ship_a_layer(tmp_path):
    import json

    import torch
    from safetensors.torch import load_file

    from veracity.verify.model import WEIGHTS_DIR, CrossEncoderVerifier, sha256
    from veracity.verify.training.average import _base_state, average
    from veracity.verify.training.card import model_card

    shipped = load_file(str(WEIGHTS_DIR / "verifier.safetensors"))
    settings = json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8"))
    settings.pop("averaged_from", None)  # two trained verifiers (the shipped one is an average itself)
    layer0 = "bert.encoder.layer.0.attention.self.query.weight"
    other = {
        k: (v.float() * 0.5).half() if k.startswith("classifier.") else v
        for k, v in shipped.items()
        if not k.startswith("bert.encoder.layer.0.")
    }  # trained with layer 0 frozen
    _verifier_folder(tmp_path / "a", shipped, {**settings, "train_seconds": 900})
    _verifier_folder(tmp_path / "b", other, {**settings, "train_seconds": 700})
    written = average([tmp_path / "a", tmp_path / "b"], tmp_path / "mean")

    mean = load_file(str(tmp_path / "mean" / "verifier.safetensors"))
    assert set(mean) == set(shipped)
    w = shipped["classifier.weight"].float()
    assert torch.allclose(mean["classifier.weight"].float(), 0.75 * w, atol=2e-3)
    base = _base_state()[layer0]
    assert not torch.allclose(base, shipped[layer0].float(), atol=1e-3)  # the shipped layer 0 was trained
    assert torch.allclose(mean[layer0].float(), (shipped[layer0].float() + base) / 2, atol=2e-3)
    assert written["sha256"] == sha256(tmp_path / "mean" / "verifier.safetensors")
    assert [a["folder"] for a in written["averaged_from"]] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert written["temperature"] == 1.0 and "stack" not in written and "figures" not in written
    # the averaged folder loads as a verifier and still reads a plain contradiction as refuted
    v = CrossEncoderVerifier(tmp_path / "mean", threads=1, cached=False)
    r = v.verify("Paris is the capital of Germany.", ["Paris is the capital and largest city of France."])
    assert r.label == "refuted"
    card = model_card({**written, "settings": settings["settings"], "figures": {}})
    assert "The element-wise mean of 2 trained verifiers' weights (trained on 2 CPU cores in 900 s, 700 s)" in card
    assert f"veracity verifier average {tmp_path / 'a'} {tmp_path / 'b'} --out DIR --seed" in card


def test_averaging_refuses_one_folder_a_folder_without_weights_and_tensors_of_other_shapes(tmp_path, capsys):
    import torch

    from veracity.cli import main
    from veracity.errors import UserError
    from veracity.verify.training.average import average

    _verifier_folder(tmp_path / "a", {"classifier.weight": torch.zeros(3, 384, dtype=torch.float16)}, {})
    _verifier_folder(tmp_path / "b", {"classifier.weight": torch.zeros(2, 384, dtype=torch.float16)}, {})
    (tmp_path / "empty").mkdir()
    before = {f: (tmp_path / "a" / f).read_bytes() for f in ("verifier.json", "verifier.safetensors")}
    with pytest.raises(UserError, match="at least two"):
        average([tmp_path / "a"], tmp_path / "out")
    with pytest.raises(UserError, match="no trained verifier in .*empty"):
        average([tmp_path / "a", tmp_path / "empty"], tmp_path / "out")
    with pytest.raises(UserError, match="classifier.weight has different shapes"):
        average([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written
    assert (
        main(["verifier", "average", str(tmp_path / "a"), "--out", str(tmp_path / "out"), "--data", str(tmp_path)]) != 0
    )
    assert "training data not found" in capsys.readouterr().err
    assert {f: (tmp_path / "a" / f).read_bytes() for f in before} == before  # the folders read are left as they were


def test_the_average_command_calibrates_the_folder_it_wrote(tmp_path, monkeypatch):
    import json

    from veracity.cli import main
    from veracity.verify.model import WEIGHTS_DIR
    from veracity.verify.training import calibration

    (tmp_path / "data" / "fm2").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for f in ("verifier.json", "verifier.safetensors"):
            (tmp_path / name / f).write_bytes((WEIGHTS_DIR / f).read_bytes())
    seen = {}

    def calibrate(out, data, s):
        seen.update(
            out=out,
            data=data,
            seed=s.seed,
            threads=s.threads,
            averaged=json.loads((out / "verifier.json").read_text(encoding="utf-8"))["averaged_from"],
        )
        return {"temperature": 1.0, "binary_rule": {}, "figures": {}, "ms_per_pair": 0}

    monkeypatch.setattr(calibration, "calibrate", calibrate)
    assert (
        main(
            [
                "verifier",
                "average",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                "--out",
                str(tmp_path / "m"),
                "--data",
                str(tmp_path / "data"),
                "--seed",
                "31",
                "--threads",
                "2",
            ]
        )
        == 0
    )
    assert seen["out"] == tmp_path / "m" and seen["data"] == tmp_path / "data"
    assert (seen["seed"], seen["threads"]) == (31, 2) and len(seen["averaged"]) == 2


def test_an_averaged_verifier_lists_what_each_of_its_folders_was_trained_on(tmp_path, monkeypatch):
    # the model card of an average names each folder's training draw (counted from the folder's own settings when
    # its calibration did not), an average of averages folder by folder, and no longer gives the first folder's
    # draw as the whole model's
    import json

    import torch

    from veracity.verify.training import draw
    from veracity.verify.training.average import average
    from veracity.verify.training.card import model_card

    state = {"classifier.weight": torch.zeros(3, 384, dtype=torch.float16)}
    counted = {"train_pairs": 5, "train_by_source": {"fm2": 5}}
    _verifier_folder(
        tmp_path / "a",
        state,
        {"settings": {"seed": 31}, "train_seconds": 900, "data": {**counted, "calibration_pairs": 7}},
    )
    _verifier_folder(tmp_path / "b", state, {"settings": {"seed": 43, "limit": 4}, "train_seconds": 700})
    inner = average([tmp_path / "a", tmp_path / "b"], tmp_path / "ab")
    assert inner["averaged_from"][0]["data"] == counted and "data" not in inner["averaged_from"][1]
    _verifier_folder(tmp_path / "c", state, {"settings": {"seed": 53, "limit": 3}, "train_seconds": 600})
    outer = average([tmp_path / "ab", tmp_path / "c"], tmp_path / "abc")
    assert outer["averaged_from"][0]["averaged_from"][1]["folder"] == str(tmp_path / "b")
    assert "data" not in outer["averaged_from"][0]  # the average's `data` (its first folder's) is not its draw

    def mix(root, seed=13, same_subject=0, **kw):
        pairs = [
            Pair(f"claim {i}", "e", "supported", "vitaminc_real" if (i + seed) % 2 else "check_covid")
            for i in range(10)
        ]
        return TrainingData(pairs, [], [], [], [], [], {})

    built: list[int] = []
    monkeypatch.setattr(draw, "build", lambda root, seed=13, **kw: (built.append(seed), mix(root, seed))[1])
    draw.count_draws(outer["averaged_from"], tmp_path, TrainSettings(seed=31), mix(tmp_path, 31), tok=None)
    assert sorted(built) == [43, 53]  # the folders whose calibration did not count their draw
    assert outer["averaged_from"][0]["averaged_from"][1]["data"] == {
        "train_pairs": 4,
        "train_by_source": {"vitaminc_real": 2, "check_covid": 2},
    }
    assert outer["averaged_from"][1]["data"]["train_pairs"] == 3

    card = model_card(
        {
            **json.loads((tmp_path / "abc" / "verifier.json").read_text(encoding="utf-8")),
            "averaged_from": outer["averaged_from"],
            "name": "v",
            "base": "b",
            "max_length": 128,
            "binary_rule": "supported_vs_refuted",
            "data": {**counted, "calibration_pairs": 7},
            "figures": {},
        }
    )
    line = next(x for x in card.splitlines() if x.startswith("- Training draw of each averaged folder"))
    a, b = tmp_path / "a", tmp_path / "b"
    assert f"{tmp_path / 'ab'}: the average of ({a}: 5 pairs {{'fm2': 5}}; {b}: 4 pairs" in line
    assert f"{tmp_path / 'c'}: 3 pairs" in line
    assert "- Sizes: {'calibration_pairs': 7}." in card  # not the first folder's 5 training pairs as the whole's
    assert "(trained on 2 CPU cores in an average itself, 600 s)" in card


def test_a_training_is_calibrated_with_the_shipped_verifiers_seed_unless_told_otherwise(tmp_path, monkeypatch, capsys):
    # the calibration that ends a training draws the held-apart sets with the shipped verifier's seed by default, so
    # that `veracity verifier compare` measures the two alike; with the training's own seed it reuses its data
    import json

    import torch

    from veracity.cli import main
    from veracity.verify.model import WEIGHTS_DIR
    from veracity.verify.training import train
    from veracity.verify.training.card import model_card
    from veracity.verify.training.compare import calibration_seed
    from veracity.verify.training.draw import fitted_draw

    (tmp_path / "data" / "fm2").mkdir(parents=True)
    training = TrainingData([Pair("c", "e", "supported", "fm2")], [], [], [], [], [], {})
    monkeypatch.setattr(train, "build", lambda root, seed=13, **kw: training)
    monkeypatch.setattr(train, "fine_tune", lambda data, out, s, progress=True: (torch.nn.Linear(2, 3), None))
    calls = []

    def calibrate(out, root, s, *, data=None):
        calls.append((s.seed, data))
        return {"sha256": "", "temperature": 1.0, "binary_rule": {}, "figures": {}, "ms_per_pair": 0}

    monkeypatch.setattr(train, "calibrate", calibrate)
    shipped = calibration_seed(json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8")))
    args = ["verifier", "train", "--data", str(tmp_path / "data"), "--seed", "53"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert calls[-1] == (shipped, None) and shipped != 53  # its own draw, as `veracity verifier calibrate` makes it
    written = json.loads((tmp_path / "a" / "verifier.json").read_text(encoding="utf-8"))["settings"]
    assert (written["seed"], written["calibration_seed"]) == (53, shipped)
    assert f"--seed 53 --threads 1 --calibration-seed {shipped}" in model_card(
        {
            **json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8")),
            "settings": written,
            "averaged_from": None,
        }
    )
    assert main([*args, "--out", str(tmp_path / "b"), "--calibration-seed", "53"]) == 0
    assert calls[-1] == (53, training)  # the training's own data, drawn once
    with pytest.raises(Exception, match="long_pairs 'sliding'"):
        fitted_draw([], {"long_pairs": "sliding"}, None, 32)
    capsys.readouterr()


def test_a_verifier_trained_at_one_length_can_be_calibrated_to_read_another(tmp_path, monkeypatch, capsys):
    # `calibrate --max-length N`: the folder reads N word pieces per pair from then on and is measured reading them;
    # the model card keeps the training's length apart (the pairs it cut were cut at that length)
    import json

    from veracity.cli import main
    from veracity.verify.model import WEIGHTS_DIR
    from veracity.verify.training import calibration
    from veracity.verify.training.card import model_card

    (tmp_path / "data" / "fm2").mkdir(parents=True)
    folder = tmp_path / "v"
    folder.mkdir()
    for f in ("verifier.json", "verifier.safetensors"):
        (folder / f).write_bytes((WEIGHTS_DIR / f).read_bytes())
    read = []
    monkeypatch.setattr(
        calibration,
        "calibrate",
        lambda out, root, s: (
            read.append(json.loads((out / "verifier.json").read_text(encoding="utf-8"))["max_length"])
            or {"temperature": 1.0, "binary_rule": {}, "figures": {}, "ms_per_pair": 0}
        ),
    )
    args = ["verifier", "calibrate", "--out", str(folder), "--data", str(tmp_path / "data")]
    assert main([*args, "--max-length", "600"]) != 0
    assert "--max-length must be between 16 and 512" in capsys.readouterr().err and read == []
    trained = json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8"))["settings"]["max_length"]
    other = 192 if trained != 192 else 320  # a length the shipped weights were not trained at
    assert (
        main(
            [
                "verifier",
                "calibrate",
                "--out",
                str(folder),
                "--data",
                str(tmp_path / "none"),
                "--max-length",
                str(other),
            ]
        )
        != 0
    )
    assert "training data not found" in capsys.readouterr().err and read == []
    assert (folder / "verifier.json").read_bytes() == (WEIGHTS_DIR / "verifier.json").read_bytes()  # left as it was
    assert main([*args, "--max-length", str(other)]) == 0 and read == [other]
    assert main(args) == 0 and read == [other, other]  # it goes on reading what it was set to
    settings = json.loads((folder / "verifier.json").read_text(encoding="utf-8"))
    settings.pop("averaged_from", None)
    card = model_card(settings)
    assert settings["settings"]["max_length"] == trained
    assert f"**Maximum length:** {other} word pieces per pair (trained on pairs of at most {trained};" in card
    assert f"were longer than {trained} and were cut" in card
    assert "(trained on" not in model_card({**settings, "max_length": trained})
    assert main(["verifier", "train", "--max-length", "1024", "--out", str(tmp_path / "t")]) != 0
    assert "--max-length must be at most 512" in capsys.readouterr().err
