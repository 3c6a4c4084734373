"""The FastAPI application: `create_app(config, settings)` wires storage, the executor, limits and auth.

    from veracity.config import load_config
    from veracity.server.app import create_app
    from veracity.server.settings import ServerSettings
    app = create_app(load_config(), ServerSettings(db_path="runs.sqlite"))   # then: uvicorn.run(app)

`create_app` refuses (UserError) to build an app for a non-loopback host without VERACITY_API_TOKEN.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..check import open_retriever
from ..errors import DatabaseUnavailable
from ..reading import human_size
from .api import health
from .api import router as api_router
from .auth import Auth
from .catalog import Catalog
from .errors import ApiError
from .limits import RateLimiter
from .pages import router as pages_router
from .pages import template_globals
from .requests import job_for
from .runs import RunManager
from .safe import mend
from .settings import ServerSettings
from .state import ServerState
from .store import RunStore
from .uploads import ImageUploads

if TYPE_CHECKING:
    from ..config import Config
    from ..retrieval.base import Retriever

log = logging.getLogger("veracity.server")
HERE = Path(__file__).resolve().parent

DESCRIPTION = """Check claims with veracity's pipelines and follow every step as it happens.

POST /api/checks starts a check and answers 202 with its id; GET /api/checks/{id}/events streams its
trace steps (Server-Sent Events) and a final `done` event; GET /api/checks/{id} has the stored run.
Pipelines that look at images (`accepts_images` in GET /api/pipelines: defame and its ablations) take
the claim's images inline, `"images": [{"data": "<base64>", "filename": "photo.jpg"}]`, and any claim
may carry its `date` (YYYY-MM-DD). POST /api/texts checks a whole text (or a .txt/.md/.html/.pdf file): its
claims are extracted with their spans and each is checked, as one run with the same events and reports.
Errors are JSON: `{"error": code, "detail": what to fix}`. When the server was started with
VERACITY_API_TOKEN, send `Authorization: Bearer TOKEN`."""


def body_limits(settings: ServerSettings) -> dict[str, tuple[int, str]]:
    """The POST paths whose bodies may be larger than `max_body_bytes`, with their limit and what it allows: a
    check with images (the API, base64; the page's plain form, multipart), a text check (its text or file)."""
    text = (settings.text_body_bytes, f" (a text of at most {human_size(settings.max_text_bytes)})")
    images = (settings.upload_body_bytes, " (with its images in base64: send fewer or smaller images)")
    return {"/api/checks": images, "/api/texts": text, "/checks": max(images, text)}


class BodyTooLarge(StarletteHTTPException):
    """A body without Content-Length that grew past the limit while being read."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over the limit of {limit} bytes")


class GuardMiddleware:
    """Answers, before any route: a Host header that is not loopback while no token is set (DNS rebinding),
    and request bodies over the size limit (`max_body_bytes`, or the path's own in `limits`: the POSTs that may
    carry images or a text). A body sent without Content-Length is counted as it is read."""

    def __init__(
        self, app: Any, auth: Auth, max_body_bytes: int, limits: dict[str, tuple[int, str]] | None = None
    ) -> None:
        self.app = app
        self.auth = auth
        self.max_body = max_body_bytes
        self.limits = {path: (max(max_body_bytes, limit), what) for path, (limit, what) in (limits or {}).items()}

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        error = None
        if not self.auth.host_allowed(headers.get("host", "")):
            error = ApiError(
                421,
                "bad_host",
                "this server only answers requests addressed to localhost, 127.0.0.1 "
                "or [::1]; to serve other hosts, set VERACITY_API_TOKEN",
            )
        else:
            limit, what = (
                (self.limits.get(scope.get("path"), (self.max_body, "")))
                if scope.get("method") == "POST"
                else (self.max_body, "")
            )
            if limit <= self.max_body:
                what = ""
            try:
                length = int(headers.get("content-length") or 0)
            except ValueError:
                length = 0
            if length > limit:
                error = ApiError(
                    413, "body_too_large", f"the request body has {length} bytes; the limit is {limit}{what}"
                )
            elif "transfer-encoding" in headers:  # chunked: no length to look at before reading
                receive = self._counting(receive, limit)
        if error is None:
            return await self.app(scope, receive, send)
        resp = JSONResponse(error.body(), status_code=error.status, headers=error.headers)
        await resp(scope, receive, send)

    @staticmethod
    def _counting(receive: Any, limit: int) -> Any:
        seen = 0

        async def counted() -> dict:
            nonlocal seen
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        return counted


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True, trim_blocks=True, lstrip_blocks=True
    )
    env.globals.update(template_globals())
    env.globals["version"] = __version__
    return Jinja2Templates(env=env)


class SafeJSONResponse(JSONResponse):
    """JSON that can always be written: a lone surrogate or a non-finite number (from a stored run, a model, an
    echoed input) is mended (`safe.mend`) instead of failing the response."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except (ValueError, UnicodeEncodeError):
            return super().render(mend(content))


def _bytes_text(data: bytes) -> str:
    """A body echoed in a validation error (not JSON, so kept as bytes): as text, never a decoding error."""
    return data[:1000].decode("utf-8", "replace")


def _validation_message(errors: list[dict[str, Any]]) -> str:
    parts = []
    for e in errors:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x not in ("body", "query", "path", "header"))
        parts.append(f"{loc or 'request'}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request is not valid"


def create_state(
    config: Config,
    settings: ServerSettings | None = None,
    *,
    env: Mapping[str, str] | None = None,
    retriever: Retriever | None = None,
    lazy_models: bool = False,
    shared_queue: bool = False,
) -> ServerState:
    """What the routes share: the run store, the models and pipelines, the executor, the limits. Also what the MCP
    server and the proxy run their checks through, so that their runs are the page's runs. `shared_queue`: a
    `veracity serve` worker over a store several workers share (PostgreSQL) takes its runs from the database's
    queue, and counts rate limits there; the MCP server and the proxy run what they accept themselves."""
    settings = settings or ServerSettings()
    settings.validate()
    auth = Auth.for_host(settings.host, os.environ if env is None else env)
    store = RunStore(settings.db_path)
    catalog = Catalog(
        config,
        settings.extra_models,
        max_answer_chars=settings.max_answer_chars,
        max_images=settings.max_images,
        max_image_bytes=settings.max_image_bytes,
        max_text_bytes=settings.max_text_bytes,
        max_text_claims=settings.max_text_claims,
        lazy_models=lazy_models,
    )
    uploads = ImageUploads(
        settings.images_path, store, max_bytes=settings.max_image_bytes, max_images=settings.max_images
    )
    if retriever is None:  # the index (by default the Wikipedia knowledge base), or the wikipedia search, or none
        retriever = open_retriever(config)
    shared = shared_queue and store.shared
    rebuild = partial(job_for, catalog, uploads.folder) if shared else None
    manager = RunManager(
        store,
        catalog,
        max_concurrent=settings.max_concurrent,
        max_queue=settings.max_queue,
        retriever=retriever,
        rebuild=rebuild,
    )
    limiter = RateLimiter(settings.rate_limit, settings.rate_burst, shared=store if shared else None)
    state = ServerState(
        config=config,
        settings=settings,
        auth=auth,
        store=store,
        catalog=catalog,
        manager=manager,
        limiter=limiter,
        templates=_templates(),
        uploads=uploads,
    )
    return state


def create_app(
    config: Config,
    settings: ServerSettings | None = None,
    *,
    env: Mapping[str, str] | None = None,
    retriever: Retriever | None = None,
) -> FastAPI:
    state = create_state(config, settings, env=env, retriever=retriever, shared_queue=True)
    store, uploads, manager, settings = state.store, state.uploads, state.manager, state.settings

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        ids = store.reap()  # runs of workers that are gone (this server before a crash included)
        if ids:
            log.warning("marked %d run(s) cut off by a stopped server as interrupted: %s", len(ids), ", ".join(ids))
        swept = uploads.sweep()
        if swept:
            log.info("deleted %d uploaded image(s) that no run uses", swept)
        yield
        manager.shutdown()

    # FastAPI's /docs and /redoc pages load their scripts from a CDN, which an offline install cannot
    # reach; the schema itself is served at /openapi.json.
    app = FastAPI(
        title="veracity",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        default_response_class=SafeJSONResponse,
    )
    app.state.veracity = state

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return SafeJSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # the errors echo the input: mended, so a NaN or a lone surrogate there cannot fail the answer
        errors = mend(jsonable_encoder(exc.errors(), custom_encoder={Exception: str, bytes: _bytes_text}))
        return SafeJSONResponse(
            {"error": "invalid_request", "detail": _validation_message(errors), "errors": errors}, status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}.get(exc.status_code, "http_error")
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404:
            detail = f"nothing at {request.url.path}: see /openapi.json for the API"
        return SafeJSONResponse(
            {"error": code, "detail": detail}, status_code=exc.status_code, headers=getattr(exc, "headers", None)
        )

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, DatabaseUnavailable) or _lost_database(exc):
            log.warning("%s %s: the run database is unreachable: %s", request.method, request.url.path, exc)
            db = getattr(store, "db", None)
            where = db.shown() if db is not None else "the run database"
            return SafeJSONResponse(
                {
                    "error": "database_unavailable",
                    "detail": f"the run database ({where}) is unreachable; try again when it is back",
                },
                status_code=503,
                headers={"Retry-After": "5"},
            )
        # the last resort (Starlette logs the traceback too): the client still gets the one error shape
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return SafeJSONResponse(
            {"error": "internal_error", "detail": "the server failed to answer this request; its log has the details"},
            status_code=500,
        )

    app.include_router(health)
    app.include_router(api_router)
    app.include_router(pages_router)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.add_middleware(
        GuardMiddleware, auth=state.auth, max_body_bytes=settings.max_body_bytes, limits=body_limits(settings)
    )
    if settings.trusted_proxies:
        # X-Forwarded-For and X-Forwarded-Proto count only from these peers (the client address then is the
        # nearest untrusted one in X-Forwarded-For): for the rate limit and the access log. From anyone else
        # the headers are ignored and the peer address is the client.
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(settings.trusted_proxies))
    return app


def _lost_database(exc: BaseException) -> bool:
    """A PostgreSQL connection lost inside a transaction (psycopg's OperationalError): the database, not the server."""
    return type(exc).__module__.startswith("psycopg") and type(exc).__name__ == "OperationalError"
