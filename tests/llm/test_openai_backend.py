"""The OpenAI-compatible backend against real HTTP servers on 127.0.0.1.

A stub server plays rate limits, server errors and slow answers; llama-cpp-python's own
OpenAI-compatible server serves the embedded model for the end-to-end check.
"""

import json
import subprocess

import pytest
from conftest import served, veracity_cmd
from stub_server import StubServer, chat_response, message_text

from veracity.errors import BackendError
from veracity.llm import CompletionRequest
from veracity.llm.openai_http import OpenAIBackend

ERR = {"error": {"message": "slow down", "type": "rate_limit"}}


def test_rate_limits_are_retried_with_backoff_then_succeed():
    stub = StubServer.scripted([(429, ERR, 0), (429, ERR, 0), (200, chat_response("Yes"), 0)])
    try:
        b = OpenAIBackend("stub", base_url=stub.url, max_retries=3)
        out = b.complete(CompletionRequest.of("Is it?", max_tokens=4, stop=["\n"]))
        assert out.text == "Yes" and out.prompt_tokens == 11 and out.completion_tokens == 2
        assert len(stub.requests) == 3
        assert stub.requests[0]["stop"] == ["\n"] and stub.requests[0]["max_tokens"] == 4
    finally:
        stub.close()


def test_server_errors_give_up_after_bounded_retries():
    stub = StubServer.scripted([(503, {"error": {"message": "overloaded"}}, 0)])
    try:
        b = OpenAIBackend("stub", base_url=stub.url, max_retries=2)
        with pytest.raises(BackendError, match="HTTP 503: overloaded"):
            b.complete(CompletionRequest.of("Is it?"))
        assert len(stub.requests) == 3  # the first try and two retries, no more
    finally:
        stub.close()


def test_timeouts_are_reported():
    stub = StubServer.scripted([(200, chat_response("late"), 2.0)])
    try:
        b = OpenAIBackend("stub", base_url=stub.url, timeout=0.3, max_retries=0)
        with pytest.raises(BackendError, match="timed out"):
            b.complete(CompletionRequest.of("Is it?"))
    finally:
        stub.close()


def test_choose_parses_free_text_and_retries_with_reminder():
    """A chat-only server without log-probabilities or constraints: generate, match, retry with a reminder."""

    def respond(body):
        text = message_text(body)
        if "Answer with exactly one of" in text:
            return 200, chat_response("False."), 0
        return 200, chat_response("hello" if text.startswith("Reply with one word") else "Well, it depends."), 0

    stub = StubServer(respond)
    try:
        b = OpenAIBackend("stub", base_url=stub.url, max_retries=0)
        ch = b.choose(CompletionRequest.of("Is the claim true?"), ["True", "False"])
        assert ch.option == "False" and ch.method == "parse-retry"
        asked = [r for r in stub.requests if "Is the claim true?" in message_text(r)]
        assert len(asked) == 2 and "Answer with exactly one of: True, False" in message_text(asked[1])
        assert ch.usage.prompt_tokens == 22
    finally:
        stub.close()


def test_unknown_model_is_a_user_error():
    stub = StubServer.scripted([(404, {"error": {"message": "model 'nope' not found"}}, 0)])
    try:
        from veracity.errors import UserError

        b = OpenAIBackend("nope", base_url=stub.url, max_retries=0)
        with pytest.raises(UserError, match="does not know model 'nope'"):
            b.complete(CompletionRequest.of("hi"))
    finally:
        stub.close()


# -- llama-cpp-python's real OpenAI-compatible server --------------------------------------------


@pytest.fixture(scope="module")
def llama_server():
    from veracity.llm.embedded import default_model_path
    from veracity.llm.llama_server import start_server

    yield from served(
        start_server,
        str(default_model_path()),
        ["--model_alias", "smollm2", "--n_ctx", "8192", "--n_threads", "2", "--cache", "true"],
        timeout=120,
    )


@pytest.mark.embedded
def test_real_server_completion_and_decision(llama_server):
    b = OpenAIBackend("smollm2", base_url=llama_server, max_retries=1)
    out = b.complete(CompletionRequest.of("What is the capital of France? Answer in one word.", max_tokens=8))
    assert out.text.strip() and out.prompt_tokens > 5 and out.completion_tokens >= 1
    ch = b.choose(CompletionRequest.of("Is Paris in France? Answer Yes or No."), ["Yes", "No"])
    # llama-cpp-python's server returns log-probabilities: one scored call, as on the embedded backend
    assert ch.method == "logprob" and sum(ch.probabilities.values()) == pytest.approx(1.0)
    caps = b.capabilities()
    assert caps.completions and caps.completions_logprobs and caps.constraint == "grammar"
    doc = b.complete(
        CompletionRequest.of("Q: What is the capital of France?\nA:", continuation=True, max_tokens=4, stop=["\n"])
    )
    assert doc.prompt_tokens < out.prompt_tokens + 5  # raw text to /v1/completions, no chat template around it


@pytest.mark.embedded
def test_cli_check_against_real_server(llama_server, cli_env):
    r = subprocess.run(
        veracity_cmd()
        + [
            "check",
            "--model",
            "smollm2",
            "--base-url",
            llama_server,
            "--json",
            "--max-iterations",
            "1",
            "The Eiffel Tower is in Paris.",
        ],
        capture_output=True,
        env=cli_env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    doc = json.loads(r.stdout)
    assert doc["model"] == f"openai:smollm2@{llama_server}"
    assert doc["verdict"]["label"] in ("Supported", "Refuted", "Unverified")
    assert doc["usage"]["total"]["calls"] >= 4
    assert any(s["stage"] == "question" for s in doc["trace"])
