"""Long training pairs fitted to what the pipelines read (`veracity verifier train --long-pairs window`)."""

from veracity.verify.training.card import describe_fitted, model_card
from veracity.verify.training.data import Pair
from veracity.verify.training.long_pairs import fit_long_pairs


def words(text: str) -> int:
    return len(text.split())


# five sentences of twelve words: 60 words, two sentences to a window beside a five-word claim at 40
PAGE = [
    "The Orrin Bridge is a stone bridge that crosses the river near Tallinn.",
    "It was designed by the engineer Karl Rebane during the winter of 1869.",
    "Its three arches were built of local limestone quarried from the northern cliffs.",
    "The bridge was opened to horse traffic in the summer of 1871 officially.",
    "A railway line was laid across its deck some forty years after that.",
]
EVIDENCE = " ".join(PAGE)


def test_a_pair_that_fits_is_kept_as_it_is():
    pair = Pair("Orrin Bridge crosses rivers.", PAGE[0], "supported", "fm2")
    kept, fitted = fit_long_pairs([pair], words, 40)
    assert kept == [pair] and not fitted.windowed and not fitted.dropped


def test_a_long_supported_pair_becomes_the_window_that_holds_the_claim():
    pair = Pair("Bridge opened 1871 horse traffic.", EVIDENCE, "supported", "fm2+distractors")
    kept, fitted = fit_long_pairs([pair], words, 40)
    assert len(kept) == 1 and kept[0].label == "supported" and kept[0].source == "fm2+distractors"
    assert PAGE[3] in kept[0].evidence and PAGE[0] not in kept[0].evidence
    assert words(kept[0].claim) + words(kept[0].evidence) + 3 <= 40
    assert fitted.to_json() == {"windowed": {"fm2+distractors": 1}, "dropped": {}}


def test_a_supported_pair_whose_claim_no_one_window_holds_is_dropped():
    # "Rebane" is in the second sentence, "railway" in the fifth: no window of two sentences holds both
    pair = Pair("Rebane designed railway bridge.", EVIDENCE, "supported", "compound")
    kept, fitted = fit_long_pairs([pair], words, 40)
    assert kept == [] and fitted.to_json() == {"windowed": {}, "dropped": {"compound": 1}}
    # the same claim refuted is dropped too (its refuting part may lie in the window not chosen) ...
    assert fit_long_pairs([Pair(pair.claim, EVIDENCE, "refuted", "compound")], words, 40)[0] == []


def test_with_keep_unsure_a_pair_whose_claim_no_one_window_holds_stays_cut():
    pairs = [Pair("Rebane designed railway bridge.", EVIDENCE, label, "compound") for label in ("supported", "refuted")]
    sure = Pair("Bridge opened 1871 horse traffic.", EVIDENCE, "supported", "fm2")
    kept, fitted = fit_long_pairs([*pairs, sure], words, 40, keep_unsure=True)
    assert kept[:2] == pairs and kept[2].evidence != EVIDENCE and PAGE[3] in kept[2].evidence
    assert fitted.to_json() == {"windowed": {"fm2": 1}, "dropped": {}, "kept_cut": {"compound": 2}}
    assert (
        "2 supported or refuted ones kept cut, their claim's words found in no one window (compound 2;"
        in describe_fitted(fitted.to_json())
    )


def test_not_enough_information_and_not_supported_hold_in_any_window():
    for label in ("nei", "not_supported"):
        pair = Pair("Rebane designed railway bridge.", EVIDENCE, label, "summedits")
        kept, fitted = fit_long_pairs([pair], words, 40)
        assert len(kept) == 1 and kept[0].label == label and kept[0].evidence != EVIDENCE
        assert fitted.windowed == {"summedits": 1}


def test_a_pair_that_cannot_be_windowed_stays_cut():
    long_claim = " ".join(["word"] * 12) + " bridge."  # leaves under 32 pieces for the evidence at 40
    one_sentence = " ".join(["stone"] * 60) + "."
    pairs = [
        Pair(long_claim, EVIDENCE, "supported", "summedits"),
        Pair("Stone bridge.", one_sentence, "supported", "fm2"),
    ]
    kept, fitted = fit_long_pairs(pairs, words, 40)
    assert kept == pairs and not fitted.windowed and not fitted.dropped


def test_the_model_card_says_what_the_fitting_did_and_how_to_train_so():
    fitted = {"windowed": {"summedits": 356, "factcheck_gpt": 366}, "dropped": {"compound": 302}}
    text = describe_fitted(fitted)
    assert text.startswith("722 longer pairs of the last training stage were read in the window")
    assert "(factcheck_gpt 366, summedits 356)" in text and "302 supported or refuted ones dropped" in text
    settings = {
        "name": "v",
        "weights": "verifier.safetensors",
        "sha256": "0" * 64,
        "base": "b",
        "max_length": 128,
        "temperature": 1.0,
        "binary_rule": "supported_vs_refuted",
        "settings": {
            "epochs": 1,
            "lr": 2e-5,
            "batch_size": 32,
            "max_length": 128,
            "frozen_layers": 0,
            "seed": 53,
            "threads": 2,
            "long_pairs": "window",
        },
        "data": {"train_pairs": 3, "fitted_to_windows": fitted, "cut_at_max_length": {"summedits": [39, 399]}},
    }
    card = model_card(settings)
    assert "--seed 53 --threads 2 --long-pairs window" in card
    assert "128 word pieces per pair; 722 longer pairs" in card and "39 of the last training stage's 399" in card
    assert "fitted_to_windows" not in card  # its own line, not among the sizes


def test_training_with_long_pairs_window_reads_the_fitted_pairs(tmp_path, monkeypatch):
    import pytest

    from veracity.verify.training import loop
    from veracity.verify.training.data import TrainingData
    from veracity.verify.training.settings import TrainSettings

    long_pair = Pair("The bridge opened to horse traffic in 1871.", EVIDENCE, "supported", "fm2+distractors")
    short_pair = Pair("The bridge is made of stone.", PAGE[0], "supported", "fm2")
    read: dict[str, list[Pair]] = {}

    class Stop(Exception):
        pass

    def batches(pairs, size, rng):
        read["pairs"] = pairs
        raise Stop

    monkeypatch.setattr(loop, "_batches", batches)
    data = TrainingData([long_pair, short_pair], [], [], [], [], [], {})
    for long_pairs in ("cut", "window", "window-or-cut"):
        s = TrainSettings(max_length=48, frozen_layers=6, seed=3, threads=1, long_pairs=long_pairs)
        with pytest.raises(Stop):
            loop.fine_tune(data, tmp_path, s, progress=False)
        if long_pairs == "cut":
            assert read["pairs"] == [long_pair, short_pair]
        else:
            fitted, kept = read["pairs"]
            assert kept == short_pair and fitted.claim == long_pair.claim and fitted.label == "supported"
            assert PAGE[3] in fitted.evidence and len(fitted.evidence) < len(EVIDENCE)
