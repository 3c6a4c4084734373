"""One published fact-check: the claim as its publisher worded it, their rating in their own words, who published
it, when, where, and where the claim appeared. Every import format (formats.py) ends up as these records."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

MAX_FIELD_CHARS = 4000  # a field longer than this is cut (a whole article pasted into a claim field)


@dataclass(frozen=True)
class FactCheck:
    claim: str  # the claim reviewed, as the publisher worded it (required)
    rating: str = ""  # the publisher's rating in its own words ("False", "Mostly true", "Pants on Fire!")
    publisher: str = ""  # "PolitiFact", "Snopes", ...
    url: str = ""  # the fact-check's own address
    date: str = ""  # when the fact-check was published: ISO 8601 (YYYY-MM-DD) where the source's date could be read
    claimant: str = ""  # who made the claim
    appeared: str = ""  # where the claim appeared (an address), when the source says
    title: str = ""  # the fact-check's headline
    summary: str = ""  # its subtitle or summary
    language: str = ""  # its language code, when the source says
    id: str = ""  # the source's own id where it has one (CheckThat! vclaim ids); else derived from url and claim
    format: str = ""  # the format it was imported from (claimreview, google, csv, checkthat, veracity)

    @property
    def key(self) -> str:
        """What makes two records the same fact-check (a later import of it replaces the earlier): the source's own
        id, else its address and the claim (one page can review several claims), else publisher and claim."""
        if self.id:
            return self.id
        basis = f"{self.url or self.publisher}\n{folded(self.claim)}"
        return "fc-" + hashlib.sha1(basis.encode("utf-8")).hexdigest()[:16]

    @property
    def match_text(self) -> str:
        """The text a post is matched against: headline, summary and claim (the CheckThat! fields)."""
        return ". ".join(x for x in (self.title, self.summary, self.claim) if x)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "id": self.key}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FactCheck:
        """A stored record (to_dict's shape); unknown keys are ignored, a record without a claim is refused."""
        names = {f.name for f in fields(cls)}
        values = {k: clean_field(v) for k, v in data.items() if k in names}
        if not values.get("claim"):
            raise ValueError("it has no claim")
        return cls(**values)


def clean_field(value: Any) -> str:
    """A field as text: None -> "", numbers as written, whitespace collapsed, cut at MAX_FIELD_CHARS."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise TypeError(f"expected text, got a {'list' if isinstance(value, list) else 'mapping'}")
    text = " ".join(str(value).split())
    return text[:MAX_FIELD_CHARS]


def folded(text: str) -> str:
    """Lowercase, accents and punctuation dropped: the claim as compared for duplicates."""
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(c for c in text if not unicodedata.combining(c))
    return " ".join(re.findall(r"\w+", text))


_DATE_FORMATS = ("%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%Y/%m/%d", "%m/%d/%Y", "%d.%m.%Y")


def iso_date(text: str) -> str:
    """The date as YYYY-MM-DD where it can be read (ISO 8601 with or without a time, "26 May 2015", "May 26,
    2015", ...); else the text as given (a date is shown, never invented)."""
    text = clean_field(text)
    if not text:
        return ""
    m = re.match(r"(\d{4})-(\d{2})-(\d{2})", text)
    if m:
        return m.group(0)
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    return text
