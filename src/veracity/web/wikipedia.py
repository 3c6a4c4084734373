"""Wikipedia through MediaWiki's Action API: a search provider for DEFAME, and what the retriever reads.

    WikipediaSearch("de")                                   # https://de.wikipedia.org/w/api.php, no key
    make_provider("wikipedia", language="de")               # the same, as DEFAME's --search wikipedia
    wikipedia_retriever(config)                             # a Retriever (web/wikipedia_retriever.py)

A search is one `list=search` request (the articles in the API's order) and one request for their plain-text
extracts with their canonical URLs (`prop=extracts|info`, `explaintext`, `inprop=url`): the lead sections of all
of them in one request (`exintro`), or each whole article in a request of its own (the API returns whole-article
extracts one page at a time). The extract is the article's text, so a hit carries it and nothing is scraped.

Polite by Wikimedia's rules (API:Etiquette, the User-Agent policy): a User-Agent that names veracity, its version
and a contact ($VERACITY_CONTACT, an e-mail address or URL of whoever runs it, where set); `maxlag=5`; one request
in flight per provider and `min_interval` seconds between requests; HTTP 429, 5xx and `maxlag` errors are retried
after the Retry-After the server asks for (else a doubling backoff), at most `max_retries` times, never after a wait
longer than `max_wait` (then it gives up and says so). Every request has a timeout. Failures raise `SearchError`
with one line; the API's own errors (`{"error": {"code", "info"}}`) say their code and text.

`WikipediaRetriever` (web/wikipedia_retriever.py) splits the articles' extracts into passages (`chunk_document`: each passage an exact slice of
the extract, with its offsets) and ranks them: passages that share a word with the query first, by the API's order
of the articles and within an article by BM25 (the index's analysis, scored over the passages of this search's
articles); then the others, in article and text order. Its evidence quotes the extract at those offsets, with the
SHA-256 of the whole extract, so that `veracity recheck` asks the API for the extract again (`ArticleRef`).
"""

from __future__ import annotations

import html
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

import httpx

from .. import __version__
from ..config import WIKIPEDIA_URL_KIND, http_url_problem, wikipedia_language_problem
from ..errors import UserError
from ..quotes import sha256_text, utc_now
from ..types import Evidence
from .base import NotSupported, SearchError, SearchHit

if TYPE_CHECKING:
    from ..image_files import ImageFile

API_URL = "https://{lang}.wikipedia.org/w/api.php"  # "{lang}" stands for the language code
CONTACT_ENV = "VERACITY_CONTACT"
MAXLAG = 5  # seconds of database lag beyond which the API asks bots to wait (Wikimedia's recommended value)
MAX_BATCH = 20  # extracts of lead sections per request (the API's exlimit maximum)
RETRY_PAUSE_S = 0.5  # before the one retry after a dropped connection
ARTICLES = 3  # articles the retriever reads per query
_TAG = re.compile(r"<[^>]*>")


def user_agent(contact: str | None = None) -> str:
    """The User-Agent of every request: veracity and its version, a contact, the HTTP library (Wikimedia's
    User-Agent policy). The contact is `contact`, else $VERACITY_CONTACT."""
    contact = " ".join((contact or os.environ.get(CONTACT_ENV, "")).split())
    about = (
        f"open-source fact-checking toolkit; {contact}"
        if contact
        else f"open-source fact-checking toolkit; operator contact: set {CONTACT_ENV}"
    )
    return f"veracity/{__version__} ({about}) httpx/{httpx.__version__}"


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(snippet: str) -> str:
    """A search snippet without its highlighting markup (`<span class="searchmatch">`) and entities."""
    return " ".join(html.unescape(_TAG.sub("", snippet)).split())


def _retry_after(response: httpx.Response) -> float | None:
    """The seconds a Retry-After header asks for (a number or an HTTP date); None when there is none."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass(frozen=True)
class Match:
    """A search result: an article the API found, in its order."""

    pageid: int
    title: str
    snippet: str  # plain text


@dataclass(frozen=True)
class Article:
    """An article's plain-text extract as the API gave it (the lead section, or the whole article)."""

    pageid: int
    title: str
    url: str  # the canonical URL of the article
    text: str
    intro: bool
    language: str
    api: str
    retrieved_at: str

    @cached_property
    def sha256(self) -> str:
        """The SHA-256 of the whole extract (what `veracity recheck` compares)."""
        return sha256_text(self.text)

    def found_by(self, **how: Any) -> dict[str, Any]:
        """How evidence from this article was found: what `ArticleRef.of` reads back, and `how`."""
        return {
            "tool": "wikipedia",
            "retriever": "wikipedia",
            "language": self.language,
            "api": self.api,
            "pageid": self.pageid,
            "extract": "intro" if self.intro else "whole",
            **how,
        }

    def evidence(self, start: int, end: int, score: float | None, /, **how: Any) -> Evidence:
        """The extract's text at start:end as evidence, with the hash of the whole extract."""
        return Evidence(
            text=self.text[start:end],
            source=self.title,
            url=self.url,
            score=score,
            quote_start=start,
            quote_end=end,
            source_sha256=self.sha256,
            retrieved_at=self.retrieved_at,
            found_by=self.found_by(**how),
        )


