"""The evidence verifier (veracity.verify): training data, synthetic edits, lexical baseline, aggregation,
label mapping, the shipped model's behaviour, the CLI, and the `verifier` / `lexical` pipelines in an evaluation."""

import json
import random
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, veracity_cmd

from veracity.verify import evidence_text
from veracity.verify.decide import EvidenceDecision, label_for, probability_of
from veracity.verify.lexical import FEATURES, LexicalModel, features
from veracity.verify.model import WEIGHTS_DIR, Verification, aggregate
from veracity.verify.result import describe_rule
from veracity.verify.training import synthetic
from veracity.verify.training.data import fm2_part, read_fm2
from veracity.verify.training.fits import fit_lexical

TRAINING = ROOT.parent / "shared" / "training"
SHIPPED = (WEIGHTS_DIR / "verifier.json").is_file()


# -- synthetic edits -----------------------------------------------------------------------------------


def test_number_edit_changes_a_year_and_nothing_else():
    s = "The bridge opened in 1883 after fourteen years of work."
    out = synthetic.change_number(s, random.Random(0))
    assert out != s and "1883" not in out and out.replace(out.split()[4], "1883") == s


def test_negation_is_added_after_the_auxiliary_and_removed_when_present():
    assert synthetic.flip_negation("He was elected in May.", random.Random(0)) == "He was not elected in May."
    assert synthetic.flip_negation("He was not elected in May.", random.Random(0)) == "He was elected in May."
    assert synthetic.flip_negation("Rain fell.", random.Random(0)) is None


def test_name_swap_uses_another_name_of_the_same_page():
    out = synthetic.swap_name(
        "The film starred Julie Andrews as Maria.", ["Plummer", "Andrews", "Wise"], random.Random(1)
    )
    assert out is not None and out != "The film starred Julie Andrews as Maria."
    assert any(n in out for n in ("Plummer", "Wise"))


def test_pairs_from_a_page_have_the_three_labels_and_refuted_claims_differ_from_the_evidence():
    page = [f"Sentence number {i} says the town of Alden had {100 + i} people in {1900 + i}." for i in range(30)]
    triples = synthetic.pairs_from_page(page, random.Random(3), per_sentence=6)
    labels = {lab for _, _, lab in triples}
    assert labels == {"supported", "refuted", "nei"}
    for claim, evidence, lab in triples:
        if lab == "refuted":
            assert claim not in evidence
        if lab == "supported":
            assert claim.rstrip(".") in evidence or claim in evidence


# -- lexical features and baseline ---------------------------------------------------------------------


def test_features_see_a_missing_number_and_a_negation_mismatch():
    same = dict(zip(FEATURES, features("The tower is 300 metres tall.", "The tower is 300 metres tall.")))
    changed = dict(zip(FEATURES, features("The tower is not 310 metres tall.", "The tower is 300 metres tall.")))
    assert same["missing_numbers"] == 0 and changed["missing_numbers"] == 1
    assert same["negation_mismatch"] == 0 and changed["negation_mismatch"] == 1
    assert same["missing_content"] == 0


def test_a_fitted_lexical_model_learns_overlap_and_round_trips_through_json():
    rng = random.Random(0)
    pairs, labels = [], []
    for i in range(60):
        ev = f"The river Odra{i} is {100 + i} km long and flows north."
        pairs += [(ev, ev), (ev.replace(str(100 + i), str(300 + i)), ev)]
        labels += ["supported", "refuted"]
    model = fit_lexical(pairs, labels, ("supported", "refuted", "nei"), seed=rng.randint(0, 9))
    again = LexicalModel.from_json(json.loads(json.dumps(model.to_json())))
    p = again.probabilities("The Elbe is 200 km long.", "The Elbe is 900 km long.")
    q = again.probabilities("The Elbe is 900 km long.", "The Elbe is 900 km long.")
    assert p["refuted"] > p["supported"] and q["supported"] > q["refuted"]


# -- aggregation and labels ----------------------------------------------------------------------------


def test_the_most_decisive_candidate_decides_and_names_its_passage():
    a = {"supported": 0.2, "refuted": 0.1, "nei": 0.7}
    b = {"supported": 0.1, "refuted": 0.8, "nei": 0.1}
    joined = {"supported": 0.3, "refuted": 0.3, "nei": 0.4}
    v = aggregate([a, b, joined], 2)
    assert v.label == "refuted" and v.passage == 1 and v.per_passage == [a, b]
    v = aggregate(
        [a, {"supported": 0.3, "refuted": 0.2, "nei": 0.5}, {"supported": 0.9, "refuted": 0.05, "nei": 0.05}], 2
    )
    assert v.label == "supported" and v.passage is None  # only the passages together settle it
    assert aggregate([], 0).label == "nei"


def test_labels_map_onto_the_callers_label_set():
    v = Verification(
        {"supported": 0.3, "refuted": 0.2, "nei": 0.5}, 0, [{"supported": 0.3, "refuted": 0.2, "nei": 0.5}]
    )
    assert label_for(v, ("Supported", "Refuted"), "supported_vs_refuted")[0] == "Supported"  # 0.3 vs 0.2
    assert label_for(v, ("Supported", "Refuted"), "supported_vs_rest")[0] == "Refuted"  # 0.3 vs 0.7
    four = ("Supported", "Refuted", "Not Enough Evidence", "Conflicting Evidence/Cherrypicking")
    assert label_for(v, four, "supported_vs_refuted") == ("Not Enough Evidence", 0.5)
    split = Verification(
        {"supported": 0.7, "refuted": 0.2, "nei": 0.1},
        0,
        [{"supported": 0.7, "refuted": 0.2, "nei": 0.1}, {"supported": 0.1, "refuted": 0.8, "nei": 0.1}],
    )
    assert label_for(split, four, "supported_vs_refuted")[0] == "Conflicting Evidence/Cherrypicking"
    with pytest.raises(ValueError, match="two labels or more"):
        label_for(v, ("Accurate",), "supported_vs_refuted")
    assert label_for(v, ("Accurate", "Inaccurate"), "supported_vs_refuted")[0] == "Accurate"


