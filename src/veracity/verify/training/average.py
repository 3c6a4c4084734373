"""Average trained verifiers' weights (a "model soup"): the element-wise mean of several folders' tensors.

Verifiers continued from the same weights with different draws of training pairs sit close together; their mean
often reads held-apart text better than either. The averaged folder keeps the first folder's settings, records
what it was averaged from, and must be calibrated before use (`veracity verifier average` does both).
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import UserError


def average(folders: list[Path], out: Path) -> dict:
    """Write out/verifier.safetensors (the mean of the folders' weights, float16) and out/verifier.json (the first
    folder's settings with `averaged_from`; temperature and stacker reset, to be refitted by calibration).

    A tensor one folder does not ship (its frozen lowest layers) counts as the base model's in that folder."""
    import torch
    from safetensors.torch import load_file, save_file

    from ..model import sha256

    if len(folders) < 2:
        raise UserError("averaging needs at least two verifier folders")
    states, sources, first = [], [], None
    for folder in folders:
        settings_file, weights = folder / "verifier.json", folder / "verifier.safetensors"
        settings = json.loads(settings_file.read_text(encoding="utf-8")) if settings_file.is_file() else {}
        if "base_folder" in settings:
            raise UserError(
                f"{folder} holds a whole model trained from --base {settings['base_folder']}; averaging "
                "takes verifiers trained from the packaged base (their verifier.safetensors)"
            )
        if not settings_file.is_file() or not weights.is_file():
            raise UserError(f"no trained verifier in {folder} (verifier.json and verifier.safetensors expected)")
        first = first or settings  # the averaged folder keeps the first folder's settings
        states.append(load_file(str(weights)))
        source = {
            "folder": str(folder),
            "sha256": sha256(weights),
            "train_seconds": settings.get("train_seconds"),
            "settings": settings.get("settings", {}),
        }
        if "averaged_from" in settings:  # an average itself: what it was made of (its `data` is its first folder's)
            source["averaged_from"] = settings["averaged_from"]
        elif "train_pairs" in settings.get("data", {}):  # its training draw, when its calibration counted it
            source["data"] = {
                k: settings["data"][k] for k in ("train_pairs", "train_by_source") if k in settings["data"]
            }
        sources.append(source)
    names = sorted(set().union(*states))
    base = _base_state() if any(set(names) - set(state) for state in states) else {}
    mean = {}
    for name in names:
        tensors = [state.get(name, base.get(name)) for state in states]
        if any(t is None for t in tensors):
            raise UserError(f"cannot average: tensor {name} is in some folders and not in the base model")
        if len({tuple(t.shape) for t in tensors}) > 1:
            raise UserError(f"cannot average: tensor {name} has different shapes in {', '.join(map(str, folders))}")
        mean[name] = (sum(t.float() for t in tensors) / len(tensors)).to(torch.float16).contiguous()
    out.mkdir(parents=True, exist_ok=True)
    weights = out / "verifier.safetensors"
    save_file(mean, str(weights))
    settings = {k: v for k, v in first.items() if k not in ("stack", "figures", "calibrated_with")}
    settings.update({"weights": weights.name, "sha256": sha256(weights), "temperature": 1.0, "averaged_from": sources})
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    return settings


def _base_state() -> dict:
    from ..model import base_classifier
    from ..result import LABELS

    return {k: v.detach() for k, v in base_classifier(len(LABELS)).state_dict().items()}
