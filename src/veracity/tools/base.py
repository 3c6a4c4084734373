"""DEFAME's actions: one interface for every tool, and the image references the planner uses.

A tool takes one argument (a text query, or a reference to an image such as ``<image:1>``) and
returns a `ToolOutput`: the sources it found as `Evidence` (text, title, url, date, images), notes
on what it dropped and why, or an error that says plainly what went wrong. Tools never raise for a
failed search or an unreachable page: the failure is part of the fact-check record.

The planner's tool list is written from the tools' docstrings (`Tool.description`), so a tool's
documentation is what the model reads.
"""

from __future__ import annotations

import inspect
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import UserError
from ..types import Evidence
from ..web.base import NotSupported, SearchError
from ..web.filters import DEFAULT_EXCLUDED

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..image_files import ImageFile
    from ..web.base import SearchHit, SearchProvider

IMAGE_REF = re.compile(r"<image:(\d+)>")


@dataclass(frozen=True)
class Action:
    """One planned call: a tool's name and its argument (a query, or an image reference)."""

    tool: str
    argument: str

    def render(self) -> str:
        if IMAGE_REF.fullmatch(self.argument.strip()):
            return f"{self.tool}({self.argument.strip()})"
        return f'{self.tool}("{self.argument}")'

    def key(self) -> tuple[str, str]:
        """What makes two actions the same action (case and spacing of a query do not count)."""
        return self.tool, " ".join(self.argument.lower().split())


@dataclass
class ToolOutput:
    action: Action
    results: list[Evidence] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "dropped 2 results from excluded domains"
    error: str | None = None  # the tool failed: what happened, in one line

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action.render(),
            "tool": self.action.tool,
            "argument": self.action.argument,
            "results": [r.to_dict() for r in self.results],
            "notes": list(self.notes),
            "error": self.error,
        }


class ImageStore:
    """The images of one fact-check, numbered as the model sees them: ``<image:1>``, ``<image:2>``, ..."""

    def __init__(self) -> None:
        self._images: list[ImageFile] = []

    def add(self, image: ImageFile) -> str:
        for i, known in enumerate(self._images, start=1):
            if known.sha256 == image.sha256:
                return f"<image:{i}>"
        self._images.append(image)
        return f"<image:{len(self._images)}>"

    def get(self, ref: str) -> ImageFile | None:
        m = IMAGE_REF.fullmatch(ref.strip())
        if not m or not 1 <= int(m.group(1)) <= len(self._images):
            return None
        return self._images[int(m.group(1)) - 1]

    def refs(self) -> list[str]:
        return [f"<image:{i}>" for i in range(1, len(self._images) + 1)]

    def __len__(self) -> int:
        return len(self._images)


@dataclass
class ToolCall:
    """What a tool may know besides its argument."""

    claim_date: str | None = None  # ISO date; sources published after it are dropped
    images: ImageStore = field(default_factory=ImageStore)
    claim: str = ""  # the claim's text: a claim about the present makes much older sources possibly stale


class Tool(ABC):
    #: the name the planner writes, e.g. ``web_search``
    name: ClassVar[str] = ""
    #: True when the argument is an image reference, False for a text query
    takes_image: ClassVar[bool] = False

    def description(self) -> str:
        """The tool's docstring, as one paragraph for the planner's tool list."""
        doc = inspect.getdoc(type(self)) or ""
        return " ".join(doc.split("\n\n")[0].split())

    def usage(self) -> str:
        return f"{self.name}(<image:k>)" if self.takes_image else f'{self.name}("query")'

    def unavailable(self) -> str | None:
        """Why the tool cannot run here (no provider, no weights), or None when it can."""
        return None

    @abstractmethod
    def run(self, argument: str, call: ToolCall) -> ToolOutput: ...

    def image_argument(self, action: Action, call: ToolCall) -> tuple[ImageFile | None, ToolOutput | None]:
        """Resolve an image reference; on a bad reference, the output that says so."""
        image = call.images.get(action.argument)
        if image is None:
            known = ", ".join(call.images.refs()) or "none"
            return None, ToolOutput(
                action, error=f"{action.argument!r} is not an image of this fact-check (images: {known})"
            )
        return image, None


def text_query(tool: Tool, argument: str) -> str | None:
    """Why `argument` is not a text query for `tool`, or None when it is one."""
    if not argument.strip():
        return f"{tool.name} needs a text query"
    if IMAGE_REF.fullmatch(argument.strip()):
        return f"{tool.name} takes a text query, not an image ({argument.strip()})"
    return None


class SearchTool(Tool):
    """A tool that asks a search provider (`ask`) and keeps the top `k` of what survives the filters.

    `search` checks the argument (a text query, or an image reference for image tools), asks the
    provider for more than `k` hits so that filtering still leaves `k`, and turns a provider that
    cannot do this kind of search, or a failed request, into the ToolOutput that says so.
    """

    #: what the tool does, for "the X provider has no <what>" errors
    what: ClassVar[str] = "search"

    def __init__(self, provider: SearchProvider, *, k: int = 3, excluded: Iterable[str] = DEFAULT_EXCLUDED) -> None:
        self.provider = provider
        self.k = k
        self.excluded = tuple(excluded)

    @abstractmethod
    def ask(self, query: str | ImageFile, n: int, call: ToolCall) -> list[SearchHit]: ...

    def search(self, action: Action, call: ToolCall) -> list[SearchHit] | ToolOutput:
        if self.takes_image:
            query, bad = self.image_argument(action, call)
            if bad:
                return bad
        else:
            if problem := text_query(self, action.argument):
                return ToolOutput(action, error=problem)
            query = action.argument.strip()
        try:
            return self.ask(query, 2 * self.k + 2, call)  # type: ignore[arg-type]
        except NotSupported as e:
            return ToolOutput(action, error=f"the {self.provider.name} search provider has no {self.what} ({e})")
        except (SearchError, UserError) as e:
            return ToolOutput(action, error=str(e))
