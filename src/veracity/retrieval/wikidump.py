"""Reading a Wikipedia dump as Wikimedia publishes it: articles as plain-text documents with their URLs, streamed.

    for position, page_id, document in read_dump("enwiki-20240601-pages-articles-multistream.xml.bz2"):
        ...   # document: None for a page that is no article (another namespace, a redirect, no text)

The `*-pages-articles*.xml.bz2` dumps (and the same XML uncompressed) are read with `mwxml`, one page at a time
(bz2 is decompressed as a stream: multistream dumps too), and each article's wikitext is turned into plain text with
`mwparserfromhell`: only main-namespace pages that are not redirects are kept; templates, references, tables, files,
categories, comments and magic words are dropped, link texts, bold/italic text and section headings (each on its own
line) kept, and the sections that hold no prose (References, External links, See also, Further reading, Notes, ...)
left out. The document's id is the page id, its title the page title, its URL
https://{language}.wikipedia.org/wiki/{Title_with_underscores}; the language comes from the `--language` flag, else
the dump's <dbname> (enwiki: en, zh_yuewiki: zh-yue), else its file name (enwiki-...). Both libraries are the
optional extra `pip install 'veracity[wikidump]'`.

`skip=N` reads past the first N pages without converting them (a resumed build): they are still decompressed and
parsed as XML, which is the cheap part; their wikitext is not. The Wikimedia Enterprise / Hugging Face style JSONL
exports ({"id", "title", "text", "url"} per line) need nothing from here: `load_documents` reads them.

A file that is not a dump, or a dump cut short (a truncated download), raises a one-line `UserError`.
"""

from __future__ import annotations

import bz2
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO
from xml.etree.ElementTree import ParseError

from veracity.errors import UserError
from veracity.retrieval.documents import Document
from veracity.retrieval.knowledge_base import article_url

DUMP_SUFFIXES = (".xml", ".xml.bz2")
EXTRA = "wikidump"
log = logging.getLogger(__name__)
MAIN_NAMESPACE = 0
FILE_NAMESPACE, CATEGORY_NAMESPACE = 6, 14
#: link prefixes of files and categories in every wiki besides the names the dump's siteinfo gives
LINK_PREFIXES_DROPPED = ("file", "image", "media", "category")
#: elements whose contents are no prose: references, tables, galleries, formulas, ...
TAGS_DROPPED = frozenset(
    {
        "ref",
        "references",
        "table",
        "gallery",
        "math",
        "chem",
        "ce",
        "timeline",
        "imagemap",
        "score",
        "graph",
        "templatedata",
        "syntaxhighlight",
        "source",
        "noinclude",
        "includeonly",
        "mapframe",
        "maplink",
        "inputbox",
        "categorytree",
        "hiero",
    }
)
#: sections that hold lists of sources and links rather than prose (English names)
SECTIONS_DROPPED = frozenset(
    {
        "references",
        "external links",
        "see also",
        "further reading",
        "notes",
        "bibliography",
        "sources",
        "citations",
        "footnotes",
        "notes and references",
        "references and notes",
        "works cited",
        "literature",
    }
)
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_EMPTY_PARENS = re.compile(r"\(\s*[,;:]?\s*\)")
_PAREN_LEAD = re.compile(r"\(\s*(?:[,;:]\s*)?")
_SPACES = re.compile(r"[ \t\u00a0]+")
_LINE_START = re.compile(r"^[ \t]*[*#:;]+[ \t]*", re.MULTILINE)
_BLANK_RUN = re.compile(r"\n{3,}")
_AT_END = ("no element found", "unclosed token")  # expat's errors for XML that stops short
_DBNAME = re.compile(r"^([a-z][a-z0-9_]*?)wiki$")
_FILE_LANGUAGE = re.compile(r"^([a-z][a-z0-9_]*?)wiki-")


def is_dump(path: str | Path) -> bool:
    """Whether `path` names a pages-articles XML dump (by its suffix: .xml or .xml.bz2)."""
    return str(path).lower().endswith(DUMP_SUFFIXES)


def read_dump(
    path: str | Path, *, language: str | None = None, skip: int = 0
) -> Iterator[tuple[int, str, Document | None]]:
    """(position, page id, document) for every page of the dump in order, the position counting from 1; the
    document is None for a page that is not an article, and for the first `skip` pages (not converted)."""
    mwxml, _ = _libraries()
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no such dump file: {path}")
    position = 0
    try:
        with _open(path) as f:
            try:
                dump = mwxml.Dump.from_file(f)
            except AssertionError:  # mwxml asserts that the root element is <mediawiki>
                raise UserError(f"{path} is not a MediaWiki XML dump (its root element is not <mediawiki>)") from None
            lang = _language(path, dump.site_info, language)
            dropped = _dropped_prefixes(dump.site_info)
            for page in dump.pages:
                position += 1
                page_id = str(page.id)
                if position <= skip or page.namespace != MAIN_NAMESPACE or page.redirect:
                    yield position, page_id, None
                    continue
                text = _last_text(page)
                plain = _plain_or_skipped(page.title, text, dropped) if text else ""
                document = (
                    Document(
                        id=page_id,
                        title=page.title,
                        text=plain,
                        url=article_url(page.title, lang),
                        metadata={"language": lang, "page_id": page.id},
                    )
                    if plain.strip()
                    else None
                )
                yield position, page_id, document
    except UserError:
        raise
    except (ParseError, EOFError, OSError, ValueError, mwxml.errors.MalformedXML) as e:
        raise _unreadable(path, position, e) from None


