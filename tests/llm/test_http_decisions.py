"""Decisions and few-shot prompts over OpenAI-compatible servers, against stub servers on 127.0.0.1 that offer
log-probabilities, a grammar, guided choice, a JSON schema, or nothing (tests/stub_server.py: FakeModel)."""

import json
import math
import threading

import pytest
from stub_server import FakeModel, StubServer

from veracity.errors import BackendUnavailable
from veracity.llm import CompletionRequest, fewshot
from veracity.llm.http_caps import PROBE_MESSAGES, PROBE_PROMPT
from veracity.llm.openai_http import OpenAIBackend

YES_NO = ["Yes", "No"]
LP = {" Yes": math.log(0.6), " No": math.log(0.3), "\n": math.log(0.1)}


def likes(dist):
    return lambda text: dist


def is_probe(body):
    return body.get("prompt") == PROBE_PROMPT or body.get("messages") == PROBE_MESSAGES


@pytest.fixture
def serve():
    started = []

    def start(model):
        stub = StubServer(model)
        started.append(stub)
        return stub

    yield start
    for stub in started:
        stub.close()


def backend(stub, tmp_path, **kw):
    return OpenAIBackend("fake", base_url=stub.url, max_retries=0, caps_path=tmp_path / "caps.json", **kw)


def test_log_probabilities_decide_in_one_call_each_probed_once(serve, tmp_path):
    stub = serve(FakeModel(likes(LP)))
    b = backend(stub, tmp_path)
    choices = [b.choose(fewshot(f"Claim {i}.\nAnswer:"), YES_NO) for i in range(5)]
    assert all(c.option == "Yes" and c.method == "logprob" for c in choices)
    # the same scores as the embedded backend's: a softmax over the options' log-probabilities
    assert choices[0].probabilities == pytest.approx({"Yes": 2 / 3, "No": 1 / 3})
    asked = [(p, r) for p, r in zip(stub.paths, stub.requests) if not is_probe(r)]
    assert len(asked) == 5 and all(p.endswith("/v1/completions") and r["max_tokens"] == 1 for p, r in asked)
    probes = len(stub.requests) - 5
    # a later run (another backend) reads what the probe found from the file: no probe at all
    b2 = backend(stub, tmp_path)
    assert b2.choose(CompletionRequest.of("Is it?"), YES_NO).method == "logprob"
    assert len(stub.requests) == probes + 6
    assert stub.paths[-1].endswith("/chat/completions") and stub.requests[-1]["top_logprobs"] == 20


def test_llama_server_log_probabilities_on_completions_give_confidences(serve, tmp_path):
    # llama.cpp's llama-server answers /v1/completions with the chat format's `content` list, not the legacy
    # `top_logprobs` mapping: the probe still finds log-probabilities, and every decision carries a confidence
    stub = serve(FakeModel(likes(LP), logprob_format="llama.cpp"))
    b = backend(stub, tmp_path)
    c = b.choose(fewshot("Claim.\nAnswer:"), YES_NO)
    assert c.method == "logprob" and c.probabilities == pytest.approx({"Yes": 2 / 3, "No": 1 / 3})
    caps = json.loads((tmp_path / "caps.json").read_text())
    assert any(v.get("completions_logprobs") for v in caps.values())
    asked = [(p, r) for p, r in zip(stub.paths, stub.requests) if not is_probe(r)]
    assert [p.rsplit("/", 1)[-1] for p, _ in asked] == ["completions"]


def test_every_log_probability_format_is_read():
    from veracity.llm.http_caps import first_top

    legacy = {"choices": [{"logprobs": {"tokens": [" Yes"], "top_logprobs": [{" Yes": -0.5, " No": -1.2}]}}]}
    content = {
        "choices": [
            {
                "logprobs": {
                    "content": [
                        {
                            "token": " Yes",
                            "logprob": -0.5,
                            "top_logprobs": [
                                {"token": " Yes", "logprob": -0.5, "bytes": [32, 89]},
                                {"token": " No", "logprob": -1.2},
                            ],
                        }
                    ]
                }
            }
        ]
    }
    old_llama = {
        "choices": [
            {
                "logprobs": {
                    "content": [
                        {
                            "tok_str": " Yes",
                            "probs": [{"tok_str": " Yes", "prob": 0.6}, {"tok_str": " No", "prob": 0.3}],
                        }
                    ]
                }
            }
        ]
    }
    assert first_top(legacy) == {" Yes": -0.5, " No": -1.2} == first_top(content)
    assert first_top(old_llama) == pytest.approx({" Yes": math.log(0.6), " No": math.log(0.3)})
    assert first_top({"choices": [{"logprobs": None}]}) == {} == first_top({"choices": [{"text": "x"}]})


def test_options_sharing_a_first_token_take_one_more_call(serve, tmp_path):
    def dist(text):
        if text.endswith(" image_"):
            return {"search": math.log(0.2), "metadata": math.log(0.7), "s": math.log(0.1)}
        return {" image": math.log(0.8), " web": math.log(0.2)}

    stub = serve(FakeModel(dist))
    b = backend(stub, tmp_path)
    ch = b.choose(fewshot("Tool:"), ["image_search", "image_metadata", "web_search"])
    assert ch.option == "image_metadata" and ch.method == "logprob"
    assert ch.probabilities["image_metadata"] == pytest.approx(0.8 * 0.7 / (0.8 * 1.0 + 0.2), rel=0.01)
    asked = [r for r in stub.requests if not is_probe(r)]
    assert [r["prompt"] for r in asked] == ["Tool:", "Tool: image_"]


