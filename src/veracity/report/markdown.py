"""Markdown that renders untrusted text as exactly its words: the pieces every report is made of (a check's, and a
text's: textcheck/report.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

# Markdown safety. Every piece of text a model, a web page, an index document or a user wrote (claim, question,
# answer, evidence, titles, summaries, reasoning, notes, errors) enters the Markdown through `md_text` (or
# `md_code`), which escapes it so that it renders as literal text: no link, image, HTML, heading, list, code
# or emphasis can come from it. Links and images come only from veracity's own structure: links through
# `md_link` (http(s) URLs only), images through `image_md`, and the HTML page embeds only the local images in
# the allow-list built from the result's own image fields (`own_images`); `markdown_to_html` renders no raw
# HTML and drops any other link or image target.

_MD_ESCAPE = re.compile(r"([\\`*_\[\]<>&#|~])")  # everywhere: inline markup, entities, table cells
_MD_BLOCK_START = re.compile(r"^(?:([-+=])|(\d{1,9})([.)]))")  # at the start of a line: list items, setext
HTTP = re.compile(r"https?://", re.I)
_NOT_A_PATH = re.compile(r"(?i)\s*(data|javascript|vbscript|mailto|about|blob):")
_URL_SAFE = "!#$%&'*+,/:;=?@[]~"  # kept as they are in a link's URL (with letters, digits and -._)


def md_text(text: Any) -> str:
    """Untrusted text placed in Markdown: one line that renders as exactly its words (markup escaped)."""
    text = " ".join(str(text).split())
    text = _MD_ESCAPE.sub(r"\\\1", text)
    return _MD_BLOCK_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else f"{m.group(2)}\\{m.group(3)}", text)


def md_piece(text: str) -> str:
    """A stretch of one line placed in Markdown (`md_text`), a space kept at either end where it had one: for text
    put together from pieces (a link between two, a passage marked in a line)."""
    core = md_text(text)
    if not core:
        return " " if text else ""
    return (" " if text[:1].isspace() else "") + core + (" " if text[-1:].isspace() else "")


# a model's Markdown link to an http(s) URL, [label](https://...), its URL allowed one level of parentheses
MD_HTTP_LINK = re.compile(r"\[([^\[\]]{1,300})\]\(\s*<?(https?://[^\s<>()]*(?:\([^\s<>()]*\)[^\s<>()]*)*)>?\s*\)", re.I)


def md_text_links(text: Any) -> str:
    """Untrusted text with the model's Markdown links in it (a justification citing its sources): as `md_text`,
    each link to an http(s) URL kept a link (`md_link`); any other link stays as its escaped text."""
    text = " ".join(str(text).split())
    out, pos = [], 0
    for m in MD_HTTP_LINK.finditer(text):
        out += [md_piece(text[pos : m.start()]), md_link(m[1], m[2])]
        pos = m.end()
    out.append(md_piece(text[pos:]))
    return "".join(out).strip()


def md_strong(text: Any) -> str:
    """Untrusted text in bold (a label); an empty one as *(none)* (`****` would be a horizontal rule)."""
    text = md_text(text)
    return f"**{text}**" if text else "*(none)*"


def md_code(text: Any) -> str:
    """Untrusted text as an inline code span (one line), fenced so that no backtick in it can end the span."""
    text = " ".join(str(text).split())
    if not text:
        return "*(empty)*"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_url(url: Any) -> str | None:
    """An http(s) URL as a Markdown link destination (percent-encoded where Markdown would read it); None for any
    other kind of target (javascript:, file:, data:, a path)."""
    url = str(url or "").strip()
    if not HTTP.match(url):
        return None
    return quote(url, safe=_URL_SAFE, errors="replace").replace("&", "\\&")  # `&`: no entity decoded


def md_link(text: Any, url: Any) -> str:
    """A link to a source: escaped text, linked when `url` is http(s)."""
    dest = md_url(url)
    label = md_text(text) or md_text(url) or "source"
    return f"[{label}]({dest})" if dest else label


def local_path(src: Any) -> str | None:
    """The absolute local path an image reference names (a path or a file:// URL); None for URLs and the rest."""
    if not isinstance(src, str) or not src.strip():
        return None
    src = src.strip()
    if src[:7].lower() == "file://":
        src = unquote(urlsplit(src).path)
    elif "://" in src or _NOT_A_PATH.match(src):  # as `load_image` reads it: a URL, else a path
        return None
    try:
        return str(Path(src).expanduser().resolve())
    except (OSError, RuntimeError, ValueError):
        return None


ImageLink = Callable[[str], "str | None"]


def image_md(src: str, alt: str, image_url: ImageLink | None = None) -> str:
    """An image in Markdown: a remote one by its URL, a local one by its absolute path (or the URL `image_url`
    gives for that path), anything else as text."""
    alt_md = md_text(alt) or "image"
    src = str(src).strip()
    dest = md_url(src)
    if dest:
        return f"![{alt_md}]({dest})"
    if src[:5].lower() == "data:":
        return f"*{alt_md}: inline image*"
    path = local_path(src)
    if path is None:
        return f"*{alt_md}: {md_text(src)}*"
    if image_url is not None:
        dest = md_url(image_url(path) or "")
        if dest:
            return f"![{alt_md}]({dest})"
    return f"![{alt_md}](<{_md_path(path)}>)"


def _md_path(path: str) -> str:
    """A local path as a `<...>` link destination: what Markdown would read in it escaped or percent-encoded
    (`markdown_to_html` decodes it back to match the allow-list)."""
    path = re.sub(r"[\x00-\x1f\x7f%]", lambda m: f"%{ord(m.group(0)):02X}", path)
    return re.sub(r"([<>&\\])", r"\\\1", path)
