"""`veracity mcp` against the MCP SDK's own client, over stdio (the server a subprocess the client starts) and over
streamable HTTP (a real server on 127.0.0.1): the tools and their schemas, each tool called, progress step by
step, cancellation, bad input as tool errors, the token guard, and the runs stored where the web page reads them."""

import json
import socket
import sqlite3
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from conftest import SERVER_RULES, rules_responder, server_env, write_rules
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from stub_server import StubServer

CLAIM = "The Orrin Bridge stands in Tallinn."
TOOLS = {"check_claim", "check_text", "check_answer", "search_evidence", "find_factchecks", "ground_answer", "get_run"}
INDEX_DOCS = [
    {
        "id": "orrin",
        "title": "Orrin Bridge",
        "text": "The Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in 1871.",
    },
    {"id": "kestrel", "title": "Kestrel Bay", "text": "Kestrel Bay is a novel written by Mara Lind in 1999."},
]


@pytest.fixture
def env(tmp_path):
    return server_env(tmp_path)


@pytest.fixture
def index(tmp_path, env):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in INDEX_DOCS))
    out = tmp_path / "index"
    r = subprocess.run(
        [sys.executable, "-m", "veracity.cli", "index", "build", str(docs), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return out


def stdio(args, env, tmp_path):
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "veracity.cli", "mcp", *args, "--db", str(tmp_path / "runs.sqlite")],
            env=env,
            cwd=str(tmp_path),
        )
    )


def stored(tmp_path, run_id):
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        db.row_factory = sqlite3.Row
        return dict(db.execute("select * from runs where id = ?", (run_id,)).fetchone())


def test_stdio_lists_the_tools_and_checks_a_claim_with_progress(tmp_path, env):
    model = write_rules(tmp_path / "rules.json")
    progress = []

    async def main():
        async with stdio(["--model", model], env, tmp_path) as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert set(listed) == TOOLS
            claim_tool = listed["check_claim"]
            assert claim_tool.input_schema["required"] == ["claim"]
            outputs = set(claim_tool.output_schema["properties"])
            assert {"label", "confidence", "uncertain", "evidence", "run_id"} <= outputs

            async def on_progress(done, total, message):
                progress.append((done, message))

            return await c.call_tool("check_claim", {"claim": CLAIM}, progress_callback=on_progress)

    r = anyio.run(main)
    assert not r.is_error, r.content
    out = r.structured_content
    assert out["label"] == "Supported" and out["claim"] == CLAIM and out["pipeline"] == "qacheck"
    assert out["basis"] == "memory" and out["uncertain"] and "memory" in out["uncertain_reason"]
    assert out["evidence"][0]["source"] == "recited by the model"
    # the text an agent reads leads with the uncertainty, never with the label alone as if it were a finding
    assert out["shown_as"] == "Uncertain, leaning Supported"
    assert r.content[0].text.startswith("Uncertain, leaning Supported: ") and out["run_id"] in r.content[0].text
    # one notification per step, numbered in order, saying what the check did
    assert [n for n, _ in progress] == list(range(1, len(progress) + 1)) and len(progress) >= 5
    assert any("Where is the Orrin Bridge?" in m or "question" in m.lower() for _, m in progress)
    # a stored run, where the web page's history reads it
    run = stored(tmp_path, out["run_id"])
    assert run["status"] == "done" and run["label"] == "Supported" and run["claim"] == CLAIM


def test_stdio_bad_input_is_a_tool_error_and_the_server_goes_on(tmp_path, env):
    model = write_rules(tmp_path / "rules.json")

    async def main():
        async with stdio(["--model", model], env, tmp_path) as c:
            empty = await c.call_tool("check_claim", {"claim": "   "})
            unknown = await c.call_tool("check_claim", {"claim": CLAIM, "pipeline": "no-such-pipeline"})
            no_image = await c.call_tool(
                "check_claim", {"claim": CLAIM, "pipeline": "defame", "image_path": str(tmp_path / "missing.png")}
            )
            no_index = await c.call_tool("search_evidence", {"query": "Orrin Bridge"})
            no_run = await c.call_tool("get_run", {"run_id": "0123456789abcdef"})
            wrong_type = await c.call_tool("check_text", {"text": 42})
            ok = await c.call_tool("check_claim", {"claim": CLAIM})
            return empty, unknown, no_image, no_index, no_run, wrong_type, ok

    empty, unknown, no_image, no_index, no_run, wrong_type, ok = anyio.run(main)
    for r in (empty, unknown, no_image, no_index, no_run, wrong_type):
        assert r.is_error and r.content[0].text
    assert "empty" in empty.content[0].text.lower()
    assert "no-such-pipeline" in unknown.content[0].text
    assert "missing.png" in no_image.content[0].text
    assert "--index" in no_index.content[0].text
    assert "0123456789abcdef" in no_run.content[0].text
    assert not ok.is_error and ok.structured_content["label"] == "Supported"


