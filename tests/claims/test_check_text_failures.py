"""A model backend error on one claim of a text fails that claim only: the others are checked, the failure is
told with its message, and the summary, the reports and the server's verdict count it."""

import subprocess

import pytest
from conftest import veracity_cmd
from stub_server import StubServer, chat_response, message_text

from veracity.claims.sources import Source
from veracity.config import load_config
from veracity.errors import BackendUnavailable
from veracity.llm import make_model
from veracity.registry import get_pipeline
from veracity.server.texts import text_verdict
from veracity.textcheck.report import to_html, to_markdown
from veracity.textcheck.run import check_text

TEXT = "The Danube flows through Vienna. The Rhine flows through Basel. The Seine flows through Paris."


@pytest.fixture
def server():
    def respond(body):
        text = message_text(body)
        if "Basel" in text:
            return 400, {"error": {"message": "prompt rejected by the moderation filter"}}, 0
        return 200, chat_response("True"), 0

    stub = StubServer(respond)
    yield stub
    stub.close()


def config_for(url, tmp_path, **extra):
    return load_config(
        overrides={
            "model": "m",
            "base_url": url,
            "cache": False,
            "max_retries": 0,
            "http.decisions": "parse",
            "http.endpoint": "chat",
            "verifier.use": "off",
            "cache_path": str(tmp_path / "cache.sqlite"),
            **extra,
        },
        env={},
    )


def test_one_claims_backend_error_fails_that_claim_and_the_others_are_checked(server, tmp_path):
    config = config_for(server.url, tmp_path)
    seen = []
    check = check_text(
        Source(text=TEXT, origin="t.txt", kind="text"),
        get_pipeline("direct", config),
        make_model(config, use_cache=False),
        config,
        extract="rules",
        on_claim=seen.append,
    )
    by_text = {r.claim.text: r for r in check.results}
    failed = by_text["The Rhine flows through Basel."]
    assert failed.outcome == "failed" and "HTTP 400" in failed.note and "moderation filter" in failed.note
    for other in ("The Danube flows through Vienna.", "The Seine flows through Paris."):  # Seine: after the failure
        assert by_text[other].label == "Supported" and by_text[other].outcome != "failed"
    assert len(seen) == 3
    s = check.summary()
    assert (s["failed"], s["checked"], s["claims"]) == (1, 2, 3)
    assert "| Check failed | 1 |" in to_markdown(check)
    html = to_html(check)
    assert 'class="o-failed"' in html and "moderation filter" in html
    assert "1 failed with a model backend error" in text_verdict(check).rationale  # the server's run verdict


def test_an_unreachable_backend_still_stops_the_text(tmp_path):
    config = config_for("http://127.0.0.1:9/v1", tmp_path)  # the discard port: nothing answers
    with pytest.raises(BackendUnavailable):
        check_text(
            Source(text=TEXT, origin="t.txt", kind="text"),
            get_pipeline("direct", config),
            make_model(config, use_cache=False),
            config,
            extract="rules",
        )


def test_check_text_cli_shows_the_failed_claim_and_exits_1(server, tmp_path, cli_env):
    (tmp_path / "t.txt").write_text(TEXT, encoding="utf-8")
    p = subprocess.run(
        veracity_cmd()
        + [
            "check-text",
            "t.txt",
            "--pipeline",
            "direct",
            "--extract",
            "rules",
            "--model",
            "m",
            "--base-url",
            server.url,
            "--decisions",
            "parse",
            "--endpoint",
            "chat",
            "--no-cache",
            "--no-progress",
            "--report",
            "out.md",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=tmp_path,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr
    assert "failed: The Rhine flows through Basel.  (" in p.stdout and "moderation filter" in p.stdout
    assert "Check failed: 1" in p.stdout and "Traceback" not in p.stderr
    assert "| Check failed | 1 |" in (tmp_path / "out.md").read_text(encoding="utf-8")


def test_a_failed_claims_note_keeps_no_quoted_prompt_and_reads_plainly(tmp_path):
    from veracity.textcheck.steps import TextClaim

    quoted = "Is this claim true or false? The Rhine flows through Basel and more"

    def respond(body):
        if "Basel" in message_text(body):
            return 400, {"error": {"message": f"refused the prompt '{quoted}'"}}, 0
        return 200, chat_response("True"), 0

    stub = StubServer(respond)
    try:
        config = config_for(stub.url, tmp_path)
        check = check_text(
            Source(text=TEXT, origin="t.txt", kind="text"),
            get_pipeline("direct", config),
            make_model(config, use_cache=False),
            config,
            extract="rules",
        )
    finally:
        stub.close()
    failed = next(r for r in check.results if r.outcome == "failed")
    assert quoted not in failed.note and "refused the prompt '[text removed]'" in failed.note
    assert failed.note.startswith("model backend error: ") and "HTTP 400" in failed.note
    from veracity.server.views import run_view

    items, _ = run_view([TextClaim(**failed.to_dict()).to_dict()])  # as the page gets it
    view = next(it for it in items if it["kind"] == "text_claim")["failure"]
    assert view["message"] == "The model server answered with an error (HTTP 400)."
    assert stub.url not in view["details"] and "[text removed]" in view["details"]
