"""Which search results a fact-check may use: excluded domains, the claim-date cut-off, and dates.

DEFAME (appendix A) drops results from fact-checking sites (they would give the verdict away) and
from sites that block bots (their pages cannot be read), and every result published after the
claim date (the evidence must have existed when the claim was made). The tools apply these rules
the same way for every search provider with `filter_hits`.

Patterns: ``snopes.com`` excludes that host and its subdomains (``www.snopes.com``), not hosts that
merely end with the same letters (``x.com`` does not exclude ``dropbox.com``);
``reuters.com/fact-check`` excludes the paths under that prefix on that host (case-insensitive).

Dates are ISO strings, possibly partial (``2020``, ``2020-05``, ``2020-05-01``); `to_iso_date`
turns what providers and pages write ("Mar 5, 2024", "2 days ago", datetimes) into one of those.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta
from urllib.parse import urlsplit

from ..config import DEFAULT_EXCLUDED  # the DEFAME paper's lists (config.EXCLUDED_FACT_CHECKERS, EXCLUDED_BOT_HOSTILE)
from .base import SearchHit

# --------------------------------------------------------------------------- domains


def _host_and_path(url: str) -> tuple[str, str]:
    """Lower-cased host (no port, no trailing dot) and path of a URL; a scheme-less URL is read as http."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:  # e.g. a bad port or an unbalanced IPv6 bracket
        return "", ""
    return host.rstrip("."), parts.path or "/"


# Web archives wrap the page they keep: web.archive.org/web/20210310031315/https://www.snopes.com/...
_ARCHIVED = re.compile(r"^/(?:web/)?(?:[^/]*/)?(https?://.+)$", re.IGNORECASE)
ARCHIVE_HOSTS = ("web.archive.org", "archive.org", "archive.ph", "archive.today", "archive.is", "archive.li")


def excluded_by(url: str | None, patterns: Iterable[str]) -> str | None:
    """The first pattern that excludes `url`, or None (also for a missing URL).

    A pattern without "/" matches its host and every subdomain of it; a pattern with a path also
    needs the URL's path to start with that path. Both parts are compared case-insensitively. An
    archived copy (web.archive.org, archive.ph, ...) is judged by the URL it keeps.
    """
    if not url:
        return None
    host, path = _host_and_path(url)
    if host in ARCHIVE_HOSTS:
        m = _ARCHIVED.match(urlsplit(url.strip()).path or "")
        if m:
            patterns = list(patterns)
            if inner := excluded_by(m.group(1), patterns):
                return inner
    if not host:
        return None
    path = path.lower()
    for pattern in patterns:
        p_host, slash, p_path = pattern.strip().lower().partition("/")
        p_host = p_host.removeprefix("www.")
        if not p_host or not (host == p_host or host.endswith("." + p_host)):
            continue
        if not slash or path.startswith("/" + p_path):
            return pattern
    return None


# --------------------------------------------------------------------------- dates

_ISO = re.compile(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?=$|[T ]\d)")
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_name) if name})
_MONTHS["sept"] = 9
_MONTH = r"([A-Za-z]{3,9})\.?"
_MONTH_DAY_YEAR = re.compile(rf"^{_MONTH}\s+(\d{{1,2}}),?\s+(\d{{4}})$")  # Mar 5, 2024
_DAY_MONTH_YEAR = re.compile(rf"^(\d{{1,2}})\s+{_MONTH},?\s+(\d{{4}})$")  # 5 Mar 2024
_MONTH_YEAR = re.compile(rf"^{_MONTH}\s+(\d{{4}})$")  # March 2024
_AGO = re.compile(r"^(an?|\d+)\s+(second|minute|min|hour|day|week|month|year)s?\s+ago$")