def test_a_grammar_server_decides_with_the_grammar(serve, tmp_path):
    stub = serve(FakeModel(likes(LP), logprobs=False, grammar=True))
    b = backend(stub, tmp_path)
    choices = [b.choose(fewshot(f"Claim {i}.\nAnswer:"), YES_NO) for i in range(3)]
    assert [(c.option, c.method) for c in choices] == [("Yes", "grammar")] * 3
    asked = [r for r in stub.requests if not is_probe(r)]
    assert len(asked) == 3 and asked[0]["grammar"] == 'root ::= " "? ("Yes" | "No")'


@pytest.mark.parametrize("kind", ["guided_choice", "json_schema"])
def test_vllm_and_openai_constraints(serve, tmp_path, kind):
    stub = serve(FakeModel(likes(LP), completions=False, logprobs=False, **{kind: True}))
    ch = backend(stub, tmp_path).choose(fewshot("Claim.\nAnswer:"), YES_NO)
    assert (ch.option, ch.method) == ("Yes", "grammar")
    assert ("guided_choice" if kind == "guided_choice" else "response_format") in stub.requests[-1]


def test_log_probabilities_missing_the_options_fall_back_to_the_grammar(serve, tmp_path):
    stub = serve(FakeModel(likes({" The": -0.1, " A": -2.5}), grammar=True))
    ch = backend(stub, tmp_path).choose(fewshot("Claim.\nAnswer:"), YES_NO)
    assert ch.method == "grammar" and ch.option in YES_NO


def test_a_plain_chat_server_gets_parse_and_the_chat_template(serve, tmp_path):
    def reply(text):
        if "Answer with exactly one of" in text:
            return "No."
        return {"Claim.\nAnswer:": "I think so, yes.", "Claim 2.\nAnswer:": "Well, hard to say."}.get(text, "hello")

    stub = serve(FakeModel(likes(LP), completions=False, logprobs=False, reply=reply))
    b = backend(stub, tmp_path)
    assert (b.choose(fewshot("Claim.\nAnswer:"), YES_NO).method) == "parse"
    ch = b.choose(fewshot("Claim 2.\nAnswer:"), YES_NO)
    assert (ch.option, ch.method) == ("No", "parse-retry")
    b.complete(fewshot("Question =", max_tokens=8))
    assert all(p.endswith("/chat/completions") for p, r in zip(stub.paths, stub.requests) if not is_probe(r))
    assert stub.requests[-1]["messages"] == [{"role": "user", "content": "Question ="}]


def test_few_shot_prompts_go_to_completions_and_chat_prompts_to_chat(serve, tmp_path):
    stub = serve(FakeModel(likes({" Paris": -0.1}), timings={"cache_n": 7, "prompt_n": 2}))
    b = backend(stub, tmp_path)
    out = b.complete(fewshot("Q: capital of France?\nA:", max_tokens=4, stop=["\n"]))
    assert out.text == " Paris" and out.reused_prompt_tokens == 7
    assert stub.paths[-1].endswith("/v1/completions")
    assert stub.requests[-1]["prompt"] == "Q: capital of France?\nA:" and stub.requests[-1]["stop"] == ["\n"]
    assert stub.requests[-1]["cache_prompt"] is True and stub.requests[-1]["repeat_penalty"] == 1.0
    b.complete(CompletionRequest.of("Hello"))
    assert stub.paths[-1].endswith("/chat/completions")


def test_a_strict_server_never_gets_unknown_fields(serve, tmp_path):
    stub = serve(FakeModel(likes(LP), completions=False, strict=True))
    b = backend(stub, tmp_path)
    assert b.choose(CompletionRequest.of("Is it?"), YES_NO).method == "logprob"
    b.complete(CompletionRequest.of("Hello"))
    assert all("cache_prompt" not in r and "repeat_penalty" not in r for r in stub.requests if not is_probe(r))


def test_overrides_skip_the_probe(serve, tmp_path):
    stub = serve(FakeModel(likes(LP), grammar=True))
    b = backend(stub, tmp_path, decisions="grammar", endpoint="chat")
    assert b.choose(fewshot("Claim.\nAnswer:"), YES_NO).method == "grammar"
    assert len(stub.requests) == 1 and stub.paths[0].endswith("/chat/completions")


def test_an_unreachable_server_is_one_line(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, caps_path=tmp_path / "c.json")
    with pytest.raises(BackendUnavailable, match="cannot reach") as e:
        b.choose(fewshot("Claim.\nAnswer:"), YES_NO)
    assert "\n" not in str(e.value) and not (tmp_path / "c.json").exists()


def test_a_damaged_capabilities_file_is_probed_again(serve, tmp_path):
    (tmp_path / "caps.json").write_text("{not json")
    stub = serve(FakeModel(likes(LP)))
    assert backend(stub, tmp_path).choose(fewshot("Claim.\nAnswer:"), YES_NO).method == "logprob"
    assert json.loads((tmp_path / "caps.json").read_text())


def test_concurrent_decisions_probe_once(serve, tmp_path):
    stub = serve(FakeModel(likes(LP), delay=0.05))
    b = backend(stub, tmp_path)
    out = []
    threads = [threading.Thread(target=lambda i=i: out.append(b.choose(fewshot(f"C{i}:"), YES_NO))) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 6 and {c.method for c in out} == {"logprob"}
    assert sum(1 for r in stub.requests if r.get("prompt") == PROBE_PROMPT and r.get("logprobs")) == 1