def test_stdio_checks_a_claim_against_the_evidence_an_agent_gives(tmp_path, env):
    """An agent that has read a page passes its passages: the claim is checked against them, no index needed."""
    model = write_rules(tmp_path / "rules.json")
    passages = [
        "Kestrel Bay is a novel written by Mara Lind in 1999.",
        "The Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in 1871.",
    ]

    async def main():
        async with stdio(["--model", model], env, tmp_path) as c:
            schema = {t.name: t for t in (await c.list_tools()).tools}["check_claim"].input_schema
            assert "evidence" in schema["properties"]
            return (
                await c.call_tool("check_claim", {"claim": CLAIM, "pipeline": "verifier", "evidence": passages}),
                await c.call_tool("check_claim", {"claim": CLAIM, "evidence": ["  "]}),
                await c.call_tool("check_text", {"text": "The Orrin Bridge was built in 1871.", "evidence": passages}),
            )

    r, empty, text = anyio.run(main)
    assert not text.is_error, text.content
    assert [c["outcome"] for c in text.structured_content["claims"]] == ["supported"]
    assert text.structured_content["pipeline"] == "verifier"  # documents to read: the evidence-only verifier
    assert not r.is_error, r.content
    out = r.structured_content
    assert out["label"] == "Supported" and out["basis"] == "evidence" and "memory" not in out["uncertain_reason"]
    assert [e["text"] for e in out["evidence"]][:2] == passages  # read in the order given
    assert empty.is_error and "empty" in empty.content[0].text


def test_stdio_text_answer_search_and_get_run_over_an_index(tmp_path, env, index):
    model = write_rules(
        tmp_path / "rules.json",
        {
            "rules": SERVER_RULES["rules"]
            + [
                {"match": "Search query:$", "reply": " Orrin Bridge Tallinn"},
                {"match": "Reasoning:$", "reply": " The passage says it is a bridge in Tallinn."},
                {"match": "in Tallinn\\.\\n?[^\\n]*:$", "reply": " Supported"},
            ]
        },
    )

    async def main():
        async with stdio(["--model", model, "--index", str(index)], env, tmp_path) as c:
            search = await c.call_tool("search_evidence", {"query": "Orrin Bridge Tallinn", "k": 2})
            text = await c.call_tool(
                "check_text",
                {"text": "The Orrin Bridge stands in Tallinn. It is made of stone.", "pipeline": "verifier"},
            )
            answer = await c.call_tool(
                "check_answer", {"question": "Where is the Orrin Bridge?", "answer": "The Orrin Bridge is in Tallinn."}
            )
            again = await c.call_tool("get_run", {"run_id": text.structured_content["run_id"]})
            return search, text, answer, again

    search, text, answer, again = anyio.run(main)
    assert not search.is_error and search.structured_content["passages"][0]["source"] == "Orrin Bridge"
    assert "Tallinn" in search.structured_content["passages"][0]["text"]
    assert not text.is_error, text.content
    t = text.structured_content
    first, second = t["claims"]
    assert first["spans"] == [[0, 35]] and first["label"] == "Supported"
    assert first["outcome"] in ("supported", "uncertain")
    assert "Tallinn" in first["evidence"][0]["text"]
    assert second["outcome"] == "ambiguous"  # "It" names nothing on its own
    assert not answer.is_error, answer.content
    a = answer.structured_content
    assert a["checked"] == 1 and a["sentences"][0]["sentence"] == "The Orrin Bridge is in Tallinn."
    assert a["sentences"][0]["evidence"] and a["score"] in (0.0, 1.0)
    g = again.structured_content
    assert g["kind"] == "text" and g["status"] == "done" and g["text"]["claims"][0]["outcome"] == first["outcome"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(args, env, tmp_path, host="127.0.0.1"):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "veracity.cli",
            "mcp",
            "--http",
            "--host",
            host,
            "--port",
            str(port),
            "--db",
            str(tmp_path / "runs.sqlite"),
            *args,
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            httpx.get(url, timeout=1)
            return proc, url
        except httpx.HTTPError:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("veracity mcp --http did not start")


def test_http_cancellation_stops_the_run(tmp_path, env):
    slow = StubServer(rules_responder(delay=0.6))
    proc, url = start_http(["--model", "stub-model", "--base-url", slow.url, "--no-cache"], env, tmp_path)
    seen = []
    try:

        async def main():
            async with Client(url) as c:

                async def on_progress(done, total, message):
                    seen.append(done)

                with anyio.move_on_after(2.0):
                    await c.call_tool("check_claim", {"claim": CLAIM}, progress_callback=on_progress)
                    raise AssertionError("the check should still be running")
                await anyio.sleep(2.0)  # the run stops at its next step
                runs = await c.call_tool("get_run", {"run_id": run_id()})
                after = await c.call_tool("check_claim", {"claim": CLAIM})  # the server goes on
                return runs, after

        def run_id():
            with sqlite3.connect(tmp_path / "runs.sqlite") as db:
                return db.execute("select id from runs order by created limit 1").fetchone()[0]

        runs, after = anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        slow.close()
    assert seen, "progress was reported before the cancellation"
    r = runs.structured_content
    assert r["status"] == "interrupted" and "cancelled" in r["error"]
    assert not after.is_error and after.structured_content["label"] == "Supported"


def test_http_needs_the_token_off_loopback(tmp_path, env):
    model = write_rules(tmp_path / "rules.json")
    token = "s3cret-token-for-the-mcp-test-0123456789"
    env = dict(env, VERACITY_API_TOKEN=token)
    proc, url = start_http(["--model", model], env, tmp_path, host="0.0.0.0")
    try:
        refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=10)
        assert refused.status_code == 401 and "Bearer" in refused.json()["error"]["message"]

        async def main():
            import httpx2

            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
                from mcp.client.streamable_http import streamable_http_client

                async with Client(streamable_http_client(url, http_client=http)) as c:
                    return await c.call_tool("check_claim", {"claim": CLAIM})

        r = anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert not r.is_error and r.structured_content["label"] == "Supported"


