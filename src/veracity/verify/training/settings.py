"""A training's settings (what `veracity verifier train` was asked, recorded in verifier.json), the device it runs
on, and the parameters it leaves as the base model has them."""

from __future__ import annotations

from dataclasses import dataclass

#: `--long-pairs`: a training pair longer than the maximum length cut there (no fitting), or fitted to a window of
#: its evidence (long_pairs.py); here, not there, so that the `veracity verifier` command can offer them without
#: importing the training data
LONG_PAIRS_MODES = ("cut", "window", "window-or-cut")


def frozen_prefixes(layers: int, model_prefix: str = "bert") -> tuple[str, ...]:
    """Parameters left as the base model has them (and so not shipped): the embeddings and the lowest layers.
    `model_prefix`: the encoder's name inside the classifier (its `base_model_prefix`: bert, roberta, deberta...)."""
    return (f"{model_prefix}.embeddings.",) + tuple(f"{model_prefix}.encoder.layer.{i}." for i in range(layers))


@dataclass
class TrainSettings:
    epochs: int = 1
    lr: float = 5e-5
    batch_size: int = 16
    max_length: int = 128
    frozen_layers: int = 2
    seed: int = 13
    limit: int | None = None  # at most this many training pairs (quick runs)
    per_source: int | None = None  # at most this many training pairs of each source (training_draw)
    same_subject: int = 0  # training pairs of a claim against a sentence on another point about its subject (data.py)
    long_pairs: str = "cut"  # a pair longer than max_length: "cut" there, or fitted (LONG_PAIRS_MODES)
    eval_limit: int | None = None  # at most this many calibration and evaluation pairs each (quick runs)
    init_from: str | None = None  # continue from a trained verifier folder (its weights, as its verifier.json names)
    #: a Hugging Face encoder folder to train from instead of the packaged all-MiniLM-L6-v2 (loop.py `training_base`);
    #: the output folder then holds the whole model
    base: str | None = None
    threads: int | None = None
    checkpoint_every: int = 200  # batches between checkpoints (a killed run resumes mid-epoch from the last one)
    device: str = "auto"  # auto: a CUDA GPU when torch sees one, else the CPU; or "cpu", "cuda", "cuda:N"
    #: the seed of the calibration that ends a training (it draws the held-apart sets capped or made by seed, and the
    #: calibration's own fits): None, the training's seed; set to another verifier's, the two are measured alike
    calibration_seed: int | None = None


def training_device(name: str) -> str:
    """The torch device training runs on: `auto` takes a CUDA GPU when torch sees one. The weights are the
    same kind either way (moved back to the CPU and saved in float16); a checkpoint resumes on any device."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        from ...errors import UserError

        raise UserError(f"--device {name}: torch sees no CUDA GPU on this machine (use --device cpu or auto)")
    return name