def test_the_verifiers_probability_of_any_label_of_the_callers_set():
    v = Verification(
        {"supported": 0.1, "refuted": 0.3, "nei": 0.6},
        None,
        [{"supported": 0.6, "refuted": 0.1, "nei": 0.3}, {"supported": 0.1, "refuted": 0.7, "nei": 0.2}],
    )
    two = ("Supported", "Refuted")
    assert probability_of(v, "Refuted", two, "supported_vs_refuted") == pytest.approx(0.75)  # 0.3 / (0.1 + 0.3)
    assert probability_of(v, "Supported", two, "supported_vs_refuted") == pytest.approx(0.25)
    assert probability_of(v, "Not Supported", ("Supported", "Not Supported"), "supported_vs_refuted") == pytest.approx(
        0.9
    )  # LEAF's set: the supported mass against all the rest
    four = ("Supported", "Refuted", "Not Enough Evidence", "Conflicting Evidence/Cherrypicking")
    assert [probability_of(v, x, four, "supported_vs_refuted") for x in four[:3]] == [0.1, 0.3, 0.6]
    assert probability_of(v, four[3], four, "supported_vs_refuted") == pytest.approx(0.6 * 0.7)
    assert probability_of(v, "Unverified", four, "supported_vs_refuted") is None  # a parse failure's label
    # the label the verifier would give has the probability it gives it
    for labels in (two, four):
        label, p = label_for(v, labels, "supported_vs_refuted")
        assert probability_of(v, label, labels, "supported_vs_refuted") == pytest.approx(p)


def test_a_supported_or_not_set_is_read_by_the_artifacts_rule_against_the_rest():
    # a fitted rule against the rest that decides supported from 0.39 (weight 1.2, bias 0.536): LEAF's set reads
    # a supported mass of 0.45 as Supported, where supported_vs_rest read it Not Supported 0.55
    rest = {"name": "fitted_vs_rest", "weight": 1.2, "bias": 0.536}
    v = Verification({"supported": 0.45, "refuted": 0.15, "nei": 0.4}, None, [])
    ns = ("Supported", "Not Supported")
    assert label_for(v, ns, "supported_vs_refuted") == ("Not Supported", pytest.approx(0.55))
    label, p = label_for(v, ns, "supported_vs_refuted", rest)
    assert label == "Supported" and 0.5 < p < 0.6
    assert probability_of(v, "Not Supported", ns, "supported_vs_refuted", rest) == pytest.approx(1 - p)
    assert "supported from 0.39" in describe_rule(rest)
    flat = {"name": "fitted_vs_rest", "weight": 0.0, "bias": -0.4}  # a fit that learnt nothing of the reading
    assert (
        describe_rule(flat).endswith("not supported at any reading")
        and label_for(
            Verification({"supported": 0.99, "refuted": 0.0, "nei": 0.01}, None, []), ns, "supported_vs_refuted", flat
        )[0]
        == "Not Supported"
    )
    # a set of supported and refuted keeps the two-label rule: 0.45 against 0.15
    assert label_for(v, ("Supported", "Refuted"), "supported_vs_refuted", rest) == ("Supported", pytest.approx(0.75))


def test_a_label_chosen_against_an_undecisive_reading_gets_the_verifiers_probability_and_a_reason():
    v = Verification(
        {"supported": 0.1, "refuted": 0.3, "nei": 0.6}, 0, [{"supported": 0.1, "refuted": 0.3, "nei": 0.6}]
    )
    labels = ("Supported", "Refuted", "Not Enough Information")
    d = EvidenceDecision(*label_for(v, labels, "supported_vs_refuted"), v, "", labels, "supported_vs_refuted")
    assert not d.decisive and d.label == "Not Enough Information"
    label, p, why = d.undecided("Supported")
    assert (label, p) == ("Supported", 0.1) and why.startswith("the sources read do not address the claim")
    assert "leans Not Enough Information, 0.60, and gives Supported 0.10" in why
    assert why.endswith("Supported is the language model's choice")
    # the model agrees with the verifier: still uncertain, the sources do not say
    label, p, why = d.undecided("Not Enough Information")
    assert (label, p) == ("Not Enough Information", 0.6)
    assert why == (
        "the sources read do not address the claim (the trained verifier reads not enough information, 0.60); "
        "the trained verifier and the language model lean Not Enough Information"
    )


def test_in_a_two_label_set_an_undecisive_reading_that_leans_the_other_way_takes_the_label():
    """Supported / Refuted, nei 0.6: not decisive, but the verifier gives Refuted 0.75 and the model's Supported
    0.25; the verdict takes Refuted with 0.75 (below the threshold: uncertain) and says what the model chose."""
    v = Verification(
        {"supported": 0.1, "refuted": 0.3, "nei": 0.6}, 0, [{"supported": 0.1, "refuted": 0.3, "nei": 0.6}]
    )
    two = ("Supported", "Refuted")
    d = EvidenceDecision(*label_for(v, two, "supported_vs_refuted"), v, "", two, "supported_vs_refuted", 0.8)
    assert not d.decisive and d.label == "Refuted"
    label, p, why = d.undecided("Supported")
    assert label == "Refuted" and p == pytest.approx(0.75)
    assert why == (
        "the sources read do not address the claim (the trained verifier reads not enough information, 0.60) "
        "(the trained verifier leans Refuted, 0.75, and gives Supported 0.25); the language model chose Supported"
    )
    assert d.undecided("Refuted")[:2] == ("Refuted", pytest.approx(0.75))
    assert d.undecided("Refuted")[2].startswith("the sources read do not address the claim")
    assert d.undecided("Unverified")[0] == "Unverified"  # a label outside the set (a parse failure's) stands
    # three labels without a not-enough-information one (AVeriTeC-like, less nei): the model's label stands
    three = ("Supported", "Refuted", "Conflicting Evidence/Cherrypicking")
    d3 = EvidenceDecision(*label_for(v, three, "supported_vs_refuted"), v, "", three, "supported_vs_refuted", 0.8)
    assert d3.undecided("Supported")[0] == "Supported"


