"""The proxy's HTTP application: OpenAI's `/v1/chat/completions` and `/v1/models`, forwarded to the upstream, every
answer checked (`checking.AnswerChecks`) and handled by the request's policy (`policies`).

A reply is the upstream's JSON with one more key, `veracity`; a stream is the upstream's chunks as they come and,
before `[DONE]`, one more chunk with no choices and the `veracity` key. `flag` and `fc-rag` streams are held until
the answer is checked (the text they send depends on the check), then sent chunk by chunk.

Errors are OpenAI-shaped (`{"error": {"message", "type", "code"}}`): the upstream's status passed on, 504 for an
upstream timeout, 502 when it cannot be reached, 400 for a bad request, 401/421/413/429 from the web server's
guards (`server.auth`, `server.app.GuardMiddleware`, `server.limits.RateLimiter`), which the proxy reuses.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from .. import __version__
from ..server.app import GuardMiddleware
from ..server.auth import Auth
from ..server.errors import ApiError
from ..server.limits import RateLimiter
from ..server.safe import strict_json
from .checking import AnswerChecks, content_text, leaf_result, question_of
from .policies import Policy, PolicyError, better, flag_chunks, flag_points, flagged, streamed_text, with_knowledge
from .upstream import Upstream, UpstreamError, error_body

if TYPE_CHECKING:
    from ..server.settings import ServerSettings

log = logging.getLogger("veracity.proxy")
CHAT = "/chat/completions"


@dataclass
class ProxyState:
    upstream: Upstream
    checks: AnswerChecks
    auth: Auth
    limiter: RateLimiter
    policy: Policy
    max_knowledge: int
    max_question_chars: int


def error_response(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, code), status_code=status, headers=headers)


def create_proxy_app(state: ProxyState, settings: ServerSettings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        # unlike `veracity serve`, the proxy never marks unfinished runs interrupted at start: the web server
        # sharing the database may be running them. At its stop it marks only its own live runs (manager.shutdown).
        yield
        state.checks.manager.shutdown()
        await state.upstream.close()

    app = FastAPI(
        title="veracity proxy", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.detail, exc.code, exc.headers)

    def guard(request: Request) -> None:
        state.auth.check_api(request.headers, request.cookies)
        state.limiter.check(request.client.host if request.client else "unknown")

    @app.get("/v1/models")
    async def models(request: Request) -> JSONResponse:
        state.auth.check_api(request.headers, request.cookies)
        try:
            status, data = await state.upstream.get_json("/models")
        except UpstreamError as e:
            return JSONResponse(e.body, status_code=e.status)
        return JSONResponse(data, status_code=status)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", **state.checks.manager.counts()}

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        guard(request)
        try:  # the server's strict reading: a lone surrogate, nesting too deep or NaN is a 400 saying so, not a 500
            body = strict_json(await request.body())
        except ApiError as e:
            return error_response(400, e.detail, e.code)
        except ValueError:
            return error_response(400, "the request body is not JSON", "invalid_request")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return error_response(400, "a chat completion request needs a 'messages' list", "invalid_request")
        try:
            policy = Policy.of(request.headers, state.policy)
        except PolicyError as e:
            return error_response(400, str(e), "invalid_policy")
        question = question_of(body["messages"], state.max_question_chars)
        t0 = time.perf_counter()
        try:
            if body.get("stream"):
                return await _stream(state, body, question, policy, t0)
            return JSONResponse(await _reply(state, body, question, policy, t0))
        except UpstreamError as e:
            log.warning("upstream failed: %s", e)
            return JSONResponse(e.body, status_code=e.status)

    app.add_middleware(GuardMiddleware, auth=state.auth, max_body_bytes=settings.max_body_bytes)
    return app


# -- not streamed ------------------------------------------------------------------------------------------------


def _answer(reply: dict[str, Any]) -> Any:
    choices = reply.get("choices") or [{}]
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    return content_text(message.get("content")) if isinstance(message, dict) else ""


async def _reply(state: ProxyState, body: dict[str, Any], question: str, policy: Policy, t0: float) -> dict:
    reply = await state.upstream.post_json(CHAT, body)
    veracity = await state.checks.check(question, _answer(reply), body["messages"])
    if policy.name == "fc-rag":
        reply, veracity = await _fc_rag(state, body, question, policy, reply, veracity, stream=False)
    elif policy.name == "flag" and veracity["status"] == "checked":
        points = flag_points(veracity)
        message = reply["choices"][0]["message"]
        message["content"] = flagged(message["content"], points)
        veracity["flagged"] = len(points)
    return {**reply, "veracity": _finish(veracity, policy, t0)}


def _finish(veracity: dict[str, Any], policy: Policy, t0: float) -> dict[str, Any]:
    veracity["policy"] = policy.name
    veracity["proxy_seconds"] = round(time.perf_counter() - t0, 4)  # the whole request, the upstream's time included
    return veracity


async def _fc_rag(
    state: ProxyState,
    body: dict[str, Any],
    question: str,
    policy: Policy,
    reply: Any,
    veracity: dict[str, Any],
    *,
    stream: bool,
) -> tuple[Any, dict[str, Any]]:
    """Fact-Check-Then-RAG: (the reply kept, its veracity with `fc_rag` saying what happened). With `stream`, the
    replies are lists of chunks."""
    info: dict[str, Any] = {
        "threshold": policy.threshold,
        "regenerated": False,
        "chosen": "original",
        "original_score": veracity.get("score"),
    }
    if veracity["status"] != "checked":
        info["reason"] = "the original answer was not checked"
    elif veracity["score"] >= policy.threshold:
        info["reason"] = f"the score {veracity['score']:.2f} is not below the threshold"
    else:
        knowledge = leaf_result(_as_steps(veracity)).failed_evidence(state.max_knowledge)
        if not knowledge:
            info["reason"] = "no passages were retrieved for the unsupported units"
        else:
            again = with_knowledge(body, knowledge)
            try:
                second = await _collect(state, again) if stream else await state.upstream.post_json(CHAT, again)
            except UpstreamError as e:
                info["reason"] = f"the regeneration failed: {e}"
                return reply, {**veracity, "fc_rag": info}
            text = streamed_text(second) if stream else _answer(second)
            checked = await state.checks.check(question, text, body["messages"])
            info.update(
                regenerated=True,
                knowledge=len(knowledge),
                regenerated_score=checked.get("score"),
                original=veracity,
                original_text=streamed_text(reply) if stream else _answer(reply),
            )
            if better(veracity, checked):
                info.update(chosen="regenerated", reason="the regenerated answer scored at least as well")
                del info["original"]
                return second, {**checked, "fc_rag": info}
            info.update(reason="the original answer scored better")
            del info["original"], info["original_text"]
            info["regenerated_check"] = checked
    return reply, {**veracity, "fc_rag": info}


def _as_steps(veracity: dict[str, Any]) -> list[dict[str, Any]]:
    """The units of a `veracity` object as the `leaf_sentence` steps they came from (for `leaf_result`)."""
    return [
        {
            "stage": "leaf_sentence",
            "index": u["index"],
            "sentence": u["text"],
            "query": u.get("query", ""),
            "evidence": u["evidence"],
            "rating": u["verdict"],
            "confidence": u.get("confidence"),
            "read_as": u.get("read_as", ""),
        }
        for u in veracity.get("units", [])
    ]


# -- streamed ----------------------------------------------------------------------------------------------------


def _event(data: Any) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def _collect(state: ProxyState, body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(raw) async for raw in state.upstream.stream_events(CHAT, body)]


async def _stream(state: ProxyState, body: dict[str, Any], question: str, policy: Policy, t0: float):
    events = state.upstream.stream_events(CHAT, body)
    try:
        first = await events.__anext__()  # an upstream error status is answered as such, before any byte is sent
    except StopAsyncIteration:
        raise UpstreamError(502, "the upstream model server ended the stream without sending anything") from None

    async def upstream_events() -> AsyncIterator[str]:
        yield first
        async for raw in events:
            yield raw

    async def body_events() -> AsyncIterator[bytes]:
        chunks: list[dict[str, Any]] = []
        try:
            async for raw in upstream_events():
                chunk = json.loads(raw)
                chunks.append(chunk)
                if policy.name == "annotate":
                    yield _event(raw)  # as the upstream sent it, at once
        except UpstreamError as e:  # cut off mid-stream: the client library raises on an error event
            yield _event(e.body)
            yield _event("[DONE]")
            return
        except ValueError:
            yield _event(error_body("the upstream model server sent a chunk that is not JSON", "upstream_malformed"))
            yield _event("[DONE]")
            return
        veracity = await state.checks.check(question, streamed_text(chunks), body["messages"])
        if policy.name == "fc-rag":
            chunks, veracity = await _fc_rag(state, body, question, policy, chunks, veracity, stream=True)
        elif policy.name == "flag" and veracity["status"] == "checked":
            points = flag_points(veracity)
            chunks = flag_chunks(chunks, points)
            veracity["flagged"] = len(points)
        if policy.name != "annotate":
            for chunk in chunks:
                yield _event(chunk)
        head = chunks[0] if chunks else {}
        yield _event(
            {
                "id": head.get("id", "veracity"),
                "object": "chat.completion.chunk",
                "created": head.get("created", int(time.time())),
                "model": head.get("model", ""),
                "choices": [],
                "veracity": _finish(veracity, policy, t0),
            }
        )
        yield _event("[DONE]")

    return StreamingResponse(
        body_events(), media_type="text/event-stream", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
