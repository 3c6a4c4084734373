"""Model states on disk (veracity.llm.state_store): one per prompt template, checked before native code sees them,
and a second `veracity check` process that starts with the first one's templates evaluated, with the same result."""

import json
import subprocess

import numpy as np
import pytest
from conftest import veracity_cmd

from veracity.llm.state_store import HEAD, MAGIC, StateStore


def toks(first: int, n: int = 100) -> np.ndarray:
    return np.arange(first, first + n, dtype=np.int32)


def test_a_state_is_kept_once_per_template_head_and_read_back(tmp_path):
    store = StateStore(tmp_path, "k")
    assert store.load(toks(0)) is None
    assert store.save(toks(0), b"state one")
    # another prompt of the same template (the same first HEAD tokens): the first state stays
    other = toks(0).copy()
    other[HEAD + 5] = 999
    assert not store.save(other, b"state two")
    tokens, data = store.load(other)
    assert data == b"state one" and np.array_equal(tokens, toks(0))
    assert not store.save(toks(0, HEAD - 1), b"short")  # too short to name a template
    assert store.load(toks(0, HEAD - 1)) is None


@pytest.mark.parametrize("damage", ["flip a byte", "cut", "foreign"])
def test_a_damaged_file_is_ignored_and_removed_before_native_code_sees_it(tmp_path, damage):
    store = StateStore(tmp_path, "k")
    store.save(toks(0), b"x" * 1000)
    (path,) = (tmp_path / "k").glob("*.state")
    raw = bytearray(path.read_bytes())
    if damage == "flip a byte":
        raw[-10] ^= 0xFF
    elif damage == "cut":
        raw = raw[:-10]
    else:
        raw[: len(MAGIC)] = b"x" * len(MAGIC)
    path.write_bytes(bytes(raw))
    assert store.load(toks(0)) is None and not path.exists()
    assert store.save(toks(0), b"y" * 10) and store.load(toks(0))[1] == b"y" * 10  # written again when next met


def test_the_folder_is_capped_oldest_first_over_every_models_states(tmp_path):
    old = StateStore(tmp_path, "old-model", max_bytes=10_000)
    old.save(toks(0), b"a" * 4000)
    new = StateStore(tmp_path, "new-model", max_bytes=10_000)
    new.save(toks(1000), b"b" * 4000)
    new.save(toks(2000), b"c" * 4000)  # over the cap: the oldest file goes, whichever model it was
    assert old.load(toks(0)) is None
    assert new.load(toks(1000)) is not None and new.load(toks(2000)) is not None


def check(claim, cache_home, env):
    r = subprocess.run(
        veracity_cmd() + ["check", claim, "--json"],
        capture_output=True,
        text=True,
        env=dict(env, XDG_CACHE_HOME=str(cache_home)),
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    calls = [s for s in doc["trace"] if s.get("stage") == "model_call"]
    return doc, calls


@pytest.mark.embedded
def test_a_new_process_starts_with_the_templates_evaluated_and_decides_the_same(tmp_path, cli_env):
    claim = "Lars Onsager won the Nobel prize when he was 30 years old."
    _, first_calls = check("The Eiffel Tower is in Rome.", tmp_path / "warm", cli_env)
    assert first_calls[0]["reused"] == 0  # nothing kept yet
    states = list((tmp_path / "warm" / "veracity" / "states").glob("*/*.state"))
    assert len(states) >= 3  # QACheck's templates
    warm, calls = check(claim, tmp_path / "warm", cli_env)
    assert calls[0]["reused"] > 300  # the question template's demonstrations came from disk
    cold, cold_calls = check(claim, tmp_path / "cold", cli_env)  # the same claim in a process with none kept
    assert cold_calls[0]["reused"] == 0
    assert warm["verdict"]["label"] == cold["verdict"]["label"]
    assert warm["verdict"]["confidence"] == pytest.approx(cold["verdict"]["confidence"], abs=1e-6)
    assert [(s["question"], s["answer"]) for s in warm["verdict"]["steps"]] == [
        (s["question"], s["answer"]) for s in cold["verdict"]["steps"]
    ]
    # a damaged state is not loaded: the check runs as from cold and writes it again
    for p in states:
        p.write_bytes(p.read_bytes()[:-100])
    again, again_calls = check("The Danube flows through Vienna.", tmp_path / "warm", cli_env)
    assert again_calls[0]["reused"] == 0 and again["verdict"]["label"]
    _, next_calls = check("The Seine flows through Paris.", tmp_path / "warm", cli_env)
    assert next_calls[0]["reused"] > 300  # the state written again is read by the next process
