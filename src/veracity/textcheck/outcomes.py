"""What each claim of a text ends as, and how the outcomes colour the text.

Every claim ends with one outcome (see run.py): supported, refuted, uncertain (checked); ambiguous, not_checkable
(the extractor's flags: not sent); not_checked (a budget left it out); failed (the model backend answered this
claim's check with an error: the other claims are still checked). While a text is being checked, a claim
found but not decided yet is `pending` (the live page only). `marks` cuts the text into the stretches that claims
cover, each with the outcome that colours it: the report's HTML and the page's view both draw these.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ..verdict_words import verdict_words

OUTCOMES = ("supported", "refuted", "uncertain", "ambiguous", "not_checkable", "not_checked", "failed")
PENDING = "pending"
LABELS = {
    "supported": "Supported",
    "refuted": "Refuted",
    "uncertain": "Uncertain",
    "ambiguous": "Ambiguous",
    "not_checkable": "Not checkable",
    "not_checked": "Not checked",
    "failed": "Check failed",
    PENDING: "Checking…",
}
#: which outcome colours a stretch of text that several claims cover: the one that most needs a look
PRIORITY = ("refuted", "uncertain", "ambiguous", "failed", PENDING, "supported", "not_checked", "not_checkable")

Span = tuple[int, int]


def strongest(outcomes: Iterable[str]) -> str:
    """The outcome a stretch covered by claims with these outcomes is coloured by."""
    return min(outcomes, key=lambda o: PRIORITY.index(o) if o in PRIORITY else len(PRIORITY))


def marks(claims: Iterable[tuple[int, Iterable[Span], str]]) -> list[dict[str, Any]]:
    """The stretches of a text that claims cover, from (claim id, spans, outcome) of each claim: in text order and
    not overlapping, each {"start", "end", "claims": [ids, in order], "outcome"} (`strongest` of its claims').
    A sweep over the span ends: O(n log n) in the spans, however long the text."""
    outcome: dict[int, str] = {}
    edges: list[tuple[int, int, int]] = []  # (position, +1 start / -1 end, claim id)
    for cid, spans, out in claims:
        outcome[cid] = out
        for s, e in spans:
            if e > s:
                edges += [(s, 1, cid), (e, -1, cid)]
    edges.sort()
    active: Counter[int] = Counter()
    out_marks: list[dict[str, Any]] = []
    i = 0
    while i < len(edges):
        pos = edges[i][0]
        while i < len(edges) and edges[i][0] == pos:
            _, step, cid = edges[i]
            active[cid] += step
            if not active[cid]:
                del active[cid]
            i += 1
        if not active or i == len(edges):
            continue
        end = edges[i][0]
        ids = sorted(active)
        last = out_marks[-1] if out_marks else None
        if last is not None and last["end"] == pos and last["claims"] == ids:
            last["end"] = end
        else:
            out_marks.append({"start": pos, "end": end, "claims": ids, "outcome": strongest(outcome[c] for c in ids)})
    return out_marks


def outcome_words(outcome: str, label: str | None) -> str:
    """A claim's outcome as a reader reads it: an uncertain claim worded as every uncertain verdict is
    (`verdict_words`: "Uncertain, leaning Supported"), the others by their outcome ("Supported", "Ambiguous")."""
    if outcome == "uncertain" and label:
        return verdict_words(label, uncertain=True).text
    return LABELS.get(outcome, outcome)


def _count(summary: Mapping[str, Any], key: str) -> int:
    n = summary.get(key, 0)
    return n if isinstance(n, int) and not isinstance(n, bool) else 0


def factuality_of(summary: Mapping[str, Any]) -> tuple[float | None, int, int]:
    """(factuality, decided, checked) of a checked text's summary: the share of supported claims among the decided
    ones (supported or refuted; an uncertain claim decides nothing, so it counts neither way), None when no claim
    was decided. From the counts, so that a summary stored by an older version reads the same way."""
    supported, refuted = _count(summary, "supported"), _count(summary, "refuted")
    decided = supported + refuted
    checked = max(_count(summary, "checked"), decided + _count(summary, "uncertain"))
    return (supported / decided if decided else None), decided, checked


def factuality_words(summary: Mapping[str, Any]) -> str:
    """The factuality of a checked text in words, over its decided claims only and with their count: "67% (2 of
    3 decided claims supported)"; "not determined: none of the 3 checked claims was decided (3 uncertain)" (never
    "0%", which reads as "all false"); "n/a (nothing checked)"."""
    factuality, decided, checked = factuality_of(summary)
    if not checked:
        return "n/a (nothing checked)"
    uncertain = checked - decided
    if factuality is None:
        return (
            f"not determined: none of the {checked} checked claim{'s' if checked != 1 else ''} was decided "
            f"({uncertain} uncertain)"
        )
    left = f"; {uncertain} uncertain, not counted" if uncertain else ""
    return (
        f"{100 * factuality:.0f}% ({_count(summary, 'supported')} of {decided} decided claim"
        f"{'s' if decided != 1 else ''} supported{left})"
    )


def factuality_label(summary: Mapping[str, Any]) -> str | None:
    """The factuality as a checked text's one-line verdict: "Factuality 67%" when every checked claim was decided,
    "Factuality 50% (2 of 3 claims decided)" when some were not, "Factuality not determined (0 of 3 claims
    decided)" when none was; None when nothing was checked."""
    factuality, decided, checked = factuality_of(summary)
    if not checked:
        return None
    if factuality is None:
        return f"Factuality not determined (0 of {checked} claims decided)"
    return f"Factuality {100 * factuality:.0f}%" + (
        f" ({decided} of {checked} claims decided)" if decided < checked else ""
    )


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The summary of a checked text (`TextCheck.summary()`) as (what, how many) rows, with the factuality score."""
    rows = [
        (LABELS[o], str(summary.get(o, 0))) for o in ("supported", "refuted", "uncertain", "not_checkable", "ambiguous")
    ]
    for extra in ("not_checked", "failed"):
        if summary.get(extra):
            rows.append((LABELS[extra], str(summary[extra])))
    rows.append(("Factuality (supported / decided)", factuality_words(summary)))
    return rows
