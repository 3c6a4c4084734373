"""An OpenAI-compatible stub server on 127.0.0.1 for tests: scripted statuses, delays, concurrency counts."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

# A scripted QACheck run (rules file for `--model scripted:FILE`): one question, recited evidence, a
# Supported verdict, 7 model calls. Shared by the CLI tests, the server tests and the load benchmark.
QACHECK_RULES = {"rules": [
    {"match": "first ask a simple question:\\nQuestion =$", "reply": " Where is the Orrin Bridge?"},
    {"match": "Relevant passage =$", "reply": " The Orrin Bridge is a stone bridge in Tallinn, Estonia."},
    {"match": "Answer =$", "reply": " Tallinn"},
    {"match": "The answer:$", "reply": " Yes"},
    {"match": "Prediction =$", "reply": " Yes, we can know."},
    {"match": "true or false\\?\\nAnswer:$", "reply": "\nThe Orrin Bridge is in Tallinn.\n"},
    {"match": "final answer is:$", "reply": " True"},
]}


# respond(request body) -> (HTTP status, JSON payload, seconds to wait before answering)
Responder = Callable[[dict[str, Any]], tuple[int, dict[str, Any], float]]


def message_text(body: dict[str, Any]) -> str:
    """The last message's text, whether its content is a string or parts (text and image_url, as sent with images)."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def image_parts(body: dict[str, Any]) -> list[str]:
    """The image URLs (data: URLs included) of the last message."""
    content = body["messages"][-1]["content"]
    return [] if isinstance(content, str) else [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


def chat_response(text: str, prompt_tokens: int = 11, completion_tokens: int = 2) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class StubServer:
    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub.lock:
                    stub.requests.append(body)
                    stub.active += 1
                    stub.max_active = max(stub.max_active, stub.active)
                try:
                    status, payload, delay = stub.respond(body)
                    time.sleep(delay)
                finally:
                    with stub.lock:
                        stub.active -= 1
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("retry-after-ms", "10")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @classmethod
    def scripted(cls, script: list[tuple[int, dict[str, Any], float]]) -> "StubServer":
        """Answer the n-th request with script[n] (the last entry repeats)."""
        holder: list[StubServer] = []
        srv = cls(lambda body: script[min(len(holder[0].requests), len(script)) - 1])
        holder.append(srv)
        return srv

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
