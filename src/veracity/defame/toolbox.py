"""The tools one DEFAME check may use, built from the configuration, and the planner's tool list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..tools.base import Action, Tool, ToolCall, ToolOutput

if TYPE_CHECKING:
    from ..config import DefameConfig
    from ..retrieval.base import Retriever
    from ..web.scrape import Scraper

TOOL_NAMES = ("web_search", "image_search", "reverse_search", "image_metadata", "geolocate")


class UnavailableTool(Tool):
    """A tool this installation cannot run; it is listed as unavailable and never executed."""

    takes_image = False

    def __init__(self, name: str, takes_image: bool, reason: str) -> None:
        self.name = name  # type: ignore[misc]
        self.takes_image = takes_image  # type: ignore[misc]
        self.reason = reason

    def unavailable(self) -> str | None:
        return self.reason

    def run(self, argument: str, call: ToolCall) -> ToolOutput:
        return ToolOutput(Action(self.name, argument), error=f"{self.name} is unavailable: {self.reason}")


@dataclass
class Toolbox:
    tools: dict[str, Tool]
    fetch_image: Callable[[str], bytes] | None = None  # reads remote images (the scraper's, SSRF-guarded)
    closers: list[Callable[[], None]] = field(default_factory=list)  # HTTP clients to close after the check
    local_image_roots: tuple[Path, ...] = ()  # folders whose files evidence may name as images (the collection's)

    def close(self) -> None:
        for close in self.closers:
            close()

    def offered(self, *, has_images: bool) -> dict[str, Tool]:
        """The tools the planner may name now: available ones, image tools only when there is an image."""
        return {n: t for n, t in self.tools.items() if t.unavailable() is None and (has_images or not t.takes_image)}

    def describe(self, *, has_images: bool) -> str:
        """The tool list for the planner, from the tools' docstrings; unavailable tools say why."""
        lines = []
        for name, tool in self.tools.items():
            if tool.takes_image and not has_images:
                continue
            reason = tool.unavailable()
            if reason:
                lines.append(f"- {name}: unavailable ({reason})")
            else:
                lines.append(f"- {tool.usage()}: {tool.description()}")
        return "\n".join(lines) or "- (no tools: reason from the claim alone)"


def search_provider_name(config: DefameConfig, retriever: Retriever | None) -> str:
    if config.search:
        return config.search
    return "local" if retriever is not None else "none"


@lru_cache(maxsize=4)
def _collection(path: str):
    from ..images.collection import ImageCollection

    return ImageCollection.load(path)


def build_toolbox(
    config: DefameConfig,
    retriever: Retriever | None,
    *,
    drop: frozenset[str] = frozenset(),
    scraper: Scraper | None = None,
) -> Toolbox:
    """The tools for one check: web search over the configured provider, image search and reverse search
    over a local image collection or the provider, image metadata, and geolocation when weights exist."""
    from ..images.geolocate import Geolocator
    from ..tools.image_search import ImageSearch
    from ..tools.image_tools import Geolocate, ImageMetadataTool, ReverseSearch
    from ..tools.web_search import WebSearch
    from ..web.scrape import Scraper
    from ..web.search import make_provider

    if scraper is None and config.scrape:
        scraper = Scraper(timeout=config.timeout, allow_private=config.allow_private_addresses)
    name = search_provider_name(config, retriever)
    provider = None
    if name != "none":
        if name == "local" and retriever is None:
            raise UserError("--search local needs an index: pass --index DIR (build one with `veracity index build`)")
        provider = make_provider(
            name,
            api_key=config.serper_api_key,
            url=config.wikipedia_url if name == "wikipedia" else config.searxng_url,
            retriever=retriever,
            timeout=config.timeout,
            language=config.wikipedia_language,
        )
    images = None
    if config.image_collection:
        from ..images.collection import LocalImageProvider

        images = LocalImageProvider(_collection(config.image_collection))
    excluded = tuple(config.excluded_domains)
    tools: dict[str, Tool] = {}
    tools["web_search"] = (
        WebSearch(provider, scraper if name != "local" else None, k=config.top_k, excluded=excluded)
        if provider is not None
        else UnavailableTool(
            "web_search", False, "no search provider configured (--search serper|searxng|local|wikipedia)"
        )
    )
    image_provider = images or (provider if name in ("serper", "searxng") else None)
    tools["image_search"] = (
        ImageSearch(image_provider, k=config.top_k, excluded=excluded)
        if image_provider
        else UnavailableTool(
            "image_search", False, "needs an image collection (defame.image_collection) or --search serper|searxng"
        )
    )
    reverse_provider = images or (provider if name == "serper" else None)
    tools["reverse_search"] = (
        ReverseSearch(reverse_provider, k=config.top_k, excluded=excluded)
        if reverse_provider
        else UnavailableTool(
            "reverse_search", True, "needs an image collection (defame.image_collection) or --search serper"
        )
    )
    tools["image_metadata"] = ImageMetadataTool()
    tools["geolocate"] = Geolocate(Geolocator.from_config(config.geoclip_weights))
    for n in drop:
        tools.pop(n, None)
    closers = [c.close for c in (scraper, provider) if c is not None and hasattr(c, "close")]
    roots = (Path(images.collection.root),) if images is not None else ()
    return Toolbox(
        tools=tools,
        fetch_image=scraper.fetch_image if scraper is not None else None,
        closers=closers,
        local_image_roots=roots,
    )
