"""What runs the verifier (verify/runtime.py): ONNX Runtime reads as PyTorch does (the model exported once, cached by
what it was made from), its 8-bit variant close to it, and a runtime that cannot be had says how to get it."""

import pytest

from veracity.config import ConfigError, VerifierConfig
from veracity.errors import UserError
from veracity.verify.model import WEIGHTS_DIR, CrossEncoderVerifier
from veracity.verify.runtime import chosen_runtime

pytest.importorskip("onnxruntime", reason="ONNX Runtime is in the test extra: pip install -e '.[test]'")

PAIRS = [
    ("The Orrin Bridge was opened in 1987.", "The Orrin Bridge in Tallinn was opened in 1987 by mayor Kalev Rand."),
    ("It is 500 metres tall.", "The tower is 330 metres tall. It is painted brown."),
    ("Marie Curie won two Nobel Prizes.", "Rivers flow to the sea."),
]


def readings(runtime, folder=WEIGHTS_DIR):
    v = CrossEncoderVerifier(folder, threads=1, cached=False, runtime=runtime)
    return v, v.score_pairs(PAIRS)


def test_onnx_reads_as_pytorch_does_and_is_exported_once(tmp_path, monkeypatch):
    monkeypatch.setenv("VERACITY_VERIFIER_CACHE", str(tmp_path / "onnx"))
    torch_v, by_torch = readings("torch")
    onnx_v, by_onnx = readings("onnx")
    assert torch_v.runner.name == "torch" and onnx_v.runner.name == "onnx"
    for a, b in zip(by_torch, by_onnx):
        assert a == pytest.approx(b, abs=1e-4)
    [exported] = list((tmp_path / "onnx").glob("*.onnx"))
    made = exported.stat().st_mtime_ns
    readings("onnx")  # read again from the same file
    assert exported.stat().st_mtime_ns == made and len(list((tmp_path / "onnx").glob("*.onnx"))) == 1
    _, by_int8 = readings("onnx-int8")
    assert len(list((tmp_path / "onnx").glob("*.onnx"))) == 2  # its own file, never the float one
    for a, b in zip(by_torch, by_int8):
        assert a["supported"] == pytest.approx(b["supported"], abs=0.15)
    assert any(abs(a["supported"] - b["supported"]) > 1e-3 for a, b in zip(by_torch, by_int8))


def test_a_model_whose_inputs_come_in_another_order_is_exported_right(tmp_path, monkeypatch):
    from test_grounding_models import tiny_roberta

    monkeypatch.setenv("VERACITY_VERIFIER_CACHE", str(tmp_path / "onnx"))
    folder = tiny_roberta(tmp_path / "tiny", {0: "unsupported", 1: "supported"})
    _, by_torch = readings("torch", folder)
    _, by_onnx = readings("onnx", folder)
    for a, b in zip(by_torch, by_onnx):
        assert a == pytest.approx(b, abs=1e-4)


def test_an_unknown_runtime_is_refused_saying_which_there_are(monkeypatch):
    monkeypatch.setenv("VERACITY_VERIFIER_RUNTIME", "tensorrt")
    with pytest.raises(UserError, match="torch, onnx, onnx-int8"):
        chosen_runtime()
    monkeypatch.delenv("VERACITY_VERIFIER_RUNTIME")
    assert chosen_runtime("onnx") == "onnx" and chosen_runtime() == "torch"
    with pytest.raises(ConfigError, match="verifier.runtime"):
        VerifierConfig(runtime="gpu").validate()
