"""Text check over HTTP against the real server: POST /api/texts, the run's events, the stored run, its reports,
the limits, and the plain form. `veracity serve` runs in a subprocess over a real BM25 index of a small article's
sources; the direct baseline decides each claim from the scripted rules of tests/worlds.py (deterministic), or
from the OpenAI-compatible stub answering with the same rules after a delay (to watch claims arrive).
"""

from __future__ import annotations

import base64
import re
import time

import httpx
import pytest
from conftest import rules_responder, write_rules
from stub_server import StubServer
from test_server_api import read_sse, wait_for
from web_stub import pdf_bytes
from worlds import ARTICLE, BORN, DANUBE, NOBEL, TEXT_DOCS, TEXT_RULES

TOKEN = "test-token-0123456789abcdef"
OUTCOMES = {
    BORN: "supported",
    NOBEL: "supported",
    "Do you like rivers?": "not_checkable",
    DANUBE: "refuted",
    "He lost it.": "ambiguous",
}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def start_text(client: httpx.Client, **body) -> dict:
    r = client.post("/api/texts", json={"pipeline": "direct", **body})
    assert r.status_code == 202, r.text
    return r.json()


def finished(run: dict) -> bool:
    return run["status"] not in ("queued", "running")


def folded(events: list) -> list[dict]:
    """The run's view items as a page ends up with them: each `view` event's items put at their index."""
    items: dict[int, dict] = {}
    for kind, _, data in events:
        if kind == "view":
            items.update({x["index"]: x["item"] for x in data["items"]})
    return [items[i] for i in sorted(items)]


@pytest.fixture(scope="module")
def index(server_factory):
    from veracity.retrieval import Index

    path = server_factory.base / "text-idx"
    if not path.exists():
        Index.build(TEXT_DOCS, path)
    return str(path)


