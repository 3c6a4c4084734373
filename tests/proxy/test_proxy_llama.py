"""End to end: the openai client -> veracity proxy -> llama-cpp-python's server serving the embedded GGUF."""

import openai
import pytest
from conftest import served
from proxy_helpers import proxy_world, start_proxy  # noqa: F401 (fixtures)

from veracity.leaf import split_sentences

QUESTION = "Is carpal tunnel syndrome a type of nerve entrapment? Answer in two short sentences."


@pytest.fixture(scope="module")
def llama_upstream():
    from veracity.llm.embedded import default_model_path
    from veracity.llm.llama_server import start_server

    yield from served(
        start_server,
        str(default_model_path()),
        ["--model_alias", "smollm2", "--n_ctx", "2048", "--n_threads", "2"],
        timeout=120,
    )


@pytest.mark.embedded
def test_a_real_model_behind_the_proxy_answers_as_directly_and_each_sentence_is_checked(
    llama_upstream, start_proxy, proxy_world
):
    p = start_proxy(
        [
            "--upstream",
            llama_upstream,
            "--index",
            str(proxy_world / "index"),
            "--pipeline",
            "verifier",
            "--rate-limit",
            "0",
        ]
    )
    ask = dict(
        model="smollm2", messages=[{"role": "user", "content": QUESTION}], max_tokens=48, temperature=0.0, seed=1
    )
    direct = openai.OpenAI(base_url=llama_upstream, api_key="x", max_retries=0).chat.completions.create(**ask)
    proxied = openai.OpenAI(base_url=p.url, api_key="x", max_retries=0, timeout=120)
    r = proxied.chat.completions.create(**ask)
    text = r.choices[0].message.content
    assert text == direct.choices[0].message.content and text.strip()
    assert r.usage.completion_tokens == direct.usage.completion_tokens and r.model == direct.model
    v = r.model_extra["veracity"]
    assert v["status"] == "checked" and v["checked"] == len(split_sentences(text)) >= 1
    assert all(
        text[slice(*u["span"])] == u["text"] and u["verdict"] in ("Supported", "Not Supported") for u in v["units"]
    )
    assert [m.id for m in proxied.models.list()] == ["smollm2"]

    chunks = list(proxied.chat.completions.create(**ask, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == text
    assert chunks[-1].model_extra["veracity"]["score"] == v["score"]
