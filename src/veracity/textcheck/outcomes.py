"""What each claim of a text ends as, and how the outcomes colour the text.

Every claim ends with one outcome (see run.py): supported, refuted, uncertain (checked); ambiguous, not_checkable
(the extractor's flags: not sent); not_checked (a budget left it out); failed (the model backend answered this
claim's check with an error: the other claims are still checked). While a text is being checked, a claim
found but not decided yet is `pending` (the live page only). `marks` cuts the text into the stretches that claims
cover, each with the outcome that colours it: the report's HTML and the page's view both draw these.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

OUTCOMES = ("supported", "refuted", "uncertain", "ambiguous", "not_checkable", "not_checked", "failed")
PENDING = "pending"
LABELS = {"supported": "Supported", "refuted": "Refuted", "uncertain": "Uncertain", "ambiguous": "Ambiguous",
          "not_checkable": "Not checkable", "not_checked": "Not checked", "failed": "Check failed",
          PENDING: "Checking…"}
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
            out_marks.append({"start": pos, "end": end, "claims": ids,
                              "outcome": strongest(outcome[c] for c in ids)})
    return out_marks


def percent(x: float | None) -> str:
    return "n/a (nothing checked)" if x is None else f"{100 * x:.0f}%"


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The summary of a checked text (`TextCheck.summary()`) as (what, how many) rows, with the factuality score."""
    rows = [(LABELS[o], str(summary.get(o, 0))) for o in ("supported", "refuted", "uncertain", "not_checkable",
                                                           "ambiguous")]
    for extra in ("not_checked", "failed"):
        if summary.get(extra):
            rows.append((LABELS[extra], str(summary[extra])))
    rows.append(("Factuality (supported / checked)", percent(summary.get("factuality"))))
    return rows
