"""The official `openai` client against `veracity proxy` (a real subprocess) with the stub server as upstream.

The upstream answers the LEAF test question with PLAIN_CTS (three sentences; the scripted rater supports only the
first) and, when the request carries the fact-check's knowledge, with FC_CTS (all supported).
"""

import time

import openai
import pytest
from proxy_helpers import PROXY_TOKEN, UPSTREAM_KEY, chunks_of, proxy_world, start_proxy, stub, upstream  # noqa: F401 (fixtures)
from stub_server import StubServer
from worlds import FC_CTS, PLAIN_CTS, Q_CTS

SUPPORTED = "Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger."
UNSUPPORTED = ["It is a disorder of the tendons rather than of a nerve.", "So the answer is B."]


@pytest.fixture(scope="module")
def db(start_proxy):
    """The run database, holding a run the web server is running (the proxy must leave it alone)."""
    from veracity.server.store import RunStore

    path = start_proxy.base / "runs.sqlite"
    store = RunStore(path)
    store.create("webrun", claim="a claim the web page is checking", pipeline="qacheck", qa=None, model="m")
    store.mark_running("webrun")
    # the web server renews its running runs' leases (heartbeat); here the test holds this one for an hour
    store.db.execute("UPDATE runs SET lease_until = lease_until + 3600 WHERE id = 'webrun'")
    return path


@pytest.fixture(scope="module")
def proxy(start_proxy, stub, proxy_world, db):
    return start_proxy(
        [
            "--upstream",
            stub.url,
            "--index",
            str(proxy_world / "index"),
            "--model",
            f"scripted:{proxy_world / 'rater.json'}",
            "--db",
            str(db),
            "--rate-limit",
            "0",
            "--upstream-timeout",
            "1.5",
        ],
        env_extra={"VERACITY_UPSTREAM_KEY": UPSTREAM_KEY},
    )


def client(url, **kw):
    return openai.OpenAI(base_url=url, api_key=kw.pop("api_key", "unused"), max_retries=0, timeout=60, **kw)


def ask(proxy, question=Q_CTS, **kw):
    return client(proxy.url).chat.completions.create(
        model="stub", messages=[{"role": "user", "content": question}], **kw
    )


def streamed(proxy, question=Q_CTS, **kw):
    chunks = list(ask(proxy, question, stream=True, **kw))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return chunks, text


# -- annotate -------------------------------------------------------------------------------------------------


def test_the_reply_is_the_upstreams_with_each_sentence_checked_against_the_index(proxy, stub, db):
    r = ask(proxy)
    assert r.choices[0].message.content == PLAIN_CTS  # unchanged, as every standard field
    assert (r.id, r.created, r.model, r.system_fingerprint) == ("chatcmpl-stub", 7, "stub", "fp-stub")
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (31, 29)
    v = r.model_extra["veracity"]
    assert v["status"] == "checked" and v["policy"] == "annotate"
    assert v["score"] == pytest.approx(1 / 3) and (v["supported"], v["checked"]) == (1, 3)
    assert [u["verdict"] for u in v["units"]] == ["Supported", "Not Supported", "Not Supported"]
    # each unit says how it reads, as every verdict of veracity does (all three decided here)
    assert [(u["shown_as"], u["uncertain"]) for u in v["units"]] == [
        ("Supported", False),
        ("Not Supported", False),
        ("Not Supported", False),
    ]
    for u in v["units"]:  # each span is where the sentence is in the delivered text
        start, end = u["span"]
        assert PLAIN_CTS[start:end] == u["text"]
        assert u["evidence"] and u["evidence"][0]["text"] and u["evidence"][0]["source"]
    assert "index" in v["evidence_source"]
    # the upstream got the proxy's key, never the client's; the client never sees the key
    assert stub.headers[-1]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert UPSTREAM_KEY not in r.model_dump_json()

    # the check is a stored run the web page's API lists, and the web server's own running run is untouched
    from fastapi.testclient import TestClient

    from veracity.config import load_config
    from veracity.server.app import create_app
    from veracity.server.settings import ServerSettings
    from veracity.server.store import RunStore

    assert RunStore(db).get("webrun")["status"] == "running"
    app = create_app(load_config(env={}), ServerSettings(db_path=str(db)), env={})
    with TestClient(app, base_url="http://127.0.0.1") as web:
        run = web.get(f"/api/checks/{v['run_id']}").json()
    assert run["status"] == "done" and run["pipeline"] == "answer-check" and run["claim"] == Q_CTS
    assert run["label"] == "LEAF 0.33"


