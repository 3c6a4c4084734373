"""Small faults of wording a new user met (issue: "What a new user trips over"), each as the user saw it."""

import subprocess

from conftest import veracity_cmd

from veracity.check import run_check
from veracity.config import load_config
from veracity.llm import Model
from veracity.llm.scripted import ScriptedBackend
from veracity.mcp_server.tools import tool_error
from veracity.registry import get_pipeline
from veracity.retrieval import Document, Index
from veracity.server.errors import ApiError
from veracity.types import Claim


def test_an_unknown_pipeline_over_mcp_names_what_an_agent_can_run_not_an_http_route():
    e = ApiError(
        400, "unknown_pipeline", "unknown pipeline 'x'; choose one of: qacheck (GET /api/pipelines describes them)"
    )
    said = str(tool_error(e))
    assert "GET /api/pipelines" not in said and "`veracity pipelines` describes them" in said


def test_a_verdict_on_memory_with_a_source_configured_says_how_to_read_it_not_what_to_install():
    """The knowledge base (or an index) is there, but the QA module chosen recites: installing it is no advice."""
    cfg = load_config(overrides={"qacheck.qa": "closed-book", "verifier.use": "off"}, env={})
    rules = [
        (r"Yes or no\?\nPrediction =$", "Yes, we can know."),
        (r"first ask a simple question:\nQuestion =$", " Where does the Danube flow into?"),
        (r"-{8}\nQuestion = [^\n]*\nAnswer =$", " The Black Sea"),
        (r"useful for verifying the claim\?\nThe answer:$", " Yes"),
        (r"Is this claim true or false\?\nAnswer:$", "\nIt does.\n"),
        (r"final answer is:$", " True"),
    ]
    index = Index.from_documents([Document(id="d", title="Danube", text="The Danube flows into the Black Sea.")])
    cfg.index = "somewhere"  # a source configured, as the knowledge base is by default
    result = run_check(
        Claim("The Danube flows into the Black Sea."),
        get_pipeline("qacheck", cfg),
        Model(ScriptedBackend(rules)),
        cfg,
        retriever=index.retriever("bm25"),
    )
    reason = result.verdict.uncertain_reason
    assert result.verdict.basis == "memory" and result.verdict.uncertain
    assert "veracity[wiki]" not in reason and "--qa retriever-reader" in reason


def test_check_text_progress_counts_claims_without_a_made_up_rate(tmp_path, cli_env):
    text = tmp_path / "t.md"
    text.write_text("The Danube flows into the Black Sea.\n")
    r = subprocess.run(
        veracity_cmd() + ["check-text", str(text), "--pipeline", "verifier", "--evidence-file", str(text)],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "checking claims: 1 checked [" in r.stderr and "claim/s" not in r.stderr, r.stderr


def test_the_verifier_pipeline_names_no_language_model_as_deciding(cli_env):
    r = subprocess.run(
        veracity_cmd()
        + [
            "check",
            "--pipeline",
            "verifier",
            "--evidence",
            "The Danube flows into the Black Sea.",
            "The Danube ends in the Black Sea.",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[1]
    assert head == "Pipeline: verifier   Model: none (the trained verifier decides: no language model call)", head


def test_one_evidence_item_is_one_item():
    from veracity.evidence.decision import _note

    assert "(1 item)" in _note("Supported", "Supported", None, 1, 0) and "(2 items)" in _note("A", "B", None, 2, 0)


def test_a_search_providers_failure_is_not_called_the_models():
    from veracity.errors import BackendError, is_search_error
    from veracity.failures import backend_error
    from veracity.web.base import SearchError

    e = SearchError("search provider searxng unreachable at http://127.0.0.1:9/search: connection refused")
    assert is_search_error(e) and isinstance(e, BackendError) and not is_search_error(BackendError("model down"))
    said = backend_error(str(e), search=is_search_error(e))
    assert said.startswith("search error: search provider searxng unreachable") and "model backend" not in said
