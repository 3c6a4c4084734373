"""The trained evidence verifier: a claim (or an answer sentence) against evidence passages -> calibrated
probabilities of supported / refuted / not enough information, and the passage that decided it.

- `model.py`: the verifier (a MiniLM cross-encoder shipped in `weights/`), the `Verifier` protocol, `Verification`.
- `lexical.py`: the word-overlap baseline behind the same protocol.
- `data.py`, `synthetic.py`, `train.py`: the training data (../shared/training) and `veracity verifier train`.
- `commands.py`: the `veracity verifier` subcommands.
Shared, below the systems: it imports no pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Verification, Verifier, load_verifier

if TYPE_CHECKING:
    from ..config import VerifierConfig

__all__ = ["Verification", "Verifier", "evidence_text", "get_verifier", "load_lexical", "load_verifier"]


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


def get_verifier(settings: "VerifierConfig", kind: str = "verifier") -> Verifier:
    """The configured verifier (`kind="verifier"`) or the lexical baseline (`kind="lexical"`)."""
    if kind == "lexical":
        return load_lexical()
    return load_verifier(settings.model, threads=settings.threads)


def evidence_text(text: str, source: str = "") -> str:
    """A passage as the verifier reads it: its text, whitespace collapsed. The source's title is not put in front:
    the verifier was trained on bare sentences, and a title prefix measurably flips its readings."""
    return " ".join(text.split())
