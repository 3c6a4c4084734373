"""A server that gives no log-probabilities is said to give no confidences, once, where verdicts are shown: the
command line, its JSON and Markdown report, and `veracity doctor`; one that gives them in llama.cpp's format
gets confidences and no such note. Real subprocesses against stub servers on 127.0.0.1 (tests/stub_server.py)."""

import json
import math
import subprocess

import pytest
from conftest import veracity_cmd
from stub_server import FakeModel, StubServer

from veracity.verify.model import WEIGHTS_DIR

LABEL_TOKENS = {
    " Supported": math.log(0.5),
    " Refuted": math.log(0.2),
    " True": math.log(0.1),
    " False": math.log(0.05),
    " Yes": math.log(0.05),
    " No": math.log(0.05),
    " Not": math.log(0.05),
}
SAID = "this server gives no confidences"


@pytest.fixture
def grammar_server():
    stub = StubServer(FakeModel(lambda text: LABEL_TOKENS, logprobs=False, grammar=True))
    yield stub
    stub.close()


@pytest.fixture
def llama_cpp_server():
    stub = StubServer(FakeModel(lambda text: LABEL_TOKENS, logprob_format="llama.cpp"))
    yield stub
    stub.close()


def check(url, env, tmp_path, *extra):
    return subprocess.run(
        veracity_cmd()
        + [
            "check",
            "Lars Onsager won the Nobel prize at 30.",
            "--model",
            "fake",
            "--base-url",
            url,
            "--pipeline",
            "direct",
            "--no-cache",
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )


def test_no_log_probabilities_is_said_once_in_output_json_and_report(grammar_server, cli_env, tmp_path):
    r = check(grammar_server.url, cli_env, tmp_path, "--report", str(tmp_path / "r.md"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(SAID) == 1
    assert "Verdict: Uncertain, leaning Supported\n" in r.stdout  # resting on memory; no "(confidence ...)" made up
    assert f"**No confidence:** {SAID}" in (tmp_path / "r.md").read_text()
    r = check(grammar_server.url, cli_env, tmp_path, "--json")
    doc = json.loads(r.stdout)
    assert doc["verdict"]["confidence"] is None and doc["verdict"]["confidence_note"].startswith(SAID)


def test_llama_cpp_log_probabilities_give_a_confidence_and_no_note(llama_cpp_server, cli_env, tmp_path):
    r = check(llama_cpp_server.url, cli_env, tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)["verdict"]
    assert v["label"] == "Supported" and 0.5 < v["confidence"] < 1 and "confidence_note" not in v


def test_doctor_says_what_the_server_offers(grammar_server, llama_cpp_server, cli_env, tmp_path):
    def doctor(url):
        return subprocess.run(
            veracity_cmd() + ["doctor", "--model", "fake", "--base-url", url],
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=180,
            cwd=tmp_path,
        )

    r = doctor(grammar_server.url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"NONE: {SAID}" in r.stdout and "constrained output (grammar)" in r.stdout
    r = doctor(llama_cpp_server.url)
    assert SAID not in r.stdout and "yes (log-probabilities)" in r.stdout
    assert "log-probabilities on completions" in r.stdout


def test_eval_report_and_check_text_say_it_once(grammar_server, cli_env, tmp_path):
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "claim": c, "label": "supported"}) + "\n"
            for i, c in enumerate(["Tallinn is the capital of Estonia.", "Sardines are fish."])
        )
    )
    out = tmp_path / "run"
    r = subprocess.run(
        veracity_cmd()
        + [
            "eval",
            "--dataset",
            "jsonl",
            "--path",
            str(claims),
            "--pipeline",
            "direct",
            "--model",
            "fake",
            "--base-url",
            grammar_server.url,
            "--out",
            str(out),
            "--no-progress",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=180,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    report = (out / "report.md").read_text()
    assert report.count(SAID) == 1 and f"No confidences for direct: {SAID}" in report
    text = tmp_path / "a.md"
    text.write_text("Tallinn is the capital of Estonia. Sardines are a kind of fish that lives in the sea.")
    r = subprocess.run(
        veracity_cmd()
        + [
            "check-text",
            str(text),
            "--model",
            "fake",
            "--base-url",
            grammar_server.url,
            "--pipeline",
            "direct",
            "--extract",
            "rules",
            "--no-cache",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=180,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["confidence_note"].startswith(SAID)


def test_the_run_page_says_it(grammar_server, server_factory):
    import time

    import httpx

    srv = server_factory(["--model", "fake", "--base-url", grammar_server.url, "--no-cache", "--rate-limit", "0"])
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        r = c.post("/api/checks", json={"claim": "Tallinn is the capital of Estonia.", "pipeline": "direct"})
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        deadline = time.time() + 60
        while c.get(f"/api/checks/{run_id}").json()["status"] not in ("done", "failed") and time.time() < deadline:
            time.sleep(0.2)
        run = c.get(f"/api/checks/{run_id}").json()
        assert run["status"] == "done" and run["verdict"]["confidence_note"].startswith(SAID)
        page = c.get(f"/checks/{run_id}").text
        assert page.count(SAID) == 1 and "confidence 0." not in page


def test_a_verdict_uncertain_for_its_confidence_says_what_the_threshold_means(llama_cpp_server, cli_env, tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        json.dumps({"id": "n", "title": "Onsager", "text": "Lars Onsager won the Nobel prize in 1968."}) + "\n"
    )
    assert (
        subprocess.run(
            veracity_cmd() + ["index", "build", str(docs), "--out", str(tmp_path / "idx")],
            capture_output=True,
            env=cli_env,
            timeout=300,
        ).returncode
        == 0
    )
    r = check(llama_cpp_server.url, cli_env, tmp_path, "--index", str(tmp_path / "idx"))
    assert r.returncode == 0, r.stderr
    # the direct baseline's True is 0.1 / (0.1 + 0.05) of its two answers' probability: below the threshold
    assert "Verdict: Uncertain, leaning Supported (confidence 0.67)" in r.stdout, r.stdout
    t = json.loads((WEIGHTS_DIR / "verifier.json").read_text())["uncertain_below"]  # the shipped verifier's own
    assert f"Uncertain because its confidence 0.67 is below {t:.2f}. (uncertain: confidence below {t:.2f};" in r.stdout