def test_a_stream_passes_the_chunks_through_and_adds_one_chunk_with_the_check(proxy):
    chunks, text = streamed(proxy)
    assert text == PLAIN_CTS
    assert chunks[0].id == "chatcmpl-stub" and chunks[-2].choices[0].finish_reason == "stop"
    last = chunks[-1]
    assert last.choices == [] and last.model_extra["veracity"]["status"] == "checked"
    assert last.model_extra["veracity"]["score"] == pytest.approx(1 / 3)
    sent = chunks_of(PLAIN_CTS)  # the upstream's chunks, each as it was, then ours
    assert [c.model_dump(exclude_unset=True) for c in chunks[:-1]] == sent
    assert all("veracity" not in c.model_extra for c in chunks[:-1])


def test_models_are_the_upstreams(proxy):
    assert [m.id for m in client(proxy.url).models.list()] == ["stub"]


# -- flag and fc-rag, per request -----------------------------------------------------------------------------


def test_flag_marks_the_unsupported_sentences_in_the_text_streamed_or_not(proxy):
    r = ask(proxy, extra_headers={"X-Veracity-Policy": "flag"})
    text = r.choices[0].message.content
    assert text == PLAIN_CTS.replace(UNSUPPORTED[0], UNSUPPORTED[0] + " [unsupported]").replace(
        UNSUPPORTED[1], UNSUPPORTED[1] + " [unsupported]"
    )
    v = r.model_extra["veracity"]
    assert v["policy"] == "flag" and v["flagged"] == 2
    assert [text[slice(*u["span"])] for u in v["units"]] == [SUPPORTED, *UNSUPPORTED]  # spans in the flagged text
    _, streamed_text = streamed(proxy, extra_headers={"X-Veracity-Policy": "flag"})
    assert streamed_text == text


def test_fc_rag_regenerates_once_with_the_failed_sentences_evidence_and_keeps_the_better(proxy, stub):
    before = len(stub.requests)
    r = ask(proxy, extra_headers={"X-Veracity-Policy": "fc-rag"})
    assert r.choices[0].message.content == FC_CTS
    v = r.model_extra["veracity"]
    assert v["score"] == 1.0 and v["fc_rag"]["chosen"] == "regenerated" and v["fc_rag"]["original_score"] < 0.5
    assert v["fc_rag"]["original_text"] == PLAIN_CTS
    asked = stub.requests[before:]
    assert len(asked) == 2  # the answer and one regeneration
    knowledge = asked[1]["messages"][0]
    assert knowledge["role"] == "system" and "median nerve is compressed" in knowledge["content"]
    assert asked[1]["messages"][1] == {"role": "user", "content": Q_CTS}

    chunks, text = streamed(proxy, extra_headers={"X-Veracity-Policy": "fc-rag"})
    assert text == FC_CTS and chunks[-1].model_extra["veracity"]["fc_rag"]["chosen"] == "regenerated"


def test_fc_rag_above_the_threshold_keeps_the_answer_and_says_why(proxy, stub):
    before = len(stub.requests)
    r = ask(proxy, extra_headers={"X-Veracity-Policy": "fc-rag", "X-Veracity-Threshold": "0.3"})
    assert r.choices[0].message.content == PLAIN_CTS and len(stub.requests) == before + 1
    fc = r.model_extra["veracity"]["fc_rag"]
    assert fc["regenerated"] is False and fc["chosen"] == "original" and "not below" in fc["reason"]


def test_a_bad_policy_header_is_a_400_naming_the_policies(proxy):
    with pytest.raises(openai.BadRequestError, match="annotate, flag, fc-rag"):
        ask(proxy, extra_headers={"X-Veracity-Policy": "shout"})


@pytest.mark.parametrize(
    "body,says",
    [
        ('{"model": "stub", "messages": [{"role": "user", "content": "bad \\ud800 text"}]}', "lone UTF-16 surrogate"),
        ('{"model": "stub", "messages": [{"role": "user", "content": "\\udc00"}]}', "lone UTF-16 surrogate"),
        (
            '{"model": "stub", "messages": [{"role": "user", "content": "hi"}], "x": '
            + "[" * 100_000
            + "]" * 100_000
            + "}",
            "nested",
        ),
        ('{"model": "stub", "messages": [{"role": "user", "content": "hi"}], "temperature": NaN}', "not a number"),
        ('{"model": "stub", "messages": [', "not JSON"),
    ],
)
def test_a_request_the_proxy_cannot_read_is_a_400_in_the_openai_format(proxy, body, says):
    """Bodies no OpenAI client sends (a lone surrogate escape, nesting 100,000 deep, NaN, cut short) are refused
    with a 400 saying what is wrong, in the error shape the clients read (never a 500); the proxy goes on."""
    import httpx

    r = httpx.post(
        f"{proxy.url}/chat/completions",
        content=body.encode("ascii"),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert r.status_code == 400, (r.status_code, r.text[:300])
    error = r.json()["error"]
    assert says in error["message"] and error["type"] == "veracity_proxy_error" and error["code"], error
    assert ask(proxy).choices[0].message.content == PLAIN_CTS  # the next request is answered


# -- upstream failures ----------------------------------------------------------------------------------------


def test_upstream_errors_keep_their_status_and_message(proxy):
    with pytest.raises(openai.BadRequestError, match="context is 10 tokens") as e:
        ask(proxy, "UPSTREAM 400")
    assert e.value.status_code == 400 and e.value.code == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError, match="context is 10 tokens"):
        ask(proxy, "UPSTREAM 400", stream=True)
    with pytest.raises(openai.InternalServerError, match="overloaded") as e:
        ask(proxy, "UPSTREAM 503")
    assert e.value.status_code == 503


