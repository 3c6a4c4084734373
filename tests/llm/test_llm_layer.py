import json
import subprocess
import sys

import pytest

from veracity.llm import CompletionRequest, Model, ResponseCache, UsageMeter
from veracity.llm.base import match_option
from veracity.llm.cache import stable_key
from veracity.llm.scripted import ScriptedBackend
from veracity.trace import Tracer


@pytest.mark.parametrize(
    "text,expected",
    [
        ("No, we cannot know.", "No"),
        (" Yes, we can know.", "Yes"),
        ("yes", "Yes"),
        ("Nothing suggests it", None),  # 'No' inside a word is not an answer
        ("I am not sure.", None),
        ("The answer: No. (Yes would be wrong)", "No"),  # the first named option wins
    ],
)
def test_match_option_reads_free_text_answers(text, expected):
    assert match_option(text, ["Yes", "No"]) == expected


def test_choose_retries_once_with_a_format_reminder():
    backend = ScriptedBackend([(r"exactly one of", "True"), (r".*", "Hmm, hard to say.")])
    choice = backend.choose(CompletionRequest.of("Is the sky green?"), ["True", "False"])
    assert choice.option == "True"
    assert choice.method == "parse-retry"
    assert len(backend.calls) == 2
    assert "exactly one of: True, False" in backend.calls[1].messages[-1][1]


def test_choose_reports_failure_instead_of_guessing():
    backend = ScriptedBackend([(r".*", "I refuse to answer.")])
    choice = backend.choose(CompletionRequest.of("Is the sky green?"), ["True", "False"])
    assert choice.option is None and choice.parse_failed
    assert "I refuse" in choice.raw


def test_cache_returns_stored_completion_and_counts_it_as_cached(tmp_path):
    backend = ScriptedBackend([(r".*", ["first", "second"])])
    model = Model(backend, ResponseCache(tmp_path / "c.sqlite"))
    req = CompletionRequest.of("hello", max_tokens=5)
    a = model.complete(req)
    b = model.complete(req)
    assert a.text == b.text == "first" and not a.cached and b.cached
    assert len(backend.calls) == 1
    # a different parameter is a different request
    c = model.complete(CompletionRequest.of("hello", max_tokens=6))
    assert c.text == "second" and not c.cached
    # the cache persists across Model instances (and processes)
    again = Model(ScriptedBackend([(r".*", "never")]), ResponseCache(tmp_path / "c.sqlite"))
    assert again.complete(req).text == "first"


def test_cache_key_is_stable_across_processes():
    payload = {"model": "m", "request": CompletionRequest.of("héllo", stop=["\n"]).key_dict()}
    code = "import json,sys; from veracity.llm.cache import stable_key; print(stable_key(json.loads(sys.argv[1])))"
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(payload)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    )
    assert out.stdout.strip() == stable_key(payload)


def test_usage_is_metered_per_stage_and_traced():
    model = Model(ScriptedBackend([(r".*", "one two three")]))
    meter, tracer = UsageMeter(), Tracer()
    run = model.bind(meter, tracer)
    run.complete(CompletionRequest.of("a b"), stage="question")
    run.complete(CompletionRequest.of("a b c"), stage="question")
    run.choose(CompletionRequest.of("x"), ["one", "two"], stage="verifier")
    d = meter.to_dict()
    assert d["by_stage"]["question"]["calls"] == 2
    assert d["by_stage"]["question"]["completion_tokens"] == 6
    assert d["by_stage"]["verifier"]["calls"] == 1
    assert d["total"]["calls"] == 3
    assert [s.stage for s in tracer.steps] == ["model_call"] * 3


def test_scripted_rules_file_and_turns(tmp_path):
    f = tmp_path / "rules.json"
    f.write_text(json.dumps({"rules": [{"match": "ask$", "reply": ["a", "b"]}]}))
    b = ScriptedBackend.from_file(f)
    assert [b.complete(CompletionRequest.of("please ask")).text for _ in range(3)] == ["a", "b", "b"]
    with pytest.raises(AssertionError):
        b.complete(CompletionRequest.of("unexpected"))
