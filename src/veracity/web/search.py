"""Search providers: Serper (Google), a SearXNG instance, a local veracity index, and Wikipedia.

    make_provider("serper")                         # key from SERPER_API_KEY
    make_provider("searxng", url="http://localhost:8080")
    make_provider("local", retriever=Index.load("my-index"))
    make_provider("wikipedia", language="de")       # MediaWiki's API, no key (web/wikipedia.py)

Every provider returns raw `SearchHit`s; the tools drop excluded domains and late pages
(`veracity.web.filters`). HTTP providers never hang (every request has a timeout), retry once
after a server error (5xx) or a dropped connection, and raise `SearchError` with one line that
says what went wrong: unreachable, bad API key, quota exceeded, HTTP error, invalid JSON.
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urljoin

import httpx

from ..errors import UserError
from .base import NotSupported, SearchError, SearchHit
from .filters import last_day, to_iso_date

if TYPE_CHECKING:
    from ..image_files import ImageFile
    from ..retrieval.base import Retriever

SERPER_URL = "https://google.serper.dev"
SERPER_KEY_ENV = "SERPER_API_KEY"
PROVIDERS = ("serper", "searxng", "local", "wikipedia")
RETRY_PAUSE_S = 0.5
_QUOTA = re.compile(r"quota|credits?\b|rate.?limit", re.I)


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _items(data: dict[str, Any], *keys: str) -> list[dict[str, Any]]:
    """The dict entries of the first lists under `keys` (tolerates missing keys and junk entries)."""
    out: list[dict[str, Any]] = []
    for key in keys:
        value = data.get(key)
        if isinstance(value, list):
            out.extend(item for item in value if isinstance(item, dict))
    return out


def _str(item: dict[str, Any], *keys: str) -> str | None:
    """The first non-empty string among `keys`."""
    for key in keys:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


class _HttpProvider:
    """What the HTTP providers share: the client, the request with its one retry, and error mapping."""

    name: ClassVar[str] = ""

    def __init__(self, base_url: str, *, timeout: float, client: httpx.Client | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self._client = client or httpx.Client(timeout=self.timeout)
        self._owns_client = client is None

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """Send the request (retrying once after a 5xx or a dropped connection) and return its JSON object."""
        url = self.base_url + path
        for attempt in (1, 2):
            try:
                response = self._client.request(method, url, timeout=self.timeout, **kwargs)
            except httpx.TimeoutException:
                raise SearchError(
                    f"search provider {self.name} unreachable at {url}: no answer within {self.timeout:g} s"
                ) from None
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as e:
                raise SearchError(f"search provider {self.name}: {url} is not a usable http(s) URL ({e})") from None
            except httpx.TransportError as e:
                if attempt == 1:
                    time.sleep(RETRY_PAUSE_S)
                    continue
                raise SearchError(
                    f"search provider {self.name} unreachable at {url}: {_one_line(str(e)) or type(e).__name__}"
                ) from None
            if response.status_code >= 500 and attempt == 1:
                time.sleep(RETRY_PAUSE_S)
                continue
            break
        self._check_status(response, url)
        try:
            data = response.json()
        except ValueError as e:
            raise SearchError(f"search provider {self.name} returned invalid JSON from {url}: {e}") from None
        if not isinstance(data, dict):
            raise SearchError(f"search provider {self.name} returned JSON that is not an object from {url}")
        return data

    def _check_status(self, response: httpx.Response, url: str) -> None:
        """Raise SearchError for an HTTP error status, in words a user can act on."""
        status = response.status_code
        if status < 400:
            return
        detail = _error_detail(response)
        where = f"search provider {self.name} at {url}"
        if status == 429 or (status < 500 and _QUOTA.search(detail)):
            raise SearchError(f"{where}: quota exceeded (HTTP {status}{': ' + detail if detail else ''})")
        if status in (401, 403):
            raise SearchError(self._forbidden(status, url, detail))
        kind = "failed" if status >= 500 else "rejected the request"
        raise SearchError(f"{where} {kind}: HTTP {status}{': ' + detail if detail else ''}")

    def _forbidden(self, status: int, url: str, detail: str) -> str:
        """The message for 401/403 (providers say what to fix)."""
        return f"search provider {self.name} at {url} refused access: HTTP {status}" + (f": {detail}" if detail else "")


def _error_detail(response: httpx.Response) -> str:
    """The error message in a response body: its JSON "message"/"error", else the start of the text."""
    try:
        data = response.json()
    except ValueError:
        return _one_line(response.text)
    if isinstance(data, dict):
        for key in ("message", "error", "detail"):
            if isinstance(data.get(key), str):
                return _one_line(data[key])
    return _one_line(str(data))


# --------------------------------------------------------------------------- Serper


class SerperSearch(_HttpProvider):
    """Google results through serper.dev: web search, image search and Google Lens (reverse search).

    Reverse search needs the image at a public http(s) URL (Lens fetches it itself); a local file
    raises NotSupported.
    """

    name = "serper"

    def __init__(
        self, api_key: str, *, base_url: str = SERPER_URL, timeout: float = 20.0, client: httpx.Client | None = None
    ) -> None:
        super().__init__(base_url, timeout=timeout, client=client)
        self._api_key = api_key

    def __repr__(self) -> str:  # never show the key
        return f"SerperSearch(base_url={self.base_url!r})"

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._request("POST", path, json=body, headers={"X-API-KEY": self._api_key})

    def _forbidden(self, status: int, url: str, detail: str) -> str:
        return (
            f"search provider serper rejected the API key at {url} (HTTP {status}"
            f"{': ' + detail if detail else ''}): check {SERPER_KEY_ENV}"
        )

    @staticmethod
    def _body(query: str, k: int, before: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"q": query, "num": k}
        cutoff = last_day(before) if before else None
        if cutoff:
            body["tbs"] = f"cdr:1,cd_max:{cutoff.month}/{cutoff.day}/{cutoff.year}"
        return body

    def web(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        data = self._post("/search", self._body(query, k, before))
        return [
            SearchHit(
                title=_str(item, "title") or "",
                url=_str(item, "link"),
                snippet=_str(item, "snippet") or "",
                date=to_iso_date(_str(item, "date")),
                extra={"position": item.get("position")},
            )
            for item in _items(data, "organic")
            if _str(item, "link")
        ][:k]

    def images(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        data = self._post("/images", self._body(query, k, before))
        return [
            SearchHit(
                title=_str(item, "title") or "",
                url=_str(item, "link"),
                snippet=_str(item, "source", "domain") or "",
                image_url=_str(item, "imageUrl"),
                extra={
                    "thumbnail": _str(item, "thumbnailUrl"),
                    "width": item.get("imageWidth"),
                    "height": item.get("imageHeight"),
                },
            )
            for item in _items(data, "images")
            if _str(item, "imageUrl")
        ][:k]

    def reverse(self, image: ImageFile, k: int) -> list[SearchHit]:
        source = getattr(image, "source", None)
        if not (isinstance(source, str) and source.lower().startswith(("http://", "https://"))):
            raise NotSupported(
                "Serper's reverse image search (Google Lens) needs the image at a public "
                f"http(s) URL; this image is {source or 'a local file'}"
            )
        data = self._post("/lens", {"url": source})
        hits: dict[str, SearchHit] = {}
        for item in _items(data, "organic", "visual_matches", "visualMatches"):
            link = _str(item, "link", "url")
            if link and link not in hits:
                hits[link] = SearchHit(
                    title=_str(item, "title") or "",
                    url=link,
                    snippet=_str(item, "snippet", "source") or "",
                    image_url=_str(item, "imageUrl", "thumbnailUrl", "image"),
                    date=to_iso_date(_str(item, "date")),
                )
        return list(hits.values())[:k]


# --------------------------------------------------------------------------- SearXNG


class SearxngSearch(_HttpProvider):
    """A SearXNG instance's JSON API (``search: formats: [html, json]`` must be set in its settings.yml).

    SearXNG has no date filter and no reverse image search (`reverse` raises NotSupported).
    """

    name = "searxng"

    def __init__(self, base_url: str, *, timeout: float = 20.0, client: httpx.Client | None = None) -> None:
        base = base_url.rstrip("/")
        super().__init__(base.removesuffix("/search"), timeout=timeout, client=client)

    def _forbidden(self, status: int, url: str, detail: str) -> str:
        if status == 403:
            return (
                f"SearXNG at {self.base_url} answered 403 Forbidden to format=json: JSON output is not "
                "enabled in its settings.yml (add json under search: formats)"
            )
        return super()._forbidden(status, url, detail)

    def _search(self, query: str, category: str) -> list[dict[str, Any]]:
        data = self._request("GET", "/search", params={"q": query, "format": "json", "categories": category})
        results = _items(data, "results")
        failed = data.get("unresponsive_engines")
        if not results and isinstance(failed, list) and failed:
            engines = ", ".join(" ".join(str(x) for x in e) if isinstance(e, list) else str(e) for e in failed)
            raise SearchError(f"SearXNG at {self.base_url} found nothing: its engines failed ({_one_line(engines)})")
        return results

    def web(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        return [
            SearchHit(
                title=_str(item, "title") or "",
                url=_str(item, "url"),
                snippet=_str(item, "content") or "",
                date=to_iso_date(_str(item, "publishedDate")),
                score=item.get("score") if isinstance(item.get("score"), (int, float)) else None,
                extra={"engines": item.get("engines")},
            )
            for item in self._search(query, "general")
            if _str(item, "url")
        ][:k]

    def images(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        return [
            SearchHit(
                title=_str(item, "title") or "",
                url=_str(item, "url"),
                snippet=_str(item, "content", "source") or "",
                image_url=urljoin(self.base_url + "/", _str(item, "img_src") or ""),
                date=to_iso_date(_str(item, "publishedDate")),
                extra={"thumbnail": _str(item, "thumbnail_src")},
            )
            for item in self._search(query, "images")
            if _str(item, "img_src")
        ][:k]

    def reverse(self, image: ImageFile, k: int) -> list[SearchHit]:
        raise NotSupported("SearXNG has no reverse image search (use --search serper)")


# --------------------------------------------------------------------------- local index


class LocalSearch:
    """Web search over a local veracity index (BM25 or hybrid): each passage is one hit, with its full text."""

    def __init__(self, retriever: Retriever, name: str = "local") -> None:
        self.retriever = retriever
        self.name = name

    def web(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        try:
            found = self.retriever.search(query, k)
        except UserError as e:
            raise SearchError(f"search provider {self.name}: {e}") from None
        return [
            SearchHit(
                title=ev.source or ev.doc_id or "",
                url=ev.url,
                text=ev.text,
                date=to_iso_date(ev.date),
                doc_id=ev.doc_id,
                score=ev.score,
                origin=ev,
            )
            for ev in found
        ]

    def images(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        raise NotSupported("the local index holds text only; use an image collection")

    def reverse(self, image: ImageFile, k: int) -> list[SearchHit]:
        raise NotSupported("the local index holds text only; use an image collection")


# --------------------------------------------------------------------------- choosing one


def make_provider(
    name: str,
    *,
    api_key: str | None = None,
    url: str | None = None,
    retriever: Retriever | None = None,
    timeout: float = 20.0,
    language: str = "en",
):
    """The provider called `name` ("serper", "searxng", "local" or "wikipedia"); UserError when its setting is
    missing. For wikipedia, `language` is the edition and `url` overrides its API endpoint (`web.wikipedia`)."""
    name = (name or "").strip().lower()
    if name == "serper":
        key = api_key or os.environ.get(SERPER_KEY_ENV, "").strip()
        if not key:
            raise UserError(
                f"--search serper needs an API key: set {SERPER_KEY_ENV} "
                f"(export {SERPER_KEY_ENV}=...; keys at https://serper.dev)"
            )
        return SerperSearch(key, timeout=timeout)
    if name == "searxng":
        if not url:
            raise UserError("--search searxng needs the instance's URL (e.g. http://localhost:8080)")
        return SearxngSearch(url, timeout=timeout)
    if name == "local":
        if retriever is None:
            raise UserError("--search local needs --index DIR")
        return LocalSearch(retriever)
    if name == "wikipedia":
        from .wikipedia import WikipediaSearch

        return WikipediaSearch(language, base_url=url, timeout=timeout)
    raise UserError(f"unknown search provider {name!r}: choose one of {', '.join(PROVIDERS)}")
