"""The `web_search` tool: search, drop unusable results, read the pages, return them as evidence."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from ..quotes import sha256_text
from ..types import Evidence
from ..web.base import SearchHit, SearchProvider
from ..web.filters import DEFAULT_EXCLUDED, after_claim_note, filter_hits, plural, published_after, stale_note
from ..web.scrape import Page, ScrapeError, Scraper
from .base import Action, SearchTool, ToolCall, ToolOutput

MAX_EVIDENCE_CHARS = 3_000


class WebSearch(SearchTool):
    """Search the web for pages about a text query; returns the top pages with their text, publication
    dates and images. Use short, specific queries (names, places, dates, key phrases), not the whole claim.

    Results from fact-checking sites and bot-hostile platforms (DEFAME's exclusion lists) and pages
    published after the claim date are dropped; the provider is asked for more than `k` hits so
    that k usually remain. Pages are read with the scraper (when given); each result's text is cut
    to about 3,000 characters. Failures become notes or a `ToolOutput.error`, never exceptions.
    """

    name = "web_search"

    what = "web search"

    def __init__(
        self,
        provider: SearchProvider,
        scraper: Scraper | None,
        *,
        k: int = 3,
        excluded: Iterable[str] = DEFAULT_EXCLUDED,
        max_chars: int = MAX_EVIDENCE_CHARS,
    ) -> None:
        super().__init__(provider, k=k, excluded=excluded)
        self.scraper = scraper
        self.max_chars = max_chars

    def ask(self, query: str, n: int, call: ToolCall) -> list[SearchHit]:  # type: ignore[override]
        return self.provider.web(query, n, before=call.claim_date)

    def run(self, argument: str, call: ToolCall) -> ToolOutput:
        action = Action(self.name, argument)
        hits = self.search(action, call)
        if isinstance(hits, ToolOutput):
            return hits
        candidates, notes = filter_hits(_unique(hits), excluded=self.excluded, before=call.claim_date)
        results: list[Evidence] = []
        late = shortened = 0
        while candidates and len(results) < self.k:
            batch, candidates = candidates[: self.k - len(results)], candidates[self.k - len(results) :]
            for hit, page in zip(batch, self._read_pages(batch, notes)):
                if page is not None and call.claim_date and published_after(page.date, call.claim_date):
                    late += 1
                    continue
                found_by = {
                    "tool": self.name,
                    "provider": self.provider.name,
                    "query": argument,
                    "rank": len(results) + 1,
                }
                evidence = hit_evidence(hit, page, found_by)
                if not evidence.text.strip():
                    continue
                if len(evidence.text) > self.max_chars:  # the quote is the page's first max_chars characters
                    evidence = evidence.cut(self.max_chars)
                    shortened += 1
                results.append(evidence)
        if late:
            notes.append(after_claim_note(late, call.claim_date or "", " (by the date on the page)"))
        if shortened:
            notes.append(f"shortened {plural(shortened, 'long page')} to {self.max_chars:,} characters")
        if stale := stale_note(results, call.claim, call.claim_date):
            notes.append(stale)
        return ToolOutput(action, results=results, notes=notes)

    def _read_pages(self, hits: list[SearchHit], notes: list[str]) -> list[Page | None]:
        """The scraped page of each hit that needs one (a URL, no full text); None otherwise or on failure."""
        todo = [i for i, hit in enumerate(hits) if self.scraper and hit.url and not hit.text]
        pages: list[Page | None] = [None] * len(hits)
        if not todo:
            return pages

        def read(i: int) -> Page | str:
            try:
                return self.scraper.fetch(hits[i].url)  # type: ignore[union-attr,arg-type]
            except ScrapeError as e:
                return e.reason

        with ThreadPoolExecutor(max_workers=len(todo)) as pool:
            for i, outcome in zip(todo, pool.map(read, todo)):
                if isinstance(outcome, Page):
                    pages[i] = outcome
                else:
                    notes.append(f"could not read {hits[i].url}: {outcome}")
        return pages


def _unique(hits: list[SearchHit]) -> list[SearchHit]:
    """Hits in order, each URL once (hits without a URL are all kept)."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.url and hit.url in seen:
            continue
        if hit.url:
            seen.add(hit.url)
        out.append(hit)
    return out


def hit_evidence(hit: SearchHit, page: Page | None, found_by: dict | None = None) -> Evidence:
    """A hit as evidence: the page's text, date and images when it was read, else the hit's own.

    A page read quotes its extracted text from the start, with that text's hash and the time it was fetched; a
    hit from a local index keeps the index's record of where its passage stands; a provider's snippet is quoted
    as the provider gave it (no source text to hash). `found_by`: how the hit was found (tool, query, rank).
    """
    how = {**(found_by or {}), **({"score": hit.score} if hit.score is not None else {})}
    common = dict(
        source=hit.title or (page.title if page else "") or hit.url or "",
        url=hit.url,
        doc_id=hit.doc_id,
        score=hit.score,
        date=hit.date or (page.date if page else None),
        images=list(page.images) if page else ([hit.image_url] if hit.image_url else []),
    )
    if page is not None and page.text.strip():
        if page.final_url != page.url:
            how["redirected_to"] = page.final_url
        return Evidence(
            text=page.text,
            quote_start=0,
            quote_end=len(page.text),
            source_sha256=sha256_text(page.text),
            retrieved_at=page.fetched_at,
            found_by=how,
            **common,
        )
    if hit.origin is not None and (hit.text or "") == hit.origin.text:
        o = hit.origin
        return Evidence(
            text=o.text,
            quote_start=o.quote_start,
            quote_end=o.quote_end,
            source_sha256=o.source_sha256,
            retrieved_at=o.retrieved_at,
            found_by={**o.found_by, **how},
            **common,
        )
    return Evidence(text=hit.text or hit.snippet, found_by=how, **common)
