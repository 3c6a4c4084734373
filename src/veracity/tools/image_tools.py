"""DEFAME's image tools: reverse image search, image metadata (EXIF) and geolocation (GeoCLIP).

Each takes an image reference (``<image:1>``) and returns `Evidence`; a failure is a `ToolOutput`
with an error line, never an exception. The first paragraph of each class docstring is what the
planner model reads about the tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import BackendError, UserError
from ..images.geolocate import Geolocator
from ..images.metadata import read_metadata
from ..types import Evidence
from ..web.base import SearchHit
from ..web.filters import filter_hits
from .base import Action, SearchTool, Tool, ToolCall, ToolOutput

if TYPE_CHECKING:
    from ..image_files import ImageFile


class ReverseSearch(SearchTool):
    """Reverse image search: finds pages that show the same image (also resized or re-encoded copies), with their
    captions and dates. Use it to learn where an image comes from, when it first appeared and what it originally
    showed, e.g. to expose an old photo reused out of context.

    Results published after the claim date and results from excluded domains (fact-checking sites, bot-hostile
    sites) are dropped; the provider is asked for 2k + 2 results so that some survive the filter.
    """

    name = "reverse_search"
    takes_image = True
    what = "reverse image search"

    def ask(self, query: ImageFile, n: int, call: ToolCall) -> list[SearchHit]:  # type: ignore[override]
        return self.provider.reverse(query, n)

    def run(self, argument: str, call: ToolCall) -> ToolOutput:
        action = Action(self.name, argument)
        hits = self.search(action, call)
        if isinstance(hits, ToolOutput):
            return hits
        kept, notes = filter_hits(hits, excluded=self.excluded, before=call.claim_date)
        if not hits:
            notes.append("no page or collection image shows this image")
        return ToolOutput(action, results=[_found_on(hit) for hit in kept[: self.k]], notes=notes)


class ImageMetadataTool(Tool):
    """Reads an image's metadata (EXIF): the date it was taken, GPS position, camera, and editing software such
    as Photoshop. Missing metadata proves nothing (social media remove it), and metadata can be forged.
    """

    name = "image_metadata"
    takes_image = True

    def run(self, argument: str, call: ToolCall) -> ToolOutput:
        action = Action(self.name, argument)
        image, bad = self.image_argument(action, call)
        if bad:
            return bad
        return ToolOutput(
            action,
            results=[Evidence(text=read_metadata(image).describe(), source=f"EXIF metadata of {argument.strip()}")],
        )


class Geolocate(Tool):
    """Estimates where a photo was taken from what it shows (GeoCLIP): the most likely coordinates with their
    probabilities. A visual estimate, useful to check a claimed location; it cannot date an image.
    """

    name = "geolocate"
    takes_image = True

    def __init__(self, geolocator: Geolocator, *, top_k: int = 5) -> None:
        self.geolocator = geolocator
        self.top_k = top_k

    def unavailable(self) -> str | None:
        return self.geolocator.unavailable()

    def run(self, argument: str, call: ToolCall) -> ToolOutput:
        action = Action(self.name, argument)
        image, bad = self.image_argument(action, call)
        if bad:
            return bad
        try:
            guesses = self.geolocator.predict(image, self.top_k)
        except (BackendError, UserError) as e:
            return ToolOutput(action, error=str(e))
        return ToolOutput(
            action,
            results=[
                Evidence(text=self.geolocator.describe(guesses), source=f"GeoCLIP geolocation of {argument.strip()}")
            ],
        )


def _found_on(hit: SearchHit) -> Evidence:
    """A reverse-search hit as evidence: what the page says about the image, and where it was found."""
    body = (hit.text or hit.snippet or "").strip()
    # A collection image without a page is titled by its caption: do not say "found on <caption>".
    title = hit.title if hit.title and hit.title != body else None
    page = f"{title} ({hit.url})" if title and hit.url else title or hit.url
    lines = [body] if body else []
    lines.append(f"Found on {page}." if page else "Found with no page title or URL.")
    distance = hit.extra.get("distance")
    if hit.extra.get("exact"):
        lines.append("Match: an exact copy of the image.")
    elif isinstance(distance, int):
        lines.append(f"Match: visually near-identical (perceptual-hash distance {distance} of 64 bits).")
    return Evidence(
        text="\n".join(lines),
        source=hit.title or hit.url or "reverse image search",
        url=hit.url,
        date=hit.date,
        doc_id=hit.doc_id,
        score=hit.score,
        images=[hit.image_url] if hit.image_url else [],
    )
