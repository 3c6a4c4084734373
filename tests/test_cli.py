"""The `veracity` command as a user runs it: real subprocesses, real output, real exit codes."""

import json
import re
import socket
import subprocess

import pytest
from conftest import veracity_cmd
from stub_server import QACHECK_RULES as RULES


@pytest.fixture
def scripted(tmp_path):
    f = tmp_path / "rules.json"
    f.write_text(json.dumps(RULES))
    return f"scripted:{f}"


def veracity(*args, env, stdin=None, timeout=120):
    return subprocess.run(veracity_cmd() + list(args), capture_output=True, env=env, input=stdin, timeout=timeout)


def test_check_prints_each_step_verdict_and_usage(scripted, cli_env):
    r = veracity("check", "--model", scripted, "The Orrin Bridge stands in Tallinn.", env=cli_env)
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "[1] Q: Where is the Orrin Bridge?" in out
    assert "A: Tallinn" in out
    # what the model recited is labelled its memory, not evidence from a source
    assert (
        "the model's memory (recited, not a source): The Orrin Bridge is a stone bridge in Tallinn, Estonia.\n" in out
    )
    assert "recited by the model" not in out  # said once, not again after the text
    assert "evidence:" not in out
    # the answer was recited from the model's memory: the verdict is uncertain, never shown as a decided one
    assert "\nVerdict: Uncertain, leaning Supported\n" in out and "Verdict: Supported" not in out
    # the output says why (the
    # confidence threshold has nothing to do with it: not explained here)
    assert "Uncertain because it rests on the model's memory only" in out and "--index" in out
    assert "uncertain: confidence below" not in out
    assert "Rationale: The Orrin Bridge is in Tallinn." in out
    assert "Usage: 7 model calls" in out and "prompt +" in out


def test_check_json_and_markdown_report(scripted, cli_env, tmp_path):
    report = tmp_path / "r.md"
    r = veracity(
        "check",
        "--model",
        scripted,
        "--json",
        "--report",
        str(report),
        "The Orrin Bridge stands in Tallinn.",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(r.stdout)
    assert doc["verdict"]["label"] == "Supported"
    assert doc["verdict"]["steps"][0]["question"] == "Where is the Orrin Bridge?"
    assert doc["usage"]["total"]["calls"] == 7
    assert {s["stage"] for s in doc["trace"]} >= {"claim", "question", "answer", "verifier", "reasoner", "verdict"}
    md = report.read_text()
    assert md.startswith("# Fact-check: The Orrin Bridge stands in Tallinn.")
    assert "### Step 1: Where is the Orrin Bridge?" in md and "**Uncertain, leaning Supported**" in md
    assert "- **Verdict:** Uncertain, leaning Supported" in md and "**Verdict:** Supported" not in md
    # the JSON leads with the uncertainty and its wording; the label itself is kept as it was
    assert list(doc["verdict"])[:3] == ["uncertain", "shown_as", "label"]
    assert doc["verdict"]["shown_as"] == "Uncertain, leaning Supported"
    assert doc["verdict"]["uncertain"] and doc["verdict"]["basis"] == "memory"
    assert "**Uncertain because** it rests on the model's memory only" in md
    assert "**The model's memory (recited, not a source):**" in md and "**Evidence:**" not in md


def test_the_html_report_labels_a_recitation_as_the_models_memory(scripted, cli_env, tmp_path):
    report = tmp_path / "r.html"
    r = veracity(
        "check", "--model", scripted, "--report", str(report), "The Orrin Bridge stands in Tallinn.", env=cli_env
    )
    assert r.returncode == 0, r.stderr.decode()
    page = report.read_text()
    assert "<strong>The model's memory (recited, not a source):</strong>" in page and "Evidence:" not in page


def test_second_run_is_served_from_the_cache(scripted, cli_env):
    args = ("check", "--model", scripted, "--json", "The Orrin Bridge stands in Tallinn.")
    first = json.loads(veracity(*args, env=cli_env).stdout)
    second = json.loads(veracity(*args, env=cli_env).stdout)
    assert first["usage"]["total"]["cached_calls"] == 0
    assert second["usage"]["total"]["cached_calls"] == second["usage"]["total"]["calls"] == 7
    assert second["verdict"] == first["verdict"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["check", "   "], "the claim is empty"),
        (["check", "x" * 2001], "the claim has 2001 characters; the limit is 2000"),
        (["check", "--max-claim-chars", "10", "a claim that is long"], "limit is 10"),
        (["check", "--index", "/nonexistent/idx", "A claim."], "/nonexistent/idx"),
        (["check", "--pipeline", "nope", "A claim."], "unknown pipeline 'nope'"),
        (["check", "--qa", "retriever-reader", "A claim."], "needs an index"),
        (["check", "--model", "gguf:/nonexistent/m.gguf", "A claim."], "GGUF model file not found"),
        (["check", "--model", "openai:gpt-4o-mini", "A claim."], "OPENAI_API_KEY is not set"),
        (["check", "--model", "mystery-model", "A claim."], "unknown model 'mystery-model'"),
        (["check", "--config", "/nonexistent.toml", "A claim."], "configuration file not found"),
        (["check"], "give a claim"),
        (["check", "--evidence", "   ", "A claim."], "evidence-1 is empty"),
        (["check", "--evidence-file", "/nonexistent/article.txt", "A claim."], "/nonexistent/article.txt"),
        (["check", "--evidence", "Some text.", "--index", "/nonexistent/idx", "A claim."], "not both"),
    ],
)
def test_user_errors_are_one_line_without_traceback(args, message, scripted, cli_env):
    r = veracity(*args, env=cli_env)
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_non_utf8_claim_file_is_rejected(tmp_path, scripted, cli_env):
    f = tmp_path / "claim.txt"
    f.write_bytes(b"The caf\xe9 opened in 1901.")
    r = veracity("check", "--model", scripted, "--claim-file", str(f), env=cli_env)
    assert r.returncode == 2 and "not valid UTF-8" in r.stderr.decode()
    r = veracity(
        "check", "--model", scripted, "--claim-file", "-", env=cli_env, stdin=b"The Orrin Bridge stands in Tallinn."
    )
    assert r.returncode == 0 and "Verdict: Uncertain, leaning Supported" in r.stdout.decode()  # recited: memory


