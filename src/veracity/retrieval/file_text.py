"""What text and title a file's contents hold: an HTML page's main text (trafilatura, else every visible line) and
its <title>, a Markdown file's first heading and its text without heading marks, a plain text file's title line.
Shared by index building (documents.py), page fetching (web/scrape.py) and text checks (claims/sources.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any


class PlainHTML(HTMLParser):
    """Collects the <title> and the visible text of an HTML page (the fallback extractor)."""

    _SKIP = {"script", "style", "noscript", "template", "head"}
    _BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.parts: list[str] = []
        self._stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "body":
            self._stack.clear()  # tolerate a <head> that is never closed
        if tag in self._BLOCKS:
            self.parts.append("\n\n")
        if tag in self._SKIP or tag == "title":
            self._stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._stack and self._stack[-1] == tag:
            self._stack.pop()
        if tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._stack and self._stack[-1] == "title":
            self.title += data
        elif not self._stack:
            self.parts.append(data)

    @property
    def text(self) -> str:
        paragraphs = (" ".join(p.split()) for p in "".join(self.parts).split("\n\n"))
        return "\n\n".join(p for p in paragraphs if p)


def html_title_and_text(html: str) -> tuple[str, str]:
    """Main text via trafilatura, falling back to all visible text when it finds none."""
    import trafilatura

    plain = PlainHTML()
    plain.feed(html)
    plain.close()
    text = trafilatura.extract(html, include_comments=False, include_tables=True) or ""
    return " ".join(plain.title.split()), text.strip() or plain.text


_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
_TITLE_LINE = re.compile(r"^[^\n]{1,80}$")


def plain_title_and_text(text: str, suffix: str) -> tuple[str, str]:
    """A text file's title and text. Markdown: its first heading is the title, and headings read as plain lines
    ("# Hedda Lund" -> "Hedda Lund"), never with their "#" in a quote. Plain text: a short first line that ends no
    sentence is the title ("" otherwise: the file's name stands in, its "_" and "-" as spaces)."""
    if suffix in (".md", ".markdown"):
        first = _MD_HEADING.search(text)
        return (first.group(2).strip() if first else ""), _MD_HEADING.sub(lambda m: m.group(2), text)
    line = text.lstrip().split("\n", 1)[0].strip()
    if _TITLE_LINE.match(line) and "\n" in text.strip() and not line.endswith((".", "!", "?", ":", ";", ",")):
        return line, text
    return "", text
