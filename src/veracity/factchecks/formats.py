"""The formats fact-checkers publish, read into `FactCheck` records.

- **schema.org ClaimReview** (JSON-LD): one object, a list, an `@graph`, a `DataFeed` of `DataFeedItem`s (as feeds
  collect them), or an HTML fact-check page with the JSON-LD in its `<script type="application/ld+json">` blocks;
  also one object per line (.jsonl).
- **Google Fact Check Tools API** `claims:search` responses (`{"claims": [{"text", "claimant", "claimDate",
  "claimReview": [{"publisher": {"name", "site"}, "url", "title", "reviewDate", "textualRating", "languageCode"}]}]}`):
  one record per review.
- **CSV** with a header row: `claim` (or claim_reviewed, claimReviewed, text) and any of rating (textual_rating,
  verdict), publisher (site), url, date (review_date, date_published), claimant, title, summary (subtitle),
  language, id, appeared (appearance).
- **CheckThat! vclaims**: objects with `vclaim` (and title, subtitle, date, author, vclaim_id or id), one per file,
  per line or in a list; a folder of them too.
- veracity's own records (`veracity factchecks export`), one per line.

A record that cannot be read raises `FormatError` naming the file and the record ("reviews.json, record 3: it has
no claimReviewed"); `read_files` reads every file first, so a bad record stops an import before anything changes.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..reading import read_limited
from .record import FactCheck, clean_field, iso_date

MAX_IMPORT_BYTES = 512_000_000
FORMATS = ("auto", "claimreview", "google", "csv", "checkthat", "veracity")


class FormatError(UserError):
    """A record that cannot be read as a fact-check, named by file and position."""


def read_files(
    paths: Iterable[str | Path], fmt: str = "auto", *, publisher: str = ""
) -> tuple[list[FactCheck], list[str]]:
    """The records of every file (a folder: its .json, .jsonl, .csv and .html files, sorted), and the problems
    found: one line per record that could not be read. `publisher` fills records whose format names none."""
    if fmt not in FORMATS:
        raise UserError(f"unknown fact-check format {fmt!r}: choose one of {', '.join(FORMATS)}")
    records: list[FactCheck] = []
    problems: list[str] = []
    for path in _expand(paths):
        for item in read_file(path, fmt):
            if isinstance(item, FactCheck):
                records.append(item if item.publisher or not publisher else replace(item, publisher=publisher))
            else:
                problems.append(item)
    return records, problems


def read_file(path: Path, fmt: str = "auto") -> Iterator[FactCheck | str]:
    """Each record of one file, or a one-line problem (str) for each record that cannot be read."""
    raw = read_limited(path, MAX_IMPORT_BYTES, "the fact-check file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        yield f"{path.name}: not UTF-8 text (byte {e.start})"
        return
    kind = fmt if fmt != "auto" else _sniff(path, text)
    name = path.name
    if kind == "csv":
        yield from _csv_records(name, text)
        return
    if kind == "html":
        # a page holds other JSON-LD too (breadcrumbs, the publisher): only its ClaimReviews are read
        found = 0
        for n, block in enumerate(_ld_json_blocks(text), start=1):
            try:
                data = json.loads(block)
            except ValueError:
                continue
            if any(k == "claimreview" for _, k in _items(data)):
                for item in _from_json(name, data, fmt, where=f"JSON-LD block {n}, ", only="claimreview"):
                    found += 1
                    yield item
        if not found:
            yield f'{name}: no ClaimReview in the page\'s JSON-LD (<script type="application/ld+json">)'
        return
    stripped = text.strip()
    if not stripped:
        yield f"{name}: the file is empty"
        return
    if kind != "jsonl":  # one JSON value; a file of several lines that is not one is read as JSON lines
        try:
            data = json.loads(stripped)
        except ValueError as e:
            if kind == "json" or "\n" not in stripped:
                yield f"{name}: not JSON ({e})"
                return
        else:
            yield from _from_json(name, data, fmt)
            return
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as e:
            yield f"{name}, line {lineno}: not JSON ({e})"
            continue
        yield from _from_json(name, data, fmt, where=f"line {lineno}, ", single=f"line {lineno}")


# ------------------------------------------------------------------------------------------------ JSON shapes
def read_json_value(name: str, data: Any, fmt: str = "auto") -> Iterator[FactCheck | str]:
    """The records of a JSON value already parsed (an API's response), or a problem line for each bad one."""
    return _from_json(name, data, fmt)


def _from_json(
    name: str, data: Any, fmt: str, *, where: str = "", single: str = "", only: str = ""
) -> Iterator[FactCheck | str]:
    """The records of one JSON value of any supported shape (`only`: of that kind, the rest skipped)."""
    items = [(item, kind) for item, kind in _items(data) if not only or kind == only]
    if not items:
        yield f"{name}: {where}no fact-check found (expected ClaimReview, a claims:search response or vclaims)"
        return
    for n, (item, kind) in enumerate(items, start=1):
        at = f"{name}, {single or where + f'record {n}'}".rstrip(", ")
        if fmt not in ("auto", kind) and not (fmt == "veracity" and kind == "record"):
            yield f"{at}: a {kind} record, not {fmt}"
            continue
        try:
            yield from {"claimreview": _claim_review, "google": _google_claim, "checkthat": _vclaim}.get(
                kind, _own_record
            )(item)
        except (KeyError, TypeError, ValueError) as e:
            yield f"{at}: {e}"


def _items(data: Any) -> Iterator[tuple[Any, str]]:
    """(item, kind) for every fact-check-like object in a JSON value: lists, @graph, DataFeed elements and their
    `item`s are opened; a Google response yields its claims."""
    if isinstance(data, list):
        for x in data:
            yield from _items(x)
        return
    if not isinstance(data, dict):
        yield data, "unknown"
        return
    types = _types(data)
    if "ClaimReview" in types:
        yield data, "claimreview"
    elif "@graph" in data:
        yield from _items(data["@graph"])
    elif "DataFeed" in types or "dataFeedElement" in data:
        yield from _items(data.get("dataFeedElement") or [])
    elif "DataFeedItem" in types:
        yield from _items(data.get("item") or [])
    elif isinstance(data.get("claims"), list):
        for claim in data["claims"]:
            yield claim, "google"
    elif "claimReview" in data and ("text" in data or "claimant" in data):
        yield data, "google"
    elif "vclaim" in data:
        yield data, "checkthat"
    elif "claim" in data:
        yield data, "record"
    elif "claimReviewed" in data or "reviewRating" in data:
        yield data, "claimreview"  # a ClaimReview without its @type
    elif data:
        yield data, "unknown"


def _types(data: dict) -> set[str]:
    t = data.get("@type") or []
    return {str(x).rsplit("/", 1)[-1] for x in (t if isinstance(t, list) else [t])}


def _claim_review(review: dict) -> Iterator[FactCheck]:
    claim = clean_field(review.get("claimReviewed"))
    item = review.get("itemReviewed") if isinstance(review.get("itemReviewed"), dict) else {}
    if not claim:
        claim = clean_field(item.get("name") or item.get("text"))
    if not claim:
        raise ValueError("it has no claimReviewed")
    rating = review.get("reviewRating")
    rating = rating[0] if isinstance(rating, list) and rating else rating
    org = review.get("author") or review.get("publisher")
    org = org[0] if isinstance(org, list) and org else org
    appeared = item.get("firstAppearance") or item.get("appearance")
    appeared = appeared[0] if isinstance(appeared, list) and appeared else appeared
    language = review.get("inLanguage")
    yield FactCheck(
        claim=claim,
        rating=_rating_words(rating),
        publisher=_name_of(org),
        url=clean_field(review.get("url")),
        date=iso_date(clean_field(review.get("datePublished") or review.get("dateCreated"))),
        claimant=_name_of(item.get("author")),
        appeared=_url_of(appeared),
        title=clean_field(review.get("headline") or review.get("name")),
        summary=clean_field(review.get("description")),
        language=_name_of(language) if isinstance(language, dict) else clean_field(language),
        format="claimreview",
    )


def _rating_words(rating: Any) -> str:
    """The rating in the publisher's words: alternateName, else name, else "value/best" (e.g. "1/5")."""
    if not isinstance(rating, dict):
        return clean_field(rating)
    words = clean_field(rating.get("alternateName") or rating.get("name"))
    if words:
        return words
    value, best = clean_field(rating.get("ratingValue")), clean_field(rating.get("bestRating"))
    return f"{value}/{best}" if value and best else value


def _name_of(thing: Any) -> str:
    if isinstance(thing, list):
        return ", ".join(x for x in (_name_of(t) for t in thing) if x)
    if isinstance(thing, dict):
        return clean_field(thing.get("name") or thing.get("alternateName") or thing.get("url"))
    return clean_field(thing)


def _url_of(thing: Any) -> str:
    if isinstance(thing, dict):
        return clean_field(thing.get("url") or thing.get("@id"))
    return clean_field(thing) if isinstance(thing, str) else ""


def _google_claim(claim: dict) -> Iterator[FactCheck]:
    text = clean_field(claim.get("text"))
    if not text:
        raise ValueError("the claim has no text")
    reviews = claim.get("claimReview")
    if not isinstance(reviews, list) or not reviews:
        raise ValueError("the claim has no claimReview")
    for review in reviews:
        if not isinstance(review, dict):
            raise TypeError("a claimReview is not an object")
        publisher = review.get("publisher") or {}
        yield FactCheck(
            claim=text,
            rating=clean_field(review.get("textualRating")),
            publisher=_name_of(publisher) or clean_field(publisher.get("site") if isinstance(publisher, dict) else ""),
            url=clean_field(review.get("url")),
            date=iso_date(clean_field(review.get("reviewDate"))),
            claimant=clean_field(claim.get("claimant")),
            title=clean_field(review.get("title")),
            language=clean_field(review.get("languageCode")),
            format="google",
        )


def _vclaim(data: dict) -> Iterator[FactCheck]:
    claim = clean_field(data.get("vclaim"))
    if not claim:
        raise ValueError("its vclaim is empty")
    yield FactCheck(
        claim=claim,
        title=clean_field(data.get("title")),
        summary=clean_field(data.get("subtitle")),
        date=iso_date(clean_field(data.get("date"))),
        publisher=clean_field(data.get("publisher")),
        url=clean_field(data.get("url")),
        id=clean_field(data.get("vclaim_id") or data.get("id")),
        format="checkthat",
    )


def _own_record(data: Any) -> Iterator[FactCheck]:
    if not isinstance(data, dict):
        raise TypeError(f"a {type(data).__name__}, not a fact-check object")
    if "claim" not in data:
        raise ValueError("not a fact-check (no ClaimReview, claims:search claim, vclaim or claim)")
    yield FactCheck.from_dict({**data, "format": data.get("format") or "veracity"})


# ------------------------------------------------------------------------------------------------ CSV
_CSV_COLUMNS = {
    "claim": ("claim", "claim_reviewed", "claimreviewed", "text", "vclaim"),
    "rating": ("rating", "textual_rating", "textualrating", "verdict", "alternatename"),
    "publisher": ("publisher", "site", "organization", "fact_checker"),
    "url": ("url", "review_url", "link"),
    "date": ("date", "review_date", "date_published", "datepublished", "reviewdate"),
    "claimant": ("claimant", "speaker"),
    "title": ("title", "headline"),
    "summary": ("summary", "subtitle", "description"),
    "language": ("language", "languagecode", "lang"),
    "id": ("id", "vclaim_id"),
    "appeared": ("appeared", "appearance", "first_appearance"),
}


def _csv_records(name: str, text: str) -> Iterator[FactCheck | str]:
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    header = next(reader, None)
    if not header:
        yield f"{name}: the CSV file is empty"
        return
    wanted = {alias: field for field, aliases in _CSV_COLUMNS.items() for alias in aliases}
    columns: dict[str, int] = {}
    for i, h in enumerate(header):
        key = re.sub(r"[\s-]+", "_", h.strip().lower())
        if key in wanted and wanted[key] not in columns:
            columns[wanted[key]] = i
    if "claim" not in columns:
        yield f"{name}: the CSV header ({', '.join(header)[:200]}) has no claim column (claim, claim_reviewed, text)"
        return
    for lineno, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            yield f"{name}, line {lineno}: {len(row)} fields where the header has {len(header)}"
            continue
        values = {f: clean_field(row[i]) for f, i in columns.items()}
        if not values["claim"]:
            yield f"{name}, line {lineno}: the claim is empty"
            continue
        values["date"] = iso_date(values.get("date", ""))
        yield FactCheck(**values, format="csv")


# ------------------------------------------------------------------------------------------------ files
def _expand(paths: Iterable[str | Path]) -> Iterator[Path]:
    for p in paths:
        path = Path(p).expanduser()
        if path.is_dir():
            found = sorted(x for x in path.rglob("*") if x.is_file() and x.suffix.lower() in _SUFFIXES)
            if not found:
                raise UserError(f"no fact-check files (.json, .jsonl, .csv, .html) in the folder {path}")
            yield from found
        elif not path.exists():
            raise UserError(f"no such file: {path}")
        else:
            yield path


_SUFFIXES = (".json", ".jsonl", ".jsonld", ".csv", ".tsv", ".html", ".htm")


def _sniff(path: Path, text: str) -> str:
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".html", ".htm") or text.lstrip()[:200].lower().startswith(("<!doctype", "<html")):
        return "html"
    if suffix == ".jsonl":
        return "jsonl"
    return "json" if suffix in (".json", ".jsonld") else "auto"


_LD_JSON = re.compile(
    r"<script[^>]*type\s*=\s*[\"']application/ld\+json[\"'][^>]*>(.*?)</script>", re.IGNORECASE | re.DOTALL
)


def _ld_json_blocks(page: str) -> list[str]:
    return [m.group(1).strip() for m in _LD_JSON.finditer(page) if m.group(1).strip()]  # script text: no entities
