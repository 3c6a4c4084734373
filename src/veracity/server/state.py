"""What the server's routes share: `ServerState` (built by `app.create_app`, kept on `app.state.veracity`) and
`state(request)`, the accessor the API and the pages read it through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.templating import Jinja2Templates

from .auth import Auth
from .catalog import Catalog
from .limits import RateLimiter
from .runs import RunManager
from .settings import ServerSettings
from .store import RunStore
from .uploads import ImageUploads

if TYPE_CHECKING:
    from ..config import Config


@dataclass
class ServerState:
    config: Config
    settings: ServerSettings
    auth: Auth
    store: RunStore
    catalog: Catalog
    manager: RunManager
    limiter: RateLimiter
    templates: Jinja2Templates
    uploads: ImageUploads


def state(request: Request) -> ServerState:
    return request.app.state.veracity
