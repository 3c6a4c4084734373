"""Training the verifier from another base (`veracity verifier train --base FOLDER`): any Hugging Face encoder on
disk, an NLI cross-encoder's own head kept in the verifier's label order, the whole model written and read back."""

from __future__ import annotations

import json

import pytest

from veracity.verify.result import LABELS
from veracity.verify.training.data import Pair, TrainingData
from veracity.verify.training.settings import TrainSettings

CLAIM, EVIDENCE = "The bridge opened in 1883.", "The bridge was opened in 1883 after years of work."


def _tiny_base(folder, id2label: dict | None):
    """A small random BERT saved as a Hugging Face folder with the packaged tokenizer (what a user's own encoder,
    or an NLI cross-encoder when `id2label` names entailment / contradiction / neutral, looks like on disk)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from veracity.verify.model import base_model_path

    tok = AutoTokenizer.from_pretrained(base_model_path(), local_files_only=True)
    labels = id2label or {0: "LABEL_0", 1: "LABEL_1"}
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return tok


def _logits(model, tok):
    import torch

    with torch.inference_mode():
        return model(**tok([CLAIM], [EVIDENCE], return_tensors="pt")).logits[0]


def test_an_nli_models_head_is_kept_with_entailment_read_as_supported(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification

    from veracity.verify.training.loop import training_base

    tok = _tiny_base(tmp_path, {0: "contradiction", 1: "entailment", 2: "neutral"})
    original = _logits(AutoModelForSequenceClassification.from_pretrained(tmp_path).eval(), tok)
    _, model = training_base(str(tmp_path))
    got = _logits(model.eval(), tok)
    assert torch.allclose(got, original[[1, 0, 2]], atol=1e-5)  # supported, refuted, nei
    assert [model.config.id2label[i] for i in range(3)] == list(LABELS)


def test_a_base_without_those_labels_gets_a_new_three_way_head_and_a_wrong_folder_is_a_clear_error(tmp_path):
    from veracity.errors import UserError
    from veracity.verify.training.loop import training_base

    _tiny_base(tmp_path / "plain", None)
    _, model = training_base(str(tmp_path / "plain"))
    assert model.num_labels == 3 and model.classifier.out_features == 3
    with pytest.raises(UserError, match="no config.json"):
        training_base(str(tmp_path / "missing"))
    from veracity.verify.training.loop import fine_tune

    with pytest.raises(UserError, match="--frozen-layers 3: this model has no parameters named bert.encoder.layer.2"):
        fine_tune(_data(), tmp_path, TrainSettings(frozen_layers=3, base=str(tmp_path / "plain")), progress=False)


def _data() -> TrainingData:
    train = [
        Pair(CLAIM, EVIDENCE, "supported", "t"),
        Pair(CLAIM.replace("1883", "1925"), EVIDENCE, "refuted", "t"),
        Pair(CLAIM, "Bananas grow in warm places.", "not_supported", "t"),
    ] * 2
    return TrainingData(train, [], [], [], [], [], {})


@pytest.mark.timeout(600)
def test_a_verifier_trained_from_another_base_is_the_whole_model_and_reads_as_it_was_trained(
    tmp_path, monkeypatch, capsys
):
    import torch

    from veracity.verify.model import WEIGHTS_DIR, CrossEncoderVerifier
    from veracity.verify.training import train
    from veracity.verify.training.card import model_card

    _tiny_base(tmp_path / "base", {0: "entailment", 1: "neutral", 2: "contradiction"})
    trained = {}
    fine_tune = train.fine_tune

    def keep(data, out, s, progress=True):
        trained["model"], trained["tok"] = fine_tune(data, out, s, progress=progress)
        return trained["model"], trained["tok"]

    monkeypatch.setattr(train, "build", lambda root, seed=13, **kw: _data())
    monkeypatch.setattr(train, "fine_tune", keep)
    monkeypatch.setattr(
        train,
        "calibrate",
        lambda out, root, s, data=None: json.loads((out / "verifier.json").read_text(encoding="utf-8")),
    )
    s = TrainSettings(
        epochs=1, lr=1e-3, batch_size=2, max_length=32, frozen_layers=1, seed=3, threads=1, base=str(tmp_path / "base")
    )
    settings = train.run(tmp_path, tmp_path / "out", s, progress=False)
    out = tmp_path / "out"
    assert settings["weights"] == "model.safetensors" and settings["base_folder"] == str(tmp_path / "base")
    assert {"config.json", "model.safetensors", "verifier.json"} <= {f.name for f in out.iterdir()}
    assert not (out / "verifier.safetensors").exists()
    # the lowest layer was frozen, the rest trained; the folder reads as the trained model did (float16 weights)
    v = CrossEncoderVerifier(out, cached=False)
    got = v.score_pairs([(CLAIM, EVIDENCE)])[0]
    expected = torch.softmax(_logits(trained["model"].float().eval(), trained["tok"]), -1).tolist()
    assert [got[x] for x in LABELS] == pytest.approx(expected, abs=2e-3)
    from transformers import AutoModelForSequenceClassification

    before = AutoModelForSequenceClassification.from_pretrained(tmp_path / "base").state_dict()
    after = v.model.state_dict()
    layer = "bert.encoder.layer.{}.attention.self.query.weight"
    assert torch.allclose(after[layer.format(0)], before[layer.format(0)], atol=1e-4)  # frozen: the base's (float16)
    assert (after[layer.format(1)] - before[layer.format(1)]).abs().max() > 1e-3  # trained
    shipped = json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8"))  # (a calibrated card's fields)
    card = model_card({**shipped, **settings, "figures": {}, "averaged_from": None, "stages": None})
    assert "(float16, the whole model)" in card and f"--base {s.base}" in card and "needs nothing else" in card
    assert settings["trained_on"] == "cpu" and "Trained on 2 CPU cores" in card  # (a CUDA GPU's run says so)
    from veracity.cli import main

    assert main(["verifier", "info", str(out)]) == 0  # what was trained there, not the shipped verifier
    said = capsys.readouterr().out
    assert said.startswith(f"veracity-verifier-bert-base  (sha256 {settings['sha256'][:16]}") and str(s.base) in said
    assert main(["verifier", "info", str(tmp_path / "nowhere")]) != 0
    assert f"no trained verifier in {tmp_path / 'nowhere'}" in capsys.readouterr().err
    on_gpu = model_card({**shipped, **settings, "trained_on": "cuda", "averaged_from": None, "stages": None})
    assert "Trained on a CUDA GPU in" in on_gpu and "(torch 2.13.0)." in on_gpu


def test_weights_of_another_base_are_refused_where_the_packaged_base_is_expected(tmp_path, capsys):
    from veracity.cli import main
    from veracity.errors import UserError
    from veracity.verify.model import base_classifier
    from veracity.verify.training.average import average
    from veracity.verify.training.checkpoint import load_trained

    _tiny_base(tmp_path / "base", None)
    from transformers import AutoModelForSequenceClassification

    whole = tmp_path / "whole"
    AutoModelForSequenceClassification.from_pretrained(tmp_path / "base").save_pretrained(whole)
    (whole / "verifier.json").write_text(
        json.dumps({"weights": "model.safetensors", "base_folder": str(tmp_path / "base")}), encoding="utf-8"
    )
    with pytest.raises(UserError, match="do not fit the model trained from the packaged base"):
        load_trained(base_classifier(3), whole)
    with pytest.raises(UserError, match="holds a whole model trained from --base"):
        average([whole, whole], tmp_path / "avg")
    assert main(["verifier", "train", "--base", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) != 0
    assert "not a Hugging Face model folder" in capsys.readouterr().err
