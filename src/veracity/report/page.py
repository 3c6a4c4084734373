"""A report as one self-contained HTML page (`markdown_to_html`, `html_page`: styles inline, a Content-Security-Policy
that allows no script, only safe link and image targets), and a report written to a file (`write_report_as`)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from .markdown import HTTP, local_path

_CSS = """
*,*::before,*::after{box-sizing:border-box}html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:48rem;margin:2rem auto;
padding:0 1rem;color:#1d232b;background:#fff;overflow-wrap:anywhere;word-wrap:break-word}
h1{font-size:1.5rem;line-height:1.3}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d5dbe3}
h3{font-size:1.05rem}blockquote{margin:.5rem 0;padding:.4rem .8rem;border-left:4px solid #9fb3c8;
background:#f4f7fa}ul,ol{padding-left:1.25rem}a,code{overflow-wrap:anywhere;word-break:break-word}
pre{max-width:100%;overflow-x:auto;white-space:pre}pre code{overflow-wrap:normal;word-break:normal}
.wide{max-width:100%;overflow-x:auto;margin:.75rem 0;background:linear-gradient(to right,#fff 30%,#fff0) left/2rem 100%
no-repeat local,linear-gradient(to left,#fff 30%,#fff0) right/2rem 100% no-repeat local,radial-gradient(farthest-side at
0 50%,#0004,#0000) left/.8rem 100% no-repeat scroll,radial-gradient(farthest-side at 100% 50%,#0004,#0000) right/.8rem
100% no-repeat scroll}.wide:focus-visible{outline:3px solid #1f6feb}table{border-collapse:collapse}
td,th{border:1px solid #d5dbe3;padding:.25rem .5rem;overflow-wrap:normal;word-break:normal}
td{text-align:right}td:first-child{text-align:left}a{color:#0b5cad}
img{max-width:100%;height:auto;max-height:24rem;object-fit:contain}
@media (max-width:30rem){body{margin:1rem auto;padding:0 .75rem}h1{font-size:1.3rem}}
"""
EMBED_LIMIT = 20_000_000  # local images larger than this stay links (the most `load_image` accepts)
_DATA_IMAGE = re.compile(r"data:image/(?:gif|png|jpeg|webp);", re.I)


def embed_local(path: str) -> str | None:
    """A local image file (one of the report's own, see `own_images`) as a data: URL; None when it is missing,
    too large or not an image."""
    from ..errors import UserError
    from ..image_files import load_image

    try:
        return load_image(path, max_bytes=EMBED_LIMIT).data_url()
    except (UserError, OSError, ValueError):
        return None


def _safe_targets(allowed: set[str], embed: Callable[[str], str | None]) -> Callable[[Any], None]:
    """A markdown-it core rule: links only to http(s) URLs; images only from http(s) URLs, data:image URLs, or
    the allowed local files (embedded by `embed`, else left as their path); every other link or image target
    dropped (its text kept)."""
    from markdown_it.token import Token

    def local(src: str) -> str | None:
        path = unquote(src)
        return path if path in allowed else None

    def rule(state: Any) -> None:
        for block in state.tokens:
            if block.type != "inline" or not block.children:
                continue
            out: list[Any] = []
            dropped_link = False
            for tok in block.children:
                if tok.type == "link_open":
                    dropped_link = not HTTP.match(str(tok.attrGet("href") or ""))
                    if dropped_link:
                        continue
                elif tok.type == "link_close" and dropped_link:
                    dropped_link = False
                    continue
                elif tok.type == "image":
                    src = str(tok.attrGet("src") or "")
                    path = local(src)
                    if path is not None:
                        tok.attrSet("src", embed(path) or src)
                    elif not (HTTP.match(src) or _DATA_IMAGE.match(src)):
                        text = Token("text", "", 0)
                        text.content = "".join(c.content for c in tok.children or [])
                        out.append(text)
                        continue
                out.append(tok)
            block.children = out

    return rule


def _scrolling_tables(md: Any) -> None:
    """Each table in a container that scrolls sideways when the table is wider than the page (a phone), with a
    shadow at the edge that hides more columns (`.wide` in _CSS): the cue that it scrolls. Focusable, so that the
    keyboard scrolls it too."""

    def table_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        return '<div class="wide" role="region" aria-label="Table" tabindex="0">' + renderer.renderToken(
            tokens, idx, options, env
        )

    def table_close(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        return renderer.renderToken(tokens, idx, options, env) + "</div>\n"

    md.add_render_rule("table_open", table_open)
    md.add_render_rule("table_close", table_close)


def report_csp(img_src: str) -> str:
    """A report's Content-Security-Policy: no script, fetch, external style or form; images only from `img_src`."""
    return f"default-src 'none'; style-src 'unsafe-inline'; img-src {img_src}; base-uri 'none'; form-action 'none'"


def html_page(title: str, css: str, body: str, *, img_src: str = "data:") -> str:
    """One self-contained HTML page (every report's): its styles inline, and `report_csp` in a meta tag, so escaped
    text stays inert even if something unescaped slipped through."""
    csp = report_csp(img_src)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{css}</style></head>\n<body>\n{body}</body></html>\n"
    )


def markdown_to_html(
    markdown: str, title: str, images: Iterable[str] = (), embed: Callable[[str], str | None] | None = None
) -> str:
    """A Markdown report as one self-contained HTML page: the allowed local images embedded, remote ones linked.

    `images`: the local image files the page may show (`own_images`: the claim's own and DEFAME's evidence
    images, never a path from text); `embed` (path -> data: URL or URL, None to leave the path) defaults to
    `embed_local`. Raw HTML in the Markdown is escaped, never rendered; links go only to http(s) URLs, and an
    image shows only from an http(s) URL, a data:image URL or an allowed file.
    """
    from markdown_it import MarkdownIt

    allowed = {p for p in (local_path(x) for x in images) if p}
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    md.disable(["html_block", "html_inline"])

    def validate(url: str) -> bool:
        return bool(HTTP.match(url) or _DATA_IMAGE.match(url) or unquote(url) in allowed)

    md.validateLink = validate  # type: ignore[method-assign]
    md.core.ruler.push("veracity_safe_targets", _safe_targets(allowed, embed or embed_local))
    _scrolling_tables(md)
    # remote images stay linked; an own image too large to embed stays a file path
    return html_page(title, _CSS, md.render(markdown), img_src="data: https: http: file: 'self'")


def write_report_as(subject: Any, path: str, html_of: Callable[[Any], str], markdown_of: Callable[[Any], str]) -> None:
    """Write `subject`'s report to `path`: `html_of(subject)` for .html/.htm, else `markdown_of(subject)`; a path
    that cannot be written is a UserError naming it. Shared by a claim's report and a text's (textcheck/report)."""
    from ..errors import UserError

    text = html_of(subject) if Path(path).suffix.lower() in (".html", ".htm") else markdown_of(subject)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot write the report to {path}: {e.strerror}") from None
