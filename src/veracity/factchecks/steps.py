"""The step a check records first when a fact-check store is in use: the published fact-checks of its claim
(factchecks/lookup.py), folded into one view item that every front end shows before the verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..steps import Fold, Step, http_url, step_type

SHOWN_FIELDS = ("claim", "rating", "publisher", "date", "url", "title", "claimant", "probability")


@step_type
@dataclass(kw_only=True)
class PublishedFactChecks(Step):
    kind: ClassVar[str] = "published_factchecks"
    found: bool = False
    summary: str = ""
    matches: list[dict[str, Any]] = field(default_factory=list)

    def fold(self, view: Fold) -> None:
        view.append(
            {
                "kind": "published_factchecks",
                "found": bool(self.found),
                "summary": self.summary,
                "matches": [
                    {**{k: m.get(k) for k in SHOWN_FIELDS if m.get(k) not in (None, "")}, "url": http_url(m.get("url"))}
                    for m in self.matches
                    if isinstance(m, dict)
                ],
            }
        )


def published_by(m: dict[str, Any]) -> str:
    """Who published a fact-check and when, as every front end names it: "PUBLISHER, DATE"."""
    return ", ".join(str(x) for x in (m.get("publisher"), m.get("date")) if x) or "publisher not given"


def match_line(m: dict[str, Any]) -> str:
    """One match as a line: 'RATING - PUBLISHER, DATE: "claim as they worded it" URL (probability P)'."""
    who = published_by(m)
    rating = f"{m['rating']} - " if m.get("rating") else "(no rating given) - "
    where = f" {m['url']}" if m.get("url") else ""
    p = m.get("probability")
    return f'{rating}{who}: "{m.get("claim", "")}"{where}' + (f" (probability {p:.2f})" if p is not None else "")
