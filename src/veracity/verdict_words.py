"""How a verdict is worded for a reader: the one rule every front end follows (the page's badge and history, the
reports, the CLI, the JSON, the MCP tools' text, the proxy's units), so that the wording cannot drift apart.

A decided verdict reads as its label ("Supported"). An uncertain one (its confidence below the threshold, resting on
the model's memory only, or uncertain for the pipeline's own reason: `check.settle_uncertainty`) never reads as a
decided one: "Uncertain, leaning Supported", in the uncertain colour. A label that decides nothing itself ("Not
Enough Information", "Unverified") is not "leaning" anywhere: "Uncertain (Not Enough Information)". The label itself
is kept unchanged beside the wording (JSON's `label`), for the clients that read it.

    w = verdict_words("Supported", uncertain=True, confidence=0.5)
    w.text  -> "Uncertain, leaning Supported"
    w.line  -> "Uncertain, leaning Supported (confidence 0.50)"
    w.tone  -> "uncertain"  (the page's colour: supported, refuted, uncertain or other)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["UNCERTAIN", "VerdictWords", "verdict_words", "words_of"]

UNCERTAIN = "Uncertain"
#: labels that decide nothing themselves (lower case): an uncertain verdict with one does not "lean" to it
UNDECIDED_LABELS = frozenset(
    {"unverified", "not enough information", "not enough info", "not enough evidence", "nei", "uncertain"}
)
_TONES = {"supported": "supported", "refuted": "refuted"}


@dataclass(frozen=True)
class VerdictWords:
    text: str  # what a reader reads first: "Supported", "Uncertain, leaning Supported"
    line: str  # the same with its confidence, when known: "Uncertain, leaning Supported (confidence 0.50)"
    decided: bool  # False for an uncertain verdict (and for one without a label)
    tone: str  # supported | refuted | uncertain | other: the colour a page gives it

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "line": self.line, "decided": self.decided, "tone": self.tone}


def verdict_words(label: str | None, *, uncertain: bool = False, confidence: float | None = None) -> VerdictWords:
    """The verdict `label` worded for a reader (see the module doc); `confidence` goes into `line` only."""
    name = " ".join(str(label or "").split())
    conf = (
        f" (confidence {confidence:.2f})"
        if isinstance(confidence, (int, float)) and not isinstance(confidence, bool)
        else ""
    )
    if not name:
        text = f"{UNCERTAIN} (no verdict)" if uncertain else "No verdict"
        return VerdictWords(text, text + conf, False, "uncertain" if uncertain else "other")
    if not uncertain:
        return VerdictWords(name, name + conf, True, _TONES.get(name.lower(), "other"))
    if name.lower() in UNDECIDED_LABELS:
        text = UNCERTAIN if name.lower() == "uncertain" else f"{UNCERTAIN} ({name})"
    else:
        text = f"{UNCERTAIN}, leaning {name}"
    return VerdictWords(text, text + conf, False, "uncertain")


def words_of(verdict: Any) -> VerdictWords:
    """`verdict_words` of a verdict: a `types.Verdict`, or its dict (as stored, as the API returns it), or None."""
    if verdict is None:
        return verdict_words(None)
    get = verdict.get if isinstance(verdict, Mapping) else (lambda k, d=None: getattr(verdict, k, d))
    confidence = get("confidence")
    return verdict_words(
        get("label"),
        uncertain=bool(get("uncertain", False)),
        confidence=confidence if isinstance(confidence, (int, float)) else None,
    )
