"""A text to extract claims from, wherever it is: a file (.txt, .md, .html/.htm, .pdf), standard input ("-"),
or a URL (fetched by the guarded scraper: public addresses only, size limit, timeouts).

Every reader stops at the size limit while reading (`reading.read_limited`), and the text then passes the one
input rule for texts (`inputs.clean_text_input`: empty, binary, too long). HTML and PDF are turned into their
text (trafilatura and pypdf, the extractors the index builder and the scraper use); spans index that text.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import UserError
from ..inputs import MAX_TEXT_BYTES, clean_text_input
from ..reading import read_limited

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
TEXT_FILE_TYPES = (".txt", ".md", ".html", ".htm", ".pdf")  # what a front end offers to upload


@dataclass
class Source:
    text: str
    origin: str  # the path, the URL or "standard input"
    kind: str  # text | html | pdf | url
    title: str = ""
    note: str = ""  # e.g. the page text was cut at the limit


def _kind(name: str, data: bytes) -> str:
    if data[:5] == b"%PDF-" or name.lower().endswith(".pdf"):
        return "pdf"
    head = data[:512].lstrip().lower()
    if name.lower().endswith(HTML_SUFFIXES) or head.startswith((b"<!doctype html", b"<html")):
        return "html"
    return "text"


def text_of(data: bytes, name: str, *, max_bytes: int = MAX_TEXT_BYTES) -> Source:
    """The text of a document's bytes (its kind from its first bytes or its name)."""
    kind = _kind(name, data)
    what = "standard input" if name == "-" else f"file {name}"
    title = ""
    if kind == "pdf":
        try:
            from pypdf import PdfReader

            reader = PdfReader(io.BytesIO(data))
            text = "\n\n".join(p.strip() for p in ((page.extract_text() or "") for page in reader.pages) if p.strip())
        except Exception as e:  # pypdf raises many kinds of errors on damaged files
            raise UserError(f"cannot read the PDF {what}: {type(e).__name__}: {e}".split("\n")[0]) from None
        if not text.strip():
            raise UserError(f"the PDF {what} has no text layer (scanned pages?): nothing to check")
    elif kind == "html":
        from ..retrieval.file_text import html_title_and_text

        html = clean_text_input(data, max_bytes, what=what)
        title, text = html_title_and_text(html)
        if not text.strip():
            raise UserError(f"the HTML {what} has no visible text: nothing to check")
    else:
        text = data  # type: ignore[assignment]
    return Source(clean_text_input(text, max_bytes, what=what), "standard input" if name == "-" else name, kind, title)


def read_source(
    ref: str,
    *,
    stdin: BinaryIO | None = None,
    allow_private: bool = False,
    max_bytes: int = MAX_TEXT_BYTES,
    timeout: float = 15.0,
) -> Source:
    """The text at `ref`: "-" (standard input), an http(s) URL, or a file path."""
    if ref == "-":
        return text_of(read_limited(stdin or sys.stdin.buffer, max_bytes, "the text on"), "-", max_bytes=max_bytes)
    if ref.lower().startswith(("http://", "https://")):
        return fetch_url(ref, allow_private=allow_private, max_bytes=max_bytes, timeout=timeout)
    if not Path(ref).exists() and "://" in ref:
        raise UserError(f"cannot read {ref}: only http:// and https:// URLs are fetched")
    return text_of(read_limited(ref, max_bytes, "the text file"), ref, max_bytes=max_bytes)


def fetch_url(
    url: str, *, allow_private: bool = False, max_bytes: int = MAX_TEXT_BYTES, timeout: float = 15.0
) -> Source:
    """A web page's main text through the guarded scraper; a page that fails to load is a one-line UserError."""
    from ..web.scrape import ScrapeError, Scraper

    try:
        with Scraper(allow_private=allow_private, max_bytes=max_bytes, max_chars=max_bytes, timeout=timeout) as scraper:
            page = scraper.fetch(url)
    except ScrapeError as e:
        raise UserError(str(e)) from None
    if not page.text.strip():
        raise UserError(f"the page {url} has no text to check")
    note = "the page text was cut at the size limit" if page.truncated else ""
    return Source(clean_text_input(page.text, max_bytes, what=f"page {url}"), url, "url", page.title, note)