@pytest.fixture(scope="module")
def texts(server_factory, index):
    """The scripted rules, the index, at most 10 claims checked per text, no rate limit."""
    model = write_rules(server_factory.base / "text-rules.json", TEXT_RULES)
    srv = server_factory(
        ["--model", model, "--index", index, "--rate-limit", "0", "--max-text-claims", "10"], name="texts"
    )
    with httpx.Client(base_url=srv.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def stub():
    srv = StubServer(rules_responder(TEXT_RULES, delay=0.2))
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def slow(server_factory, index, stub):
    """The same rules answered by the stub after 0.2 s each, one claim at a time; no response cache."""
    srv = server_factory(
        [
            "--model",
            "stub-model",
            "--base-url",
            stub.url,
            "--no-cache",
            "--index",
            index,
            "--rate-limit",
            "0",
            "--concurrency",
            "1",
        ],
        name="texts-slow",
    )
    with httpx.Client(base_url=srv.url, timeout=60) as client:
        yield client


# -- a text, streamed claim by claim and stored -------------------------------------------------------------


def test_a_text_is_checked_claim_by_claim_streamed_and_stored(texts):
    accepted = start_text(texts, text=ARTICLE)
    run_id = accepted["id"]
    assert accepted["title"].startswith("Marie Curie was born in Warsaw.") and accepted["characters"] == len(ARTICLE)
    assert (accepted["pipeline"], accepted["extract"], accepted["max_claims"]) == ("direct", "auto", 10)
    assert accepted["links"]["events"] == f"/api/checks/{run_id}/events"

    events = read_sse(texts, f"/api/checks/{run_id}/events")
    steps = [d for kind, _, d in events if kind == "step"]
    stages = [s["stage"] for s in steps if s["stage"] != "model_call"]
    assert stages == ["claim", "text_extraction"] + ["text_claim"] * 5 + ["text_summary", "verdict"]
    extraction = next(s for s in steps if s["stage"] == "text_extraction")
    assert extraction["text"] == ARTICLE and extraction["method"] == "rules"
    # every claim with the stretch of the text it came from
    nobel = next(c for c in extraction["claims"] if c["text"] == NOBEL)
    assert [ARTICLE[s:e] for s, e in nobel["spans"]] == ["She won the Nobel Prize in Physics in 1903."]
    claims = {s["text"]: s for s in steps if s["stage"] == "text_claim"}
    assert {t: c["outcome"] for t, c in claims.items()} == OUTCOMES
    assert claims[BORN]["label"] == "Supported" and claims[BORN]["evidence"][0]["source"] == "Marie Curie"
    assert claims[DANUBE]["label"] == "Refuted" and "second-longest river" in claims[DANUBE]["evidence"][0]["text"]
    assert claims["Do you like rivers?"]["note"] == "question" and claims["Do you like rivers?"]["evidence"] == []
    # the checked claims' model calls streamed with them: one decision each
    assert [s["for_stage"] for s in steps if s["stage"] == "model_call"] == ["direct"] * 3
    done = events[-1][2]
    assert done["status"] == "done" and done["verdict"]["label"] == "Factuality 67%"
    assert "2 of 3 checked claims supported, 1 refuted" in done["verdict"]["rationale"]
    assert done["usage"]["total"]["calls"] == 3

    # what the page draws: the text, its passages coloured by their claims' outcomes, each claim, the summary
    items = folded(events)
    source = next(it for it in items if it["kind"] == "text_source")
    assert source["text"] == ARTICLE and (source["claims"], source["checkable"]) == (5, 3)
    marks = [it for it in items if it["kind"] == "text_mark"]
    assert [(ARTICLE[m["start"] : m["end"]], m["outcome"]) for m in marks] == [
        (BORN, "supported"),
        ("She won the Nobel Prize in Physics in 1903.", "supported"),
        ("Do you like rivers?", "not_checkable"),
        (DANUBE, "refuted"),
        ("He lost it.", "ambiguous"),
    ]
    summary = next(it for it in items if it["kind"] == "text_summary")
    assert ["Factuality (supported / decided)", "67% (2 of 3 decided claims supported)"] in summary["rows"]

    # stored: it reopens with the same steps, and the text check read back from them
    run = texts.get(f"/api/checks/{run_id}").json()
    assert run["status"] == "done" and run["pipeline"] == "text-check" and run["claim"] == accepted["title"]
    assert run["steps"] == steps and run["label"] == "Factuality 67%"
    assert run["text"]["text"] == ARTICLE and run["text"]["summary"]["factuality"] == pytest.approx(2 / 3)
    assert {c["text"]: c["outcome"] for c in run["text"]["claims"]} == OUTCOMES
    listed = texts.get("/api/checks", params={"limit": 100}).json()["items"]
    assert next(r for r in listed if r["id"] == run_id)["label"] == "Factuality 67%"


def test_a_text_is_checked_against_the_documents_sent_with_it(texts):
    """`evidence`: the claims are read against the documents sent (a summary against its source) instead of the
    server's index, by the evidence-only verifier unless a pipeline is named."""
    source = (
        "Marie Curie was a Polish and naturalised-French physicist and chemist. She was born in Warsaw. "
        "The Danube flows through Vienna, Bratislava, Budapest and Belgrade."
    )
    r = texts.post(
        "/api/texts",
        json={"text": "Marie Curie was born in Paris. The Danube flows through Budapest.", "evidence": [source]},
    )
    assert r.status_code == 202, r.text
    accepted = r.json()
    assert accepted["pipeline"] == "verifier"
    events = read_sse(texts, f"/api/checks/{accepted['id']}/events")
    claims = {d["text"]: d for kind, _, d in events if kind == "step" and d["stage"] == "text_claim"}
    assert {t: c["outcome"] for t, c in claims.items()} == {
        "Marie Curie was born in Paris.": "refuted",
        "The Danube flows through Budapest.": "supported",
    }
    assert {e["source"] for c in claims.values() for e in c["evidence"]} == {"evidence-1"}  # not the index's
    r = texts.post("/api/texts", json={"text": "A claim.", "evidence": ["  "]})
    assert r.status_code == 400 and r.json()["error"] == "evidence_empty"


def test_claims_arrive_one_by_one_while_the_text_is_checked(slow, stub):
    run_id = start_text(slow, text=ARTICLE, extract="rules")["id"]  # "auto" would ask the stub for the claims
    seen: list[tuple[float, str, dict]] = []
    read_sse(slow, f"/api/checks/{run_id}/events", on_event=lambda e: seen.append((time.monotonic(), e[0], e[2])))
    checked = [
        t
        for t, kind, d in seen
        if kind == "step" and d["stage"] == "text_claim" and d["outcome"] in ("supported", "refuted")
    ]
    extraction = next(t for t, kind, d in seen if kind == "step" and d["stage"] == "text_extraction")
    assert len(checked) == 3
    # the text and its claims came first, then each verdict as its model call returned (0.2 s each)
    assert checked[0] - extraction >= 0.15 and checked[1] - checked[0] >= 0.15 and checked[2] - checked[1] >= 0.15
    assert seen[-1][1] == "done" and seen[-1][2]["verdict"]["label"] == "Factuality 67%"


def test_over_a_server_with_parallel_slots_claims_are_checked_together_and_told_in_text_order(server_factory, index):
    stub = StubServer(rules_responder(TEXT_RULES, delay=0.4))
    try:
        srv = server_factory(
            [
                "--model",
                "stub-model",
                "--base-url",
                stub.url,
                "--no-cache",
                "--index",
                index,
                "--rate-limit",
                "0",
                "--concurrency",
                "3",
            ],
            name="texts-parallel",
        )
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            run_id = start_text(client, text=ARTICLE, extract="rules")["id"]
            seen: list[tuple[float, str, dict]] = []
            read_sse(
                client, f"/api/checks/{run_id}/events", on_event=lambda e: seen.append((time.monotonic(), e[0], e[2]))
            )
        decided = [
            (t, d["text"])
            for t, kind, d in seen
            if kind == "step" and d["stage"] == "text_claim" and d["outcome"] in ("supported", "refuted")
        ]
        extraction = next(t for t, kind, d in seen if kind == "step" and d["stage"] == "text_extraction")
        assert [text for _, text in decided] == [BORN, NOBEL, DANUBE]  # in the text's order
        assert stub.max_active == 3  # the three checkable claims were at the server at once
        assert decided[-1][0] - extraction < 0.4 * 3 - 0.2  # sooner than one after the other
        assert seen[-1][1] == "done" and seen[-1][2]["verdict"]["label"] == "Factuality 67%"
    finally:
        stub.close()


def test_deleting_a_running_text_check_stops_it(slow, stub):
    stub.respond.delay = 0.5
    try:
        run_id = start_text(slow, text=ARTICLE, extract="rules")["id"]
        wait_for(slow, run_id, lambda r: any(s["stage"] == "text_extraction" for s in r["steps"]))
        assert slow.delete(f"/api/checks/{run_id}").status_code == 204
        time.sleep(0.7)
        n = len(stub.requests)
        time.sleep(1.2)
        assert len(stub.requests) == n  # no claim is checked after that
        assert slow.get(f"/api/checks/{run_id}").status_code == 404
    finally:
        stub.respond.delay = 0.2


# -- reports -------------------------------------------------------------------------------------------------


def test_reports_show_the_text_with_each_claim_coloured_by_its_verdict(texts):
    text = ARTICLE + " Who wrote <script>alert('x')</script> in <b>bold</b>?"  # a question: not checked
    run_id = start_text(texts, text=text)["id"]
    wait_for(texts, run_id, finished)
    md = texts.get(f"/api/checks/{run_id}/report.md")
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert f'filename="veracity-{run_id}.md"' in md.headers["content-disposition"]
    assert md.text.startswith("# Fact-check of pasted text")
    assert (
        f"**Refuted** {DANUBE}" in md.text
        and "| Factuality (supported / decided) | 67% (2 of 3 decided claims supported) |" in md.text
    )
    assert "evidence: Danube: The Danube is the second-longest river in Europe." in md.text
    assert "<script>" not in md.text
    page = texts.get(f"/api/checks/{run_id}/report.html")
    assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
    for outcome, passage in (("refuted", DANUBE), ("supported", BORN), ("ambiguous", "He lost it.")):
        assert re.search(rf'<mark class="o-{outcome}" id="p-\d+"><a [^>]*>{re.escape(passage)}</a></mark>', page.text)
    assert "<script>alert" not in page.text and "&lt;script&gt;alert" in page.text and "<b>bold" not in page.text
    doc = texts.get(f"/api/checks/{run_id}/report.json").json()
    assert doc["id"] == run_id and doc["text"] == text and doc["summary"]["checked"] == 3
    assert {c["text"]: c["outcome"] for c in doc["claims"]}[DANUBE] == "refuted"


# -- files ---------------------------------------------------------------------------------------------------


def test_uploaded_files_are_read_like_check_text_reads_them(texts):
    html = (
        f"<html><head><title>Two rivers</title><script>var x = 1;</script></head><body><article><p>{DANUBE}"
        "</p><p>Do you like rivers?</p></article></body></html>"
    )
    accepted = start_text(texts, file={"data": b64(html.encode()), "filename": "rivers.html"})
    assert accepted["title"] == "Two rivers" and accepted["source_kind"] == "html"
    run = wait_for(texts, accepted["id"], finished)
    assert run["text"]["origin"] == "rivers.html" and "var x" not in run["text"]["text"]
    assert [(c["text"], c["outcome"]) for c in run["text"]["claims"]] == [
        (DANUBE, "refuted"),
        ("Do you like rivers?", "not_checkable"),
    ]

    accepted = start_text(
        texts, file={"data": "data:application/pdf;base64," + b64(pdf_bytes(BORN)), "filename": "born.pdf"}
    )
    assert accepted["source_kind"] == "pdf"
    run = wait_for(texts, accepted["id"], finished)
    assert [(c["text"], c["outcome"]) for c in run["text"]["claims"]] == [(BORN, "supported")]

    md = "# Notes\n\n- " + NOBEL + "\n"
    accepted = start_text(texts, file={"data": b64(md.encode()), "filename": "notes.md"})
    run = wait_for(texts, accepted["id"], finished)
    assert NOBEL in [c["text"] for c in run["text"]["claims"]] and run["label"] == "Factuality 100%"


# -- what clients get wrong ------------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 40


@pytest.mark.parametrize(
    "body,status,code,says",
    [
        ({"text": "  \n "}, 400, "text_empty", "the text is empty"),
        ({}, 400, "text_empty", "send the text to check as `text`"),
        ({"text": ARTICLE, "file": {"data": b64(b"x")}}, 400, "text_and_file", "not both"),
        ({"text": "Paris\x00is\x00in\x00France."}, 415, "text_binary", "binary data"),
        ({"file": {"data": b64(PNG), "filename": "photo.png"}}, 415, "text_binary", "file photo.png is binary data"),
        ({"file": {"data": "not base64 !!", "filename": "a.txt"}}, 400, "file_encoding", "not valid base64"),
        ({"file": {"data": b64(b"%PDF-1.4 broken"), "filename": "a.pdf"}}, 400, "file_unreadable", "a.pdf"),
        ({"file": {"data": b64(b""), "filename": "empty.txt"}}, 400, "text_empty", "is empty"),
        ({"text": ARTICLE, "max_claims": 11}, 400, "max_claims_too_high", "checks at most 10 claims"),
        ({"text": ARTICLE, "max_claims": 0}, 422, "invalid_request", "max_claims"),
        ({"text": ARTICLE, "extract": "magic"}, 422, "invalid_request", "extract"),
        ({"text": ARTICLE, "pipeline": "nope"}, 400, "unknown_pipeline", "unknown pipeline 'nope'"),
        ({"text": ARTICLE, "pipeline": "answer-check"}, 400, "input_not_supported", "claim pipeline"),
        ({"text": ARTICLE, "model": "gguf:/etc/passwd"}, 400, "unknown_model", "this server offers"),
        ({"text": 42}, 422, "invalid_request", "text"),
    ],
)
def test_bad_texts_say_what_to_fix(texts, body, status, code, says):
    r = texts.post("/api/texts", json={"pipeline": "direct", **body})
    assert r.status_code == status, r.text
    assert r.json()["error"] == code and says in r.json()["detail"], r.json()


def test_a_text_over_10_mb_is_refused_with_the_limit(texts):
    r = texts.post("/api/texts", json={"text": "Paris is in France. " * 500_001})  # 10,000,020 bytes
    assert r.status_code == 413 and r.json()["error"] == "text_too_long"
    assert "the limit is 10.0 MB (10,000,000 bytes)" in r.json()["detail"]
    r = texts.post("/api/texts", json={"file": {"data": b64(b"a" * 10_000_100), "filename": "big.txt"}})
    assert r.status_code == 413 and r.json()["error"] == "file_too_large" and "10.0 MB" in r.json()["detail"]
    # a body far past any text is refused before it is read, naming the text limit
    r = texts.post("/api/texts", content=b"{" * 25_000_000, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "body_too_large"
    assert "a text of at most 10.0 MB" in r.json()["detail"]
    assert texts.get("/api/pipelines").json()["texts"]["max_bytes"] == 10_000_000
    schema = texts.get("/openapi.json").json()
    assert "/api/texts" in schema["paths"] and "TextIn" in schema["components"]["schemas"]


def test_a_text_with_no_checkable_claim_is_a_finished_run_that_says_so(texts):
    run_id = start_text(texts, text="Hello! How are you today? Thanks a lot.")["id"]
    run = wait_for(texts, run_id, finished)
    assert run["status"] == "done" and run["error"] is None
    assert run["label"] == "No checkable claim"
    assert run["verdict"]["rationale"].startswith("The text has no checkable claim")
    assert run["text"]["summary"]["checked"] == 0 and run["text"]["summary"]["factuality"] is None
    assert {c["outcome"] for c in run["text"]["claims"]} == {"not_checkable"}
    md = texts.get(f"/api/checks/{run_id}/report.md").text
    assert "*the text has no checkable claim" in md and "n/a (nothing checked)" in md


def test_the_claim_budget_leaves_the_rest_listed_but_not_checked(texts):
    run_id = start_text(texts, text=ARTICLE, max_claims=1)["id"]
    run = wait_for(texts, run_id, finished)
    outcomes = {c["text"]: (c["outcome"], c["note"]) for c in run["text"]["claims"]}
    assert outcomes[BORN] == ("supported", "")
    assert outcomes[NOBEL] == outcomes[DANUBE] == ("not_checked", "over the budget of 1 claim")
    assert run["label"] == "Factuality 100%" and run["usage"]["total"]["calls"] == 1


# -- the token and the rate limit ------------------------------------------------------------------------------


def test_texts_need_the_token_and_count_against_the_rate_limit(server_factory, index):
    model = write_rules(server_factory.base / "text-rules-auth.json", TEXT_RULES)
    srv = server_factory(
        ["--model", model, "--index", index, "--rate-limit", "1"],
        env_extra={"VERACITY_API_TOKEN": TOKEN},
        name="texts-auth",
    )
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        r = c.post("/api/texts", json={"text": ARTICLE})
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        r = c.post("/api/texts", json={"text": ARTICLE, "pipeline": "direct"}, headers=auth)
        assert r.status_code == 202
        assert c.get(f"/api/checks/{r.json()['id']}/report.md").status_code == 401  # reports too
        r = c.post("/api/texts", json={"text": ARTICLE, "pipeline": "direct"}, headers=auth)
        assert r.status_code == 429 and r.json()["error"] == "rate_limited"


# -- the page, without JavaScript --------------------------------------------------------------------------------


def test_the_page_form_checks_a_text_and_reopens_it_with_the_passages_coloured(texts):
    r = texts.post(
        "/checks",
        data={
            "mode": "text",
            "text": ARTICLE,
            "pipeline": "direct",
            "qa": "closed-book",
            "extract": "rules",
            "max_claims": "5",
        },
    )
    assert r.status_code == 303, r.text
    run_id = r.headers["location"].rsplit("/", 1)[1]
    run = wait_for(texts, run_id, finished)
    assert run["status"] == "done" and run["qa"] is None
    page = texts.get(f"/checks/{run_id}").text
    assert f'<a class="mark o-refuted" href="#claim-4" data-claims="4" title="Refuted">{DANUBE}</a>' in page
    assert f'<a class="mark o-supported" href="#claim-1" data-claims="1" title="Supported">{BORN}</a>' in page
    assert 'id="claim-4"' in page and "second-longest river in Europe" in page  # the claim, with its evidence
    assert re.search(r'value="text" id="mode-text" data-hint="[^"]*" checked', page) and "Factuality 67%" in page
    assert f">{ARTICLE}</textarea>" in page  # the form, ready to check the text again
    r = texts.post("/checks", data={"mode": "text", "text": " ", "pipeline": "direct"})
    assert r.status_code == 400 and "the text is empty" in r.text and "<form" in r.text
    up = texts.post(
        "/checks",
        data={"mode": "text", "text": "", "pipeline": "direct", "extract": "auto"},
        files={"text_file": ("born.txt", BORN.encode(), "text/plain")},
    )
    assert up.status_code == 303
    run = wait_for(texts, up.headers["location"].rsplit("/", 1)[1], finished)
    assert run["text"]["origin"] == "born.txt" and run["label"] == "Factuality 100%"
    assert run["text"]["claims"][0]["outcome"] == "supported"