def test_http_without_token_refuses_a_foreign_host(tmp_path, env):
    model = write_rules(tmp_path / "rules.json")
    proc, url = start_http(["--model", model], env, tmp_path)
    try:
        r = httpx.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Host": "evil.example"}, timeout=10
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert r.status_code == 421


def test_a_non_loopback_host_without_token_does_not_start(tmp_path, env):
    r = subprocess.run(
        [sys.executable, "-m", "veracity.cli", "mcp", "--http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode != 0 and "VERACITY_API_TOKEN" in r.stderr


def test_the_default_pipeline_is_the_servers_and_an_unknown_one_stops_it_at_once(tmp_path, env):
    model = write_rules(tmp_path / "rules.json")
    r = subprocess.run(
        [sys.executable, "-m", "veracity.cli", "mcp", "--model", model, "--pipeline", "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode != 0 and "nope" in r.stderr and "qacheck" in r.stderr

    async def main():
        async with stdio(["--model", model, "--pipeline", "qacheck-closed-book"], env, tmp_path) as c:
            return await c.call_tool("check_claim", {"claim": CLAIM})

    out = anyio.run(main)
    assert not out.is_error, out.content
    assert out.structured_content["pipeline"] == "qacheck-closed-book"


# -- bad input an SDK client would never send: raw JSON-RPC lines over a real stdio session ----------------------

SURROGATE_FIELDS = [
    ("check_claim", {"claim": "S"}, "claim"),
    ("check_claim", {"claim": CLAIM, "evidence": ["fine", "S"]}, "evidence.1"),
    ("check_claim", {"claim": CLAIM, "pipeline": "S"}, "pipeline"),
    ("check_claim", {"claim": CLAIM, "date": "S"}, "date"),
    ("check_text", {"text": "S"}, "text"),
    ("check_text", {"text": "Paris is in France.", "evidence": ["S"]}, "evidence.0"),
    ("check_answer", {"question": "S", "answer": "Paris."}, "question"),
    ("check_answer", {"question": "Where?", "answer": "S"}, "answer"),
    ("search_evidence", {"query": "S"}, "query"),
    ("get_run", {"run_id": "S"}, "run_id"),
]


class RawSession:
    """`veracity mcp` over stdio, spoken to line by line (raw JSON-RPC), every wait bounded."""

    def __init__(self, args, env, tmp_path):
        import queue
        import threading

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "veracity.cli", "mcp", *args, "--db", str(tmp_path / "runs.sqlite")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(tmp_path / "stderr.txt", "wb"),
            env=env,
            cwd=tmp_path,
        )
        self.stderr = tmp_path / "stderr.txt"
        self.lines = queue.Queue()  # what the server writes, line by line, read as it comes

        def read():
            for line in self.proc.stdout:
                self.lines.put(line)

        threading.Thread(target=read, daemon=True).start()

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode("ascii") + b"\n")  # the escapes as JSON text: "\\ud800", not the bytes
        self.proc.stdin.flush()

    def answer(self, request_id, timeout=60.0):
        """The response to `request_id` (notifications skipped), or None when none came within `timeout`."""
        import queue

        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                msg = json.loads(self.lines.get(timeout=max(0.01, deadline - time.time())))
            except queue.Empty:
                break
            if msg.get("id") == request_id:
                return msg
        return None

    def initialize(self):
        self.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"},
                    },
                }
            )
        )
        assert self.answer(0, 120) is not None, self.stderr.read_text()
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udc00"])
def test_stdio_a_lone_surrogate_in_any_argument_is_a_tool_error_naming_it(tmp_path, env, escape):
    """A tool argument holding half of a UTF-16 surrogate pair (JSON allows the escape; no UTF-8 text can carry
    it) is answered at once with a tool error naming the argument, for every string field of every tool; the
    session goes on and checks the next claim."""
    model = write_rules(tmp_path / "rules.json")
    session = RawSession(["--model", model], env, tmp_path)
    try:
        session.initialize()
        answers = []
        for n, (tool, arguments, field) in enumerate(SURROGATE_FIELDS, start=1):
            raw = json.dumps(
                {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
            )
            session.send(raw.replace('"S"', f'"bad {escape} text"'))
            answers.append((tool, field, session.answer(n, timeout=30)))
        session.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 99,
                    "method": "tools/call",
                    "params": {"name": "check_claim", "arguments": {"claim": CLAIM}},
                }
            )
        )
        after = session.answer(99)
    finally:
        session.close()
    for tool, field, msg in answers:
        assert msg is not None, f"{tool}({field}): no answer"
        result = msg["result"]
        assert result["isError"] and result["content"][0]["text"].startswith(f"{field}: "), (tool, msg)
        assert "lone UTF-16 surrogate" in result["content"][0]["text"]
    assert after is not None and not after["result"].get("isError"), after
    assert after["result"]["structuredContent"]["shown_as"] == "Uncertain, leaning Supported"
    assert "Traceback" not in session.stderr.read_text()