def test_a_reading_that_does_not_address_the_claim_never_decides_however_sure_its_two_label_rule():
    """The issue's case: "Donald Trump thinks that climate change is a hoax ..." against the lead of "Donald Trump":
    supported 0.01, refuted 0.12, nei 0.87. A two-label rule reads Refuted 0.92 (above any threshold), but the
    passage does not say: not decisive, uncertain with that reason in words, and the passage named as read, never as
    the one that decided."""
    from veracity.types import Evidence
    from veracity.verify.decide import explain

    v = Verification({"supported": 0.01, "refuted": 0.12, "nei": 0.87}, 0, [{"supported": 0.01, "refuted": 0.12,
                                                                              "nei": 0.87}])  # fmt: skip
    two = ("Supported", "Refuted")
    label, p = label_for(v, two, "supported_vs_refuted")
    assert label == "Refuted" and p == pytest.approx(0.12 / 0.13)
    d = EvidenceDecision(label, p, v, "", two, "supported_vs_refuted", 0.77)
    assert not d.decisive
    assert d.uncertain_reason == (
        "the sources read do not address the claim (the trained verifier reads not enough information, 0.87); "
        "the label is the trained verifier's leaning"
    )
    lead = Evidence(text="Donald John Trump is an American politician ...", source="Donald Trump",
                    url="https://en.wikipedia.org/wiki/Donald_Trump")  # fmt: skip
    said = explain(v, label, [lead], "v", two_label=p)
    assert "decided by" not in said
    assert said.startswith("Label Refuted, undecided: the sources read do not address the claim; read: passage [1]")
    assert "https://en.wikipedia.org/wiki/Donald_Trump" in said
    # nothing read at all: said so, not "the sources read do not address the claim"
    nothing = aggregate([], 0)
    d = EvidenceDecision(*label_for(nothing, two, "supported_vs_refuted"), nothing, "", two, "supported_vs_refuted")
    assert d.uncertain_reason.startswith("no source was found for the claim")
    # a reading that addresses the claim decides, and is uncertain only below the threshold
    sure = Verification({"supported": 0.02, "refuted": 0.93, "nei": 0.05}, 0, [])
    d = EvidenceDecision(*label_for(sure, two, "supported_vs_refuted"), sure, "", two, "supported_vs_refuted", 0.77)
    assert d.decisive and d.uncertain_reason == ""
    rule = "supported_vs_refuted"
    d = EvidenceDecision(*label_for(sure, two, rule), sure, "", two, rule, 0.99, setting="given")
    assert d.decisive and d.uncertain_reason == "its confidence 0.98 is below 0.99"
    d = EvidenceDecision(*label_for(sure, two, rule), sure, "", two, rule, 0.99, setting="retrieved")
    assert d.uncertain_reason.startswith("the confidence 0.98 on evidence a search found is below 0.99, the threshold")


def test_passages_that_decide_together_are_each_quoted_with_their_address():
    from veracity.types import Evidence
    from veracity.verify.decide import explain

    v = Verification({"supported": 0.9, "refuted": 0.05, "nei": 0.05}, None, [])
    passages = [
        Evidence(text="The Danube is Europe's second-longest river.", source="Danube",
                 url="https://en.wikipedia.org/wiki/Danube"),
        Evidence(text="It flows into the Black Sea.", source="Danube", url="https://en.wikipedia.org/wiki/Danube"),
    ]  # fmt: skip
    said = explain(v, "Supported", passages, "v")
    assert said.startswith("Label Supported: decided by the 2 passages read together: passage [1] (Danube):")
    assert '"It flows into the Black Sea."' in said and said.count("https://en.wikipedia.org/wiki/Danube") == 2


def test_evidence_text_is_the_bare_text_as_the_verifier_was_trained_on():
    assert evidence_text("It  opened\nin 1883.", "Brooklyn Bridge") == "It opened in 1883."


# -- training data -------------------------------------------------------------------------------------


@pytest.mark.skipif(not (TRAINING / "fm2").is_dir(), reason="../shared/training is absent")
def test_fm2_is_split_by_page_with_no_page_on_two_sides():
    claims = read_fm2(TRAINING)
    parts: dict[str, set[str]] = {}
    for c in claims:
        parts.setdefault(fm2_part(c.page), set()).add(c.page)
    assert set(parts) == {"train", "calibration", "test"}
    assert not (parts["train"] & parts["test"]) and not (parts["train"] & parts["calibration"])
    share = sum(fm2_part(c.page) == "test" for c in claims) / len(claims)
    assert 0.15 < share < 0.35


def test_off_topic_pairs_put_a_claim_against_another_sources_passage_as_not_enough_information():
    from veracity.verify.training.data import OFFTOPIC_WORDS, Pair, offtopic_pairs, offtopic_passages

    pool = [
        Pair(f"Claim {i} of {src}.", f"Passage {i} of {src}.", "supported", src)
        for src in ("a", "b", "c")
        for i in range(20)
    ]
    pool.append(Pair("A long one.", " ".join(["word"] * (OFFTOPIC_WORDS + 1)), "refuted", "d"))
    out = offtopic_pairs(pool, pool, random.Random(0), 30)
    assert len(out) == 30 and {p.label for p in out} == {"nei"} and {p.source for p in out} == {"offtopic"}
    of = {p.claim: p.source for p in pool} | {p.evidence: p.source for p in pool}
    assert all(of[p.claim] != of[p.evidence] for p in out)  # never the claim's own source
    assert all(len(p.evidence.split()) <= OFFTOPIC_WORDS for p in out)
    assert len({p.claim for p in out}) == 30  # each claim once
    read = offtopic_passages(pool[:5], pool, random.Random(1))
    assert [lab for _, _, lab in read] == ["supported", "nei"] * 5
    for (claim, mixed, _), (same, others, _) in zip(read[::2], read[1::2]):
        own = next(p for p in pool if p.claim == claim)
        assert same == claim and own.evidence in mixed and len(mixed) == 3 and own.evidence not in others
        assert len(others) == 3 and all(of[e] != own.source for e in others)


