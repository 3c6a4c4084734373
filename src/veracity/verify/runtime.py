"""How the verifier's network is run: PyTorch, or ONNX Runtime (`pip install 'veracity[fast]'`).

`verifier.runtime` (or $VERACITY_VERIFIER_RUNTIME):
- `torch` (the default);
- `onnx`: the same weights exported to ONNX (float32): the same readings (within 1e-4); on the 2-core Xeon of the
  figures (avx512_vnni) no faster than PyTorch (4.2 against 4.6 grounding pairs a second), so not the default;
- `onnx-int8`: the ONNX model with its weights quantized to 8 bits (dynamic quantization): 1.5x PyTorch there (6.8
  pairs a second), its readings moved a little; its accuracy is measured apart (benchmarks/results/grounding.md).

The ONNX model is exported from the loaded PyTorch model on first use and kept in the cache folder
($VERACITY_VERIFIER_CACHE, else $XDG_CACHE_HOME/veracity/verifier-onnx), named by what it was made from (the verifier's weights hash, or its folder
and files' times, the torch and ONNX Runtime versions and the runtime), so a cached model of other weights or another
runtime is never read. If the export fails, PyTorch reads, and the reason is logged once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import warnings
from pathlib import Path

from ..errors import UserError

RUNTIMES = ("torch", "onnx", "onnx-int8")
ENV = "VERACITY_VERIFIER_RUNTIME"
CACHE_ENV = "VERACITY_VERIFIER_CACHE"  # where exported models are kept (default: the cache folder)
log = logging.getLogger("veracity.verify")
_lock = threading.Lock()


def chosen_runtime(configured: str | None = None) -> str:
    """The runtime asked for: $VERACITY_VERIFIER_RUNTIME over the configuration's, `torch` when neither says."""
    name = (os.environ.get(ENV) or configured or "torch").strip().lower()
    if name not in RUNTIMES:
        raise UserError(f"the verifier's runtime must be one of {', '.join(RUNTIMES)}, not {name!r} (${ENV})")
    return name


def onnx_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class TorchRunner:
    """The PyTorch model: logits of a batch encoded by its tokenizer (PyTorch tensors)."""

    name = "torch"

    def __init__(self, model) -> None:
        self.model = model

    def __call__(self, enc):
        return self.model(**enc).logits


class OnnxRunner:
    """An ONNX Runtime session over the exported model; logits as a PyTorch tensor, as TorchRunner gives them."""

    def __init__(self, path: Path, inputs: list[str], threads: int | None, name: str) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or 0
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = inputs
        self.name = name

    def __call__(self, enc):
        import torch

        feed = {k: enc[k].numpy() for k in self.inputs}
        return torch.from_numpy(self.session.run(None, feed)[0])


def cache_dir() -> Path:
    """$VERACITY_VERIFIER_CACHE, else $XDG_CACHE_HOME/veracity/verifier-onnx (~/.cache/...)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "veracity" / "verifier-onnx"


def model_key(folder: Path, settings: dict, runtime: str) -> str:
    """What the exported model is named by: the weights (their recorded hash, else the folder's files and times),
    the runtime, and the versions that make and read it."""
    import onnxruntime
    import torch

    if settings.get("sha256"):
        made_of = settings["sha256"]
    else:
        made_of = str(folder.resolve()) + "".join(
            f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in sorted(folder.iterdir()) if p.is_file()
        )
    text = f"{made_of}|{runtime}|torch {torch.__version__}|onnxruntime {onnxruntime.__version__}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def runner_for(model, tokenizer, folder: Path, settings: dict, runtime: str, threads: int | None):
    """The runner of `runtime` for the loaded model."""
    if runtime == "torch":
        return TorchRunner(model)
    if not onnx_available():
        raise UserError(
            f"the verifier's runtime {runtime!r} needs ONNX Runtime: pip install 'veracity[fast]' (or set "
            f'verifier.runtime = "torch")'
        )
    import inspect

    given = set(tokenizer("a", "b", return_tensors="pt").keys())
    # in the order of the model's forward (positional in the export): the tokenizer's own order differs
    inputs = [name for name in inspect.signature(model.forward).parameters if name in given]
    with _lock:
        try:
            path = _exported(model, tokenizer, inputs, folder, settings, runtime)
        except Exception as e:  # an architecture the exporter cannot handle: PyTorch reads, as well
            log.warning("the verifier could not be exported to ONNX (%s); PyTorch reads it", e)
            return TorchRunner(model)
    return OnnxRunner(path, inputs, threads, runtime)


def _exported(model, tokenizer, inputs: list[str], folder: Path, settings: dict, runtime: str) -> Path:
    import torch

    out = cache_dir()
    key = model_key(folder, settings, runtime)
    path = out / f"{key}.onnx"
    if path.is_file():
        return path
    out.mkdir(parents=True, exist_ok=True)
    plain = out / f"{model_key(folder, settings, 'onnx')}.onnx"
    if not plain.is_file():
        enc = tokenizer(
            ["a claim", "another claim"], ["a passage", "a longer passage"], return_tensors="pt", padding=True
        )
        tmp = plain.with_suffix(f".{os.getpid()}.tmp")
        axes = {k: {0: "batch", 1: "length"} for k in inputs}
        import copy

        traced = copy.deepcopy(model)
        if hasattr(traced, "set_attn_implementation"):  # SDPA's mask handling traces to a fixed shape: read wrongly
            traced.set_attn_implementation("eager")
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                traced,
                tuple(enc[k] for k in inputs),
                str(tmp),
                input_names=inputs,
                output_names=["logits"],
                dynamic_axes={**axes, "logits": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, plain)
    if runtime == "onnx":
        return plain
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = path.with_suffix(f".{os.getpid()}.tmp.onnx")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its advice to pre-process, logged at every call; the process's level kept
    try:
        quantize_dynamic(str(plain), str(tmp), weight_type=QuantType.QInt8)
    finally:
        root.setLevel(level)
    os.replace(tmp, path)
    return path
