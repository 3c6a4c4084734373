"""Finding the published fact-checks of a claim: what every front end calls (the CLI, a check, check-text, the API,
MCP, the proxy). One matcher per store is kept loaded; a store changed on disk (a later import) is read again.

`find` gives a `Found`: the matches at or above the re-ranker's threshold, best first ("published fact-checks of this
claim"), and, where asked, the best candidates below it ("related"). Below the threshold it says plainly "no
published fact-check found".
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .matcher import Match, Matcher
from .steps import match_line
from .store import FactCheckStore, default_store_path, is_database, store_folder
from .stores import open_store, store_exists

if TYPE_CHECKING:
    from ..config import Config

NONE_FOUND = "no published fact-check found"
#: what a server (HTTP API, MCP) with no store in use answers a request to match
NO_STORE = "this server has no fact-check store: import published fact-checks with `veracity factchecks import FILE`"
_lock = threading.Lock()
_matchers: dict[str, Any] = {}  # the store's key -> _Kept


@dataclass
class Found:
    query: str
    matches: list[Match]
    related: list[Match] = field(default_factory=list)
    store: str = ""
    store_size: int = 0
    online: int = 0  # fact-checks the online source returned (kept in the store)

    @property
    def summary(self) -> str:
        if not self.matches:
            return f"{NONE_FOUND} (searched {self.store_size} in the store)"
        best = self.matches[0].factcheck
        by = f"{best.publisher} rated it" if best.publisher else "rated"
        more = f" (and {len(self.matches) - 1} more)" if len(self.matches) > 1 else ""
        return (
            f"published fact-check found: {by} {best.rating!r}{more}"
            if best.rating
            else f"published fact-check found{more}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "found": bool(self.matches),
            "summary": self.summary,
            "matches": [m.to_dict() for m in self.matches],
            "related": [m.to_dict() for m in self.related],
            "store": self.store,
            "store_size": self.store_size,
            **({"online": self.online} if self.online else {}),
        }

    def lines(self) -> str:
        """The terminal's lines: each match as "RATING - PUBLISHER, DATE: "claim as they worded it" URL"."""
        lines = [f"Published fact-checks: {self.summary}"]
        lines += [f"  {match_line(m.to_dict())}" for m in self.matches]
        if self.related:
            lines.append("  below the threshold (probably about something else):")
            lines += [f"    {match_line(m.to_dict())}" for m in self.related]
        return "\n".join(lines)


def matcher_for(store: str | Path | None = None) -> Matcher:
    """The loaded matcher of a store (default: the default store), read again when the store changed."""
    key = str(store) if is_database(store) else str(store_folder(store).resolve())
    with _lock:
        kept = _matchers.get(key)
    if kept is not None and kept.store.stamp() == kept.stamp:
        return kept.matcher
    opened = open_store(store)
    fresh = _Kept(opened.stamp(), Matcher(opened))
    with _lock:
        _matchers[key] = fresh
    return fresh.matcher


@dataclass
class _Kept:
    stamp: Any
    matcher: Matcher

    @property
    def store(self) -> FactCheckStore:
        return self.matcher.store


def find(
    text: str,
    *,
    store: str | Path | None = None,
    k: int = 5,
    online: bool = False,
    language: str | None = None,
    related: bool = False,
) -> Found:
    """The published fact-checks of `text` in the store (and, `online`, those the Google Fact Check Tools API finds,
    which are kept in the store first)."""
    fetched = 0
    if online:
        from . import google

        records = google.search(text, language=language)
        fetched = len(records)
        if records:
            open_store(store, create=True).import_records(records)
    matcher = matcher_for(store)
    ranked = matcher.rank(text, k)
    above = [m for m in ranked if m.probability >= matcher.threshold]
    below = [m for m in ranked if m.probability < matcher.threshold] if related else []
    return Found(text, above, below, matcher.store.where, len(matcher.store), fetched)


def store_in_use(config: Config) -> str | None:
    """The store a check consults: `factchecks.store` ("off": none); unset, the default store when one was
    imported. None when there is none."""
    chosen = config.factchecks.store
    if chosen == "off":
        return None
    if chosen:
        return chosen
    return str(default_store_path()) if store_exists() else None


def for_check(text: str, config: Config) -> Found | None:
    """What a check shows first: the published fact-checks of its claim, or None when no store is in use."""
    store = store_in_use(config)
    if store is None:
        return None
    return find(text, store=store, k=config.factchecks.k)


# ------------------------------------------------------------------------------------------------ ratings
_FALSE = re.compile(
    r"^(false|fake|pants on fire!?|incorrect|wrong|not true|untrue|fabricated|hoax|scam|baseless|"
    r"four pinocchios|mostly false|misattributed|fake news|no evidence|unfounded|debunked)\b",
    re.IGNORECASE,
)
_TRUE = re.compile(r"^(true|correct|accurate|mostly true|correct attribution|verified)\b", re.IGNORECASE)


def rating_kind(rating: str) -> str | None:
    """ "refuted" for a rating that says false in so many words, "supported" for one that says true; None for the
    rest (mixed, misleading, outdated, satire, unproven, a number): a setting that lets a match decide a verdict
    reads only clear ratings."""
    words = " ".join(rating.strip().strip(".!").split())
    if _FALSE.match(words):
        return "refuted"
    if _TRUE.match(words):
        return "supported"
    return None