def test_stdio_a_request_nested_too_deeply_is_answered(tmp_path, env):
    model = write_rules(tmp_path / "rules.json")
    session = RawSession(["--model", model], env, tmp_path)
    try:
        session.initialize()
        deep = "[" * 3000 + "]" * 3000
        session.send(
            '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_run", '
            '"arguments": {"run_id": ' + deep + "}}}"
        )
        msg = session.answer(7, timeout=30)
    finally:
        session.close()
    assert msg is not None and ("error" in msg or msg["result"]["isError"]), msg
    assert "Traceback" not in session.stderr.read_text()


# -- the Origin of browser requests over HTTP (DNS rebinding, other sites' pages) ----------------------------------


def _initialize(url, origin=None):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if origin is not None:
        headers["Origin"] = origin
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    return httpx.post(url, json=body, headers=headers, timeout=30)


def test_http_refuses_a_foreign_origin_and_serves_its_own_and_the_allowed_ones(tmp_path, env):
    model = write_rules(tmp_path / "rules.json")
    proc, url = start_http(["--model", model, "--allow-origin", "http://localhost:6274"], env, tmp_path)
    port = url.split(":")[2].split("/")[0]
    try:
        refused = {
            o: _initialize(url, o)
            for o in (
                "http://evil.example",
                "null",
                "http://127.0.0.1.evil.example",
                f"http://127.0.0.1.evil.example:{port}",
                "http://localhost:6275",
            )
        }
        served = {
            o: _initialize(url, o)
            for o in (None, f"http://127.0.0.1:{port}", f"http://localhost:{port}", "http://localhost:6274")
        }

        async def call(origin):  # a tools/call from a page elsewhere, through the SDK's own client
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers={"Origin": origin}, timeout=60) as http:
                async with Client(streamable_http_client(url, http_client=http)) as c:
                    return await c.call_tool("check_claim", {"claim": CLAIM})

        with pytest.raises(BaseException):  # the client is refused (403) before any session starts
            anyio.run(call, "http://evil.example")
        own = anyio.run(call, f"http://127.0.0.1:{port}")
        runs = sqlite3.connect(tmp_path / "runs.sqlite").execute("select count(*) from runs").fetchone()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    for origin, r in refused.items():
        assert r.status_code == 403 and "origin" in r.json()["error"]["message"], (origin, r.status_code, r.text)
    for origin, r in served.items():
        assert r.status_code == 200 and "serverInfo" in r.text, (origin, r.status_code, r.text)
    assert not own.is_error and runs == 1  # the foreign page's call started no check


def test_an_allowed_origin_that_is_no_origin_stops_the_server_at_once(tmp_path, env):
    r = subprocess.run(
        [sys.executable, "-m", "veracity.cli", "mcp", "--http", "--allow-origin", "evil.example"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode == 2 and "--allow-origin" in r.stderr and "Traceback" not in r.stderr
