"""A published grounding or NLI checkpoint as the verifier (`verifier.model` = its folder): MiniCheck's and FactCG's
models are two-way (supported / not supported) RoBERTa or DeBERTa classifiers. No weights can be downloaded here, so
each test makes a tiny randomly initialised model of the same architecture, with a tokenizer trained on a few
sentences, and checks that veracity reads it as the label mapping says: which output is "supported", how long its
parts are, and that a two-way model never reads "refuted" (it does not say whether a sentence is false)."""

import json

import pytest

from veracity.errors import UserError
from veracity.grounding import ground
from veracity.verify.model import CrossEncoderVerifier

TEXTS = [
    "The Eiffel Tower is in Paris and was completed in 1889.",
    "Carpal tunnel syndrome causes numbness in the thumb and index finger.",
    "The median nerve is compressed as it passes through the wrist.",
] * 20


def tiny_roberta(folder, id2label, verifier_json=None):
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForSequenceClassification

    folder.mkdir()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(TEXTS, vocab_size=300, min_frequency=1, special_tokens=specials)
    bpe._tokenizer.post_processor = RobertaProcessing(("</s>", 2), ("<s>", 0))  # <s> A </s></s> B </s>
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        mask_token="<mask>",
        sep_token="</s>",
        cls_token="<s>",
    )
    tok.save_pretrained(folder)
    config = RobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=66,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    import torch

    torch.manual_seed(3)
    RobertaForSequenceClassification(config).save_pretrained(folder)
    if verifier_json is not None:
        (folder / "verifier.json").write_text(json.dumps(verifier_json))
    return folder


def test_a_two_way_checkpoint_is_read_by_its_label_names_and_its_length(tmp_path):
    folder = tiny_roberta(tmp_path / "minicheck-like", {0: "unsupported", 1: "supported"})
    v = CrossEncoderVerifier(folder, cached=False)
    assert v.two_way and v.max_length == 64 and v.binary_rule == "supported_vs_rest"
    rows = v.score_pairs([("The tower is in Paris.", "The Eiffel Tower is in Paris.")])
    assert rows[0]["refuted"] == 0.0 and abs(rows[0]["supported"] + rows[0]["nei"] - 1) < 1e-6
    # a long document is read in parts that fit its 64 word pieces: every sentence read
    doc = " ".join(TEXTS[:12])
    result = ground("The Eiffel Tower is in Paris.", [doc], verifier=str(folder))
    s = result.sentences[0]
    assert s.parts_read > 3 and s.label in ("supported", "not_supported")  # never contradicted: it cannot say
    assert s.quote["text"] == doc[s.quote["start"] : s.quote["end"]]


def test_generic_output_names_need_a_mapping_and_the_mapping_decides_which_output_is_supported(tmp_path):
    generic = {0: "LABEL_0", 1: "LABEL_1"}
    bare = tiny_roberta(tmp_path / "bare", generic)
    with pytest.raises(UserError, match="verifier.json"):
        CrossEncoderVerifier(bare, cached=False)
    pair = [("The tower is in Paris.", "The Eiffel Tower is in Paris.")]
    read = {}
    for name, labels in (("a", ["not_supported", "supported"]), ("b", ["supported", "not_supported"])):
        folder = tiny_roberta(
            tmp_path / name, generic, {"labels": labels, "weights": "model.safetensors", "max_length": 64}
        )
        read[name] = CrossEncoderVerifier(folder, cached=False).score_pairs(pair)[0]
    assert read["a"]["supported"] == pytest.approx(read["b"]["nei"], abs=1e-5)
    assert read["a"]["supported"] != pytest.approx(read["b"]["supported"], abs=1e-4)
