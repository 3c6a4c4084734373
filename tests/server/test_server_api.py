"""The HTTP API against the real server: `veracity serve` on 127.0.0.1 (a subprocess), real HTTP (httpx).

Fast runs use the scripted backend (a rules file). Runs that must still be going while the test looks
(live streaming, the queue, delete while running, restarts) get their replies from the OpenAI-compatible
stub of tests/stub_server.py, answering with the same rules after a delay.
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import time

import httpx
import pytest
from conftest import SERVER_RULES, rules_responder, write_rules
from stub_server import StubServer

CLAIM = "The Orrin Bridge stands in Tallinn."
TOKEN = "test-token-0123456789abcdef"


# -- helpers -------------------------------------------------------------------------------------------


def read_sse(
    client: httpx.Client, url: str, headers: dict | None = None, timeout: float = 30, on_event=None
) -> list[tuple[str, str | None, dict]]:
    """Read a Server-Sent Events stream until its `done` event: [(event, id, data)]."""
    events: list[tuple[str, str | None, dict]] = []
    kind, ev_id, data = "message", None, []
    with client.stream("GET", url, headers=headers or {}, timeout=timeout) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith(":"):
                continue
            if line == "":
                if data:
                    events.append((kind, ev_id, json.loads("\n".join(data))))
                    if on_event:
                        on_event(events[-1])
                    if kind == "done":
                        return events
                kind, ev_id, data = "message", None, []
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                kind = value
            elif field == "id":
                ev_id = value
            elif field == "data":
                data.append(value)
    raise AssertionError(f"the stream ended without a done event: {events[-3:]}")


def start_check(client: httpx.Client, claim: str = CLAIM, **kw) -> str:
    r = client.post("/api/checks", json={"claim": claim, **kw})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def wait_for(client: httpx.Client, run_id: str, pred, timeout: float = 30) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        run = client.get(f"/api/checks/{run_id}").json()
        if pred(run):
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached the state: {run['status']}, {len(run['steps'])} steps")


def finished(run: dict) -> bool:
    return run["status"] not in ("queued", "running")


# -- servers -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fast(server_factory):
    """Scripted backend, a claim limit of 200 characters, no rate limit."""
    model = write_rules(server_factory.base / "rules.json")
    srv = server_factory(["--model", model, "--max-claim-chars", "200", "--rate-limit", "0"], name="fast")
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def stub():
    srv = StubServer(rules_responder(delay=0.05))
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def slow(server_factory, stub):
    """The rules answered by the stub after a delay; one check at a time, no response cache."""
    srv = server_factory(
        ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--max-concurrent", "1", "--rate-limit", "0"],
        name="slow",
    )
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        yield client


# -- a check, streamed and stored ----------------------------------------------------------------------


def test_check_streams_every_step_in_order_then_done(fast):
    run_id = start_check(fast)
    events = read_sse(fast, f"/api/checks/{run_id}/events")
    steps = [(int(i), d) for kind, i, d in events if kind == "step"]
    assert [i for i, _ in steps] == list(range(len(steps)))  # each step once, in order
    stages = [d["stage"] for _, d in steps]
    assert stages[0] == "claim" and stages[-1] == "verdict"
    assert stages.index("question") < stages.index("answer") < stages.index("validator") < stages.index("reasoner")
    answer = next(d for _, d in steps if d["stage"] == "answer")
    assert answer["answer"] == "Tallinn"
    assert answer["evidence"][0]["source"] == "recited by the model"
    assert stages.count("model_call") == 7
    kind, _, done = events[-1]
    assert kind == "done" and done["status"] == "done"
    assert done["verdict"]["label"] == "Supported" and done["usage"]["total"]["calls"] == 7

    # the stored run: the same steps, the verdict and usage
    run = fast.get(f"/api/checks/{run_id}").json()
    assert run["status"] == "done" and run["label"] == "Supported"
    assert run["steps"] == [d for _, d in steps]
    assert run["verdict"]["rationale"] == "The Orrin Bridge is in Tallinn."
    assert run["verdict"]["steps"][0]["question"] == "Where is the Orrin Bridge?"
    assert run["usage"]["total"]["prompt_tokens"] > 0 and run["seconds"] >= 0
    assert run["pipeline"] == "qacheck" and run["qa"] == "auto"  # the configured module; its steps say which ran
    assert run["model"].startswith("scripted:")
    assert [s["stage"] for s in fast.get(f"/api/checks/{run_id}?calls=false").json()["steps"]].count("model_call") == 0


def test_steps_arrive_while_the_run_is_still_going(slow, stub):
    run_id = start_check(slow)
    seen: list[tuple[float, str]] = []
    events = read_sse(slow, f"/api/checks/{run_id}/events", on_event=lambda e: seen.append((time.monotonic(), e[0])))
    kinds = [k for _, k in seen]
    assert kinds[0] == "status" and kinds[-1] == "done"
    first_step = next(t for t, k in seen if k == "step")
    assert seen[-1][0] - first_step > 0.2  # the first step came long before the end (7 calls x 50 ms)
    assert [e[2]["stage"] for e in events if e[0] == "step"][-1] == "verdict"
    assert events[-1][2]["status"] == "done"


def test_a_late_client_first_gets_the_steps_so_far(slow, stub):
    stub.respond.delay = 0.15
    try:
        run_id = start_check(slow)
        wait_for(slow, run_id, lambda r: len(r["steps"]) >= 4)
        late = read_sse(slow, f"/api/checks/{run_id}/events")
        ids = [int(i) for k, i, _ in late if k == "step"]
        assert ids == list(range(len(ids))) and late[-1][2]["status"] == "done"
        # resuming after step 3 (what EventSource sends as Last-Event-ID on reconnect)
        resumed = read_sse(slow, f"/api/checks/{run_id}/events", headers={"Last-Event-ID": "3"})
        assert [int(i) for k, i, _ in resumed if k == "step"] == ids[4:]
    finally:
        stub.respond.delay = 0.05


def test_checks_beyond_the_limit_wait_in_the_queue(slow, stub):
    stub.max_active = 0
    stub.respond.delay = 0.3  # a run takes about 2 s: long enough to see the third one move up the queue
    try:
        ids = [start_check(slow) for _ in range(3)]
        queued = slow.get(f"/api/checks/{ids[2]}").json()
        assert queued["status"] == "queued" and queued["queue_position"] == 2
        # its event stream says its place again each time it moves up, not only when the page opened (two runs once
        # both read "position 6" for as long as they waited)
        statuses = [d for k, _, d in read_sse(slow, f"/api/checks/{ids[2]}/events", timeout=120) if k == "status"]
        assert [d["queue_position"] for d in statuses if d["status"] == "queued"] == [2, 1]
        assert statuses[-1]["status"] == "running"
        runs = [wait_for(slow, i, finished, timeout=60) for i in ids]
    finally:
        stub.respond.delay = 0.05
    assert [r["status"] for r in runs] == ["done"] * 3
    assert stub.max_active == 1  # --max-concurrent 1: never two model calls at once


def test_deleting_a_running_check_stops_it(slow, stub):
    stub.respond.delay = 0.2
    try:
        run_id = start_check(slow)
        wait_for(slow, run_id, lambda r: r["status"] == "running" and len(r["steps"]) >= 2)
        assert slow.delete(f"/api/checks/{run_id}").status_code == 204
        assert slow.get(f"/api/checks/{run_id}").status_code == 404
        time.sleep(0.5)
        n = len(stub.requests)
        time.sleep(0.6)
        assert len(stub.requests) == n  # it asks the model nothing more
    finally:
        stub.respond.delay = 0.05


# -- history, delete, downloads --------------------------------------------------------------------------


def test_history_is_paged_newest_first(fast):
    ids = [start_check(fast, f"Claim number {i} about the Orrin Bridge.") for i in range(5)]
    for i in ids:
        wait_for(fast, i, finished)
    page = fast.get("/api/checks", params={"limit": 2, "offset": 0}).json()
    assert [r["id"] for r in page["items"]] == ids[::-1][:2]
    assert page["total"] >= 5 and page["limit"] == 2 and page["next_offset"] == 2
    page2 = fast.get("/api/checks", params={"limit": 2, "offset": 2}).json()
    assert [r["id"] for r in page2["items"]] == ids[::-1][2:4]
    item = page["items"][0]
    assert item["claim"] == "Claim number 4 about the Orrin Bridge." and item["label"] == "Supported"
    assert item["links"]["events"] == f"/api/checks/{item['id']}/events"
    last = fast.get("/api/checks", params={"limit": 100, "offset": page["total"]}).json()
    assert last["items"] == [] and last["next_offset"] is None


def test_delete_removes_the_run(fast):
    run_id = start_check(fast)
    wait_for(fast, run_id, finished)
    assert fast.delete(f"/api/checks/{run_id}").status_code == 204
    r = fast.get(f"/api/checks/{run_id}")
    assert r.status_code == 404 and r.json()["error"] == "not_found" and run_id in r.json()["detail"]
    assert fast.delete(f"/api/checks/{run_id}").status_code == 404
    assert run_id not in [x["id"] for x in fast.get("/api/checks", params={"limit": 100}).json()["items"]]


def test_reports_download_as_markdown_html_and_json(fast):
    run_id = start_check(fast)
    wait_for(fast, run_id, finished)
    md = fast.get(f"/api/checks/{run_id}/report.md")
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert f'filename="veracity-{run_id}.md"' in md.headers["content-disposition"]
    assert md.text.startswith(f"# Fact-check: {CLAIM}")
    # resting on the model's memory: uncertain, said so first (the label alone would read as a finding)
    assert "### Step 1: Where is the Orrin Bridge?" in md.text and "**Uncertain, leaning Supported**" in md.text
    html = fast.get(f"/api/checks/{run_id}/report.html")
    assert html.status_code == 200 and "<h1>Fact-check: The Orrin Bridge stands in Tallinn.</h1>" in html.text
    assert "<table>" in html.text  # usage by stage
    doc = fast.get(f"/api/checks/{run_id}/report.json").json()
    assert doc["id"] == run_id and doc["verdict"]["label"] == "Supported" and doc["usage"]["total"]["calls"] == 7
    assert doc["trace"] == fast.get(f"/api/checks/{run_id}").json()["steps"]  # one trace, everywhere
    assert fast.get(f"/api/checks/{run_id}/report.pdf").status_code == 404
    assert fast.get("/api/checks/nope/report.md").status_code == 404


def test_markup_in_a_claim_stays_text(fast):
    claim = 'The <script>alert("x")</script> bridge is <b>old</b>.'
    run_id = start_check(fast, claim)
    wait_for(fast, run_id, finished)
    page = fast.get(f"/checks/{run_id}").text
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    html = fast.get(f"/api/checks/{run_id}/report.html").text
    assert "<script>alert" not in html and "<b>old</b>" not in html


def test_the_page_form_works_without_javascript(fast):
    r = fast.post("/checks", data={"claim": CLAIM, "pipeline": "direct", "qa": "closed-book", "model": ""})
    assert r.status_code == 303, r.text  # qa is ignored for a pipeline without a QA module, as the page hides it
    run_id = r.headers["location"].rsplit("/", 1)[1]
    run = wait_for(fast, run_id, finished)
    assert run["pipeline"] == "direct" and run["qa"] is None
    page = fast.get(r.headers["location"])
    assert page.status_code == 200 and CLAIM in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    r = fast.post("/checks", data={"claim": "  "})
    assert r.status_code == 400 and "the claim is empty" in r.text and "<form" in r.text
    source = "The Danube flows through Vienna and Budapest."
    r = fast.post(
        "/checks", data={"claim": "The Danube flows through Vienna.", "pipeline": "verifier", "evidence": source}
    )
    assert r.status_code == 303, r.text  # with a source given, a pipeline that reads documents needs no index
    run = wait_for(fast, r.headers["location"].rsplit("/", 1)[1], finished)
    assert run["verdict"]["label"] == "Supported" and source in json.dumps(run["steps"])
    r = fast.post("/checks", data={"claim": "The Danube flows through Vienna.", "pipeline": "verifier"})
    assert r.status_code == 400 and "index" in r.text and "<form" in r.text  # without one: what to give
    for picked, used in (("auto", "retriever-reader"), ("closed-book", "closed-book")):
        r = fast.post("/checks", data={"claim": CLAIM, "pipeline": "qacheck", "qa": picked, "evidence": source})
        run = wait_for(fast, r.headers["location"].rsplit("/", 1)[1], finished)  # the select as drawn follows it
        assert run["status"] == "done" and run["qa"] == used, run
    history = fast.get("/partials/history").text  # the past checks say which were read against a source given
    assert "qacheck · closed-book · against a source given" in history and "verifier · against a" in history
    assert f"{CLAIM}</span>" in history and "direct · <time" in history  # a run without one: not said
    r = fast.post("/checks", data={"claim": CLAIM}, headers={"origin": "http://evil.example"})
    assert r.status_code == 403
    assert fast.get("/checks/0123456789abcdef").status_code == 404


def test_a_verdict_from_the_models_memory_is_shown_uncertain_with_why(fast):
    r = fast.post("/checks", data={"claim": CLAIM})  # default qacheck, recited answers, no index
    run = wait_for(fast, r.headers["location"].rsplit("/", 1)[1], finished)
    assert run["status"] == "done", run
    page = fast.get(r.headers["location"]).text
    assert "Uncertain because it rests on the model&#39;s memory only" in page and "--index" in page
    assert "uncertain: confidence below" not in page  # the threshold is not why


# -- what clients get wrong ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,status,code,says",
    [
        ({"claim": "   "}, 400, "claim_empty", "the claim is empty"),
        ({"claim": "x" * 201}, 400, "claim_too_long", "201 characters; this server accepts at most 200"),
        ({"claim": "A claim.", "pipeline": "nope"}, 400, "unknown_pipeline", "unknown pipeline 'nope'"),
        ({"claim": "A claim.", "qa": "retriever-reader"}, 400, "index_required", "--index DIR"),
        ({"claim": "A claim.", "pipeline": "qacheck-retriever-reader"}, 400, "index_required", "has none"),
        ({"claim": "A claim.", "qa": "psychic"}, 400, "unknown_qa", "closed-book"),
        ({"claim": "A claim.", "pipeline": "direct", "qa": "closed-book"}, 400, "qa_not_applicable", "leave qa out"),
        ({"claim": "A claim.", "model": "gguf:/etc/passwd"}, 400, "unknown_model", "this server offers"),
        ({"pipeline": "qacheck"}, 422, "invalid_request", "claim: Field required"),
        ({"claim": 42}, 422, "invalid_request", "claim"),
        ({"claim": "A claim.", "evidence": ["Some text.", "  "]}, 400, "evidence_empty", "passage 2 is empty"),
        ({"claim": "A claim.", "evidence": ["A passage."] * 21}, 400, "too_many_passages", "at most 20"),
        ({"claim": "A claim.", "evidence": ["x" * 200_001]}, 413, "evidence_too_long", "at most 200000"),
        ({"claim": "A claim.", "evidence": "one string"}, 422, "invalid_request", "evidence"),
        ({"question": "Q?", "answer": "A.", "evidence": ["Text."]}, 400, "evidence_not_applicable", "leave `evidence`"),
    ],
)
def test_bad_requests_say_what_to_fix(fast, body, status, code, says):
    r = fast.post("/api/checks", json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == code and says in r.json()["detail"]


def test_a_claim_is_checked_against_the_evidence_sent_with_it(fast):
    """`evidence` in the request: the claim is read against those passages (in the order sent, even one sharing no
    word with the claim), on a server without an index; a QA module that retrieves takes them as its index."""
    passages = [
        "Paris is in France.",
        "Europe's second-longest river passes Vienna and Budapest.",
        "The Danube flows through Vienna and Budapest.",
    ]
    run_id = start_check(fast, "The Danube flows through Vienna.", pipeline="verifier", evidence=passages)
    run = wait_for(fast, run_id, finished)
    assert run["status"] == "done", run
    found = next(s for s in run["steps"] if s["stage"] == "retrieval")["results"]
    assert [e["text"] for e in found] == passages and [e["source"] for e in found][0] == "evidence-1"
    decided = next(s for s in run["steps"] if s["stage"] == "evidence_verifier")
    assert run["verdict"]["label"] == "Supported" and decided["passage"] in (1, 2)  # the Danube's, not Paris
    r = fast.post("/api/checks", json={"claim": CLAIM, "qa": "retriever-reader", "evidence": passages})
    assert r.status_code == 202, r.text  # no index on this server, and none needed
    # naming no QA module, QACheck answers its questions from the passages sent, not from the model's memory
    run = wait_for(fast, start_check(fast, CLAIM, evidence=passages[:1]), finished)
    assert run["status"] == "done" and run["qa"] == "retriever-reader", run
    qa_steps = [s for s in run["steps"] if s["stage"] == "answer"]
    assert qa_steps and all(e["text"] == passages[0] for s in qa_steps for e in s["evidence"]), qa_steps
    run = wait_for(fast, start_check(fast, CLAIM, qa="reciter-reader", evidence=passages[:1]), finished)
    assert run["qa"] == "reciter-reader"  # named, it stays


def test_other_client_errors(fast):
    r = fast.get("/api/checks/0123456789abcdef")
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = fast.get("/api/checks/0123456789abcdef/events")
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = fast.get("/api/checks", params={"limit": 0})
    assert r.status_code == 422 and "limit" in r.json()["detail"]
    # a body that is not JSON (what a cross-site form could send) starts nothing
    r = fast.post("/api/checks", content=json.dumps({"claim": "A claim."}), headers={"content-type": "text/plain"})
    assert r.status_code == 422
    r = fast.post("/api/checks", content=b"{" * 60_000_000, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "body_too_large"  # past even a check with 4 images
    r = fast.post("/login", content=b"{" * 2_000_000, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "body_too_large"
    # without a token the server answers only requests addressed to loopback (DNS rebinding)
    r = fast.get("/api/checks", headers={"host": "evil.example"})
    assert r.status_code == 421 and r.json()["error"] == "bad_host"
    assert fast.get("/api/checks", headers={"host": "localhost:1234"}).status_code == 200


def test_pipelines_and_openapi(fast):
    cat = fast.get("/api/pipelines").json()
    by = {p["name"]: p for p in cat["pipelines"]}
    assert cat["pipelines"][0]["name"] == "qacheck" and by["qacheck"]["qa"] == "choice"
    assert by["qacheck-closed-book"]["qa"] == "closed-book" and by["direct"]["qa"] is None and "cot" in by
    assert by["qacheck-retriever-reader"]["available"] is False
    assert {m["name"] for m in cat["qa_modules"]} == {"auto", "retriever-reader", "closed-book", "reciter-reader"}
    assert cat["models"][0]["name"].startswith("scripted:") and cat["max_claim_chars"] == 200
    schema = fast.get("/openapi.json").json()
    for path in (
        "/api/checks",
        "/api/checks/{run_id}",
        "/api/checks/{run_id}/events",
        "/api/pipelines",
        "/api/checks/{run_id}/report.{fmt}",
    ):
        assert path in schema["paths"], path
    assert "CheckIn" in schema["components"]["schemas"]


# -- the token and the rate limit ----------------------------------------------------------------------------


def test_token_and_rate_limit(server_factory):
    model = write_rules(server_factory.base / "rules-auth.json")
    srv = server_factory(["--model", model, "--rate-limit", "2"], env_extra={"VERACITY_API_TOKEN": TOKEN}, name="auth")
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        r = c.get("/api/checks")
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        assert "Authorization: Bearer" in r.json()["detail"] and r.headers["www-authenticate"].startswith("Bearer")
        assert c.get("/api/checks", headers={"Authorization": "Bearer wrong-token-000000000"}).status_code == 401
        assert c.post("/api/checks", json={"claim": CLAIM}).status_code == 401
        assert c.get("/api/health").status_code == 200
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert c.get("/api/checks", headers=auth).status_code == 200
        for _ in range(2):
            assert c.post("/api/checks", json={"claim": CLAIM}, headers=auth).status_code == 202
        r = c.post("/api/checks", json={"claim": CLAIM}, headers=auth)
        assert r.status_code == 429 and r.json()["error"] == "rate_limited"
        assert 1 <= int(r.headers["retry-after"]) <= 30 and "try again in" in r.json()["detail"]
        # the pages: a sign-in form once, then a cookie
        r = c.get("/")
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
        assert c.post("/login", data={"token": "nope", "next": "/"}).status_code == 401
        r = c.post("/login", data={"token": TOKEN, "next": "//evil.example/"})
        assert r.status_code == 303 and r.headers["location"] == "/"
        assert TOKEN not in r.headers["set-cookie"] and "httponly" in r.headers["set-cookie"].lower()
        assert c.get("/").status_code == 200 and c.get("/api/checks").status_code == 200  # the cookie


def test_a_token_is_required_beyond_localhost(tmp_path):
    """The rule lives in create_app; tested without binding anything."""
    from veracity.config import load_config
    from veracity.errors import UserError
    from veracity.server.app import create_app
    from veracity.server.settings import ServerSettings

    config = load_config(overrides={"model": write_rules(tmp_path / "r.json")}, env={})

    def make(host, env):
        return create_app(config, ServerSettings(host=host, db_path=str(tmp_path / "runs.sqlite")), env=env)

    for host in ("0.0.0.0", "::", "192.168.1.20", "example.org", ""):
        with pytest.raises(UserError, match="VERACITY_API_TOKEN"):
            make(host, {})
    with pytest.raises(UserError, match="at least 16"):
        make("0.0.0.0", {"VERACITY_API_TOKEN": "short"})
    assert make("0.0.0.0", {"VERACITY_API_TOKEN": TOKEN}).state.veracity.auth.required
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert not make(host, {}).state.veracity.auth.required


def test_serve_refuses_a_public_address_without_a_token(tmp_path, cli_env):
    import subprocess

    from conftest import veracity_cmd

    r = subprocess.run(
        veracity_cmd()
        + [
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--db",
            str(tmp_path / "x.db"),
            "--model",
            write_rules(tmp_path / "r.json"),
        ],
        capture_output=True,
        env=cli_env,
        timeout=60,
    )
    err = r.stderr.decode()
    assert r.returncode == 2 and "VERACITY_API_TOKEN" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# -- restarts ------------------------------------------------------------------------------------------------


def test_runs_cut_off_by_a_crash_are_interrupted_after_restart(server_factory, stub):
    db = server_factory.base / "restart.sqlite"
    args = ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--max-concurrent", "1", "--rate-limit", "0"]
    stub.respond.delay = 0.3
    try:
        srv = server_factory(args, db=db, name="restart")
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            running = start_check(c)
            queued = start_check(c, "Another claim about the Orrin Bridge.")
            done_before = wait_for(c, running, lambda r: len(r["steps"]) >= 3)["steps"]
            srv.kill()  # SIGKILL: no shutdown handler runs
    finally:
        stub.respond.delay = 0.05
    with sqlite3.connect(db) as conn:
        statuses = dict(conn.execute("SELECT id, status FROM runs"))
    assert statuses == {running: "running", queued: "queued"}

    srv2 = server_factory(args, db=db, name="restart")
    with httpx.Client(base_url=srv2.url, timeout=30) as c:
        a = c.get(f"/api/checks/{running}").json()
        assert a["status"] == "interrupted" and "server stopped" in a["error"]
        assert a["steps"][: len(done_before)] == done_before  # the steps it got through are kept
        assert c.get(f"/api/checks/{queued}").json()["status"] == "interrupted"
        events = read_sse(c, f"/api/checks/{running}/events")
        assert events[-1][0] == "done" and events[-1][2]["status"] == "interrupted"
        assert c.get(f"/api/checks/{running}/report.md").status_code == 409
        new = start_check(c)  # and the server works as before
        assert wait_for(c, new, finished)["status"] == "done"


def test_a_graceful_stop_marks_running_checks_interrupted(server_factory, stub):
    db = server_factory.base / "graceful.sqlite"
    stub.respond.delay = 0.3
    try:
        srv = server_factory(
            ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0"], db=db, name="graceful"
        )
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            run_id = start_check(c)
            wait_for(c, run_id, lambda r: r["status"] == "running" and len(r["steps"]) >= 1)
        assert srv.stop(signal.SIGTERM) is not None
    finally:
        stub.respond.delay = 0.05
    with sqlite3.connect(db) as conn:
        status, error = conn.execute("SELECT status, error FROM runs WHERE id=?", (run_id,)).fetchone()
    assert status == "interrupted" and "server stopped" in error


def test_pipelines_declare_their_input_and_images(tmp_path):
    """What DEFAME and LEAF set on their pipelines: `accepts_images` shows the image field, an `input_kind`
    other than "claim" keeps the pipeline off the claim form and API."""
    from veracity.config import load_config
    from veracity.pipeline import REGISTRY, Pipeline, register
    from veracity.server.catalog import Catalog
    from veracity.server.errors import ApiError

    class AnswerCheck(Pipeline):
        input_kind = "answer"
        accepts_images = True

        def check(self, claim, ctx):
            raise AssertionError("never run")

    register("test-answer-check", "a pipeline that checks answers", kind=AnswerCheck)(lambda config: AnswerCheck())
    try:
        cat = Catalog(load_config(overrides={"model": write_rules(tmp_path / "r.json")}, env={}))
        info = cat.pipelines["test-answer-check"]
        assert info.input_kind == "answer" and info.accepts_images and info.qa is None
        with pytest.raises(ApiError) as e:
            cat.resolve("test-answer-check", None, None)
        assert e.value.code == "input_not_supported"
    finally:
        REGISTRY.pop("test-answer-check")


# -- limits (units) ------------------------------------------------------------------------------------------


def test_image_checks_for_uploads():
    from veracity.server.errors import ApiError
    from veracity.server.limits import check_image

    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100
    assert check_image(png, "image/png", 1000) == "image/png"
    assert check_image(b"\xff\xd8\xff\xe0" + b"\x00" * 10, None, 1000) == "image/jpeg"
    for data, declared, limit, status, code in [
        (b"", None, 1000, 400, "image_empty"),
        (png, "image/png", 50, 413, "image_too_large"),
        (b"%PDF-1.7 ...", "image/png", 1000, 415, "image_type"),
        (png, "image/jpeg", 1000, 415, "image_type"),
    ]:
        with pytest.raises(ApiError) as e:
            check_image(data, declared, limit)
        assert (e.value.status, e.value.code) == (status, code)


def test_rate_limiter_refills():
    from veracity.server.limits import RateLimiter

    rl = RateLimiter(per_minute=6, burst=2)  # one token every 10 s
    assert rl.take("a", now=0) == 0 and rl.take("a", now=0) == 0
    assert rl.take("a", now=0) == pytest.approx(10)
    assert rl.take("b", now=0) == 0  # per client
    assert rl.take("a", now=10.5) == 0
    assert RateLimiter(0, 10).take("a") == 0  # off


def test_rules_match_the_cli_tests():
    from stub_server import QACHECK_RULES as RULES

    assert SERVER_RULES == RULES


# -- answer check (LEAF) -----------------------------------------------------------------------------------

from worlds import CLI_RULES, DOCS, PLAIN_CTS, Q_CTS  # noqa: E402  (the LEAF world: docs, scripted rater)


@pytest.fixture(scope="module")
def leafsrv(server_factory):
    """The scripted rater of test_leaf.py over a real BM25 index of its documents, built here."""
    from veracity.retrieval import Index

    base = server_factory.base
    Index.build(DOCS, base / "leaf-idx")
    model = write_rules(base / "leaf-rules.json", CLI_RULES)
    srv = server_factory(
        ["--model", model, "--index", str(base / "leaf-idx"), "--rate-limit", "0", "--max-answer-chars", "300"],
        name="leaf",
    )
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        yield client


def test_answer_check_streams_each_sentence_then_the_leaf_score(leafsrv):
    cat = {p["name"]: p for p in leafsrv.get("/api/pipelines").json()["pipelines"]}
    assert cat["answer-check"]["input_kind"] == "answer" and cat["answer-check"]["available"]
    # multiple-choice answering needs options a claim form cannot give: it is not offered as a claim check
    assert cat["answer:fc-rag"]["input_kind"] == "multiple_choice"
    r = leafsrv.post("/api/checks", json={"claim": "A claim.", "pipeline": "answer:fc-rag"})
    assert r.status_code == 400 and r.json()["error"] == "input_not_supported"
    r = leafsrv.post("/api/checks", json={"question": Q_CTS, "answer": PLAIN_CTS})  # pipeline inferred
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    events = read_sse(leafsrv, f"/api/checks/{run_id}/events")
    steps = [d for kind, _, d in events if kind == "step"]
    stages = [s["stage"] for s in steps]
    assert stages[0] == "claim" and stages[-1] == "verdict"
    sentences = [s for s in steps if s["stage"] == "leaf_sentence"]
    assert [s["supported"] for s in sentences] == [True, False, False]
    assert [s["rating"] for s in sentences] == ["Supported", "Not Supported", "Not Supported"]
    assert sentences[1]["query"] == "carpal tunnel median nerve compressed entrapment"
    assert sentences[1]["evidence"][0]["doc_id"] == "cts-cause"
    assert stages.index("leaf_score") > max(i for i, st in enumerate(stages) if st == "leaf_sentence")
    # every sentence's model calls come before its step: they streamed as they happened
    assert stages.index("model_call") < stages.index("leaf_sentence")
    done = events[-1][2]
    assert done["status"] == "done" and done["verdict"]["label"] == "LEAF 0.33"
    assert "1 of 3 sentences supported" in done["verdict"]["rationale"]
    assert done["usage"]["total"]["calls"] == 9  # query, reasoning and decision for each of 3 sentences

    # stored: it reopens with the same steps, the answer and the per-sentence results
    run = leafsrv.get(f"/api/checks/{run_id}").json()
    assert run["pipeline"] == "answer-check" and run["claim"] == Q_CTS and run["answer"] == PLAIN_CTS
    assert run["steps"] == steps and run["qa"] is None
    assert run["leaf"]["score"] == pytest.approx(1 / 3) and len(run["leaf"]["sentences"]) == 3
    page = leafsrv.get(f"/checks/{run_id}")
    assert page.status_code == 200
    assert page.text.count('class="step leaf unsupported"') == 2 and "<details>" in page.text
    assert "It is a disorder of the tendons rather than of a nerve." in page.text
    assert "LEAF score" in page.text and 'value="answer" id="mode-answer" data-hint=' in page.text
    assert re.search(r'value="answer" id="mode-answer" data-hint="[^"]*" checked', page.text)

    # the downloads carry the answer and every sentence with its evidence
    md = leafsrv.get(f"/api/checks/{run_id}/report.md").text
    assert md.startswith(f"# Fact-check: {Q_CTS}") and "## Answer" in md and "**LEAF score:** 0.33" in md
    assert "### Sentence 2: Not Supported ⚠" in md and "**Query:** carpal tunnel median nerve compressed" in md
    assert "> Carpal tunnel syndrome is an entrapment neuropathy" in md
    assert md.index("## Sentences") < md.index("## Prediction with rationale")
    html_doc = leafsrv.get(f"/api/checks/{run_id}/report.html").text
    assert "<h3>Sentence 2: Not Supported ⚠</h3>" in html_doc
    doc = leafsrv.get(f"/api/checks/{run_id}/report.json").json()
    assert doc["answer"] == PLAIN_CTS and [s["supported"] for s in doc["leaf"]["sentences"]] == [True, False, False]
    assert doc["leaf"]["sentences"][1]["evidence"][0]["doc_id"] == "cts-cause"


@pytest.mark.parametrize(
    "body, status, code, says",
    [
        ({"question": Q_CTS}, 400, "answer_empty", "the answer is empty"),
        ({"question": Q_CTS, "answer": "  \n "}, 400, "answer_empty", "the answer is empty"),
        ({"question": Q_CTS, "answer": "** --- **"}, 400, "answer_empty", "no words"),
        ({"answer": PLAIN_CTS}, 400, "question_empty", "the question is empty"),
        ({"question": " ", "answer": PLAIN_CTS, "pipeline": "answer-check"}, 400, "question_empty", "question"),
        (
            {"question": Q_CTS, "answer": "x" * 301},
            400,
            "answer_too_long",
            "301 characters; this server accepts at most 300",
        ),
        ({"question": Q_CTS, "answer": PLAIN_CTS, "claim": "A claim."}, 400, "claim_not_applicable", "`question`"),
        (
            {"claim": "A claim.", "pipeline": "answer-check"},
            400,
            "claim_not_applicable",
            "send `question` and `answer`",
        ),
        (
            {"question": Q_CTS, "answer": PLAIN_CTS, "pipeline": "qacheck"},
            400,
            "input_not_supported",
            "use pipeline 'answer-check'",
        ),
        ({"question": Q_CTS, "answer": PLAIN_CTS, "qa": "closed-book"}, 400, "qa_not_applicable", "has no QA module"),
        ({"question": Q_CTS, "answer": 7}, 422, "invalid_request", "answer"),
    ],
)
def test_bad_answer_checks_say_what_to_fix(leafsrv, body, status, code, says):
    r = leafsrv.post("/api/checks", json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == code and says in r.json()["detail"], r.json()


def test_answer_check_needs_an_index(fast):
    info = {p["name"]: p for p in fast.get("/api/pipelines").json()["pipelines"]}["answer-check"]
    assert info["available"] is False and "--index DIR" in info["unavailable_reason"]
    r = fast.post("/api/checks", json={"question": Q_CTS, "answer": PLAIN_CTS})
    assert r.status_code == 400 and r.json()["error"] == "index_required"
    assert "restart the server with --index DIR" in r.json()["detail"]
    page = fast.get("/").text
    assert re.search(r'value="answer" id="mode-answer" data-hint="[^"]*" disabled', page)
    assert "Answer check is off: this server has no documents to check answers against" in page


def test_the_page_form_checks_an_answer_without_javascript(leafsrv):
    r = leafsrv.post(
        "/checks",
        data={
            "mode": "answer",
            "question": Q_CTS,
            "answer": PLAIN_CTS,
            "claim": "",
            "pipeline": "qacheck",
            "qa": "closed-book",
        },
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    run_id = r.headers["location"].rsplit("/", 1)[1]
    run = wait_for(leafsrv, run_id, finished)
    assert run["status"] == "done" and run["pipeline"] == "answer-check" and run["answer"] == PLAIN_CTS
    r = leafsrv.post("/checks", data={"mode": "answer", "question": Q_CTS, "answer": " "})
    assert r.status_code == 400 and "the answer is empty" in r.text
