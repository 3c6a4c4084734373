"""A bounded fuzz pass over the surfaces agents and applications call (issue 61): `veracity mcp` over stdio (raw
JSON-RPC lines) and over HTTP, `veracity proxy`, and `veracity recheck`; loopback only, the scripted model.

    .venv/bin/python benchmarks/fuzz_surfaces.py [--src DIR] [--seed 0] [--out fuzz.json]

`--src` runs another source tree's `veracity` (e.g. an unpacked older commit: `git archive HEAD src | tar -x -C
/tmp/orig`, then `--src /tmp/orig/src`), so that the counts before and after a fix are taken with the same inputs.
Inputs: lone UTF-16 surrogate escapes in every string argument of every tool and in chat requests, deep nesting,
huge strings, wrong types, foreign Origins, malformed JSON, run ids and run stores no file can be. Counted per
surface: hangs (no answer within the bound), HTTP 500s, foreign Origins served, tracebacks (in the processes'
stderr), and for the CLI exits other than 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

RULES = {"rules": [  # QACheck's prompts, answered as the tests' scripted model answers them
    {"match": "first ask a simple question:\\nQuestion =$", "reply": " Where is the Orrin Bridge?"},
    {"match": "Relevant passage =$", "reply": " The Orrin Bridge is a stone bridge in Tallinn, Estonia."},
    {"match": "Answer =$", "reply": " Tallinn"},
    {"match": "The answer:$", "reply": " Yes"},
    {"match": "Prediction =$", "reply": " Yes, we can know."},
    {"match": "true or false\\?\\nAnswer:$", "reply": "\nThe Orrin Bridge is in Tallinn.\n"},
    {"match": "final answer is:$", "reply": " True"}]}
SURROGATES = ["\\ud800", "\\udc00", "a\\udbffb", "\\udfff\\ud800", "x\\ud83d"]  # as JSON text: lone halves
TOOLS = {"check_claim": {"claim": "The Orrin Bridge stands in Tallinn."},
         "check_text": {"text": "The Orrin Bridge stands in Tallinn."},
         "check_answer": {"question": "Where is the Orrin Bridge?", "answer": "It is in Tallinn."},
         "search_evidence": {"query": "Orrin Bridge"},
         "get_run": {"run_id": "0123456789abcdef"}}
STRING_FIELDS = {"check_claim": ["claim", "pipeline", "date", "image_base64", "evidence.0"],
                 "check_text": ["text", "pipeline", "evidence.0"], "check_answer": ["question", "answer"],
                 "search_evidence": ["query"], "get_run": ["run_id"]}
FOREIGN = ["http://evil.example", "null", "http://127.0.0.1.evil.example", "https://evil.example:443",
           "http://localhost.evil.example:{port}", "file://", "http://[::1].evil.example"]


def env_for(base: Path, src: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_") and k != "OPENAI_API_KEY"}
    env.update(XDG_CACHE_HOME=str(base / "cache"), XDG_DATA_HOME=str(base / "data"), PYTHONUNBUFFERED="1",
               PYTHONIOENCODING="utf-8", VERACITY_KB="off")
    if src:
        env["PYTHONPATH"] = src
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tracebacks(path: Path) -> int:
    return path.read_text(errors="replace").count("Traceback (most recent call last)") if path.exists() else 0


# -- inputs -------------------------------------------------------------------------------------------------------

def put(args: dict, field: str, value: str) -> str:
    """The tool arguments as JSON text with `field` (dotted: evidence.0) set to the raw JSON string `value`."""
    d = json.loads(json.dumps(args))
    name, _, index = field.partition(".")
    d[name] = ["MARK"] if index else "MARK"
    return json.dumps(d).replace('"MARK"', f'"{value}"')


def tool_inputs(rng: random.Random) -> list[tuple[str, str]]:
    """(what, params JSON text) of tools/call requests."""
    out = []
    for tool, fields in STRING_FIELDS.items():
        for field in fields:
            for s in SURROGATES:
                out.append((f"surrogate {tool}.{field}", json.dumps({"name": tool}).replace(
                    "}", ', "arguments": ' + put(TOOLS[tool], field, s) + "}")))
    for tool, args in TOOLS.items():
        for depth in (80, 300, 5000):
            deep = "[" * depth + "]" * depth
            field = next(iter(args))
            out.append((f"deep {depth} {tool}", json.dumps({"name": tool}).replace(
                "}", ', "arguments": ' + json.dumps(args).replace(json.dumps(args[field]), deep, 1) + "}")))
        for bad in (42, None, [], {}, True, 1e308, -1, "", " " * 5000):
            field = next(iter(args))
            out.append((f"type {tool}.{field}={str(bad)[:10]!r}", json.dumps(
                {"name": tool, "arguments": {**args, field: bad}})))
        # 1 MB of text; for check_text 100 kB in one sentence (claims/sentences.py's segmenter takes quadratic
        # time in the number of sentences: 3,000 short ones take ~20 s, which is no answer within the bound)
        huge = "word " * 20_000 if tool == "check_text" else "x " * rng.choice((500_000, 600_000))
        out.append((f"huge {tool}", json.dumps({"name": tool, "arguments": {**args, next(iter(args)): huge}})))
    for extra in ({"k": "five"}, {"k": -3}, {"k": 10**9}, {"max_claims": 0}, {"max_claims": "x"},
                  {"evidence": "not a list"}, {"evidence": [1, 2]}, {"evidence": ["x"] * 50}, {"date": "2999-01-01"},
                  {"image_base64": "!!!"}, {"image_path": "/etc/passwd"}):
        tool = "search_evidence" if "k" in extra else "check_text" if "max_claims" in extra else "check_claim"
        out.append((f"wrong {tool} {extra!s:.30}", json.dumps({"name": tool, "arguments": {**TOOLS[tool], **extra}})))
    out.append(("unknown tool", json.dumps({"name": "rm_rf", "arguments": {}})))
    out.append(("no arguments", json.dumps({"name": "check_claim"})))
    return out


# -- veracity mcp over stdio ------------------------------------------------------------------------------------

def fuzz_stdio(base: Path, env: dict[str, str], rng: random.Random, bound: float) -> dict:
    rules = base / "rules.json"
    stderr = base / "mcp-stdio.err"
    proc = subprocess.Popen([sys.executable, "-m", "veracity.cli", "mcp", "--model", f"scripted:{rules}",
                             "--db", str(base / "runs.sqlite"), "--max-queue", "1000"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr.open("wb"), env=env, cwd=base)
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

    send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}}))
    collect({0}, 120)
    send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    cases = tool_inputs(rng)
    hangs = []
    for start in range(0, len(cases), 10):  # ten at a time, each batch bounded
        batch = {}
        for n, (what, params) in enumerate(cases[start:start + 10], start=start + 1):
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
    proc = subprocess.Popen([sys.executable, "-m", "veracity.cli", "mcp", "--http", "--port", str(port),
                             "--model", f"scripted:{base / 'rules.json'}", "--db", str(base / "runs.sqlite")],
                            stdout=subprocess.DEVNULL, stderr=stderr.open("wb"), env=env, cwd=base)
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
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}}

        def post(body: str | bytes, headers: dict) -> httpx.Response | None:
            counts["inputs"] += 1
            try:
                r = httpx.post(url, content=body if isinstance(body, bytes) else body.encode(), headers=headers,
                               timeout=bound)
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
            for body, headers in ((json.dumps(init), head),
                                  (json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                                      "name": "check_claim", "arguments": TOOLS["check_claim"]}}), in_session)):
                counts["foreign_origin_inputs"] += 1
                r = post(body, {**headers, "Origin": origin})
                counts["foreign_origin_served"] += r is not None and r.status_code < 400
        for n, (what, params) in enumerate(rng.sample(tool_inputs(rng), 40), start=10):
            post('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}' % (n, params), in_session)
        for raw in (b"{", b"\xff\xfe", b"[]", b"null", b'{"jsonrpc": "2.0", "id": 3, "method": "x\\ud800"}',
                    ("[" * 100000 + "]" * 100000).encode()):
            post(raw, in_session)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    counts["tracebacks"] = tracebacks(stderr)
    return counts


# -- veracity proxy -----------------------------------------------------------------------------------------------

class Upstream(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{
            "index": 0, "message": {"role": "assistant", "content": "Paris is in France."},
            "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def chat_bodies(rng: random.Random) -> list[bytes]:
    ok = {"model": "m", "messages": [{"role": "user", "content": "Where is Paris?"}]}
    out = []
    for s in SURROGATES:
        for where in ("content", "role", "model", "extra"):
            d = json.loads(json.dumps(ok))
            if where == "content":
                d["messages"][0]["content"] = "MARK"
            elif where == "role":
                d["messages"][0]["role"] = "MARK"
            elif where == "model":
                d["model"] = "MARK"
            else:
                d["user"] = "MARK"
            out.append(json.dumps(d).replace('"MARK"', f'"{s}"').encode())
    for depth in (50, 500, 5000, 100000):
        out.append((json.dumps(ok)[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}").encode())
        out.append(('{"model": "m", "messages": [{"role": "user", "content": ' + "[" * depth + "]" * depth
                    + "}]}").encode())
    for messages in ("x", 5, None, [1], [{"role": 5}], [{"role": "user", "content": {"a": 1}}],
                     [{"role": "user", "content": [{"type": "text", "text": 5}]}], [{"role": "user"}], []):
        out.append(json.dumps({"model": "m", "messages": messages}).encode())
    for extra in ({"stream": "yes"}, {"stream": 1}, {"temperature": "hot"}, {"n": -1}):
        out.append(json.dumps({**ok, **extra}).encode())
    out += [b"{", b"", b"\xff\xfe\x00", b"[]", b'"x"', (json.dumps(ok)[:-1] + ', "t": NaN}').encode(),
            (json.dumps(ok)[:-1] + ', "t": 1e999}').encode(),
            json.dumps({**ok, "messages": [{"role": "user", "content": "Paris. " * 200000}]}).encode()]
    rng.shuffle(out)
    return out


def fuzz_proxy(base: Path, env: dict[str, str], rng: random.Random, bound: float) -> dict:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    stderr = base / "proxy.err"
    proc = subprocess.Popen([sys.executable, "-m", "veracity.cli", "proxy", "--port", "0", "--upstream",
                             f"http://127.0.0.1:{upstream.server_port}/v1", "--rate-limit", "0",
                             "--db", str(base / "runs.sqlite")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=base, text=True)
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
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        upstream.shutdown()
    counts["tracebacks"] = "".join(log).count("Traceback (most recent call last)")
    return counts


# -- veracity recheck ---------------------------------------------------------------------------------------------

def fuzz_recheck(base: Path, env: dict[str, str], rng: random.Random, bound: float) -> dict:
    db = base / "runs.sqlite"  # made by the MCP runs above: a real store
    notes = base / "notes.txt"
    notes.write_text("not a database\n" * 100)
    (base / "empty.sqlite").write_bytes(b"")
    (base / "bad.json").write_text("{not json")
    (base / "list.json").write_text("[1, 2]")
    (base / "deep.json").write_text("[" * 100000 + "]" * 100000)
    cases = [["a" * 1024, "--db", str(db)], ["a" * 10000, "--db", str(db)], ["ab\x01cd", "--db", str(db)],
             ["../../etc/passwd", "--db", str(db)], ["x" * 300 + ".json"], ["0123456789abcdef", "--db", str(notes)],
             ["0123456789abcdef", "--db", str(base)], ["0123456789abcdef", "--db", str(base / "empty.sqlite")],
             ["0123456789abcdef", "--db", "/dev/null"], [str(base / "bad.json")], [str(base / "list.json")],
             [str(base / "deep.json")], [str(base)], ["", "--db", str(db)], ["\u00e9\u6f22", "--db", str(db)]]
    counts = {"inputs": len(cases), "tracebacks": 0, "exit_not_2": 0, "hangs": 0, "failed": []}
    for args in cases:
        try:
            r = subprocess.run([sys.executable, "-m", "veracity.cli", "recheck", *args], capture_output=True,
                               text=True, env=env, cwd=base, timeout=bound * 3)
        except subprocess.TimeoutExpired:
            counts["hangs"] += 1
            continue
        tb = "Traceback (most recent call last)" in r.stderr
        counts["tracebacks"] += tb
        counts["exit_not_2"] += r.returncode != 2
        if tb or r.returncode != 2:
            counts["failed"].append((args[0][:30], r.returncode, r.stderr.strip().splitlines()[-1][:120]
                                     if r.stderr.strip() else ""))
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", help="the source tree whose veracity to run (default: the installed one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bound", type=float, default=20.0, help="seconds an answer may take before it is a hang")
    ap.add_argument("--out", help="also write the counts here as JSON")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="veracity-fuzz-") as tmp:
        base = Path(tmp)
        (base / "rules.json").write_text(json.dumps(RULES))
        env = env_for(base, args.src)
        result = {"stdio": fuzz_stdio(base, env, rng, args.bound),
                  "mcp_http": fuzz_mcp_http(base, env, rng, args.bound),
                  "proxy": fuzz_proxy(base, env, rng, args.bound),
                  "recheck": fuzz_recheck(base, env, rng, args.bound)}
    total = sum(r["inputs"] for r in result.values())
    print(f"{total} inputs ({args.src or 'installed veracity'})")
    print("| surface | inputs | hangs | HTTP 500 | foreign Origin served | tracebacks | CLI exit not 2 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in result.items():
        origin = f"{r['foreign_origin_served']} of {r['foreign_origin_inputs']}" if "foreign_origin_inputs" in r else "–"
        print(f"| {name} | {r['inputs']} | {r['hangs']} | {r.get('http_500', '–')} | {origin} | {r['tracebacks']} | "
              f"{r.get('exit_not_2', '–')} |")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
