"""Search providers behind one interface: web search, image search and reverse image search.

A provider answers what it can; what it cannot do raises `NotSupported` (SearXNG has no reverse
image search), and a failed request raises `SearchError` with one line saying what happened
(unreachable, quota exceeded, bad key). Providers return raw hits; excluded domains and the claim
date cut-off are applied by the tools (`veracity.web.filters`), the same way for every provider.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import SearchError  # noqa: F401  (web.base.SearchError, as its users import it)

if TYPE_CHECKING:
    from ..image_files import ImageFile
    from ..types import Evidence


class NotSupported(Exception):
    """The provider has no such search (e.g. reverse image search on SearXNG)."""


@dataclass
class SearchHit:
    title: str
    url: str | None = None  # None for local documents without one
    snippet: str = ""  # the provider's short excerpt
    text: str | None = None  # the full text, when the provider has it (local index, image captions)
    date: str | None = None  # ISO date of publication, when known
    image_url: str | None = None  # image results: the image itself (URL or local path)
    doc_id: str | None = None
    score: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    origin: Evidence | None = None  # a local index's hit: the index's evidence record (where its passage stands)


class SearchProvider(Protocol):
    name: str  # "serper", "searxng", "local", "local-images"

    def web(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        """Pages for a text query; `before` (ISO date) asks the provider to prefer older pages."""
        ...

    def images(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        """Images (with the pages they are on) for a text query."""
        ...

    def reverse(self, image: ImageFile, k: int) -> list[SearchHit]:
        """Pages or captions that show the same image."""
        ...