def to_iso_date(value: object, *, today: date | None = None) -> str | None:
    """An ISO date (``YYYY-MM-DD``, or ``YYYY-MM`` / ``YYYY`` when only that is known), or None.

    Accepts date/datetime objects, ISO dates and datetimes ("2024-03-05T10:00:00Z"), the forms
    Google shows ("Mar 5, 2024", "5 Mar 2024", "March 2024") and relative ages ("2 days ago",
    "an hour ago", "yesterday"), counted back from `today` (default: the current date).
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = " ".join(str(value).split()).strip()
    if not text:
        return None
    m = _ISO.match(text)
    if m:
        return _iso_parts(*(int(g) if g else None for g in m.groups()))
    lowered = text.lower()
    today = today or date.today()
    if lowered in ("today", "just now"):
        return today.isoformat()
    if lowered == "yesterday":
        return (today - timedelta(days=1)).isoformat()
    m = _AGO.match(lowered)
    if m:
        return _ago(today, 1 if m.group(1) in ("a", "an") else int(m.group(1)), m.group(2)).isoformat()
    for pattern, order in ((_MONTH_DAY_YEAR, "mdy"), (_DAY_MONTH_YEAR, "dmy"), (_MONTH_YEAR, "my")):
        m = pattern.match(text)
        if m:
            fields = dict(zip(order, m.groups()))
            month = _MONTHS.get(fields["m"].lower())
            if month is None:
                return None
            return _iso_parts(int(fields["y"]), month, int(fields["d"]) if "d" in fields else None)
    return None


def _iso_parts(year: int, month: int | None, day: int | None) -> str | None:
    """Format a (possibly partial) date; None when it is not a real calendar date."""
    try:
        if day is not None and month is not None:
            return date(year, month, day).isoformat()
        if month is not None:
            return f"{date(year, month, 1):%Y-%m}"
        return f"{year:04d}" if 1 <= year <= 9999 else None
    except ValueError:
        return None


def _ago(today: date, n: int, unit: str) -> date:
    if unit in ("second", "minute", "min", "hour"):
        return today  # the same day, as far as a date can tell
    if unit in ("day", "week"):
        return today - timedelta(days=n * (7 if unit == "week" else 1))
    months = today.year * 12 + today.month - 1 - n * (12 if unit == "year" else 1)
    year, month = divmod(months, 12)
    month += 1
    return date(year, month, min(today.day, calendar.monthrange(year, month)[1]))


def _date_tuple(value: object) -> tuple[int, ...] | None:
    iso = to_iso_date(value)
    return tuple(int(x) for x in iso.split("-")) if iso else None


def published_after(published: object, cutoff: object) -> bool:
    """True only when `published` is certainly later than `cutoff`.

    Both are compared at the precision they share: "2020-05-20" is not after "2020-05" (same
    month), "2020-06" is. An unknown or unreadable date is never after anything.
    """
    a, b = _date_tuple(published), _date_tuple(cutoff)
    if a is None or b is None:
        return False
    n = min(len(a), len(b))
    return a[:n] > b[:n]


def last_day(value: object) -> date | None:
    """The last calendar day a (possibly partial) ISO date can stand for: "2020-05" -> 2020-05-31."""
    parts = _date_tuple(value)
    if parts is None:
        return None
    year = parts[0]
    month = parts[1] if len(parts) > 1 else 12
    day = parts[2] if len(parts) > 2 else calendar.monthrange(year, month)[1]
    return date(year, month, day)


# --------------------------------------------------------------------------- filtering


#: words by which a claim speaks of the present (a figure or a state that changes): an older source may no longer
#: say what holds when the claim was made
PRESENT = re.compile(
    r"\b(current(?:ly)?|now|nowadays|today|latest|still|presently|at present|as of|incumbent|"
    r"these days|this (?:year|month|week))\b",
    re.I,
)
STALE_DAYS = 365  # a source this much older than the claim, on a claim about the present, is possibly stale


STALE = "possibly stale"  # how a stale note begins: DEFAME carries such notes onto the verdict


def stale_note(evidence: Sequence[object], claim: str, claim_date: str | None, *, days: int = STALE_DAYS) -> str | None:
    """The note for results dated more than `days` before the claim date, when the claim speaks of the present
    ("the current", "now", "latest", ...): what they say may have changed. None when there is nothing to say.
    `evidence`: anything with `source` and `date` (an ISO date, possibly partial; undated results are not named)."""
    word = PRESENT.search(claim or "")
    cutoff = last_day(claim_date) if claim_date else None
    if word is None or cutoff is None:
        return None
    old = [e for e in evidence if (d := last_day(getattr(e, "date", None))) is not None and (cutoff - d).days > days]
    if not old:
        return None
    named = ", ".join(f"{getattr(e, 'source', '') or 'a source'} ({e.date})" for e in old)
    verb = "predates" if len(old) == 1 else "predate"
    return (
        f"{STALE}: the claim speaks of the present ({word.group(0)!r}) and {plural(len(old), 'result')} "
        f"{verb} its date {claim_date} by more than {days} days: {named}"
    )


def plural(n: int, word: str) -> str:
    """``1 result``, ``2 results``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def after_claim_note(n: int, cutoff: str, how: str = "") -> str:
    """The note for results dropped because they appeared after the claim date."""
    return f"dropped {plural(n, 'result')} published after the claim date {cutoff}{how}"


def filter_hits(
    hits: Sequence[SearchHit], *, excluded: Iterable[str] = DEFAULT_EXCLUDED, before: str | None = None
) -> tuple[list[SearchHit], list[str]]:
    """Drop hits from excluded domains and hits published after `before` (the claim date).

    Returns the kept hits, in their order, and one note per kind of drop, e.g. "dropped 2 results
    from excluded domains (snopes.com, youtube.com)". Hits with no URL or no date are kept.
    """
    excluded = tuple(excluded)
    kept: list[SearchHit] = []
    matched: list[str] = []  # the pattern of each hit dropped for its domain
    late = 0
    for hit in hits:
        pattern = excluded_by(hit.url, excluded)
        if pattern is not None:
            matched.append(pattern)
        elif before and published_after(hit.date, before):
            late += 1
        else:
            kept.append(hit)
    notes = []
    if matched:
        names = ", ".join(dict.fromkeys(matched))
        notes.append(f"dropped {plural(len(matched), 'result')} from excluded domains ({names})")
    if late:
        notes.append(after_claim_note(late, before or ""))
    return kept, notes
