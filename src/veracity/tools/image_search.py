"""The `image_search` tool: images for a text query, with the pages they appear on."""

from __future__ import annotations

from ..types import Evidence
from ..web.base import SearchHit
from ..web.filters import filter_hits
from .base import Action, SearchTool, ToolCall, ToolOutput


class ImageSearch(SearchTool):
    """Search the web for images matching a text query; returns the top images with their captions and
    the pages they appear on. Use it to see what a person, place, object or event looks like.

    Excluded domains and images published after the claim date are dropped, as for web_search.
    Each result is `Evidence` whose `images` hold the image URL and whose text is the caption and
    the page's URL.
    """

    name = "image_search"
    what = "image search"

    def ask(self, query: str, n: int, call: ToolCall) -> list[SearchHit]:  # type: ignore[override]
        return self.provider.images(query, n, before=call.claim_date)

    def run(self, argument: str, call: ToolCall) -> ToolOutput:
        action = Action(self.name, argument)
        hits = self.search(action, call)
        if isinstance(hits, ToolOutput):
            return hits
        kept, notes = filter_hits([h for h in hits if h.image_url], excluded=self.excluded, before=call.claim_date)
        results = []
        for hit in kept[: self.k]:
            caption = hit.title or hit.snippet or "untitled image"
            text = f"{caption}\nOn the page: {hit.url}" if hit.url else caption
            results.append(
                Evidence(
                    text=text,
                    source=hit.title or hit.url or "",
                    url=hit.url,
                    doc_id=hit.doc_id,
                    score=hit.score,
                    date=hit.date,
                    images=[hit.image_url or ""],
                )
            )
        return ToolOutput(action, results=results, notes=notes)
