"""What the proxy checks answers against: the documents in each request (`--evidence request`: grounding, see
veracity.grounding), or the configured index (`--index`; by default the Wikipedia knowledge base
when it is installed), a web search backend (`--search serper`, `--search searxng --searxng-url URL` or `--search
wikipedia`), or nothing, in which case every answer says it was not checked.

A search backend is read as a `Retriever` (`SearchRetriever`): each hit becomes a passage of its own text or
snippet, as DEFAME's web search tool turns hits into evidence (without fetching the pages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..leaf.factcheck import index_retriever
from ..tools.web_search import hit_evidence

if TYPE_CHECKING:
    from ..config import Config
    from ..retrieval.base import Retriever
    from ..types import Evidence

NO_EVIDENCE = (
    "no evidence source is configured (start the proxy with --index DIR, --search serper|searxng|wikipedia, "
    "or with the Wikipedia knowledge base installed: pip install 'veracity[wiki]'): the answer was not "
    "checked"
)


def describe_index(index: str) -> str:
    """How an answer's evidence source is named: "index DIR", or the knowledge base by its name."""
    from ..retrieval.knowledge_base import TITLE, is_spec
    from ..retrieval.pg_index import shown_index

    return f"{TITLE} ({index})" if is_spec(index) else f"index {shown_index(index)}"


class SearchRetriever:
    """A web search provider (`veracity.web.search`) as a Retriever: the hits' texts or snippets as passages."""

    def __init__(self, provider) -> None:
        self.provider = provider

    def search(self, query: str, k: int = 5) -> list[Evidence]:
        return [hit_evidence(hit, None) for hit in self.provider.web(query, k)]


@dataclass
class EvidenceSource:
    retriever: Retriever | None
    description: str  # "index DIR", "search serper", "the documents in each request", or "none"
    request: bool = False  # each answer is checked against the documents in its own request (grounding/)


#: `--evidence`: the configured source (an index, the knowledge base, a web search), or the request's documents
EVIDENCE_CHOICES = ("configured", "request")
REQUEST = EvidenceSource(None, "the documents in each request", request=True)
NO_REQUEST_DOCUMENTS = (
    "the request carried no documents to check the answer against (with --evidence request the proxy reads system, "
    "developer and tool messages, earlier user messages, a long last user message, and any message or text part "
    'marked "veracity": "document"): the answer was not checked'
)


def evidence_source(config: Config, evidence: str = "configured") -> EvidenceSource:
    """The documents in each request (`evidence="request"`); else the index when one is configured, else the
    configured web search, else none (UserError for an empty index or a search backend missing its key or URL)."""
    if evidence == "request":
        return REQUEST
    if config.index:
        return EvidenceSource(index_retriever(config), describe_index(config.index))
    name = config.defame.search
    if name == "wikipedia":  # its articles' passages, quoted at their offsets (web/wikipedia.py)
        return EvidenceSource(index_retriever(config), f"search wikipedia ({config.defame.wikipedia_language})")
    if name in ("serper", "searxng"):
        from ..web.search import make_provider

        provider = make_provider(name, url=config.defame.searxng_url, timeout=config.defame.timeout)
        return EvidenceSource(SearchRetriever(provider), f"search {name}")
    return EvidenceSource(None, "none")