def test_evidence_about_another_subject_names_someone_else_everywhere_and_is_not_enough_information():
    from veracity.verify.training.data import Pair, other_subject_pairs

    assert synthetic.subject("The Eiffel Tower was completed in 1889.") == "Eiffel Tower"
    assert synthetic.subject("As of 27 March, Sao Tome had no case.") is None  # its first name is not its subject
    changed = synthetic.other_subject(
        "Michael Vick is American.",
        "Michael Dwayne Vick (born 1980) is a former American quarterback; Vick played 13 seasons.",
        "Gegard Mousasi",
    )
    assert changed == "Gegard Mousasi (born 1980) is a former American quarterback; Gegard Mousasi played 13 seasons."
    # evidence that does not name the subject, or a replacement that shares its name, gives nothing
    assert synthetic.other_subject("Mara Lind was born in Riga.", "She was born in Riga.", "John Smith") is None
    assert synthetic.other_subject("Mara Lind was born in Riga.", "Mara Lind was born in Riga.", "Anna Lind") is None
    pool = [
        Pair(
            f"{first} Smith{i} was born in {city}.",
            f"{first} Smith{i} was born in {city} in 1950.",
            "supported",
            "vitaminc_real",
        )
        for i, (first, city) in enumerate([("Anna", "Riga"), ("Boris", "Oslo"), ("Carla", "Lima"), ("Dmitri", "Kyiv")])
    ]
    out = other_subject_pairs(
        pool + [Pair("Snow is cold.", "Snow is cold.", "supported", "snli")], random.Random(0), 10
    )
    assert len(out) == 4 and {p.label for p in out} == {"nei"} and {p.source for p in out} == {"other-subject"}
    for p in out:
        own = synthetic.subject(p.claim)
        assert own not in p.evidence and p.evidence.endswith("in 1950.")
        assert p.claim.split(" was born in ")[1].rstrip(".") in p.evidence  # the same sentence, another subject


def test_a_sentence_on_another_point_about_the_subject_is_not_enough_information():
    from veracity.verify.training.data import Pair, same_subject_pairs

    def pair(claim, evidence, label="supported", source="fever_symmetric"):
        return Pair(claim, evidence, label, source)

    built = pair("The Orrin Bridge was built in 1871.", "The Orrin Bridge opened in 1871.")
    where = pair("The Orrin Bridge stands in Tallinn.", "The Orrin Bridge is a stone bridge in Tallinn, Estonia.")
    river = pair("The Orrin Bridge crosses the Pirita.", "The Pirita river runs under the Orrin Bridge.")
    edited = pair("The Orrin Bridge was painted red.", "The Orrin Bridge was never painted blue.", "refuted")
    dated = pair("The Orrin Bridge was renovated in 1990.", "The Orrin Bridge was closed in 1985.")
    pool = [
        built,
        where,
        river,
        edited,
        dated,
        pair("The Orrin Bridge is a toll bridge.", "The Orrin Bridge carries the old Narva road."),
        pair("Many of the schools closed in March.", "Many artists cite Fripp as an influence."),
        pair("Snow is cold.", "Snow is frozen water.", source="snli"),
    ]
    out = same_subject_pairs(pool, random.Random(0), 100)
    assert out and {p.label for p in out} == {"nei"} and {p.source for p in out} == {"same-subject"}
    read = {(p.claim, p.evidence) for p in out}
    # "built in 1871" against the sentence on where it stands: another point about the same bridge
    assert (built.claim, where.evidence) in read
    for p in out:
        mine = next(q for q in pool if q.claim == p.claim)
        assert p.evidence != mine.evidence and "Orrin Bridge" in p.evidence and "Orrin Bridge" in p.claim
        assert p.evidence != edited.evidence  # an edit made to refute its own claim is not a sentence of the page
        assert not ("1871" in p.claim and "1985" in p.evidence)  # two dates of one subject may contradict
        assert not (p.claim == where.claim and "Tallinn" in p.evidence)  # sharing a word: it may settle the claim
        assert p.claim != "The Orrin Bridge is a toll bridge."  # what it is: settled by much that shares no word
        assert "Many" not in p.claim  # an opening word is not a subject


