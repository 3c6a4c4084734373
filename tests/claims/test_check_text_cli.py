"""`veracity check-text` end to end: the real CLI in a subprocess over a real BM25 index, the evidence-only
verifier deciding, the JSON result, the HTML report (spans coloured, untrusted text escaped), and bad input."""

import json
import re
import subprocess

import pytest
from conftest import veracity_cmd

DOCS = [
    {
        "id": "curie",
        "title": "Marie Curie",
        "text": "Marie Curie was a Polish and naturalised-French physicist and "
        "chemist. She was born in Warsaw. She won the Nobel Prize in Physics in 1903.",
    },
    {
        "id": "danube",
        "title": "Danube",
        "text": "The Danube is the second-longest river in Europe. It flows "
        "through Vienna, Bratislava, Budapest and Belgrade.",
    },
]
TEXT = (
    "Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903. Do you like rivers? "
    "<script>alert('x')</script> The Danube is the longest river in Asia. He lost it."
)


@pytest.fixture
def index(tmp_path, cli_env):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps(d) for d in DOCS), encoding="utf-8")
    run(["index", "build", str(docs), "--out", str(tmp_path / "idx")], cli_env, tmp_path)
    return str(tmp_path / "idx")


def run(args, env, cwd, stdin=None, check=True):
    p = subprocess.run(veracity_cmd() + args, capture_output=True, env=env, cwd=cwd, input=stdin, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr.decode()
    return p


@pytest.fixture
def scripted(tmp_path):
    path = tmp_path / "none.json"
    path.write_text('{"rules": []}')  # the verifier pipeline makes no model call: any call would fail
    return ["--model", f"scripted:{path}", "--no-cache", "--no-progress"]


def test_check_text_json_reports_each_claim_with_its_verdict_span_and_evidence(tmp_path, cli_env, index, scripted):
    (tmp_path / "t.md").write_text(TEXT, encoding="utf-8")
    out = json.loads(run(["check-text", "t.md", "--index", index, "--json", *scripted], cli_env, tmp_path).stdout)
    claims = {c["text"]: c for c in out["claims"]}
    born = claims["Marie Curie was born in Warsaw."]
    assert born["outcome"] == "supported" and born["evidence"][0]["source"] == "Marie Curie"
    won = claims["Marie Curie won the Nobel Prize in Physics in 1903."]
    assert [out["text"][s:e] for s, e in won["spans"]] == ["She won the Nobel Prize in Physics in 1903."]
    assert claims["He lost it."]["outcome"] == "ambiguous"
    assert claims["Do you like rivers?"]["outcome"] == "not_checkable"
    s = out["summary"]
    assert s["checked"] == s["supported"] + s["refuted"] + s["uncertain"] >= 3
    # the factuality is over the decided claims (an uncertain one decides nothing), with their count
    assert s["decided"] == s["supported"] + s["refuted"] >= 1
    assert s["factuality"] == pytest.approx(s["supported"] / s["decided"])
    assert s["ambiguous"] == 1 and s["not_checkable"] >= 1
    assert out["extraction"]["method"] == "rules" and out["usage"]["total"]["calls"] == 0


def test_html_report_colours_spans_by_verdict_and_keeps_injected_markup_inert(tmp_path, cli_env, index, scripted):
    (tmp_path / "t.txt").write_text(TEXT, encoding="utf-8")
    p = run(
        ["check-text", "-", "--index", index, "--report", "r.html", "--max-claims", "2", *scripted],
        cli_env,
        tmp_path,
        stdin=TEXT.encode(),
    )
    assert "Factuality" in p.stdout.decode()
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page and "script-src" not in page.split("default-src 'none'")[0]
    assert re.search(
        r'<mark class="o-supported" id="p-\d+"><a href="#claim-\d+" title="claim \d+: Supported '
        r'\([\d.]+\)">Marie Curie was born in Warsaw.</a></mark>',
        page,
    )
    assert re.search(r'<mark class="o-ambiguous"[^>]*><a [^>]*>He lost it.</a></mark>', page)
    assert page.count('class="b o-not_checked"') >= 1  # over --max-claims 2: listed, not checked
    assert "second-longest river in Europe" in page or "Warsaw" in page  # evidence in the claims' list


FLOWING = (
    "Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903.\nDo you like rivers?\n\n"
    "The Danube is the longest river in Asia. He lost it.\n"
)


def test_reports_show_the_text_as_written_with_the_passages_marked_in_place(
    tmp_path, cli_env, index, scripted, report_page
):
    (tmp_path / "t.md").write_text(FLOWING, encoding="utf-8")
    run(["check-text", "t.md", "--index", index, "--report", "r.html", *scripted], cli_env, tmp_path)
    run(["check-text", "t.md", "--index", index, "--report", "r.md", *scripted], cli_env, tmp_path)

    page = report_page
    page.goto((tmp_path / "r.html").as_uri())
    # the text reads as written: its words, line breaks and paragraphs, nothing in between
    assert page.locator(".text").inner_text() == FLOWING.rstrip("\n") or page.locator(".text").inner_text() == FLOWING
    born, won = page.locator("mark", has_text="born in Warsaw"), page.locator("mark", has_text="Nobel Prize")
    # marked inline: the second sentence follows the first on its line, with no leading space of its own
    first_box = "e => { const r = e.getClientRects()[0]; return [r.top, r.left, r.right]; }"
    (b_top, _, b_right), (w_top, w_left, _) = born.evaluate(first_box), won.evaluate(first_box)
    assert abs(b_top - w_top) < 2 and w_left > b_right, (b_top, b_right, w_top, w_left)
    assert born.evaluate("e => getComputedStyle(e).display") == "inline"
    # a passage links to its claim's entry below (verdict and evidence), which links back
    won.get_by_role("link").click()
    entry = page.locator("ol.claims > li:target")
    # its verdict with its confidence, and its evidence (which says the same words, "She" for her name: never
    # Refuted; Supported or, near the verifier's uncertain threshold, Uncertain, as the shipped weights read it)
    assert re.match(r"(Supported|Uncertain, leaning Supported) \(0\.\d+\)", entry.inner_text()), entry.inner_text()
    assert "Marie Curie" in entry.inner_text() and "She won the Nobel Prize" in entry.inner_text()
    assert entry.is_visible() and 0 <= entry.bounding_box()["y"] < 700
    entry.get_by_role("link", name="(in the text)").click()
    assert page.locator("mark:target").inner_text() == "She won the Nobel Prize in Physics in 1903."

    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    text = md.split("## Text")[1].split("## Claims")[0]
    assert (
        "**Marie Curie was born in Warsaw.**\\[1\\] **She won the Nobel Prize in Physics in 1903.**\\[2\\]\\\n"
        "**Do you like rivers?**\\[3\\]\n\n**The Danube is the longest river in Asia.**\\[4\\]"
    ) in text
    # where each passage is, in words
    assert "(characters 0-31)" in md and "\\[(" not in md


def test_text_with_no_checkable_claim_is_said_plainly(tmp_path, cli_env, index, scripted):
    p = run(
        ["check-text", "-", "--index", index, *scripted],
        cli_env,
        tmp_path,
        stdin=b"Hello! How are you today? Thanks a lot.",
    )
    assert "no checkable claim" in p.stdout.decode() and "Factuality (supported / decided): n/a" in p.stdout.decode()


@pytest.mark.parametrize("content,message", [(b"   \n ", "is empty"), (b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR", "binary")])
def test_bad_input_is_one_line_and_exit_2(tmp_path, cli_env, index, scripted, content, message):
    (tmp_path / "bad.txt").write_bytes(content)
    p = run(["check-text", "bad.txt", "--index", index, *scripted], cli_env, tmp_path, check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.startswith("veracity: error:") and message in err and err.count("\n") == 1


def test_text_over_the_limit_names_the_limit(tmp_path, cli_env, index, scripted):
    (tmp_path / "big.txt").write_bytes(b"Paris is in France. " * 600_000)  # 12 MB
    p = run(["check-text", "big.txt", "--index", index, *scripted], cli_env, tmp_path, check=False)
    assert p.returncode == 2 and "the limit is 10.0 MB" in p.stderr.decode()


def test_a_page_that_fails_to_load_is_a_clear_error(tmp_path, cli_env, index, scripted):
    from web_stub import Reply, WebStub

    stub = WebStub()
    stub.routes["/gone"] = Reply(404, "not here")
    stub.routes["/article"] = Reply(
        200,
        "<html><head><title>News</title></head><body><article><p>Marie Curie "
        "was born in Warsaw.</p></article></body></html>",
    )
    try:
        p = run(
            ["check-text", stub.url("/gone"), "--index", index, "--allow-private-addresses", *scripted],
            cli_env,
            tmp_path,
            check=False,
        )
        assert p.returncode == 2 and "HTTP 404" in p.stderr.decode()
        p = run(
            ["check-text", stub.url("/article"), "--index", index, "--allow-private-addresses", "--json", *scripted],
            cli_env,
            tmp_path,
        )
        out = json.loads(p.stdout)
        assert out["source"]["kind"] == "url" and out["claims"][0]["text"] == "Marie Curie was born in Warsaw."
        p = run(["check-text", stub.url("/article"), "--index", index, *scripted], cli_env, tmp_path, check=False)
        assert p.returncode == 2 and "refused" in p.stderr.decode()  # loopback, without the flag
    finally:
        stub.close()


def test_pipeline_needs_an_index(tmp_path, cli_env, scripted):
    (tmp_path / "t.txt").write_text(TEXT)
    p = run(["check-text", "t.txt", "--pipeline", "verifier", *scripted], cli_env, tmp_path, check=False)
    assert p.returncode == 2 and "needs documents" in p.stderr.decode() and "--index" in p.stderr.decode()


def test_a_summary_checked_against_its_source_document(tmp_path, cli_env, scripted):
    """--evidence-file: the text's claims are checked against the document given (no index), by the verifier by
    default; the claim the source contradicts is not supported, the ones it states are."""
    (tmp_path / "article.txt").write_text(" ".join(d["text"] for d in DOCS), encoding="utf-8")
    (tmp_path / "summary.txt").write_text(
        "Marie Curie was born in Warsaw. The Danube flows through Budapest. Marie Curie was born in Paris.",
        encoding="utf-8",
    )
    out = json.loads(
        run(
            ["check-text", "summary.txt", "--evidence-file", "article.txt", "--json", *scripted], cli_env, tmp_path
        ).stdout
    )
    assert out["pipeline"] == "verifier"
    claims = {c["text"]: c for c in out["claims"]}
    assert claims["Marie Curie was born in Warsaw."]["outcome"] == "supported"
    assert claims["The Danube flows through Budapest."]["outcome"] == "supported"
    assert claims["The Danube flows through Budapest."]["evidence"][0]["source"] == "article.txt"
    assert claims["Marie Curie was born in Paris."]["outcome"] == "refuted"
    p = run(
        ["check-text", "summary.txt", "--evidence-file", "article.txt", "--index", "idx", *scripted],
        cli_env,
        tmp_path,
        check=False,
    )
    assert p.returncode == 2 and "not both" in p.stderr.decode()


def test_with_no_evidence_source_the_claims_are_checked_from_memory_and_said_so(tmp_path, cli_env):
    from stub_server import QACHECK_RULES

    rules = tmp_path / "qacheck.json"
    rules.write_text(json.dumps(QACHECK_RULES))
    (tmp_path / "t.txt").write_text("Marie Curie was born in Warsaw. The Danube is the longest river in Asia.")
    p = run(
        ["check-text", "t.txt", "--model", f"scripted:{rules}", "--no-cache", "--no-progress", "--report", "r.md"],
        cli_env,
        tmp_path,
    )
    out = p.stdout.decode()
    assert "Pipeline: qacheck" in out and "No evidence source was given" in out and "--index" in out
    # every verdict rests on the model's memory: uncertain, worded as every uncertain verdict is (never as a
    # decided one), with the reason, in the output and the report
    assert out.count("] Uncertain, leaning ") == 2 and "model's memory" in out, out
    report = (tmp_path / "r.md").read_text()
    assert "model's memory" in report and "**Uncertain, leaning " in report
    # no claim was decided: the factuality is not determined, never "0%" (which reads as "all false")
    assert "Factuality (supported / decided): not determined: none of the 2 checked claims was decided" in out
    assert "0%" not in out and "0%" not in report
    assert "| Factuality (supported / decided) | not determined" in report
    # against a document given, QACheck's questions are answered from it, not recited from memory
    (tmp_path / "article.txt").write_text(" ".join(d["text"] for d in DOCS), encoding="utf-8")
    p = run(
        [
            "check-text",
            "t.txt",
            "--pipeline",
            "qacheck",
            "--evidence-file",
            "article.txt",
            "--json",
            "--model",
            f"scripted:{rules}",
            "--no-cache",
            "--no-progress",
        ],
        cli_env,
        tmp_path,
    )
    claims = json.loads(p.stdout)["claims"]
    sources = {e.get("source") for c in claims for e in c["evidence"]}
    assert len(claims) == 2 and sources == {"article.txt"}, claims


def test_the_verifier_pipeline_never_loads_the_language_model(tmp_path, cli_env, index):
    """The verifier decides without an LLM and the rules split the text: an in-process model that cannot even
    load is never loaded (it would fail the run if it were)."""
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)  # a GGUF header and nothing a loader could use
    (tmp_path / "t.txt").write_text("Marie Curie was born in Warsaw.", encoding="utf-8")
    p = run(
        ["check-text", "t.txt", "--index", index, "--json", "--no-cache", "--no-progress", "--model", f"gguf:{broken}"],
        cli_env,
        tmp_path,
    )
    out = json.loads(p.stdout)
    assert out["model"] == "gguf:broken.gguf" and out["claims"][0]["outcome"] == "supported"
    # the same model where the text needs it (claims split by the model): the load fails, plainly
    p = run(
        [
            "check-text",
            "t.txt",
            "--index",
            index,
            "--no-cache",
            "--no-progress",
            "--extract",
            "model",
            "--model",
            f"gguf:{broken}",
        ],
        cli_env,
        tmp_path,
        check=False,
    )
    err = p.stderr.decode()
    assert p.returncode != 0 and "broken.gguf" in err and "Traceback" not in err
