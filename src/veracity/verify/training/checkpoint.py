"""Checkpoints and resuming: a killed training goes on from its last checkpoint (every --checkpoint-every batches)
to the same weights, and `--init-from` continues from a trained verifier folder's weights."""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import UserError
from ..model import base_model_path, weights_file

#: the file in the output folder a running training keeps its checkpoint in (removed when the training ends)
CHECKPOINT = "checkpoint.pt"


def save_checkpoint(path: Path, model, opt, sched, epoch: int, batch: int, device: str) -> None:
    """The model, optimiser and schedule after `batch` batches of `epoch`, with the random state (dropout goes on
    as if the run had not stopped), written atomically: a kill while writing leaves the last checkpoint whole."""
    import torch

    state = {
        "model": model.state_dict(),
        "opt": opt.state_dict(),
        "sched": sched.state_dict(),
        "epoch": epoch,
        "batch": batch,
        "torch_rng": torch.get_rng_state(),
        **({"cuda_rng": torch.cuda.get_rng_state()} if device.startswith("cuda") else {}),
    }
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def resume(path: Path, model, opt, sched, batches: list[int], device: str) -> tuple[int, int]:
    """(epoch, batch) a training goes on from: (0, 0) without a checkpoint, else the batch after the last one
    `path` saved (the order of batches is seeded), its model, optimiser, schedule and random state restored.
    `batches`: how many batches each epoch has."""
    if not path.is_file():
        return 0, 0
    import torch

    state = torch.load(path, weights_only=False, map_location=device)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    epoch, batch = state["epoch"], state.get("batch", batches[state["epoch"]])
    if "torch_rng" in state:  # dropout goes on as if the run had not stopped
        torch.set_rng_state(state["torch_rng"].cpu())
    if "cuda_rng" in state and device.startswith("cuda"):
        torch.cuda.set_rng_state(state["cuda_rng"].cpu())
    if batch >= batches[epoch]:
        epoch, batch = epoch + 1, 0
    return epoch, batch


def load_trained(model, folder: Path) -> None:
    """Load a trained verifier folder's weights into `model` (what `--init-from` continues from); a tensor the model
    does not have (a folder trained from another base) is a clear error, not silently left out."""
    from safetensors.torch import load_file

    try:
        settings = json.loads((folder / "verifier.json").read_text(encoding="utf-8"))
        state = {k: v.float() for k, v in load_file(str(weights_file(folder, settings))).items()}
    except (OSError, ValueError) as e:
        raise UserError(f"--init-from {folder}: not a trained verifier folder ({e})") from e
    own = model.state_dict()
    misfit = [k for k, v in state.items() if k not in own or own[k].shape != v.shape]
    if misfit:
        raise UserError(
            f"--init-from {folder}: its weights do not fit the model trained from "
            f"{'--base' if model.name_or_path != str(base_model_path()) else 'the packaged base'} "
            f"({misfit[0]}, ...); continue a verifier from the base it was trained from"
        )
    model.load_state_dict(state, strict=False)