def test_an_upstream_timeout_is_a_504_saying_so(proxy):
    t0 = time.monotonic()
    with pytest.raises(openai.APIStatusError, match=r"did not answer within 1.5 s") as e:
        ask(proxy, "UPSTREAM SLOW")
    assert e.value.status_code == 504 and time.monotonic() - t0 < 3.5


def test_the_upstream_key_is_never_echoed(start_proxy, proxy_world):
    def echo(body):  # an upstream that quotes the key it was sent, as some do in their 401s
        return 401, {"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY}"}}, 0

    leaky = StubServer(echo)
    try:
        p = start_proxy(
            ["--upstream", leaky.url, "--rate-limit", "0"], env_extra={"VERACITY_UPSTREAM_KEY": UPSTREAM_KEY}
        )
        with pytest.raises(openai.AuthenticationError) as e:
            ask(p)
        assert UPSTREAM_KEY not in e.value.response.text and "upstream key removed" in e.value.response.text
    finally:
        leaky.close()


# -- no evidence, a failing check, an unreachable upstream ----------------------------------------------------


def test_without_evidence_the_answer_says_it_was_not_checked_and_a_dead_upstream_is_a_502(start_proxy):
    own = StubServer(upstream)
    p = start_proxy(["--upstream", own.url, "--rate-limit", "0"])
    r = ask(p)
    assert r.choices[0].message.content == PLAIN_CTS
    v = r.model_extra["veracity"]
    assert v["status"] == "unchecked" and v["evidence_source"] == "none" and "--index" in v["note"]
    own.close()
    with pytest.raises(openai.APIStatusError, match="cannot reach the upstream") as e:
        ask(p)
    assert e.value.status_code == 502


def test_a_check_that_fails_leaves_the_answer_delivered_and_says_so(start_proxy, stub, proxy_world):
    p = start_proxy(
        [
            "--upstream",
            stub.url,
            "--index",
            str(proxy_world / "index"),
            "--model",
            "rater",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--rate-limit",
            "0",
        ]
    )
    r = ask(p)
    assert r.choices[0].message.content == PLAIN_CTS
    v = r.model_extra["veracity"]
    assert v["status"] == "failed" and "cannot reach" in v["error"] and v["run_id"]
    chunks, text = streamed(p, extra_headers={"X-Veracity-Policy": "flag"})
    assert text == PLAIN_CTS and chunks[-1].model_extra["veracity"]["status"] == "failed"


# -- auth and the trained verifier ----------------------------------------------------------------------------


def test_off_loopback_the_proxy_needs_its_token_and_checks_with_the_verifier(start_proxy, stub, proxy_world):
    with pytest.raises(RuntimeError, match="VERACITY_API_TOKEN"):
        start_proxy(["--upstream", stub.url, "--host", "0.0.0.0"])
    # a rater with no rules: any model call would fail the check, so a checked answer means none was made
    empty = proxy_world / "no-rules.json"
    empty.write_text('{"rules": []}')
    p = start_proxy(
        [
            "--upstream",
            stub.url,
            "--host",
            "0.0.0.0",
            "--index",
            str(proxy_world / "index"),
            "--pipeline",
            "verifier",
            "--model",
            f"scripted:{empty}",
            "--rate-limit",
            "0",
        ],
        env_extra={"VERACITY_API_TOKEN": PROXY_TOKEN, "VERACITY_UPSTREAM_KEY": UPSTREAM_KEY},
    )
    for kw in ({"api_key": "wrong-token"}, {}):
        with pytest.raises(openai.AuthenticationError, match="bearer token"):
            client(p.url, **kw).chat.completions.create(model="stub", messages=[{"role": "user", "content": Q_CTS}])
    r = client(p.url, api_key=PROXY_TOKEN).chat.completions.create(
        model="stub", messages=[{"role": "user", "content": Q_CTS}]
    )
    v = r.model_extra["veracity"]
    assert v["status"] == "checked" and "verifier" in v["checker"] and v["checked"] == 3
    assert all(u["query"] == u.get("read_as", u["text"]) and u["confidence"] is not None for u in v["units"])
    assert stub.headers[-1]["authorization"] == f"Bearer {UPSTREAM_KEY}"  # the client's token is not forwarded