def test_non_utf8_argument_and_unwritable_report(scripted, cli_env):
    r = subprocess.run(
        [*veracity_cmd(), "check", "--model", scripted, b"caf\xe9 claim"], capture_output=True, env=cli_env, timeout=60
    )
    assert r.returncode == 2 and "not valid UTF-8" in r.stderr.decode()
    r = veracity(
        "check",
        "--model",
        scripted,
        "--report",
        "/nonexistent/dir/r.md",
        "The Orrin Bridge stands in Tallinn.",
        env=cli_env,
    )
    err = r.stderr.decode()
    assert r.returncode == 2 and "cannot write the report to /nonexistent/dir/r.md" in err and "Traceback" not in err


def test_unreachable_server_is_a_clear_error(cli_env):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli_env["VERACITY_MAX_RETRIES"] = "1"
    r = veracity(
        "check",
        "--model",
        "some-model",
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--no-cache",
        "A claim.",
        env=cli_env,
    )
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert f"cannot reach http://127.0.0.1:{port}/v1" in err and "Traceback" not in err


def test_pipelines_lists_ablations(cli_env):
    r = veracity("pipelines", env=cli_env)
    assert r.returncode == 0 and "qacheck-no-validator" in r.stdout.decode()


def test_check_with_an_evidence_only_pipeline_never_loads_the_language_model(cli_env, tmp_path):
    """`--pipeline verifier` (and lexical) decide without an LLM: a configured in-process model that cannot even
    load is never loaded; a pipeline that needs it fails plainly."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "danube.txt").write_text("The Danube flows through Vienna and Budapest.", encoding="utf-8")
    assert (
        veracity("index", "build", str(tmp_path / "docs"), "--out", str(tmp_path / "idx"), env=cli_env).returncode == 0
    )
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)  # a GGUF header and nothing a loader could use
    claim = "The Danube flows through Vienna."
    for pipeline in ("verifier", "lexical"):
        r = veracity(
            "check",
            "--pipeline",
            pipeline,
            "--index",
            str(tmp_path / "idx"),
            "--no-cache",
            "--model",
            f"gguf:{broken}",
            claim,
            env=cli_env,
        )
        assert r.returncode == 0, r.stderr.decode()
        # Supported, or, below the uncertain threshold (one short passage), said uncertain first
        assert re.search(r"\nVerdict: (Uncertain, leaning )?Supported \(confidence", r.stdout.decode())
        assert "Usage: 0 model calls" in r.stdout.decode()
    r = veracity("check", "--pipeline", "direct", "--no-cache", "--model", f"gguf:{broken}", claim, env=cli_env)
    err = r.stderr.decode()
    assert r.returncode != 0 and "broken.gguf" in err and "Traceback" not in err


def test_check_against_the_evidence_a_user_gives_reads_it_in_the_order_given(cli_env, tmp_path):
    """`--evidence TEXT` / `--evidence-file FILE`: the claim is checked against that text, no index needed; all of
    it is read (even a sentence sharing no word with the claim), texts and files in the order the flags came."""
    article = tmp_path / "danube.txt"
    article.write_text(
        "Europe's second-longest river rises in the Black Forest.\nThe Danube flows through Vienna and Budapest.",
        encoding="utf-8",
    )
    r = veracity(
        "check",
        "--pipeline",
        "verifier",
        "--no-cache",
        "--json",
        "--evidence",
        "Paris is in France.",
        "--evidence-file",
        str(article),
        "The Danube flows through Vienna.",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(r.stdout)
    found = next(s for s in doc["trace"] if s["stage"] == "retrieval")["results"]
    assert [e["source"] for e in found] == ["evidence-1", "danube.txt"]
    assert "Black Forest" in found[1]["text"] and "Vienna and Budapest" in found[1]["text"]
    decided = next(s for s in doc["trace"] if s["stage"] == "evidence_verifier")
    assert doc["verdict"]["label"] == "Supported" and decided["passage"] == 1  # the article, not Paris
    r = veracity(
        "check",
        "--pipeline",
        "verifier",
        "--no-cache",
        "--json",
        "--evidence-file",
        str(article),
        "--evidence",
        "Paris is in France.",
        "The Danube flows through Vienna.",
        env=cli_env,
    )
    found = next(s for s in json.loads(r.stdout)["trace"] if s["stage"] == "retrieval")["results"]
    assert [e["source"] for e in found] == ["danube.txt", "evidence-2"]  # the file first, as it came first
    r = veracity(
        "check",
        "--pipeline",
        "verifier",
        "--no-cache",
        "--evidence",
        "Paris is in France.",
        "The Danube flows through Vienna.",
        env=cli_env,
    )
    assert r.returncode == 0 and "Verdict: Supported" not in r.stdout.decode()  # nothing on the Danube: not so


def test_the_terminal_names_the_passage_the_verifier_read_and_what_it_read_there(scripted, cli_env, tmp_path):
    """QACheck's questions are answered from the model's memory here (--qa reciter-reader), and the verdict rests on
    the trained verifier's reading of the source given: the steps printed say which passage decided it, quoting it,
    beside what was recited; the verifier pipeline's reading is printed once (a step), not again as the
    rationale."""
    config = tmp_path / "veracity.toml"
    config.write_text('[verifier]\nuse = "on"\n', encoding="utf-8")
    source = "The Orrin Bridge is a stone bridge in Riga, Latvia."
    r = veracity(
        "check",
        "--config",
        str(config),
        "--model",
        scripted,
        "--no-cache",
        "--qa",
        "reciter-reader",
        "--evidence",
        source,
        "The Orrin Bridge stands in Tallinn.",
        env=cli_env,
    )
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "the model's memory (recited, not a source): The Orrin Bridge is a stone bridge in Tallinn" in out
    line = next(x for x in out.splitlines() if x.startswith("    evidence verifier: "))
    assert f'Label Refuted: decided by passage [1] (evidence-1): "{source}"' in line
    assert out.index("    evidence verifier: ") < out.index("\nVerdict: Refuted")  # a step, before the verdict
    r = veracity(
        "check",
        "--pipeline",
        "verifier",
        "--no-cache",
        "--evidence",
        source,
        "The Orrin Bridge stands in Riga.",
        env=cli_env,
    )
    out = r.stdout.decode()
    assert r.returncode == 0 and "Retrieved 1 passage for: The Orrin Bridge stands in Riga." in out
    assert out.count("decided by passage [1] (evidence-1)") == 1 and "Rationale:" not in out


def test_with_a_source_given_qacheck_answers_its_questions_from_it_not_from_memory(scripted, cli_env, tmp_path):
    """With --evidence and no --qa, QACheck's question is answered from the source given (retriever-reader): the
    step shows the source's passage under its name, once, and nothing recited; without a source the configured
    reciter-reader recites as before."""
    source = "The Orrin Bridge is a stone bridge in Riga, Latvia."
    r = veracity(
        "check",
        "--model",
        scripted,
        "--no-cache",
        "--evidence",
        source,
        "The Orrin Bridge stands in Tallinn.",
        env=cli_env,
    )
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    step = out[out.index("[1] Q: Where is the Orrin Bridge?") : out.index("\nVerdict:")]
    assert f"evidence: {source} — evidence-1, indexed " in step
    assert "memory" not in step and "(evidence-1)," not in step
    r = veracity("check", "--model", scripted, "--no-cache", "The Orrin Bridge stands in Tallinn.", env=cli_env)
    assert r.returncode == 0 and "the model's memory (recited, not a source): The Orrin Bridge" in r.stdout.decode()


def test_a_source_whose_own_sentence_says_otherwise_gives_no_confident_verdict(cli_env):
    """The issue's page check, in the terminal: the source read whole leans Supported, its first sentence alone
    refutes the claim; the verdict is uncertain, and both the step printed and the reason name that sentence."""
    first = "The Danube is the second-longest river in Europe, after the Volga."
    source = first + " The Yangtze is the longest river in Asia."
    r = veracity(
        "check",
        "--pipeline",
        "verifier",
        "--no-cache",
        "--evidence",
        source,
        "The Danube is the longest river in Asia.",
        env=cli_env,
    )
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    verdict = next(x for x in out.splitlines() if x.startswith("Verdict: "))
    assert re.fullmatch(r"Verdict: Uncertain, leaning \w+ \(confidence 0\.\d\d\)", verdict), verdict
    assert f'its sentence "{first}" alone reads refuted' in out
    why = next(x for x in out.splitlines() if x.startswith("Uncertain because "))
    assert "is below" in why and f'the source reads both ways (its sentence "{first}"' in why  # says why it is low


def test_check_batch_answers_qacheck_from_each_claims_evidence_when_every_claim_gives_some(scripted, cli_env, tmp_path):
    """A file whose claims all bring their evidence: QACheck's questions are answered from it (as `check
    --evidence` does), not recited; a file where only some do keeps the configured module and says so."""
    import json

    source = "The Orrin Bridge is a stone bridge in Riga, Latvia."
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        json.dumps(
            {"id": "a", "claim": "The Orrin Bridge stands in Tallinn.", "label": "refuted", "evidence": [source]}
        )
        + "\n",
        encoding="utf-8",
    )
    r = veracity(
        "check-batch",
        str(claims),
        "--out",
        str(tmp_path / "all"),
        "--model",
        scripted,
        "--no-cache",
        "--no-progress",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr.decode()
    row = json.loads((tmp_path / "all" / "items.jsonl").read_text(encoding="utf-8").splitlines()[0])
    answers = [s for s in row["verdict"]["steps"] if s.get("question")]
    assert answers and all(e["text"] == source and not e.get("memory") for s in answers for e in s["evidence"])

    with claims.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "b", "claim": "The Orrin Bridge stands in Tallinn.", "label": "refuted"}) + "\n")
    r = veracity(
        "check-batch",
        str(claims),
        "--out",
        str(tmp_path / "some"),
        "--model",
        scripted,
        "--no-cache",
        "--no-progress",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr.decode()
    assert "1 of 2 claims give evidence: QACheck keeps the configured QA module" in r.stdout.decode()
    rows = {
        json.loads(x)["id"]: json.loads(x)
        for x in (tmp_path / "some" / "items.jsonl").read_text(encoding="utf-8").splitlines()
    }
    # the configured module (auto, with a scripted model): the claim that gives a source is answered from it, the
    # one that gives none recited
    read = [e for s in rows["a"]["verdict"]["steps"] if s.get("question") for e in s["evidence"]]
    recited = [e for s in rows["b"]["verdict"]["steps"] if s.get("question") for e in s["evidence"]]
    assert read and all(e["text"] == source and not e.get("memory") for e in read)
    assert recited and all(e.get("memory") for e in recited)
