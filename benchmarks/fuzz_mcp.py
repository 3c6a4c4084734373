"""The drivers of fuzz_surfaces.py for `veracity mcp`: over stdio (raw JSON-RPC lines, ten calls at a time, each
batch bounded) and over HTTP (`--http`: foreign Origins, tool calls, malformed bodies); and the helpers of the
drivers that start a `veracity` process (`free_port`, `stop`, `tracebacks`).
"""

from __future__ import annotations

import json
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from fuzz_inputs import FOREIGN, TOOLS, tool_inputs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tracebacks(path: Path) -> int:
    return path.read_text(errors="replace").count("Traceback (most recent call last)") if path.exists() else 0


def stop(proc: subprocess.Popen) -> None:
    """Terminate `proc`; kill it when it has not exited within 15 s."""
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


# -- veracity mcp over stdio ------------------------------------------------------------------------------------


def fuzz_stdio(base: Path, env: dict[str, str], rng: random.Random, bound: float) -> dict:
    rules = base / "rules.json"
    stderr = base / "mcp-stdio.err"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "veracity.cli",
            "mcp",
            "--model",
            f"scripted:{rules}",
            "--db",
            str(base / "runs.sqlite"),
            "--max-queue",
            "1000",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr.open("wb"),
        env=env,
        cwd=base,
    )
    answered: set[int] = set()
    lines: queue.Queue = queue.Queue()  # the server's output, line by line, read as it comes

    def read() -> None:
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()

    def send(line: str) -> None:
        proc.stdin.write(line.encode("utf-8") + b"\n")
        proc.stdin.flush()

    def collect(wanted: set[int], seconds: float) -> None:
        deadline = time.time() + seconds
        while wanted - answered and time.time() < deadline:
            try:
                msg = json.loads(lines.get(timeout=max(0.01, deadline - time.time())))
            except queue.Empty:
                break
            except ValueError:
                continue
            if isinstance(msg, dict) and isinstance(msg.get("id"), int):
                answered.add(msg["id"])

    send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "fuzz", "version": "0"},
                },
            }
        )
    )
    collect({0}, 120)
    send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    cases = tool_inputs(rng)
    hangs = []
    for start in range(0, len(cases), 10):  # ten at a time, each batch bounded
        batch = {}
        for n, (what, params) in enumerate(cases[start : start + 10], start=start + 1):
            batch[n] = what
            send('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}' % (n, params))
        collect(set(batch), bound)
        hangs += [what for n, what in batch.items() if n not in answered]
    proc.stdin.close()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    return {"inputs": len(cases), "hangs": len(hangs), "tracebacks": tracebacks(stderr), "hung": hangs[:20]}


# -- veracity mcp --http ------------------------------------------------------------------------------------------


def fuzz_mcp_http(base: Path, env: dict[str, str], rng: random.Random, bound: float) -> dict:
    port = free_port()
    stderr = base / "mcp-http.err"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "veracity.cli",
            "mcp",
            "--http",
            "--port",
            str(port),
            "--model",
            f"scripted:{base / 'rules.json'}",
            "--db",
            str(base / "runs.sqlite"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=stderr.open("wb"),
        env=env,
        cwd=base,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    counts = {"inputs": 0, "hangs": 0, "http_500": 0, "foreign_origin_served": 0, "foreign_origin_inputs": 0}
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        head = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "0"},
            },
        }

        def post(body: str | bytes, headers: dict) -> httpx.Response | None:
            counts["inputs"] += 1
            try:
                r = httpx.post(
                    url, content=body if isinstance(body, bytes) else body.encode(), headers=headers, timeout=bound
                )
            except httpx.TimeoutException:
                counts["hangs"] += 1
                return None
            except httpx.HTTPError:
                return None
            counts["http_500"] += r.status_code == 500
            return r

        r = post(json.dumps(init), head)
        session = r.headers.get("mcp-session-id") if r is not None else None
        in_session = {**head, **({"mcp-session-id": session} if session else {})}
        post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), in_session)
        for origin in FOREIGN:
            origin = origin.format(port=port)
            for body, headers in (
                (json.dumps(init), head),
                (
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": 2,
                            "method": "tools/call",
                            "params": {"name": "check_claim", "arguments": TOOLS["check_claim"]},
                        }
                    ),
                    in_session,
                ),
            ):
                counts["foreign_origin_inputs"] += 1
                r = post(body, {**headers, "Origin": origin})
                counts["foreign_origin_served"] += r is not None and r.status_code < 400
        for n, (what, params) in enumerate(rng.sample(tool_inputs(rng), 40), start=10):
            post('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}' % (n, params), in_session)
        for raw in (
            b"{",
            b"\xff\xfe",
            b"[]",
            b"null",
            b'{"jsonrpc": "2.0", "id": 3, "method": "x\\ud800"}',
            ("[" * 100000 + "]" * 100000).encode(),
        ):
            post(raw, in_session)
    finally:
        stop(proc)
    counts["tracebacks"] = tracebacks(stderr)
    return counts
