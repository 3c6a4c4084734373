"""`veracity mcp` against the MCP SDK's own client, over stdio (the server a subprocess the client starts) and over
streamable HTTP (a real server on 127.0.0.1): the tools and their schemas, each tool called, progress step by
step, cancellation, bad input as tool errors, the token guard, and the runs stored where the web page reads them."""

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import SERVER_RULES, rules_responder, server_env, write_rules
from stub_server import StubServer

CLAIM = "The Orrin Bridge stands in Tallinn."
TOOLS = {"check_claim", "check_text", "check_answer", "search_evidence", "get_run"}
INDEX_DOCS = [{"id": "orrin", "title": "Orrin Bridge",
               "text": "The Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in 1871."},
              {"id": "kestrel", "title": "Kestrel Bay", "text": "Kestrel Bay is a novel written by Mara Lind in 1999."}]


@pytest.fixture
def env(tmp_path):
    return server_env(tmp_path)


@pytest.fixture
def index(tmp_path, env):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in INDEX_DOCS))
    out = tmp_path / "index"
    r = subprocess.run([sys.executable, "-m", "veracity.cli", "index", "build", str(docs), "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def stdio(args, env, tmp_path):
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "veracity.cli", "mcp", *args,
                                                                      "--db", str(tmp_path / "runs.sqlite")],
                                        env=env, cwd=str(tmp_path)))


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
    assert r.content[0].text.startswith("Supported") and out["run_id"] in r.content[0].text
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
            no_image = await c.call_tool("check_claim", {"claim": CLAIM, "pipeline": "defame",
                                                         "image_path": str(tmp_path / "missing.png")})
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
    passages = ["Kestrel Bay is a novel written by Mara Lind in 1999.",
                "The Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in 1871."]

    async def main():
        async with stdio(["--model", model], env, tmp_path) as c:
            schema = {t.name: t for t in (await c.list_tools()).tools}["check_claim"].input_schema
            assert "evidence" in schema["properties"]
            return (await c.call_tool("check_claim", {"claim": CLAIM, "pipeline": "verifier", "evidence": passages}),
                    await c.call_tool("check_claim", {"claim": CLAIM, "evidence": ["  "]}),
                    await c.call_tool("check_text", {"text": "The Orrin Bridge was built in 1871.",
                                                     "evidence": passages}))

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
    model = write_rules(tmp_path / "rules.json", {"rules": SERVER_RULES["rules"] + [
        {"match": "Search query:$", "reply": " Orrin Bridge Tallinn"},
        {"match": "Reasoning:$", "reply": " The passage says it is a bridge in Tallinn."},
        {"match": "in Tallinn\\.\\n?[^\\n]*:$", "reply": " Supported"}]})

    async def main():
        async with stdio(["--model", model, "--index", str(index)], env, tmp_path) as c:
            search = await c.call_tool("search_evidence", {"query": "Orrin Bridge Tallinn", "k": 2})
            text = await c.call_tool("check_text", {"text": "The Orrin Bridge stands in Tallinn. It is made of "
                                                            "stone.", "pipeline": "verifier"})
            answer = await c.call_tool("check_answer", {"question": "Where is the Orrin Bridge?",
                                                        "answer": "The Orrin Bridge is in Tallinn."})
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
    proc = subprocess.Popen([sys.executable, "-m", "veracity.cli", "mcp", "--http", "--host", host, "--port", str(port),
                             "--db", str(tmp_path / "runs.sqlite"), *args], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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
        r = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Host": "evil.example"},
                       timeout=10)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert r.status_code == 421


def test_a_non_loopback_host_without_token_does_not_start(tmp_path, env):
    r = subprocess.run([sys.executable, "-m", "veracity.cli", "mcp", "--http", "--host", "0.0.0.0"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode != 0 and "VERACITY_API_TOKEN" in r.stderr


def test_the_default_pipeline_is_the_servers_and_an_unknown_one_stops_it_at_once(tmp_path, env):
    model = write_rules(tmp_path / "rules.json")
    r = subprocess.run([sys.executable, "-m", "veracity.cli", "mcp", "--model", model, "--pipeline", "nope"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert r.returncode != 0 and "nope" in r.stderr and "qacheck" in r.stderr

    async def main():
        async with stdio(["--model", model, "--pipeline", "qacheck-closed-book"], env, tmp_path) as c:
            return await c.call_tool("check_claim", {"claim": CLAIM})

    out = anyio.run(main)
    assert not out.is_error, out.content
    assert out.structured_content["pipeline"] == "qacheck-closed-book"
