"""An OpenAI-compatible stub server on 127.0.0.1 for tests: scripted statuses, delays, concurrency counts.

`StubServer(respond)` answers chat requests (POST .../chat/completions) with `respond(body)`; other paths get
404, as from a chat-only server. `StubServer(FakeModel(...))` plays a server with a toy model behind both
endpoints and chosen capabilities (log-probabilities, grammar, guided choice, JSON schema, strictness about
unknown fields). `.requests` holds every request body, `.paths` their paths, `.headers` their headers;
GET .../models lists one model, "stub".
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A scripted QACheck run (rules file for `--model scripted:FILE`): one question, recited evidence, a
# Supported verdict, 7 model calls. Shared by the CLI tests, the server tests and the load benchmark.
QACHECK_RULES = {
    "rules": [
        {"match": "first ask a simple question:\\nQuestion =$", "reply": " Where is the Orrin Bridge?"},
        {"match": "Relevant passage =$", "reply": " The Orrin Bridge is a stone bridge in Tallinn, Estonia."},
        {"match": "Answer =$", "reply": " Tallinn"},
        {"match": "The answer:$", "reply": " Yes"},
        {"match": "Prediction =$", "reply": " Yes, we can know."},
        {"match": "true or false\\?\\nAnswer:$", "reply": "\nThe Orrin Bridge is in Tallinn.\n"},
        {"match": "final answer is:$", "reply": " True"},
    ]
}


# respond(request body) -> (HTTP status, JSON payload, seconds to wait before answering)
Responder = Callable[[dict[str, Any]], tuple[int, dict[str, Any], float]]


def message_text(body: dict[str, Any]) -> str:
    """The last message's text, whether its content is a string or parts (text and image_url, as sent with images);
    a completions request's prompt."""
    if "messages" not in body:
        return str(body.get("prompt", ""))
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def image_parts(body: dict[str, Any]) -> list[str]:
    """The image URLs (data: URLs included) of the last message."""
    content = body["messages"][-1]["content"]
    return [] if isinstance(content, str) else [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


def chat_response(text: str, prompt_tokens: int = 11, completion_tokens: int = 2) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class StubServer:
    def __init__(self, respond: Responder | FakeModel) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub.lock:
                    stub.requests.append(body)
                    stub.paths.append(self.path)
                    stub.headers.append({k.lower(): v for k, v in self.headers.items()})
                    stub.active += 1
                    stub.max_active = max(stub.max_active, stub.active)
                try:
                    if hasattr(stub.respond, "answer"):  # a FakeModel, or anything serving both endpoints
                        status, payload, delay = stub.respond.answer(self.path, body)
                    elif self.path.endswith("/chat/completions"):
                        status, payload, delay = stub.respond(body)
                    else:
                        status, payload, delay = 404, {"error": {"message": f"no route {self.path}"}}, 0
                    time.sleep(delay)
                finally:
                    with stub.lock:
                        stub.active -= 1
                stream = isinstance(payload, list)  # a list of chunks is sent as server-sent events
                data = (
                    "".join(f"data: {json.dumps(c)}\n\n" for c in payload) + "data: [DONE]\n\n"
                    if stream
                    else json.dumps(payload)
                ).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
                    self.send_header("retry-after-ms", "10")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                found = self.path.endswith("/models")
                data = json.dumps(
                    {"object": "list", "data": [{"id": "stub", "object": "model", "created": 0, "owned_by": "stub"}]}
                    if found
                    else {"error": {"message": f"no route {self.path}"}}
                ).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @classmethod
    def scripted(cls, script: list[tuple[int, dict[str, Any], float]]) -> StubServer:
        """Answer the n-th request with script[n] (the last entry repeats)."""
        holder: list[StubServer] = []
        srv = cls(lambda body: script[min(len(holder[0].requests), len(script)) - 1])
        holder.append(srv)
        return srv

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeModel:
    """A toy model behind an OpenAI-compatible server with chosen capabilities.

    `next_tokens(text)` gives the log-probabilities of the next token after the prompt text (a chat request's
    last message, or a completions prompt); the reply is its likeliest token, or `reply(text)` when given.
    A constrained request (grammar, guided_choice, json_schema) gets the allowed option its likeliest token
    starts. `strict`: unknown fields are refused with HTTP 400, as OpenAI does. `usage`: token counts in
    replies; `timings`: llama.cpp's timings (cache_n) in replies. `logprob_format`: "openai" (the legacy
    completions format on /v1/completions, the chat format on chat), or "llama.cpp" (llama-server: the chat
    format's `content` list on both endpoints).
    """

    def __init__(
        self,
        next_tokens: Callable[[str], dict[str, float]],
        *,
        completions: bool = True,
        logprobs: bool = True,
        grammar: bool = False,
        guided_choice: bool = False,
        json_schema: bool = False,
        strict: bool = False,
        reply: Callable[[str], str] | None = None,
        timings: dict[str, int] | None = None,
        delay: float = 0.0,
        logprob_format: str = "openai",
    ) -> None:
        self.next_tokens, self.reply, self.timings, self.delay = next_tokens, reply, timings, delay
        self.logprob_format = logprob_format
        self.completions, self.logprobs, self.strict = completions, logprobs, strict
        self.takes = {"grammar": grammar, "guided_choice": guided_choice, "response_format": json_schema}

    KNOWN = {
        "model",
        "messages",
        "prompt",
        "max_tokens",
        "temperature",
        "stop",
        "seed",
        "n",
        "stream",
        "stream_options",
        "logprobs",
        "top_logprobs",
        "response_format",
    }

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any, float]:
        chat = path.endswith("/chat/completions")
        if not chat and not (self.completions and path.endswith("/completions")):
            return 404, {"error": {"message": f"no route {path}"}}, 0
        unknown = sorted(set(body) - self.KNOWN - {k for k, v in self.takes.items() if v})
        if self.strict and unknown:
            return 400, {"error": {"message": f"Unrecognized request argument supplied: {unknown[0]}"}}, 0
        text = message_text(body) if chat else body["prompt"]
        dist = self.next_tokens(text)
        allowed = self._allowed(body)
        if allowed:
            out = max(allowed, key=lambda o: _mass(dist, o))
            out = json.dumps({"answer": out}) if "response_format" in body and self.takes["response_format"] else out
        else:
            out = self.reply(text) if self.reply else max(dist, key=dist.get)
            out = out[: body.get("max_tokens", 16) * 8]
        top = dict(sorted(dist.items(), key=lambda kv: -kv[1])[:20])
        want_lp = self.logprobs and (body.get("logprobs") or body.get("top_logprobs"))
        lp = None
        if want_lp and (chat or self.logprob_format == "llama.cpp"):
            lp = {
                "content": [
                    {
                        "token": out,
                        "logprob": dist.get(out, -9.0),
                        "bytes": None,
                        "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in top.items()],
                    }
                ]
            }
        elif want_lp:
            lp = {"tokens": [out], "token_logprobs": [dist.get(out, -9.0)], "top_logprobs": [top], "text_offset": [0]}
        usage = {"prompt_tokens": len(text.split()), "completion_tokens": 1, "total_tokens": len(text.split()) + 1}
        choice = (
            {"index": 0, "message": {"role": "assistant", "content": out}, "logprobs": lp, "finish_reason": "stop"}
            if chat
            else {"index": 0, "text": out, "logprobs": lp, "finish_reason": "stop"}
        )
        payload = {
            "id": "x",
            "object": "chat.completion" if chat else "text_completion",
            "created": 0,
            "model": "fake",
            "choices": [choice],
            "usage": usage,
        }
        if self.timings is not None:
            payload["timings"] = self.timings
        if body.get("stream"):
            chunk = dict(payload, object="chat.completion.chunk" if chat else "text_completion", usage=None)
            if chat:
                chunk["choices"] = [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": out},
                        "logprobs": lp,
                        "finish_reason": "stop",
                    }
                ]
            return 200, [chunk], self.delay
        return 200, payload, self.delay

    def _allowed(self, body: dict[str, Any]) -> list[str]:
        """The options a constrained request allows (when this server takes its kind of constraint)."""
        if "grammar" in body and self.takes["grammar"]:
            return [json.loads(f'"{m}"') for m in re.findall(r'"((?:[^"\\]|\\.)*)"', body["grammar"]) if m.strip()]
        if "guided_choice" in body and self.takes["guided_choice"]:
            return list(body["guided_choice"])
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and self.takes["response_format"]:
            return list(fmt["json_schema"]["schema"]["properties"]["answer"]["enum"])
        return []


def _mass(dist: dict[str, float], option: str) -> float:
    """The probability of the tokens that start `option`."""
    return sum(math.exp(v) for t, v in dist.items() if t.strip() and option.lower().startswith(t.lstrip().lower()))
