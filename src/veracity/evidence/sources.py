"""Reading a run's sources again (`Sources`: through the paths a check reads them by, each source once), and one
evidence item compared with what its source reads now (`check_item`: unchanged, changed, gone, unreachable, refused,
or not re-checkable; the statuses are evidence/recheck.py's module doc)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..quotes import aligned_span, locate, short_diff, utc_now
from ..steps import MEMORY_SOURCE
from .steps import CHANGED, GONE, NOT_RECHECKABLE, REFUSED, UNCHANGED, UNREACHABLE
from .stored import is_memory

if TYPE_CHECKING:
    from ..retrieval.index import Index
    from ..retrieval.pg_index import PgIndex
    from ..retrieval.sharded import ShardedIndex
    from ..web.wikipedia import ArticleRef

MAX_FETCHES = 4  # pages read at once


@dataclass
class Read:
    """A source read again: its text and hash, or the status and reason why it could not be read."""

    text: str | None = None
    sha256: str | None = None
    status: str | None = None
    reason: str = ""
    at: str = ""


class Sources:
    """Reads sources again through the paths a check reads them by, each source once."""

    def __init__(
        self, *, allow_private: bool = False, timeout: float = 15.0, indexes: Iterable[str | None] = ()
    ) -> None:
        self.allow_private = allow_private
        self.timeout = timeout
        #: index specs given to this recheck (--index): a PostgreSQL index's evidence names it without its password
        self.known_indexes = [i for i in indexes if i]
        self._pages: dict[str, Read] = {}
        self._indexes: dict[str, Index | ShardedIndex | Read] = {}
        self._articles: dict[ArticleRef, Read] = {}

    def fetch_all(self, urls: Iterable[str]) -> None:
        """Read these pages (a few at once), so that `page` finds them."""
        todo = [u for u in dict.fromkeys(urls) if u not in self._pages]
        if not todo:
            return
        from ..web.scrape import Scraper

        with Scraper(timeout=self.timeout, allow_private=self.allow_private) as scraper:
            with ThreadPoolExecutor(max_workers=min(MAX_FETCHES, len(todo))) as pool:
                for url, read in zip(todo, pool.map(lambda u: _fetch(scraper, u), todo)):
                    self._pages[url] = read

    def page(self, url: str) -> Read:
        self.fetch_all([url])
        return self._pages[url]

    def read_articles(self, refs: Iterable[ArticleRef]) -> None:
        """Ask each Wikipedia API again for these articles' extracts (lead sections in one request per API, whole
        articles one by one), so that `article` finds them."""
        from ..web.base import SearchError
        from ..web.scrape import REFUSED as REFUSED_VERB
        from ..web.scrape import ScrapeError, check_url
        from ..web.wikipedia import WikipediaSearch

        by_api: dict[tuple[str, str], list[ArticleRef]] = {}
        for ref in dict.fromkeys(refs):
            if ref not in self._articles:
                by_api.setdefault((ref.api, ref.language), []).append(ref)
        for (api, language), todo in by_api.items():
            at = utc_now()
            try:
                check_url(api, allow_private=self.allow_private)
            except ScrapeError as e:
                status = REFUSED if e.verb == REFUSED_VERB else UNREACHABLE
                read = Read(
                    status=status,
                    reason=f"the Wikipedia API was not asked: {e.reason}"
                    if status == REFUSED
                    else f"the Wikipedia API could not be reached ({e.reason})",
                    at=at,
                )
                self._articles.update((ref, read) for ref in todo)
                continue
            with WikipediaSearch(language, base_url=api, timeout=self.timeout) as wiki:
                for intro in (True, False):
                    kind = [ref for ref in todo if ref.intro == intro]
                    if not kind:
                        continue
                    try:
                        found = wiki.articles([ref.pageid for ref in kind], intro=intro)
                    except SearchError as e:
                        self._articles.update(
                            (ref, Read(status=UNREACHABLE, reason=f"the article could not be read ({e})", at=at))
                            for ref in kind
                        )
                        continue
                    for ref in kind:
                        article = found.get(ref.pageid)
                        self._articles[ref] = (
                            Read(text=article.text, sha256=article.sha256, at=article.retrieved_at)
                            if article
                            else Read(
                                status=GONE, reason=f"the article (page id {ref.pageid}) is no longer on {api}", at=at
                            )
                        )

    def article(self, ref: ArticleRef) -> Read:
        self.read_articles([ref])
        return self._articles[ref]

    def document(self, index_path: str, doc_id: str) -> Read:
        index = self._index(index_path)
        if isinstance(index, Read):
            return index
        found = index.document(doc_id)
        at = utc_now()  # read again now, from the index (its build time is the evidence's own "indexed" date)
        if found is None:
            return Read(status=GONE, reason=f"document {doc_id!r} is no longer in the index {index_path}", at=at)
        text, digest = found
        return Read(text=text, sha256=digest, at=at)

    def _index(self, path: str) -> Index | ShardedIndex | PgIndex | Read:
        if path not in self._indexes:
            from ..errors import IndexError_, UserError
            from ..retrieval.pg_index import is_pg_spec, resolve_shown
            from ..retrieval.sharded import open_index

            if is_pg_spec(path):
                try:
                    self._indexes[path] = open_index(resolve_shown(path, self.known_indexes))
                except (IndexError_, UserError) as e:
                    gone = str(e).startswith("no index ")
                    self._indexes[path] = Read(
                        status=GONE if gone else UNREACHABLE,
                        reason=(f"the index {path} is gone" if gone else f"the index cannot be read: {e}"),
                        at=utc_now(),
                    )
            elif not Path(path).exists():
                self._indexes[path] = Read(status=GONE, reason=f"the index {path} is gone", at=utc_now())
            else:
                try:
                    self._indexes[path] = open_index(path)
                except (IndexError_, UserError, OSError) as e:
                    self._indexes[path] = Read(
                        status=UNREACHABLE, reason=f"the index cannot be read: {e}", at=utc_now()
                    )
        return self._indexes[path]


def _fetch(scraper: Any, url: str) -> Read:
    from ..quotes import sha256_text
    from ..web.scrape import REFUSED as REFUSED_VERB
    from ..web.scrape import ScrapeError

    at = utc_now()
    try:
        page = scraper.fetch(url)
    except ScrapeError as e:
        if e.verb == REFUSED_VERB:
            return Read(status=REFUSED, reason=f"not fetched: {e.reason}", at=at)
        if e.reason.startswith(("HTTP 404", "HTTP 410")):
            return Read(status=GONE, reason=f"the page is gone ({e.reason})", at=at)
        return Read(status=UNREACHABLE, reason=f"the page could not be read ({e.reason})", at=at)
    return Read(text=page.text, sha256=sha256_text(page.text), at=page.fetched_at or at)


def index_of(e: Mapping[str, Any]) -> str | None:
    how = e.get("found_by")
    return how.get("index") if isinstance(how, Mapping) and isinstance(how.get("index"), str) else None


def article_of(e: Mapping[str, Any]) -> ArticleRef | None:
    """The Wikipedia article a record quotes (its found_by names the API and the page), else None."""
    from ..web.wikipedia import ArticleRef

    return ArticleRef.of(e.get("found_by"))


def not_recheckable(e: Mapping[str, Any]) -> str | None:
    """Why an item cannot be checked again (None: it can)."""
    if is_memory(e):
        return f"{MEMORY_SOURCE}: there is no source to read again"
    if not e.get("source_sha256"):
        if not e.get("url") and not e.get("doc_id"):
            return "it names no source to read again"
        return (
            "it was stored without a hash of its source text (by an older veracity, or it is a search "
            "provider's snippet): there is nothing to compare the source with; kept as it was"
        )
    how = e.get("found_by") if isinstance(e.get("found_by"), Mapping) else {}
    if e.get("doc_id") and not index_of(e) and how.get("retriever"):
        return "its index was built in memory and not saved: there is nothing to look it up in"
    if not index_of(e) and not e.get("url"):
        return "it names no page or index to read again"
    return None


def check_item(e: Mapping[str, Any], sources: Sources) -> tuple[str, str, str | None, str, str]:
    """(status, reason, the quote as it reads now, diff, when it was read again) of one stored evidence record."""
    why = not_recheckable(e)
    if why:
        return NOT_RECHECKABLE, why, None, "", ""
    index, article = index_of(e), article_of(e)
    read = (
        sources.article(article)
        if article
        else sources.document(index, str(e.get("doc_id")))
        if index
        else sources.page(str(e["url"]))
    )
    if read.status:
        return read.status, read.reason, None, "", read.at
    quote, start, end = str(e.get("text") or ""), e.get("quote_start"), e.get("quote_end")
    text = read.text or ""
    if read.sha256 and read.sha256 == e.get("source_sha256"):
        return UNCHANGED, "the source reads the same (same SHA-256)", quote, "", read.at
    span = locate(quote, text, near=start if isinstance(start, int) else None)
    if span is not None:
        moved = f" (now at character {span[0]}, was {start})" if isinstance(start, int) and span[0] != start else ""
        return (
            UNCHANGED,
            f"the source changed elsewhere; the quote still stands in it word for word{moved}",
            quote,
            "",
            read.at,
        )
    now = text[slice(*aligned_span(quote, text, start, end))] if isinstance(start, int) and isinstance(end, int) else ""
    if not now.strip():
        return (
            CHANGED,
            "the quote is no longer in the source, which now ends before its place",
            now,
            short_diff(quote, ""),
            read.at,
        )
    return (
        CHANGED,
        "the quote is no longer in the source; at its place the source now reads otherwise",
        now,
        short_diff(quote, now),
        read.at,
    )
