"""`veracity mcp` over stdio: the SDK's stdio transport, with an answer for every request it cannot read.

The SDK reads each line with a strict JSON parser: a line holding a lone UTF-16 surrogate escape (`"\\ud800"`, which
Python's json module reads but no UTF-8 text can carry) or nested too deeply is handed to the server as an exception,
which the server can only log: the client waits for an answer that never comes. Here such a line is read again as
Python reads JSON and, when it is a request (it has an id), answered: a `tools/call` with a tool error naming the
argument and what is wrong with it (the rule of the HTTP API's bodies, `server.safe.check_tree`), any other method
with a JSON-RPC "invalid params" error. A line that is no request at all (a notification, not JSON) is left to the
SDK, which logs it, as before.
"""

from __future__ import annotations

import json
import re
from types import TracebackType
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from ..server.errors import ApiError
from ..server.safe import check_tree, has_lone_surrogate

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

INVALID_REQUEST, INVALID_PARAMS = -32600, -32602
_LEADING_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def answer_for(line: str) -> dict[str, Any] | None:
    """The JSON-RPC answer to a line the SDK could not read, when it is a request: a tool error (tools/call) or an
    "invalid params" error saying what is wrong and where; None when there is no request to answer."""
    try:
        msg = json.loads(line)
    except RecursionError:  # nested too deeply for Python too: the id, if it comes before the params, is still read
        return _error(_leading_id(line), INVALID_REQUEST, "the request is nested too deeply to be read")
    except ValueError:
        return None
    if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
        return None
    request_id = msg["id"]
    if (
        isinstance(request_id, str)
        and has_lone_surrogate(request_id)
        or not isinstance(request_id, (int, str))
        or isinstance(request_id, bool)
    ):
        return None  # no id an answer can carry back
    params = msg.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    try:
        if msg["method"] == "tools/call" and isinstance(arguments, dict):
            check_tree(arguments)  # a path from the arguments: the field's name ("claim", "evidence.0")
        check_tree(params)
    except ApiError as e:
        if msg["method"] == "tools/call" and isinstance(arguments, dict):
            text = e.detail.replace("the JSON body", "the tool's arguments")
            return {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"content": [{"type": "text", "text": text}], "isError": True},
            }
        return _error(request_id, INVALID_PARAMS, e.detail)
    return _error(request_id, INVALID_REQUEST, "the request could not be read as MCP: check its JSON and fields")


def _error(request_id: Any, code: int, message: str) -> dict[str, Any] | None:
    if request_id is None:
        return None
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _leading_id(line: str) -> int | str | None:
    """The request's id when it comes before its params (as clients write it), from a line too deep to parse."""
    m = _LEADING_ID.search(line.split('"params"', 1)[0])
    if m is None:
        return None
    try:
        value = json.loads(m.group(1))
    except ValueError:
        return None
    return None if isinstance(value, str) and has_lone_surrogate(value) else value


class AnsweringReader:
    """The server's read stream (the SDK's `ReadStream`), answering each unreadable request on `write` itself
    (`answer_for`) instead of passing the SDK's parse error on, which would leave it unanswered."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner, self._write = inner, write

    @property
    def last_context(self) -> Any:  # the sender's context, which the SDK reads from a context-aware stream
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            answer = _answer_of(item) if isinstance(item, Exception) else None
            if answer is None:
                return item
            await self._write.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(answer)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReader:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReader:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _answer_of(exc: Exception) -> dict[str, Any] | None:
    """The answer to the line behind an SDK parse error (a pydantic ValidationError carries the line it read)."""
    errors = getattr(exc, "errors", None)
    try:
        first = errors()[0] if callable(errors) else {}
    except Exception:  # noqa: BLE001 - not a validation error of a line: the SDK handles it
        return None
    line = first.get("input") if first.get("type") == "json_invalid" else None
    return answer_for(line) if isinstance(line, str) else None


async def serve_stdio(mcp: MCPServer) -> None:
    """`mcp` over stdio (as MCPServer.run_stdio_async), every unreadable request answered (`AnsweringReader`)."""
    server = mcp._lowlevel_server  # the SDK's own stdio runner uses it so too
    async with stdio_server() as (read_stream, write_stream):
        await server.run(
            AnsweringReader(read_stream, write_stream), write_stream, server.create_initialization_options()
        )
