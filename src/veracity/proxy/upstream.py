"""The upstream model server the proxy forwards to: an OpenAI-compatible `/v1` URL, called with the proxy's own key.

Bodies go out as the client sent them and come back as the upstream wrote them (raw JSON, raw server-sent events),
so that every standard field reaches the client unchanged. The client's `Authorization` header is the proxy's
business and is never forwarded; the upstream key (from the proxy's environment) is never echoed: any upstream
reply text that contains it has it replaced.

Every failure becomes an `UpstreamError` with the status the client gets: the upstream's own for an HTTP error
(its body passed on), 504 for a timeout, 502 when it cannot be reached or sends something that is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

REDACTED = "[upstream key removed]"


class UpstreamError(Exception):
    """What the client is answered when the upstream fails: `status` and an OpenAI-shaped error `body`."""

    def __init__(self, status: int, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body or error_body(message, "upstream_error")


def error_body(message: str, code: str, kind: str = "veracity_proxy_error") -> dict[str, Any]:
    """The error shape OpenAI clients read (`error.message` becomes the exception's text)."""
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


@dataclass
class Upstream:
    """One upstream server: its `/v1` base URL, the key sent to it, and how long a reply may take."""

    url: str
    key: str | None = None
    timeout: float = 120.0

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        # no retries here: the client's own library retries what it considers worth retrying
        self.client = httpx.AsyncClient(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )

    async def close(self) -> None:
        await self.client.aclose()

    def redact(self, text: str) -> str:
        return text.replace(self.key, REDACTED) if self.key else text

    async def get_json(self, path: str) -> tuple[int, dict[str, Any]]:
        """GET `path` (e.g. /models): the status and JSON of a success, else an UpstreamError."""
        try:
            resp = await self.client.get(path)
        except httpx.HTTPError as e:
            raise self._failure(e) from None
        return resp.status_code, self._json(resp)

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body (not streamed): the upstream's JSON reply, else an UpstreamError."""
        try:
            resp = await self.client.post(path, json=body)
        except httpx.HTTPError as e:
            raise self._failure(e) from None
        return self._json(resp)

    async def stream_events(self, path: str, body: dict[str, Any]) -> AsyncIterator[str]:
        """POST a streaming request and yield the `data:` payload of each server-sent event as the upstream sends
        it, `[DONE]` excluded. An error status before the stream begins is an UpstreamError."""
        try:
            async with self.client.stream("POST", path, json=body) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    self._json(resp)  # raises with the upstream's status and message
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # comments, event names, blank separators
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    yield data
        except httpx.HTTPError as e:
            raise self._failure(e) from None

    def _json(self, resp: httpx.Response) -> dict[str, Any]:
        text = self.redact(resp.text)
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if resp.status_code >= 400:
            message = _message(data) or text.strip()[:300] or resp.reason_phrase
            body = data if isinstance(data, dict) and isinstance(data.get("error"), dict) else None
            if body is not None and isinstance(body["error"].get("message"), str):
                body = {**body, "error": {**body["error"], "message": f"upstream model server: {message}"}}
            raise UpstreamError(
                resp.status_code, f"upstream model server answered HTTP {resp.status_code}: {message}", body
            )
        if not isinstance(data, dict):
            raise UpstreamError(502, f"upstream model server at {self.url} sent a reply that is not a JSON object")
        return data

    def _failure(self, e: httpx.HTTPError) -> UpstreamError:
        if isinstance(e, httpx.TimeoutException):
            what = f"upstream model server at {self.url} did not answer within {self.timeout:g} s"
            return UpstreamError(504, what, error_body(what, "upstream_timeout"))
        what = f"cannot reach the upstream model server at {self.url}: {self.redact(str(e)) or type(e).__name__}"
        return UpstreamError(502, what, error_body(what, "upstream_unreachable"))


def _message(data: Any) -> str | None:
    """The message of an upstream error body: OpenAI's {"error": {"message"}}, or {"error": "..."}, {"detail"}."""
    if not isinstance(data, dict):
        return None
    err = data.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return err["message"]
    for value in (err, data.get("detail"), data.get("message")):
        if isinstance(value, str):
            return value
    return None