# -- the shipped verifier ------------------------------------------------------------------------------


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_the_shipped_verifier_tells_support_from_a_changed_fact_and_from_an_unrelated_passage():
    from veracity.verify import load_verifier

    v = load_verifier()
    ev = "The Eiffel Tower was completed in 1889 and is 330 metres tall."
    ok, wrong, unrelated = v.verify_many(
        [
            ("The Eiffel Tower was completed in 1889.", [ev]),
            ("The Eiffel Tower was completed in 1925.", [ev]),
            (
                "The Eiffel Tower was completed in 1889.",
                ["Bananas are rich in potassium and grow in tropical climates."],
            ),
        ]
    )
    assert ok.label == "supported"
    assert wrong.probabilities["refuted"] > wrong.probabilities["supported"]
    assert unrelated.label == "nei"
    assert abs(sum(ok.probabilities.values()) - 1) < 1e-6 and ok.passage == 0


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_the_shipped_verifier_reads_evidence_about_someone_else_as_not_settling_the_claim():
    """The same sentence about another subject, or passages on other subjects, settle nothing (the weights before
    read Curie against Einstein as refuted 0.92, and the Chrysler Building against the Eiffel Tower as supported)."""
    from veracity.verify import load_verifier

    v = load_verifier()
    readings = v.verify_many(
        [
            ("Marie Curie was born in Warsaw.", ["Albert Einstein was born in Ulm."]),
            ("Lionel Messi plays for Inter Miami.", ["Cristiano Ronaldo plays for Al Nassr."]),
            (
                "The Chrysler Building was completed in 1889.",
                ["The Eiffel Tower was completed in 1889 and is 330 metres tall."],
            ),
            (
                "Photosynthesis takes place in chloroplasts.",
                ["Kestrel Bay is a 1998 novel written by Mara Lind.", "The Orrin Bridge is a stone bridge in Tallinn."],
            ),
            ("Marie Curie was born in Warsaw.", ["Marie Curie was born in Paris."]),
        ]
    )
    assert [r.label for r in readings] == ["nei", "nei", "nei", "nei", "refuted"]


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_the_shipped_verifier_refutes_a_claim_with_one_false_part_beside_parts_its_evidence_does_not_mention():
    """One changed fact refutes the claim whatever its other parts say, and a two-label set (Supported / Refuted)
    is decided by the rule fitted on calibration pairs of two-label sources, whose probability is the one reported."""
    from veracity.verify import load_verifier
    from veracity.verify.decide import label_for, probability_of
    from veracity.verify.result import binary_label

    v = load_verifier()
    assert v.binary_rule["name"] == "fitted"
    readings = v.verify_many(
        [
            (
                "Marie Curie was born in Paris and won three Nobel Prizes.",
                ["Marie Curie was born in Warsaw, then part of the Russian Empire."],
            ),
            (
                "The Eiffel Tower was completed in 1925 and is visited by millions of tourists every year.",
                ["The Eiffel Tower was completed in 1889 for the World's Fair."],
            ),
        ]
    )
    for r in readings:
        label, p = label_for(r, ("Supported", "Refuted"), v.binary_rule)
        assert r.label == "refuted" and label == "Refuted" and p > 0.75
        assert p == binary_label(r.probabilities["supported"], r.probabilities["refuted"], v.binary_rule)[1]
        assert probability_of(r, "Supported", ("Supported", "Refuted"), v.binary_rule) == pytest.approx(1 - p)


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_the_shipped_weights_match_their_recorded_hash():
    from veracity.verify.model import sha256

    settings = json.loads((WEIGHTS_DIR / "verifier.json").read_text())
    assert sha256(WEIGHTS_DIR / settings["weights"]) == settings["sha256"]
    assert (WEIGHTS_DIR / settings["weights"]).stat().st_size < 30 * 2**20


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_verifier_cli_check_and_info(cli_env):
    out = subprocess.run(
        veracity_cmd()
        + [
            "verifier",
            "check",
            "Paris is the capital of France.",
            "--evidence",
            "Paris is the capital and largest city of France.",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["label"] == "supported" and set(data["probabilities"]) == {"supported", "refuted", "nei"}
    info = subprocess.run(
        veracity_cmd() + ["verifier", "info"], capture_output=True, text=True, env=cli_env, timeout=120
    )
    assert info.returncode == 0 and "sha256" in info.stdout and "fm2_heldout" in info.stdout


def test_a_changed_weights_file_is_refused(tmp_path):
    from veracity.errors import UserError
    from veracity.verify.model import _load_cross_encoder

    (tmp_path / "verifier.safetensors").write_bytes(b"not weights")
    (tmp_path / "verifier.json").write_text(
        json.dumps({"labels": ["supported", "refuted", "nei"], "weights": "verifier.safetensors", "sha256": "0" * 64})
    )
    with pytest.raises(UserError, match="hash"):
        _load_cross_encoder(str(tmp_path))


# -- the pipelines in an evaluation --------------------------------------------------------------------


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_verifier_and_lexical_pipelines_in_an_evaluation_with_majority_and_coverage(tmp_path, cli_env):
    rows = [
        {
            "id": "a",
            "claim": "The Nile flows into the Mediterranean Sea.",
            "label": "Supported",
            "evidence": ["The Nile flows north and drains into the Mediterranean Sea."],
        },
        {
            "id": "b",
            "claim": "Mount Everest is 5,000 metres high.",
            "label": "Refuted",
            "evidence": ["Mount Everest is 8,849 metres high, the highest mountain above sea level."],
        },
        {
            "id": "c",
            "claim": "The Beatles were formed in Liverpool in 1960.",
            "label": "Supported",
            "evidence": ["The Beatles were an English rock band formed in Liverpool in 1960."],
        },
        {
            "id": "d",
            "claim": "Marie Curie was born in Berlin.",
            "label": "Refuted",
            "evidence": ["Marie Curie was born in Warsaw, in what was then the Kingdom of Poland."],
        },
    ]
    data = tmp_path / "claims.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = subprocess.run(
        veracity_cmd()
        + [
            "eval",
            "--dataset",
            "jsonl",
            "--path",
            str(data),
            "--pipeline",
            "verifier",
            "--pipeline",
            "lexical",
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
            "--no-plots",
            "--model",
            "scripted:" + str(_no_calls(tmp_path)),
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| verifier | 4 |" in report and "| lexical | 4 |" in report and "majority class" in report
    assert "Accuracy against coverage" in report
    items = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    verifier = {r["id"]: r for r in items if r["pipeline"] == "verifier"}
    assert sum(r["correct"] for r in verifier.values()) >= 3
    assert all(r["usage"]["total"]["calls"] == 0 for r in items)  # no language model call
    from veracity.config import load_config
    from veracity.verify import uncertain_threshold

    threshold = uncertain_threshold(load_config(env={}).verifier)  # the verifier's calibrated threshold
    assert all(r["verdict"]["uncertain"] == (r["verdict"]["confidence"] < threshold) for r in items)
    assert all(r["verdict"]["basis"] == "evidence" for r in items)
    assert "Reliability" in report and "ECE" in report
    assert "decided by passage [1]" in verifier["b"]["verdict"]["rationale"]


def _no_calls(tmp_path: Path) -> Path:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": []}))  # any model call would fail the test
    return rules


def test_auto_uses_the_verifier_with_the_embedded_default_only():
    from veracity.config import load_config
    from veracity.llm.embedded import DEFAULT_MODEL_NAME
    from veracity.verify.decide import verifier_enabled

    auto = load_config(env={})
    assert verifier_enabled(auto.verifier, f"gguf:{DEFAULT_MODEL_NAME}")
    assert not verifier_enabled(auto.verifier, "scripted") and not verifier_enabled(auto.verifier, "gpt-4o-mini")
    assert verifier_enabled(load_config(overrides={"verifier.use": "on"}, env={}).verifier, "scripted")
    assert not verifier_enabled(
        load_config(overrides={"verifier.use": "off"}, env={}).verifier, f"gguf:{DEFAULT_MODEL_NAME}"
    )


# -- reading a long passage whole ------------------------------------------------------------------------


def test_a_passage_too_long_for_the_model_is_read_in_overlapping_windows_of_whole_sentences():
    from veracity.verify.windows import windows

    def count(text):
        return len(text.split())

    def split(text):
        return [s.strip() + "." for s in text.split(".") if s.strip()]

    sentences = [f"Sentence {i} has exactly six words." for i in range(10)]  # 6 words each after the split
    text = " ".join(sentences)
    out = windows(5, text, count, max_length=5 + 3 + 40, split=split)  # 40 words of room beside the claim
    assert len(out) > 1 and all(count(w) <= 40 for w in out)
    assert [s for s in sentences if not any(s in w for w in out)] == []  # every sentence is read
    for a, b in zip(out, out[1:]):  # consecutive windows share one sentence
        assert split(a)[-1] == split(b)[0]
    assert windows(5, "Short passage. Two sentences.", count, max_length=48, split=split) == [
        "Short passage. Two sentences."
    ]
    assert windows(30, text, count, max_length=48, split=split) == [text]  # under 32 left: read as it is


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_the_verifier_reads_the_end_of_a_passage_longer_than_its_window():
    from veracity.verify import load_verifier

    v = load_verifier()
    filler = (
        "The bridge crosses the East River between Manhattan and Brooklyn. Its towers are built of limestone, "
        "granite and Rosendale cement. The main span is supported by four steel cables. Pedestrians and "
        "cyclists use an elevated promenade above the roadway. The structure was designed by John Augustus "
        "Roebling, and his son Washington Roebling oversaw much of the work after his father's death. Emily "
        "Warren Roebling supervised construction in the later years. Several workers died during the "
        "construction, and many more suffered from caisson disease. The bridge has been renovated several "
        "times, most recently in the 2010s. It is a National Historic Landmark. Its deck carries six lanes "
        "of traffic on two levels of roadway. The anchorages are massive blocks of masonry on each shore. "
        "Painters, photographers and poets have made the bridge a subject of their work. It appears in many "
        "films and on postcards of the city. Tolls were once charged to cross it on foot, by carriage and by "
        "train. Elevated trains and streetcars ran across it until the middle of the twentieth century. "
        "Its cables were spun on site from thousands of galvanized steel wires. A fraud by one supplier of "
        "wire was discovered during the work, and extra wires were added to make up for it. Ferries had "
        "carried people across the river before it was built. "
    )
    ev = filler + "The Brooklyn Bridge was opened to traffic on May 24, 1883."
    claim = "The Brooklyn Bridge opened in 1883."
    assert len(v.tokenizer(claim, ev)["input_ids"]) > v.max_length  # the dated sentence lies past the cut
    assert len(v.read_whole(claim, [ev])[0]) > 1
    true, false = v.verify_many([(claim, [ev]), ("The Brooklyn Bridge opened in 1902.", [ev])])
    assert true.label == "supported" and true.passage == 0
    assert false.probabilities["refuted"] > false.probabilities["supported"]


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_reading_a_passage_longer_than_the_model_prints_no_tokenizer_warning():
    # measuring a 1,000-word page to cut it into windows printed transformers' "Token indices sequence length is
    # longer than the specified maximum ... indexing errors" on every first long page: alarming, and untrue
    import logging

    from veracity.verify import load_verifier

    v = load_verifier()
    v.tokenizer.deprecation_warnings.clear()  # (transformers warns once per tokenizer)
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        page = " ".join(f"The station on line {i} opened in {1900 + i} with {i + 2} platforms." for i in range(90))
        assert len(v.tokenizer(page, verbose=False)["input_ids"]) > 512
        parts = v.read_whole("The station on line 80 opened in 1980.", [page])[0]
    finally:
        logger.removeHandler(handler)
    assert len(parts) > 4 and "line 80 opened in 1980" in " ".join(parts)
    assert not [m for m in seen if "sequence length" in m], seen


def test_a_sentence_that_reads_the_other_label_puts_its_passage_in_doubt():
    """verify/conflict.py: the surest sentence reading the other label at CONFLICT_AT or more is averaged with the
    passage's reading; under it, or with a passage of one sentence, or a not-enough-information reading, nothing
    changes."""
    from veracity.verify.conflict import CONFLICT_AT, describe, sentences_to_read, settle
    from veracity.verify.result import Verification

    whole = Verification({"supported": 0.78, "refuted": 0.2, "nei": 0.02}, 0, [])
    passage = "The Danube is the second-longest river in Europe. The Yangtze is the longest river in Asia."
    sentences = sentences_to_read(whole, [passage])
    assert sentences == [
        "The Danube is the second-longest river in Europe.",
        "The Yangtze is the longest river in Asia.",
    ]
    readings = [{"supported": 0.06, "refuted": 0.92, "nei": 0.02}, {"supported": 0.49, "refuted": 0.14, "nei": 0.37}]
    v = settle(whole, sentences, readings)
    assert v.probabilities == pytest.approx({"supported": 0.42, "refuted": 0.56, "nei": 0.02})
    assert v.label == "refuted" and v.per_passage is whole.per_passage and v.passage == 0
    assert v.conflict == {
        "sentence": sentences[0],
        "label": "refuted",
        "probability": 0.92,
        "passage_label": "supported",
        "passage_probability": 0.78,
    }
    assert 'its sentence "The Danube is the second-longest river in Europe." alone reads refuted (0.92)' in describe(
        v.conflict
    )
    weak = [{"supported": 0.1, "refuted": CONFLICT_AT - 0.01, "nei": 0.11}, readings[1]]
    assert settle(whole, sentences, weak) is whole
    sure = Verification({"supported": 0.91, "refuted": 0.07, "nei": 0.02}, 0, [])  # surer than the sentence's 0.92?
    assert settle(sure, sentences, readings).conflict  # no: 0.92 > 0.91
    surer = Verification({"supported": 0.93, "refuted": 0.05, "nei": 0.02}, 0, [])
    assert settle(surer, sentences, readings) is surer  # a sentence less sure of the other label than the passage
    assert sentences_to_read(whole, ["The Danube is the second-longest river in Europe."]) == []
    unsettled = Verification({"supported": 0.2, "refuted": 0.1, "nei": 0.7}, 0, [])
    assert sentences_to_read(unsettled, [passage]) == []  # nothing to doubt
    assert sentences_to_read(Verification(whole.probabilities, None), [passage]) == []  # all passages together


@pytest.mark.skipif(not SHIPPED, reason="no trained verifier in verify/weights")
def test_no_confident_verdict_from_a_passage_whose_own_sentence_says_otherwise():
    """Read whole, "... second-longest river in Europe. The Yangtze is the longest river in Asia." supported "The
    Danube is the longest river in Asia." (0.78 with the eighth stage, 0.73 with the tenth); its first sentence
    alone refutes it: the verifier's reading is now below the uncertain threshold, with the sentence named in the
    rationale. A passage whose sentences agree with it reads as before."""
    from veracity.config import VerifierConfig
    from veracity.trace import Tracer
    from veracity.types import Evidence
    from veracity.verify import load_verifier, uncertain_threshold
    from veracity.verify.decide import check_evidence

    v = load_verifier()
    ev = "The Danube is the second-longest river in Europe, after the Volga. The Yangtze is the longest river in Asia."
    doubt, agree = v.verify_many(
        [
            ("The Danube is the longest river in Asia.", [ev]),
            ("The Danube is the second-longest river in Europe.", [ev]),
        ]
    )
    whole = doubt.per_passage[0]  # the passage read whole leans supported (0.73 with the shipped weights)
    assert whole["supported"] > max(whole["refuted"], whole["nei"])
    assert doubt.conflict and doubt.conflict["sentence"].startswith("The Danube is the second-longest")
    assert doubt.confidence < uncertain_threshold(VerifierConfig())
    assert agree.conflict is None and agree.label == "supported" and agree.probabilities == agree.per_passage[0]
    # a first sentence silent on the date reads refuted (0.89) but less surely than the passage reads supported
    built = v.verify(
        "The Orrin Bridge was built in 1871.",
        ["The Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in 1871."],
    )
    assert built.conflict is None and built.label == "supported"
    tracer = Tracer()
    d = check_evidence(
        VerifierConfig(),
        tracer,
        "The Danube is the longest river in Asia.",
        [Evidence(text=ev, source="atlas")],
        ("Supported", "Refuted"),
    )
    assert d.confidence < uncertain_threshold(VerifierConfig())
    assert "alone reads refuted" in d.rationale and "where the passage read supported" in d.rationale
    step = next(s for s in tracer.to_list() if s["stage"] == "evidence_verifier")
    assert step["conflict"]["label"] == "refuted"


def test_a_two_label_verdict_says_how_its_rule_read_the_three_probabilities():
    # FEVEROUS-S claim 5124 as the tenth stage read it: refuted the more probable of the three, yet the fitted
    # two-label rule (nei counted against refuted) reads Supported 0.50; the rationale printed only the three, so
    # it seemed to contradict its label
    from veracity.types import Evidence
    from veracity.verify.decide import explain

    rule = {"name": "fitted", "weights": [0.8256, -0.8256, 0.039], "bias": 0.3782}
    v = Verification({"supported": 0.2785, "refuted": 0.4137, "nei": 0.3078}, None, [])
    passages = [Evidence(text="One sentence."), Evidence(text="Another.")]
    label, p = label_for(v, ("Supported", "Refuted"), rule)
    assert label == "Supported" and 0.5 <= p < 0.51
    said = explain(v, label, passages, "v", two_label=p)
    assert said.startswith("Label Supported: decided by the 2 passages read together")
    assert said.endswith(
        "supported 0.28, refuted 0.41, nei 0.31; read for a choice of two labels (the two-label rule), Supported 0.50."
    )
    three = explain(v, "Refuted", passages, "v")  # a set with nei: the most probable of the three, nothing added
    assert three.endswith("nei 0.31.") and "two labels" not in three


def test_retrieved_evidence_is_read_by_its_own_rule_and_threshold_given_evidence_by_the_shipped_ones():
    """The same claim and passage: given with the claim (a benchmark's gold, --evidence), the two-label rule and
    threshold fitted on gold pairs; found by a search, the rule and threshold fitted on retrieved evidence
    (verifier.json retrieved_rule), which the trace step names."""
    from veracity.config import VerifierConfig
    from veracity.trace import Tracer
    from veracity.types import Evidence
    from veracity.verify import uncertain_threshold
    from veracity.verify.decide import check_evidence, evidence_setting

    rule = json.loads((WEIGHTS_DIR / "verifier.json").read_text())["retrieved_rule"]
    assert rule["name"] == "fitted_open" and 0.5 <= rule["uncertain_below"] <= 1.0
    claim, text = "The Eiffel Tower is located in Rome.", "The Eiffel Tower is a lattice tower in Paris, France."
    given = Evidence(text=text, source="Eiffel Tower", found_by={"retriever": "given", "given": True})
    found = Evidence(text=text, source="Eiffel Tower", found_by={"retriever": "bm25", "index": "kb"})
    assert evidence_setting([given]) == "given" and evidence_setting([found, given]) == "retrieved"
    tracer = Tracer()
    a = check_evidence(VerifierConfig(), tracer, claim, [given], ("Supported", "Refuted"))
    b = check_evidence(VerifierConfig(), tracer, claim, [found], ("Supported", "Refuted"))
    assert a.label == b.label == "Refuted" and a.decisive and b.decisive
    assert a.threshold == uncertain_threshold(VerifierConfig()) and b.threshold == rule["uncertain_below"]
    assert a.confidence != b.confidence  # read by two rules
    steps = [s for s in tracer.to_list() if s["stage"] == "evidence_verifier"]
    assert [s["setting"] for s in steps] == ["given", "retrieved"]
    assert steps[1]["read"][0]["text"] == text and steps[1]["uncertain_reason"] == b.uncertain_reason
    # a threshold the user set holds for both
    c = check_evidence(VerifierConfig(uncertain_below=0.99), Tracer(), claim, [found], ("Supported", "Refuted"))
    assert c.threshold == 0.99


def test_the_rule_for_retrieved_evidence_is_fitted_on_one_half_and_measured_on_the_other(tmp_path):
    """`veracity verifier calibrate-retrieved` on readings kept in a file: a reading that addresses the claim and
    leans supported is worth more than one that does not address it, whatever it leans; the threshold is chosen
    on the fitting half; the table compares it with the rule before; --write keeps it in verifier.json."""
    import shutil

    from veracity.verify.result import binary_label
    from veracity.verify.training import open_world as ow

    rng = random.Random(3)
    rows = []
    for i in range(600):
        truth = rng.random() < 0.5
        addressed = rng.random() < 0.4
        if addressed:  # reads the truth, mostly
            right = rng.random() < 0.92
            s = 0.85 if truth == right else 0.05
            probs = [s, 0.9 - s, 0.1]
        else:  # says nothing, but leans refuted as the verifier does on a lead about something else
            probs = [0.05, 0.3, 0.65]
        rows.append({"claim": f"c{i}", "label": "supported" if truth else "refuted", "source": "s",
                     "half": "fit" if i % 2 else "measure", "found": 1, "probs": probs})  # fmt: skip
    result = ow.calibrate_retrieved(rows, shipped_rule="supported_vs_refuted", shipped_threshold=0.7)
    rule = result["rule"]
    # not addressed: near even, whichever way it leans; addressed and supported: sure
    assert binary_label(0.05, 0.3, rule)[1] < 0.65
    assert binary_label(0.85, 0.05, rule) == ("supported", pytest.approx(binary_label(0.85, 0.05, rule)[1]))
    assert binary_label(0.85, 0.05, rule)[1] > 0.85
    after, before = result["after"], result["before"]
    assert after["decided_accuracy"] >= 0.85 and before["decided_accuracy"] < 0.75
    table = ow.render(result)
    assert "| before |" in table and "| after |" in table
    folder = tmp_path / "v"
    folder.mkdir()
    shutil.copy(WEIGHTS_DIR / "verifier.json", folder / "verifier.json")
    readings = tmp_path / "readings.jsonl"
    readings.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = subprocess.run(
        veracity_cmd()
        + ["verifier", "calibrate-retrieved", "--out", str(folder), "--readings", str(readings), "--write"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "| after |" in r.stdout and "written: retrieved_rule" in r.stdout
    written = json.loads((folder / "verifier.json").read_text())["retrieved_rule"]
    assert written["name"] == "fitted_open" and written["measure_claims"] == 300


def test_the_retrieved_threshold_keeps_a_margin_over_ninety_percent():
    """18 of the 20 surest verdicts right is 90% on the point, not enough to promise 90% on the next claims; 40 of
    40 is."""
    from veracity.verify.training import open_world as ow

    def rows(right: int, wrong: int) -> list[dict]:
        out = [{"label": "supported", "probs": [0.95, 0.02, 0.03], "found": 1} for _ in range(right)]
        return out + [{"label": "refuted", "probs": [0.95, 0.02, 0.03], "found": 1} for _ in range(wrong)]

    assert ow.threshold_for(rows(18, 2), "supported_vs_refuted") == 1.0
    assert ow.threshold_for(rows(40, 0), "supported_vs_refuted") < 1.0
    assert ow.wilson_lower(40, 40, ow.CONFIDENCE_Z) > 0.9 > ow.wilson_lower(18, 20, ow.CONFIDENCE_Z)


def test_a_claim_a_passage_states_word_for_word_is_decided_supported_from_that_passage():
    """The issue's user: "The Velda River flows into the Gulf of Riga" word for word in their own document, yet 0.50.
    A passage that holds the claim as one of its sentences decides it; a passage that holds it inside a longer
    sentence ("Critics said that ...") does not count as stating it."""
    from veracity.config import VerifierConfig
    from veracity.trace import Tracer
    from veracity.types import Evidence
    from veracity.verify.decide import check_evidence, stated_verbatim

    claim = "The Velda River flows into the Gulf of Riga near the town of Salacgriva."
    doc = (
        "The Velda River is a river in northern Latvia. It rises in the Vidzeme Upland and runs north for 112 "
        "kilometres. The Velda River flows into the Gulf of Riga near the town of Salacgriva. Its basin covers 1,350 "
        "square kilometres."
    )
    other = Evidence(text="Salacgriva is a town in Latvia.", source="Salacgriva")
    d = check_evidence(
        VerifierConfig(), Tracer(), claim, [other, Evidence(text=doc, source="velda_river")], ("Supported", "Refuted")
    )
    assert d.label == "Supported" and d.decisive and d.uncertain_reason == "" and d.verification.passage == 1
    assert d.rationale.startswith("The claim is stated word for word, as a sentence, in passage [2].")
    assert (
        stated_verbatim(claim, ["Critics said that the Velda River flows into the Gulf of Riga near Salacgriva."])
        is None
    )
    assert stated_verbatim("It rained.", ["It rained."]) is None  # too short to stand for a statement
