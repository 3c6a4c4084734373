"""The embedded SmolLM2 model, for real: scoring decisions, kept prefix states, and the CLI end to end."""

import json
import subprocess

import pytest
from conftest import veracity_cmd

from veracity.llm import CompletionRequest, fewshot
from veracity.llm.embedded import EmbeddedBackend
from veracity.prompts import load_prompt

pytestmark = [pytest.mark.embedded, pytest.mark.native]


@pytest.fixture(scope="module")
def backend():
    return EmbeddedBackend(n_ctx=4096, n_threads=2)


def verifier_prompt(claim, qa):
    return load_prompt("verifier").render(CLAIM=claim, QA_CONTEXTS=qa)


def test_choose_scores_every_option(backend):
    ch = backend.choose(
        fewshot(
            verifier_prompt(
                "Paris is the capital of France.", "Question 1 = What is the capital of France?\nAnswer 1 = Paris"
            )
        ),
        ["Yes", "No"],
    )
    assert ch.option in ("Yes", "No") and ch.method == "logprob"
    assert set(ch.probabilities) == {"Yes", "No"}
    assert abs(sum(ch.probabilities.values()) - 1) < 1e-9
    assert ch.probabilities[ch.option] >= 0.5
    # multi-token options are scored over all their tokens
    ch = backend.choose(CompletionRequest.of("Is water wet? Answer Supported or Refuted."), ["Supported", "Refuted"])
    assert ch.option in ("Supported", "Refuted") and abs(sum(ch.probabilities.values()) - 1) < 1e-9


def test_kept_prefix_state_is_reused_and_changes_nothing(backend):
    prompt_a = load_prompt("question_first").render(CLAIM="The Danube flows through four capital cities.")
    prompt_b = load_prompt("question_first").render(CLAIM="Mount Fuji is the highest mountain in Japan.")
    a = backend.complete(fewshot(prompt_a, max_tokens=24, stop=["\n"]))
    b = backend.complete(fewshot(prompt_b, max_tokens=24, stop=["\n"]))
    # the ten demonstrations were not evaluated again for the second claim
    assert b.reused_prompt_tokens > 0.8 * b.prompt_tokens
    fresh = EmbeddedBackend(n_ctx=4096, n_threads=2, keep_states=False)
    assert fresh.complete(fewshot(prompt_b, max_tokens=24, stop=["\n"])).text == b.text
    # a different template in between does not lose the first one's state
    backend.complete(fewshot(load_prompt("recite").render(QUESTION="Where is Mount Fuji?"), max_tokens=8))
    again = backend.complete(fewshot(prompt_a, max_tokens=24, stop=["\n"]))
    assert again.text == a.text and again.reused_prompt_tokens >= again.prompt_tokens - 1
    d1 = backend.choose(fewshot(verifier_prompt("X is Y.", "Question 1 = Is X Y?\nAnswer 1 = Yes")), ["Yes", "No"])
    d2 = fresh.choose(fewshot(verifier_prompt("X is Y.", "Question 1 = Is X Y?\nAnswer 1 = Yes")), ["Yes", "No"])
    assert d1.option == d2.option
    assert d1.probabilities["Yes"] == pytest.approx(d2.probabilities["Yes"], abs=1e-3)


def test_too_long_prompt_is_a_clear_error(backend):
    from veracity.errors import BackendError

    with pytest.raises(BackendError, match="does not fit the context window of 4096 tokens"):
        backend.complete(CompletionRequest.of("word " * 5000, max_tokens=8))


def test_cli_check_on_the_embedded_default(cli_env, tmp_path):
    r = subprocess.run(
        veracity_cmd()
        + ["check", "--threads", "2", "--json", "Lars Onsager won the Nobel prize when he was 30 years old."],
        capture_output=True,
        env=cli_env,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    doc = json.loads(r.stdout)
    assert doc["model"] == "gguf:SmolLM2-135M-Instruct.Q4_1.gguf"
    assert doc["verdict"]["label"] in ("Supported", "Refuted")
    assert 0.5 <= doc["verdict"]["confidence"] <= 1.0
    questions = [s for s in doc["trace"] if s["stage"] == "question"]
    assert questions and all(q["question"].endswith("?") for q in questions)
    assert doc["usage"]["by_stage"]["recite"]["calls"] >= 1


def test_defame_on_the_embedded_model_with_an_image_and_a_local_index(tmp_path, cli_env):
    """DEFAME end to end on SmolLM2: a real plan (or its recorded fallback), real BM25 search, summaries, a
    judgement among the four labels, and an HTML report that embeds the claim's image."""
    from PIL import Image

    (tmp_path / "docs.jsonl").write_text(
        "\n".join(
            json.dumps(d)
            for d in [
                {
                    "id": "e",
                    "title": "Eiffel Tower",
                    "text": "The Eiffel Tower is a wrought-iron tower in Paris, France. "
                    "It was completed in 1889 and stands on the Champ de Mars.",
                    "url": "https://example.org/eiffel",
                },
                {"id": "c", "title": "Colosseum", "text": "The Colosseum is an amphitheatre in the centre of Rome."},
            ]
        )
        + "\n"
    )
    idx = tmp_path / "idx"
    r = subprocess.run(
        veracity_cmd() + ["index", "build", str(tmp_path / "docs.jsonl"), "--out", str(idx)],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    Image.new("RGB", (32, 32), (90, 120, 200)).save(tmp_path / "photo.png")
    report = tmp_path / "r.html"
    r = subprocess.run(
        veracity_cmd()
        + [
            "check",
            "--pipeline",
            "defame-single-turn",
            "--index",
            str(idx),
            "--image",
            str(tmp_path / "photo.png"),
            "--date",
            "2020-01-01",
            "--report",
            str(report),
            "--json",
            "The Eiffel Tower stands in Rome.",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["verdict"]["label"] in (
        "Supported",
        "Refuted",
        "Not Enough Information",
        "Conflicting Evidence/Cherrypicking",
    )
    stages = [s["stage"] for s in out["trace"]]
    assert stages.count("plan") == 1 and "action" in stages and "judge" in stages and "justify" in stages
    plan = next(s for s in out["trace"] if s["stage"] == "plan")
    assert plan["actions"]  # planned, or (recorded) constrained / fallback: never nothing on round 1
    page = report.read_text()
    assert "data:image/png;base64," in page and "reads text only" in page
