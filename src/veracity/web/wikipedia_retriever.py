"""Wikipedia as a retriever (`--search wikipedia` for QACheck's retriever-reader, and LEAF): the passages of the
first articles MediaWiki's search finds (web/wikipedia.py, `WikipediaSearch`), ranked by BM25 within the order of
their articles; each passage is evidence that quotes the article at its offsets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UserError
from ..types import Evidence
from .wikipedia import ARTICLES, WikipediaSearch

if TYPE_CHECKING:
    from ..config import Config


class WikipediaRetriever:
    """A `Retriever` over Wikipedia: the passages of the first `articles` articles found (whole articles, or
    their lead sections with `intro`), ranked as the module doc says."""

    def __init__(
        self,
        wiki: WikipediaSearch,
        *,
        articles: int = ARTICLES,
        intro: bool = False,
        max_words: int = 120,
        overlap_words: int = 20,
    ) -> None:
        self.wiki = wiki
        self.articles = articles
        self.intro = intro
        self.max_words = max_words
        self.overlap_words = overlap_words

    def close(self) -> None:
        self.wiki.close()

    def __enter__(self) -> WikipediaRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, query: str, k: int = 5) -> list[Evidence]:
        from ..retrieval.bm25 import BM25Ranker
        from ..retrieval.documents import Document, chunk_document

        if k < 1:
            raise UserError(f"the number of results must be at least 1, got {k}")
        found = self.wiki.find(query, self.articles)
        articles = self.wiki.articles([m.pageid for m in found], intro=self.intro)
        passages = []  # (article rank, article, passage)
        for rank, match in enumerate(found):
            article = articles.get(match.pageid)
            if article is None:
                continue
            doc = Document(id=str(article.pageid), title=article.title, text=article.text, url=article.url)
            passages += [(rank, article, p) for p in chunk_document(doc, self.max_words, self.overlap_words)]
        if not passages:
            return []
        scores = dict(BM25Ranker.build([p.search_text for _, _, p in passages]).rank(query, len(passages)))
        order = sorted(
            range(len(passages)),
            key=lambda i: (scores.get(i, 0.0) <= 0, passages[i][0], -scores.get(i, 0.0), passages[i][2].start or 0),
        )
        out = []
        for i in order[:k]:
            _, article, p = passages[i]
            score = round(scores.get(i, 0.0), 4)
            out.append(article.evidence(p.start, p.end, score, query=query, rank=len(out) + 1, score=score))
        return out


def wikipedia_retriever(config: Config) -> WikipediaRetriever:
    """The Wikipedia retriever of a configuration: config.defame.wikipedia_language (and wikipedia_url, the API
    endpoint override), config.defame.timeout seconds per request."""
    d = config.defame
    return WikipediaRetriever(WikipediaSearch(d.wikipedia_language, base_url=d.wikipedia_url, timeout=d.timeout))
