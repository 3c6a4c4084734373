"""The trained evidence verifier: a claim (or an answer sentence) against evidence passages -> calibrated
probabilities of supported / refuted / not enough information, and the passage that decided it.

- `model.py`: the verifier (a MiniLM cross-encoder shipped in `weights/`), the `Verifier` protocol, `Verification`.
- `windows.py`: a passage too long for the model read in windows of whole sentences.
- `lexical.py`: the word-overlap baseline behind the same protocol.
- `result.py`: what a verifier returns and how per-passage readings become one; `decide.py`: a check's use of it.
- `training/`: the training workshop: the training data (../shared/training) and what `veracity verifier train`,
  `calibrate`, `average` and `compare` run; only the command (veracity.cli.verifier) imports it, never a check.
Shared, below the systems: it imports no pipeline.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from .model import Verification, Verifier, load_verifier

if TYPE_CHECKING:
    from ..config import VerifierConfig

__all__ = [
    "Verification",
    "Verifier",
    "evidence_text",
    "get_verifier",
    "load_lexical",
    "load_verifier",
    "uncertain_meaning",
    "uncertain_threshold",
]

FALLBACK_UNCERTAIN_BELOW = 0.6  # a verifier folder without a calibrated threshold (e.g. a full HF model)


def load_lexical(path=None):
    """The lexical baseline's shipped weights (weights/lexical.json) behind the verifier protocol."""
    from ..errors import UserError
    from .lexical import LexicalModel, LexicalVerifier
    from .model import WEIGHTS_DIR

    file = WEIGHTS_DIR / "lexical.json" if path is None else path
    try:
        return LexicalVerifier(LexicalModel.load(file))
    except FileNotFoundError:
        raise UserError(f"no lexical model at {file}; build it with `veracity verifier train`") from None


def get_verifier(settings: VerifierConfig, kind: str = "verifier") -> Verifier:
    """The configured verifier (`kind="verifier"`) or the lexical baseline (`kind="lexical"`)."""
    if kind == "lexical":
        return load_lexical()
    return load_verifier(settings.model, threads=settings.threads, runtime=settings.runtime)


def evidence_text(text: str, source: str = "") -> str:
    """A passage as the verifier reads it: its text, whitespace collapsed. The source's title is not put in front:
    the verifier was trained on bare sentences, and a title prefix measurably flips its readings."""
    return " ".join(text.split())


@lru_cache(maxsize=8)
def verifier_settings(model: str | None) -> dict:
    """The settings (verifier.json) of the configured verifier, read once per process (as the model itself is)
    without loading the model; {} when it has none (a full Hugging Face model folder) or the folder is missing.
    Every check asks for its threshold, so this is not read from disk per check."""
    import json
    from pathlib import Path

    from .model import DEFAULT, WEIGHTS_DIR

    folder = WEIGHTS_DIR if model in (None, "", DEFAULT) else Path(str(model)).expanduser()
    try:
        return json.loads((folder / "verifier.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def uncertain_threshold(settings: VerifierConfig) -> float:
    """The confidence below which a verdict is shown as uncertain: verifier.uncertain_below when set, else the
    configured verifier's own threshold, chosen on held-apart calibration data (verifier.json)."""
    if settings.uncertain_below is not None:
        return settings.uncertain_below
    return float(verifier_settings(settings.model).get("uncertain_below", FALLBACK_UNCERTAIN_BELOW))


def uncertain_meaning(settings: VerifierConfig) -> str:
    """One sentence on what "uncertain" means with these settings, for the CLI, the page and the reports."""
    t = uncertain_threshold(settings)
    if settings.uncertain_below is not None:
        return f"uncertain: confidence below {t:.2f} (verifier.uncertain_below, set in the configuration)"
    rule = verifier_settings(settings.model).get("uncertain_rule")
    if not rule:
        return f"uncertain: confidence below {t:.2f}"
    return (
        f"uncertain: confidence below {t:.2f}; on held-apart calibration data the verifier's verdicts at or above "
        f"it were right {100 * rule['calibration_accuracy_decided']:.0f}% of the time, and "
        f"{100 * rule['calibration_share_decided']:.0f}% of its verdicts reached it"
    )
