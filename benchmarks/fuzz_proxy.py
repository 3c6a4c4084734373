"""The driver of fuzz_surfaces.py for `veracity proxy`: a stub upstream that always answers, the proxy in front
of it, and `chat_bodies` (fuzz_inputs.py) posted to its chat completions endpoint.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from fuzz_inputs import chat_bodies
from fuzz_mcp import stop


class Upstream(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Paris is in France."},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def fuzz_proxy(base: Path, env: dict[str, str], rng: random.Random, bound: float) -> dict:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "veracity.cli",
            "proxy",
            "--port",
            "0",
            "--upstream",
            f"http://127.0.0.1:{upstream.server_port}/v1",
            "--rate-limit",
            "0",
            "--db",
            str(base / "runs.sqlite"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=base,
        text=True,
    )
    log: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def drain() -> None:
        for line in proc.stderr:
            log.append(line)
            m = re.search(r"Uvicorn running on http://[0-9.]+:(\d+)", line)
            if m:
                url.append(f"http://127.0.0.1:{m.group(1)}/v1/chat/completions")
                found.set()
        found.set()

    threading.Thread(target=drain, daemon=True).start()
    counts = {"inputs": 0, "hangs": 0, "http_500": 0, "not_openai_shaped_4xx": 0, "failed": []}
    try:
        found.wait(90)
        for body in chat_bodies(rng):
            counts["inputs"] += 1
            try:
                r = httpx.post(url[0], content=body, headers={"Content-Type": "application/json"}, timeout=bound)
            except httpx.TimeoutException:
                counts["hangs"] += 1
                continue
            # a 500 is the proxy's own failure (502/504: the upstream's, said as such)
            counts["http_500"] += r.status_code == 500
            if r.status_code == 500:
                counts["failed"].append((body[:100].decode("utf-8", "replace"), r.status_code, r.text[:100]))
            if 400 <= r.status_code < 500:
                try:
                    err = r.json()["error"]
                    shaped = isinstance(err, dict) and {"message", "type", "code"} <= set(err)
                except (ValueError, KeyError, TypeError):
                    shaped = False
                counts["not_openai_shaped_4xx"] += not shaped
    finally:
        stop(proc)
        upstream.shutdown()
    counts["tracebacks"] = "".join(log).count("Traceback (most recent call last)")
    return counts
