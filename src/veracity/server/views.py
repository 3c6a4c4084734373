"""What the pages show of a run: the view items of its steps, folded once (`veracity.steps`).

`run_view` folds a stored run's steps into the items the templates draw (templates/steps.html) and its model
calls (the calls table); `LiveView` folds them one at a time as the SSE stream sends them, so that each `step`
event comes with a `view` event carrying the items that step added or changed, already folded: static/live.js
only draws them, with the same markup as templates/steps.html. What each kind of item holds is said in
`veracity.steps` and in each system's `steps` module. Kinds the page has no markup of its own for show as
generic items (their stage and data), so nothing is hidden.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from ..evidence import steps as _recheck_steps  # noqa: F401  (registers a recheck's step types)
from ..registry import load_step_types
from ..steps import MEMORY_SOURCE, Fold, ViewItem, http_url, link_parts
from ..textcheck import steps as _text_steps  # noqa: F401  (registers a checked text's step types)

__all__ = [
    "EXAMPLES",
    "LiveView",
    "http_url",
    "human_time",
    "iso",
    "label_class",
    "link_parts",
    "plain_refs",
    "run_view",
    "source_of",
]

EXAMPLES = [
    "Lars Onsager won the Nobel prize when he was 30 years old.",  # the QACheck paper's demo claim
    "The Eiffel Tower was finished before the Statue of Liberty was dedicated.",
    "Marie Curie won Nobel Prizes in two different sciences.",
    "The director of Inception was born in London.",
    "The Danube flows through more countries than any other river.",
]


def run_view(
    steps: Iterable[Mapping[str, Any]], *, stopped: bool = False
) -> tuple[list[ViewItem], list[dict[str, Any]]]:
    """A run's view items and its model calls, from its steps as stored. `stopped`: the run ended before it finished
    (interrupted, failed): what it had not yet decided is shown as not checked, never as still being checked."""
    load_step_types()
    fold = Fold().add_all(steps)
    if stopped:
        from ..textcheck.steps import settle_pending

        settle_pending(fold.items)
    return fold.items, fold.model_calls


class LiveView:
    """A run's steps folded one at a time, as a stream sends them."""

    def __init__(self) -> None:
        load_step_types()
        self.fold = Fold()

    def add(self, step: Mapping[str, Any]) -> dict[str, Any]:
        """The `view` event of one more step: the items it added or changed (by index), what the run is doing
        now, and how many model calls it made so far."""
        changed = self.fold.add(step)
        return {
            "items": [{"index": i, "item": self.fold.items[i]} for i in changed],
            "status": self.fold.status,
            "calls": self.fold.calls,
        }


def _moment(ts: Any) -> datetime | None:
    """A stored timestamp as a time, or None (not set, or not a time: a damaged row still reads)."""
    if not ts or not isinstance(ts, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(ts, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def iso(ts: float | None) -> str | None:
    t = _moment(ts)
    return t.isoformat(timespec="seconds") if t else None


def human_time(ts: float | None) -> str:
    t = _moment(ts)
    return t.strftime("%Y-%m-%d %H:%M UTC") if t else ""


def label_class(label: str | None) -> str:
    return {"Supported": "supported", "Refuted": "refuted"}.get(label or "", "other")


def plain_refs(text: Any) -> str:
    """A claim image as the model's tools name it (`<image:1>`), in words: "image 1" (static/items.js: plainRefs)."""
    return re.sub(r"<image:(\d+)>", r"image \1", str(text or ""))


def source_of(e: dict[str, Any]) -> str:
    if e.get("memory"):
        return MEMORY_SOURCE
    src = e.get("source") or "evidence"
    if e.get("doc_id") and not e.get("url") and e["doc_id"] != src:  # a given text's name is its id: once
        src = f"{src} ({e['doc_id']})"
    return src