@dataclass(frozen=True)
class ArticleRef:
    """Where a stored evidence record from Wikipedia came from: the API, the page and the kind of extract."""

    api: str
    language: str
    pageid: int
    intro: bool

    @classmethod
    def of(cls, found_by: object) -> ArticleRef | None:
        """The article an evidence record's `found_by` names; None when it is not from Wikipedia (or incomplete)."""
        if not isinstance(found_by, Mapping) or found_by.get("retriever") != "wikipedia":
            return None
        api, language, pageid = found_by.get("api"), found_by.get("language"), found_by.get("pageid")
        if (
            not isinstance(api, str)
            or http_url_problem(api)
            or wikipedia_language_problem(language)
            or not isinstance(pageid, int)
            or isinstance(pageid, bool)
        ):
            return None
        return cls(api, language, pageid, found_by.get("extract") != "whole")  # type: ignore[arg-type]


class WikipediaSearch:
    """One Wikipedia language edition through its Action API (see the module doc): `find` and `articles`, and
    the search provider interface (`web`; no image or reverse search)."""

    name = "wikipedia"

    def __init__(
        self,
        language: str = "en",
        *,
        base_url: str | None = None,
        timeout: float = 20.0,
        min_interval: float = 0.1,
        max_retries: int = 3,
        max_wait: float = 10.0,
        backoff: float = 1.0,
        contact: str | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        language = (language or "").strip().lower()
        if problem := wikipedia_language_problem(language):
            raise UserError(problem)
        endpoint = (base_url or API_URL).strip()
        if problem := http_url_problem(endpoint.replace("{lang}", language), WIKIPEDIA_URL_KIND):
            raise UserError(f"the Wikipedia API endpoint {problem}")
        self.language = language
        self.api_url = endpoint.replace("{lang}", language)
        self.timeout = float(timeout)
        self.min_interval = max(0.0, float(min_interval))
        self.max_retries = max(0, int(max_retries))
        self.max_wait = float(max_wait)
        self.backoff = float(backoff)
        self.user_agent = user_agent(contact)
        self._client = client or httpx.Client(timeout=self.timeout)
        self._owns_client = client is None
        self._lock = threading.Lock()  # one request in flight
        self._next_at = 0.0  # monotonic time before which no request starts

    def __repr__(self) -> str:
        return f"WikipediaSearch(language={self.language!r}, api_url={self.api_url!r})"

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> WikipediaSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the API

    def find(self, query: str, k: int) -> list[Match]:
        """The articles the wiki's search finds for `query`, best first (at most `k`)."""
        if not query or not query.strip():
            raise UserError("the search query is empty")
        data = self._query(
            {
                "list": "search",
                "srsearch": query.strip(),
                "srlimit": str(max(1, min(int(k), 500))),
                "srnamespace": "0",
                "srprop": "snippet",
            }
        )
        found = []
        for item in _list(data.get("query"), "search"):
            pageid, title = item.get("pageid"), item.get("title")
            if isinstance(pageid, int) and isinstance(title, str) and title.strip():
                found.append(
                    Match(
                        pageid, title, _plain(item.get("snippet") or "") if isinstance(item.get("snippet"), str) else ""
                    )
                )
        return found[:k]

    def articles(self, pageids: list[int], *, intro: bool = True) -> dict[int, Article]:
        """The plain-text extracts of these pages by page id (the lead sections, batched, or each whole article
        in a request of its own); pages that no longer exist are left out."""
        ids = list(dict.fromkeys(pageids))
        if intro:
            batches = [ids[i : i + MAX_BATCH] for i in range(0, len(ids), MAX_BATCH)]
        else:
            batches = [[pageid] for pageid in ids]
        out: dict[int, Article] = {}
        for batch in batches:
            out.update(self._extracts(batch, intro))
        return out

    def _extracts(self, pageids: list[int], intro: bool) -> dict[int, Article]:
        params = {
            "prop": "extracts|info",
            "pageids": "|".join(map(str, pageids)),
            "explaintext": "1",
            "exlimit": str(len(pageids)),
            "inprop": "url",
        }
        if intro:
            params["exintro"] = "1"
        at = utc_now()
        pages: dict[int, dict[str, Any]] = {}
        for _ in range(len(pageids) + 1):  # a long batch comes in parts (`continue`), each adding extracts
            data = self._query(params)
            for page in _list(data.get("query"), "pages"):
                pageid = page.get("pageid")
                if isinstance(pageid, int) and not page.get("missing") and not page.get("invalid"):
                    merged = pages.setdefault(pageid, {})
                    merged.update({k: v for k, v in page.items() if v is not None})
            more = data.get("continue")
            if not isinstance(more, Mapping) or not more:
                break
            params = {**params, **{k: str(v) for k, v in more.items()}}
        out = {}
        for pageid, page in pages.items():
            title = page.get("title") if isinstance(page.get("title"), str) else ""
            url = next((page[k] for k in ("canonicalurl", "fullurl") if isinstance(page.get(k), str)), "")
            text = page.get("extract") if isinstance(page.get("extract"), str) else ""
            out[pageid] = Article(
                pageid=pageid,
                title=title,
                url=url,
                text=text,
                intro=intro,
                language=self.language,
                api=self.api_url,
                retrieved_at=at,
            )
        return out

    def _query(self, params: dict[str, str]) -> dict[str, Any]:
        """One `action=query` request, paced and retried as the module doc says; its JSON object."""
        params = {"action": "query", **params, "format": "json", "formatversion": "2", "maxlag": str(MAXLAG)}
        where = f"search provider wikipedia at {self.api_url}"
        with self._lock:
            dropped = False
            for attempt in range(1, self.max_retries + 2):
                try:
                    response = self._send(params)
                except httpx.TimeoutException:
                    raise SearchError(
                        f"search provider wikipedia unreachable at {self.api_url}: no answer within {self.timeout:g} s"
                    ) from None
                except (httpx.UnsupportedProtocol, httpx.InvalidURL) as e:
                    raise SearchError(f"{where}: not a usable http(s) URL ({_one_line(str(e))})") from None
                except httpx.TransportError as e:
                    if dropped or attempt > self.max_retries:
                        raise SearchError(
                            f"search provider wikipedia unreachable at {self.api_url}: "
                            f"{_one_line(str(e)) or type(e).__name__}"
                        ) from None
                    dropped = True
                    time.sleep(RETRY_PAUSE_S)
                    continue
                data, busy = _read(response, where)
                if busy is None:
                    return data  # type: ignore[return-value]
                wait = _retry_after(response)  # the server's word, else a doubling backoff up to max_wait
                if wait is None:
                    wait = min(self.backoff * 2 ** (attempt - 1), self.max_wait)
                if attempt > self.max_retries:
                    raise SearchError(f"{where}: {busy}; gave up after {attempt} tries")
                if wait > self.max_wait:
                    raise SearchError(
                        f"{where}: {busy}; it asks to wait {wait:g} s before trying again "
                        f"(more than {self.max_wait:g} s)"
                    )
                time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, params: dict[str, str]) -> httpx.Response:
        """The request itself, at least `min_interval` after the previous one ended."""
        pause = self._next_at - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        try:
            return self._client.get(
                self.api_url,
                params=params,
                timeout=self.timeout,
                headers={"User-Agent": self.user_agent, "Accept": "application/json"},
            )
        finally:
            self._next_at = time.monotonic() + self.min_interval

    # ------------------------------------------------------------------ the search provider

    def web(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        """Articles for a query, each with its lead section as its text (so it is not scraped). `before` is not
        applied: articles are read as they are now."""
        found = self.find(query, k)
        articles = self.articles([m.pageid for m in found], intro=True)
        hits = []
        for match in found:
            article = articles.get(match.pageid)
            if article is None or not article.text.strip():
                continue
            origin = article.evidence(0, len(article.text), None, query=query, rank=len(hits) + 1)
            hits.append(
                SearchHit(
                    title=article.title or match.title,
                    url=article.url or None,
                    snippet=match.snippet,
                    text=article.text,
                    origin=origin,
                    extra={"pageid": match.pageid, "language": self.language},
                )
            )
        return hits

    def images(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        raise NotSupported("the wikipedia provider searches article text only")

    def reverse(self, image: ImageFile, k: int) -> list[SearchHit]:
        raise NotSupported("the wikipedia provider searches article text only")


def _list(data: object, key: str) -> list[dict[str, Any]]:
    value = data.get(key) if isinstance(data, Mapping) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _read(response: httpx.Response, where: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the JSON object, None) of a good answer; (None, why) of one to retry after a wait (rate limited, the
    server failing, the database lagging); SearchError for any other failure."""
    status = response.status_code
    if status == 429:
        return None, "rate limited (HTTP 429)"
    if status >= 500:
        detail = _detail(response)
        return None, f"the server failed (HTTP {status}{': ' + detail if detail else ''})"
    if status >= 400:
        detail = _detail(response)
        raise SearchError(f"{where} rejected the request: HTTP {status}{': ' + detail if detail else ''}")
    try:
        data = response.json()
    except ValueError as e:
        raise SearchError(f"{where} returned invalid JSON: {_one_line(str(e))}") from None
    if not isinstance(data, dict):
        raise SearchError(f"{where} returned JSON that is not an object")
    error = data.get("error")
    if isinstance(error, Mapping):
        code, info = str(error.get("code") or "unknown"), _one_line(str(error.get("info") or ""))
        if code == "maxlag":
            return None, f"the wiki's database is lagging (maxlag: {info})"
        raise SearchError(f"{where}: API error {code}" + (f": {info}" if info else ""))
    return data, None


def _detail(response: httpx.Response) -> str:
    """The error in a failed response's body: the API's error info, else the start of the text."""
    try:
        data = response.json()
    except ValueError:
        return _one_line(response.text, 120)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, Mapping):
        return _one_line(f"{error.get('code')}: {error.get('info')}", 120)
    return _one_line(str(data), 120)
