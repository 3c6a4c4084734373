"""The training loop: all-MiniLM-L6-v2 (or a `--base` encoder) fine-tuned as a three-way cross-encoder on the
training draw, its lowest layers frozen, seeded, resumable mid-epoch (checkpoint.py), on a CUDA GPU or the CPU."""

from __future__ import annotations

import os
import random
from dataclasses import asdict
from pathlib import Path

from ...errors import UserError
from ..model import base_classifier, base_model_path, three_way_names
from ..result import LABELS
from .checkpoint import CHECKPOINT, load_trained, resume, save_checkpoint
from .data import Pair, TrainingData
from .draw import fitted_draw
from .settings import TrainSettings, frozen_prefixes, training_device
from .sources import NOT_SUPPORTED


def training_base(base: str | None):
    """(tokenizer, model) that `veracity verifier train` starts from, the model's outputs being LABELS in order.

    None: the packaged all-MiniLM-L6-v2 with a new head. Otherwise any Hugging Face encoder folder on disk (a larger
    encoder for a GPU, or a natural-language-inference cross-encoder): when its labels name the three classes
    (entailment / contradiction / neutral, or supported / refuted / nei) its own head is kept, its rows put in
    LABELS' order, so training starts from what it already reads; else it gets a new three-way head."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if base is None:
        return AutoTokenizer.from_pretrained(base_model_path(), local_files_only=True), base_classifier(len(LABELS))
    path = model_folder(base)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        names = three_way_names(config)
        keep = sorted(names) == sorted(LABELS)
        new_head = {} if keep else {"num_labels": len(LABELS), "ignore_mismatched_sizes": True}
        model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True, **new_head)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as e:
        raise UserError(" ".join(f"--base {base}: cannot load it as a sequence classifier: {e}".split())) from e
    finally:
        hf_logging.set_verbosity(verbosity)
    if keep:  # the head's rows in LABELS' order: the training loss and the calibration read outputs in that order
        heads = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == len(LABELS)]
        order = [names.index(lab) for lab in LABELS]
        with torch.no_grad():
            heads[-1].weight.copy_(heads[-1].weight[order].clone())
            if heads[-1].bias is not None:
                heads[-1].bias.copy_(heads[-1].bias[order].clone())
    model.config.id2label = dict(enumerate(LABELS))
    model.config.label2id = {lab: i for i, lab in enumerate(LABELS)}
    return tokenizer, model


def model_folder(base: str) -> Path:
    """`--base`'s folder, or a clear error when it holds no Hugging Face model."""
    path = Path(base).expanduser()
    if not (path / "config.json").is_file():
        raise UserError(f"--base {base}: not a Hugging Face model folder (no config.json there)")
    return path


def _batches(pairs: list[Pair], size: int, rng: random.Random) -> list[list[Pair]]:
    """Shuffled, then sorted by length within windows of 50 batches, so padding stays small."""
    order = pairs[:]
    rng.shuffle(order)
    out = []
    window = size * 50
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda p: len(p.claim) + len(p.evidence))
        out.extend(chunk[i : i + size] for i in range(0, len(chunk), size))
    rng.shuffle(out)
    return out


def pair_loss(logits, labels: list[str]):
    """Cross-entropy over supported / refuted / nei; a two-way source's `not_supported` is the pair of classes
    refuted-or-nei (the log of their summed probability), never read as refuted alone."""
    import torch

    logp = torch.log_softmax(logits, -1)
    rows = []
    for i, label in enumerate(labels):
        if label == NOT_SUPPORTED:
            rows.append(-torch.logsumexp(logp[i, 1:], 0))
        else:
            rows.append(-logp[i, LABELS.index(label)])
    return torch.stack(rows).mean()


def fine_tune(data: TrainingData, out: Path, s: TrainSettings, *, progress: bool = True):
    """Fine-tune the base (or `--init-from` weights) on the training draw of `data` as `s` asks, checkpointing into
    `out` and resuming from the checkpoint there: (model, on the CPU and in eval mode; tokenizer)."""
    import torch
    from tqdm import tqdm
    from transformers.utils import logging as hf_logging

    torch.manual_seed(s.seed)
    if s.threads:
        torch.set_num_threads(s.threads)
    hf_logging.set_verbosity_error()
    tok, model = training_base(s.base)
    if s.init_from:  # continue training an earlier verifier
        load_trained(model, Path(s.init_from))
    frozen = frozen_prefixes(s.frozen_layers, model.base_model_prefix)
    if not all(any(n.startswith(f) for n, _ in model.named_parameters()) for f in frozen):
        raise UserError(
            f"--frozen-layers {s.frozen_layers}: this model has no parameters named {frozen[-1]}* (its "
            "embeddings and layers are named otherwise); use --frozen-layers 0 to train them all"
        )
    for name, p in model.named_parameters():
        if name.startswith(frozen):
            p.requires_grad = False
    device = training_device(s.device)
    model.to(device)
    train, _ = fitted_draw(data.train, asdict(s), tok, s.max_length)
    rng = random.Random(s.seed)
    epochs = [_batches(train, s.batch_size, rng) for _ in range(s.epochs)]
    total = sum(len(e) for e in epochs)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=s.lr, weight_decay=0.01)
    warm = max(1, int(0.06 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warm, max(0.0, (total - step) / max(1, total - warm)))
    )
    ckpt = out / CHECKPOINT  # a killed run resumes at the batch after its last checkpoint (the order is seeded)
    start_epoch, start_batch = resume(ckpt, model, opt, sched, [len(e) for e in epochs], device)
    done = sum(len(e) for e in epochs[:start_epoch]) + start_batch
    step_bar = tqdm(total=total, initial=done, desc="training verifier", unit="batch", disable=not progress)
    for epoch in range(start_epoch, s.epochs):
        model.train()
        running = 0.0
        first = start_batch if epoch == start_epoch else 0
        for i in range(first, len(epochs[epoch])):
            batch = epochs[epoch][i]
            enc = tok(
                [p.claim for p in batch],
                [p.evidence for p in batch],
                truncation="longest_first",
                max_length=s.max_length,
                padding=True,
                return_tensors="pt",
            ).to(device)
            loss = pair_loss(model(**enc).logits, [p.label for p in batch])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            running = 0.98 * running + 0.02 * loss.item() if i > first else loss.item()
            step_bar.update(1)
            step_bar.set_postfix(epoch=epoch + 1, loss=f"{running:.3f}")
            if (i + 1) % s.checkpoint_every == 0 or i + 1 == len(epochs[epoch]):
                save_checkpoint(ckpt, model, opt, sched, epoch, i + 1, device)
    model.to("cpu")
    step_bar.close()
    model.eval()
    return model, tok