#: wikitext longer than this is no article (the longest Wikipedia pages hold about 1 MB): such a page, as a dump
#: built to expand into one huge page makes, is skipped before parsing, which would hold it many times over
MAX_PAGE_CHARS = 10_000_000


def _plain_or_skipped(title: str, text: str, dropped: tuple[str, ...]) -> str:
    """The page's plain text, or "" (the page skipped, with a warning) for one too long to be an article or whose
    markup is nested too deeply for the parser (a thousand nested templates)."""
    if len(text) > MAX_PAGE_CHARS:
        log.warning("skipping page %r: %d characters of wikitext, more than any article has", title, len(text))
        return ""
    try:
        return wikitext_to_plain(text, dropped)
    except RecursionError:
        log.warning("skipping page %r: its markup is nested too deeply to read", title)
        return ""


def wikitext_to_plain(wikitext: str, dropped_prefixes: tuple[str, ...] = LINK_PREFIXES_DROPPED) -> str:
    """The prose of an article's wikitext as plain text: paragraphs separated by blank lines, headings on lines
    of their own, markup gone (see the module's docstring for what is kept and what is dropped)."""
    _, mwparserfromhell = _libraries()
    parts: list[str] = []
    skip_level = 0  # inside a dropped section of this heading level (0: not)
    for node in mwparserfromhell.parse(wikitext).nodes:
        if isinstance(node, mwparserfromhell.nodes.Heading):
            title = _plain_nodes(node.title.nodes, dropped_prefixes, mwparserfromhell).strip()
            if skip_level and node.level > skip_level:
                continue
            skip_level = node.level if title.lower() in SECTIONS_DROPPED else 0
            if not skip_level and title:
                parts.append(f"\n\n{title}\n\n")
            continue
        if not skip_level:
            parts.append(_plain_nodes([node], dropped_prefixes, mwparserfromhell))
    return _tidy("".join(parts))


def _plain_nodes(nodes: Any, dropped: tuple[str, ...], mw: Any) -> str:
    out: list[str] = []
    for node in nodes:
        if isinstance(node, mw.nodes.Text):
            out.append(node.value)
        elif isinstance(node, mw.nodes.Wikilink):
            title = str(node.title).strip().lstrip(":").lower()
            if not title.startswith(dropped):
                inner = node.text if node.text is not None else node.title
                out.append(_plain_nodes(inner.nodes, dropped, mw))
        elif isinstance(node, mw.nodes.Tag):
            name = str(node.tag).strip().lower()
            if name == "br":
                out.append("\n")
            elif name not in TAGS_DROPPED and node.contents is not None and node.wiki_markup != "{|":
                out.append(_plain_nodes(node.contents.nodes, dropped, mw))
        elif isinstance(node, mw.nodes.ExternalLink):
            if node.brackets and node.title is not None:
                out.append(_plain_nodes(node.title.nodes, dropped, mw))
        elif isinstance(node, mw.nodes.HTMLEntity):
            out.append(node.normalize())
        elif isinstance(node, mw.nodes.Heading):  # a heading nested in a tag
            out.append(f"\n\n{_plain_nodes(node.title.nodes, dropped, mw).strip()}\n\n")
        # templates, template arguments and comments are dropped
    return "".join(out)


def _tidy(text: str) -> str:
    """Whitespace and the leftovers of dropped markup: list markers, "( ; born ...)", empty brackets."""
    text = _MAGIC_WORD.sub("", text)
    text = _LINE_START.sub("", text)
    text = _PAREN_LEAD.sub("(", _EMPTY_PARENS.sub("", text))
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_RUN.sub("\n\n", "\n".join(lines)).strip()


def _last_text(page: Any) -> str | None:
    """The wikitext of the page's last revision (a pages-articles dump holds one)."""
    text = None
    for revision in page:
        text = revision.text
    return text


def _dropped_prefixes(site_info: Any) -> tuple[str, ...]:
    names = {name for name in LINK_PREFIXES_DROPPED}
    for namespace in site_info.namespaces or ():
        if namespace.id in (FILE_NAMESPACE, CATEGORY_NAMESPACE) and namespace.name:
            names.add(namespace.name.lower())
    return tuple(f"{name}:" for name in sorted(names))


def _language(path: Path, site_info: Any, given: str | None) -> str:
    if given:
        return given.strip().lower()
    for name, pattern in ((site_info.dbname or "", _DBNAME), (path.name.lower(), _FILE_LANGUAGE)):
        m = pattern.match(name)
        if m:
            return m.group(1).replace("_", "-")
    raise UserError(
        f"cannot tell the language of the dump {path} (no <dbname> like enwiki in it, and its file "
        "name does not start with one): give it with --language, e.g. --language en"
    )


def _open(path: Path) -> BinaryIO:
    if path.name.lower().endswith(".bz2"):
        return bz2.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _unreadable(path: Path, position: int, e: BaseException) -> UserError:
    detail = " ".join(str(e).split(": b'")[0].split())[:160] or type(e).__name__
    if isinstance(e, EOFError) or (position and detail.startswith(_AT_END)):
        return UserError(
            f"the dump {path} ends early, after {position} pages (a truncated or still running download?): {detail}"
        )
    if position == 0:
        return UserError(f"{path} is not a MediaWiki XML dump{' (bz2)' if path.suffix == '.bz2' else ''}: {detail}")
    return UserError(f"cannot read the dump {path} after {position} pages: {detail}")


def _libraries() -> tuple[Any, Any]:
    try:
        import mwparserfromhell
        import mwxml
        import mwxml.errors
    except ImportError:
        raise UserError(
            f"reading Wikipedia dumps needs mwxml and mwparserfromhell: pip install 'veracity[{EXTRA}]'"
        ) from None
    return mwxml, mwparserfromhell
