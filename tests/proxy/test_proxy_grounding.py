"""`veracity proxy --evidence request`: each answer checked against the documents in its own request (a RAG app's
system prompt, an agent's tool results), driven by the official `openai` client, plain and streamed, with the stub
server as the upstream. No model is called (the scripted rater has no rules: a call would fail the check)."""

import openai
import pytest
from proxy_helpers import proxy_world, start_proxy, stub  # noqa: F401 (fixtures)
from worlds import DOCS, PLAIN_CTS, Q_CTS

SYMPTOMS = DOCS[0].text  # "Numbness and tingling of the thumb, index and middle fingers ... carpal tunnel syndrome."
CAUSE = DOCS[1].text  # "Carpal tunnel syndrome is an entrapment neuropathy: the median nerve is compressed ..."
MESSAGES = [
    {"role": "system", "content": f"Answer from these documents only.\n\n{CAUSE}"},
    {"role": "user", "content": Q_CTS},
    {
        "role": "assistant",
        "content": "Let me look that up.",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": SYMPTOMS},
]


@pytest.fixture(scope="module")
def grounding_proxy(start_proxy, stub, proxy_world):
    empty = proxy_world / "no-rules-grounding.json"
    empty.write_text('{"rules": []}')
    return start_proxy(
        ["--upstream", stub.url, "--evidence", "request", "--model", f"scripted:{empty}", "--rate-limit", "0"]
    )


def client(url):
    return openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=60)


def check_units(v):
    assert v["status"] == "checked" and v["evidence_source"] == "the documents in each request"
    assert [d["id"] for d in v["documents"]] == ["system-1", "tool-4"]  # not the question, not the assistant
    assert [u["text"] for u in v["units"]] == [
        "Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger.",
        "It is a disorder of the tendons rather than of a nerve.",
        "So the answer is B.",
    ]
    first = v["units"][0]
    assert first["label"] == "supported" and first["probability"] > 0.5
    assert (
        first["quote"]["document"] == "tool-4"
        and first["quote"]["text"] == SYMPTOMS[first["quote"]["start"] : first["quote"]["end"]]
    )
    assert first["evidence"][0]["doc_id"] == "tool-4" and PLAIN_CTS[slice(*first["span"])] == first["text"]
    for u in v["units"][1:]:
        assert not u["supported"]
    assert "run_id" not in v  # nothing of the request is stored


def test_each_sentence_is_checked_against_the_documents_in_the_request(grounding_proxy):
    r = client(grounding_proxy.url).chat.completions.create(model="stub", messages=MESSAGES)
    assert r.choices[0].message.content == PLAIN_CTS
    check_units(r.model_extra["veracity"])


def test_a_stream_is_checked_against_them_too(grounding_proxy):
    chunks = list(client(grounding_proxy.url).chat.completions.create(model="stub", messages=MESSAGES, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == PLAIN_CTS
    check_units(chunks[-1].model_extra["veracity"])


def test_flag_marks_the_sentences_the_documents_do_not_support_streamed_or_not(start_proxy, stub, proxy_world):
    # a lower uncertain threshold (the configuration's, as every check honours it): the answer's last two sentences
    # are then decided, not supported by these documents
    config = proxy_world / "grounding-threshold.toml"
    config.write_text("[verifier]\nuncertain_below = 0.51\n")
    p = start_proxy(["--upstream", stub.url, "--evidence", "request", "--config", str(config), "--rate-limit", "0"])
    flag = {"X-Veracity-Policy": "flag"}
    r = client(p.url).chat.completions.create(model="stub", messages=MESSAGES, extra_headers=flag)
    v = r.model_extra["veracity"]
    assert [u["supported"] for u in v["units"]] == [True, False, False] and v["flagged"] == 2
    assert r.choices[0].message.content == PLAIN_CTS.replace(" of a nerve.", " of a nerve. [unsupported]") + (
        " [unsupported]"
    )
    chunks = list(
        client(p.url).chat.completions.create(model="stub", messages=MESSAGES, stream=True, extra_headers=flag)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == r.choices[0].message.content


def test_a_request_without_documents_is_delivered_unchecked_saying_what_is_read(grounding_proxy):
    r = client(grounding_proxy.url).chat.completions.create(model="stub", messages=[{"role": "user", "content": Q_CTS}])
    v = r.model_extra["veracity"]
    assert r.choices[0].message.content == PLAIN_CTS
    assert v["status"] == "unchecked" and "tool messages" in v["note"] and '"veracity": "document"' in v["note"]
