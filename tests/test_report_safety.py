"""Reports never copy local files into the page, and untrusted text in them stays text (issue 11, item 1).

Claims, questions, answers, evidence, summaries, reasoning and every other model, page or document text are
untrusted: in the Markdown and HTML reports they render literally (no image, link, HTML, heading or emphasis
from them). Only veracity's own structure makes links (http(s) only) and images, and the HTML page embeds
only the result's own local images: the claim's (`--image`, the server's uploads) and DEFAME's evidence
images. Covered: units on constructed results, the CLI with a scripted model and a real index, the server's
downloads, property tests (Hypothesis) over every field, and the page's fit on a phone (chromium).
"""

from __future__ import annotations

import base64
import html
import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from conftest import CHROMIUM_ARGS, SERVER_RULES, veracity_cmd, write_rules
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veracity.check import CheckResult
from veracity.report.check import own_images, to_html, to_markdown
from veracity.report.markdown import md_code as _md_code
from veracity.report.markdown import md_text
from veracity.report.markdown import md_url as _md_url
from veracity.report.page import markdown_to_html
from veracity.server import reports as server_reports
from veracity.types import Claim, Verdict

CLAIM = "The Orrin Bridge stands in Tallinn."


# -- helpers -----------------------------------------------------------------------------------------------


def png(path: Path, color: str = "red", size: tuple[int, int] = (8, 6)) -> Path:
    from PIL import Image

    Image.new("RGB", size, color).save(path, format="PNG")
    return path


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


class Page(HTMLParser):
    """The tags, attributes and text of an HTML page."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.chunks: list[str] = []
        self.feed(page)
        self.close()
        self.text = "".join(self.chunks)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.chunks.append(data)

    def srcs(self) -> list[str]:
        return [a.get("src", "") for t, a in self.tags if t == "img"]

    def hrefs(self) -> list[str]:
        return [a.get("href", "") for t, a in self.tags if t == "a"]


ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "h2",
    "h3",
    "p",
    "ul",
    "li",
    "blockquote",
    "strong",
    "em",
    "code",
    "a",
    "img",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "br",
    "div",
}
WIDE_BOX = {"class": "wide", "role": "region", "aria-label": "Table", "tabindex": "0"}  # the only div: a table's


def assert_safe(page: str, own_srcs: set[str], secret: Path | None = None) -> Page:
    """No script, no raw HTML from text, links only to http(s), images only veracity's own, no secret bytes."""
    doc = Page(page)
    assert {t for t, _ in doc.tags} <= ALLOWED_TAGS, {t for t, _ in doc.tags} - ALLOWED_TAGS
    assert "<script" not in page.lower()
    assert all(attrs == WIDE_BOX for t, attrs in doc.tags if t == "div")
    for _, attrs in doc.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (name, value)
            assert not re.match(r"[\x00-\x20]*(javascript|vbscript|file|data:(?!image/))", value, re.I), (name, value)
    for href in doc.hrefs():
        assert re.match(r"https?://", href, re.I), href
    for src in doc.srcs():
        assert src in own_srcs, src[:120]
    if secret is not None:
        assert b64(secret) not in page
        assert f'src="{secret}' not in page
    return doc


def words(text: str) -> str:
    """What a text shows once rendered: its words, on one line (Markdown turns NUL into U+FFFD)."""
    return " ".join(str(text).split()).replace("\0", "\ufffd")


def qacheck_result(
    claim: str,
    question: str,
    answer: str,
    evidence: list[dict],
    rationale: str = "It is.",
    label: str = "Supported",
    images: list[str] | None = None,
) -> CheckResult:
    trace = [
        {"stage": "claim", "text": claim},
        {"stage": "question", "depth": 1, "question": question},
        {"stage": "answer", "depth": 1, "question": question, "answer": answer, "evidence": evidence},
        {"stage": "validator", "question": question, "useful": True},
    ]
    return CheckResult(
        claim=Claim(claim, images=list(images or [])),
        pipeline="qacheck",
        model="scripted:r.json",
        verdict=Verdict(label=label, rationale=rationale),
        trace=trace,
        usage={
            "total": {"calls": 3},
            "by_stage": {"answer": {"calls": 1, "prompt_tokens": 5, "completion_tokens": 2, "seconds": 0.1}},
        },
    )


def defame_result(t: dict[str, str], claim_image: Path, evidence_image: Path) -> CheckResult:
    """A DEFAME result with the texts of `t` in every field, the claim's image and a local evidence image."""
    trace = [
        {"stage": "images", "refs": ["<image:1>"], "sources": [str(claim_image)], "model_sees_images": False},
        {
            "stage": "plan",
            "round": 1,
            "actions": [t["action"], 'web_search("x")'],
            "note": t["note"],
            "unavailable": {t["tool"]: t["why"]},
            "how": "constrained",
        },
        {
            "stage": "action",
            "round": 1,
            "action": t["action"],
            "results": [{"text": t["evidence"]}],
            "notes": [t["note"]],
            "error": t["error"],
        },
        {
            "stage": "summary",
            "round": 1,
            "action": t["action"],
            "source": t["title"],
            "url": t["url"],
            "date": t["date"],
            "summary": t["summary"],
            "images": [str(evidence_image), "https://img.example/e.png"],
        },
        {
            "stage": "summary",
            "round": 1,
            "action": t["action"],
            "source": t["title"],
            "url": t["url2"],
            "summary": None,
        },
        {"stage": "develop", "round": 1, "text": t["reasoning"]},
        {"stage": "judge", "round": 1, "label": t["label"], "confidence": 0.5, "findings": t["findings"]},
        {"stage": "justify", "text": t["justification"], "sources": [t["url"], t["url2"], t["title"]]},
    ]
    return CheckResult(
        claim=Claim(t["claim"], images=[str(claim_image)], date=t["date"]),
        pipeline="defame",
        model=t["model"],
        verdict=Verdict(label=t["label"], rationale=t["justification"], parse_failures=[t["failure"]]),
        trace=trace,
        usage={"by_stage": {t["stage"]: {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.0}}},
    )


# -- units: constructed results --------------------------------------------------------------------------


def test_a_model_answer_with_a_local_image_stays_text(tmp_path):
    secret = png(tmp_path / "secret.png", "purple")
    answer = f"Tallinn ![y]({secret}) and ![z](<{secret}>) and ![w](file://{secret})"
    evidence = [
        {"text": f"See ![x]({secret}) here.", "source": f"![s]({secret})", "url": None, "doc_id": f"<{secret}>"}
    ]
    result = qacheck_result(CLAIM, f"Where? ![q]({secret})", answer, evidence, rationale=f"![r]({secret})")
    md = to_markdown(result)
    assert "![y](" not in md and "![z](" not in md and "![x](" not in md  # no image markup from the text
    page = to_html(result)
    doc = assert_safe(page, set(), secret)
    assert "<img" not in page
    assert words(answer) in doc.text and f"See ![x]({secret}) here." in doc.text  # shown literally
    assert f"Where? ![q]({secret})" in doc.text and f"![r]({secret})" in doc.text
    assert own_images(result) == set()  # nothing in the text counts as the result's own image


def test_markup_html_entities_and_javascript_links_stay_text(tmp_path):
    nasty = (
        "<script>alert(1)</script> <img src=x onerror=alert(1)> [a](javascript:alert(1)) "
        "<javascript:alert(1)> &lt;b&gt; &amp; &#60;script&#62; **bold** _em_ `code` # not a heading"
    )
    evidence = [
        {"text": nasty, "source": "[t](javascript:alert(1))", "url": "javascript:alert(1)"},
        {"text": "ok", "source": "Real page", "url": "https://example.org/a_(b)?x=1&lt=2"},
    ]
    result = qacheck_result(nasty, nasty, nasty, evidence, rationale=nasty, label=nasty)
    page = to_html(result)
    doc = assert_safe(page, set())
    assert doc.text.count(words(nasty)) >= 5  # claim (heading and title), question, answer, evidence, rationale
    assert "&lt;b&gt;" in doc.text and "&amp;" in doc.text  # entities show as written, not decoded
    assert "<strong>bold</strong>" not in page and "<em>em</em>" not in page and "<code>code</code>" not in page
    assert [h.split("?")[0] for h in doc.hrefs()] == ["https://example.org/a_%28b%29"]  # only the http(s) source
    md = to_markdown(result)
    assert not re.search(r"^#+ not a heading", md, re.M)
    # and should anything slip through, the page's own policy runs no script and fetches nothing but images
    assert re.search(
        r'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        r'style-src \'unsafe-inline\'; img-src [^;"]*;',
        page,
    )


def test_the_claims_own_images_are_still_embedded_and_only_they(tmp_path):
    claim_image = png(tmp_path / "claim.png", "gold")
    evidence_image = png(tmp_path / "collection.png", "teal")
    secret = png(tmp_path / "secret.png", "purple")
    t = {
        k: f"{k} ![x]({secret})"
        for k in (
            "claim",
            "note",
            "tool",
            "why",
            "evidence",
            "error",
            "title",
            "summary",
            "reasoning",
            "label",
            "findings",
            "justification",
            "model",
            "failure",
            "stage",
            "date",
        )
    }
    t.update(action=f'web_search("![x]({secret})")', url="https://example.org/p", url2=f"file://{secret}")
    result = defame_result(t, claim_image, evidence_image)
    assert own_images(result) == {str(claim_image.resolve()), str(evidence_image.resolve())}
    page = to_html(result)
    own = {
        f"data:image/png;base64,{b64(claim_image)}",
        f"data:image/png;base64,{b64(evidence_image)}",
        "https://img.example/e.png",
    }
    doc = assert_safe(page, own, secret)
    assert sorted(doc.srcs()) == sorted(own)
    assert f"<code>web_search(&quot;![x]({secret})&quot;)</code>" in page
    for key in ("claim", "note", "summary", "reasoning", "findings", "justification", "error", "why"):
        assert words(t[key]) in doc.text, key


def test_only_http_links_and_own_images_survive_the_html_step(tmp_path):
    """Defence in depth: even Markdown that was not escaped cannot link or embed anything else."""
    own = png(tmp_path / "own.png", "gold")
    secret = png(tmp_path / "secret.png", "purple")
    md = (
        f"![a]({own}) ![b]({secret}) ![c](<{secret}>) ![d](file://{secret}) ![e](data:text/html,x) "
        "[f](javascript:alert(1)) [g](JAVASCRIPT:alert(1)) [h](/etc/passwd) [i](data:text/html;base64,eA==) "
        "<javascript:alert(1)> <https://ok.example/> [j](https://ok.example/j) ![k](https://img.example/k.png) "
        "<script>alert(1)</script> <b onclick=x>b</b>\n\n<div>raw block</div>\n\n[ref]: javascript:alert(2)\n\n"
        "[l][ref]"
    )
    page = markdown_to_html(md, "t", images=[str(own)])
    doc = assert_safe(page, {f"data:image/png;base64,{b64(own)}", "https://img.example/k.png"}, secret)
    assert doc.hrefs() == ["https://ok.example/", "https://ok.example/j"]
    assert len(doc.srcs()) == 2 and "&lt;div&gt;raw block&lt;/div&gt;" in page
    # no allow-list: no local file at all
    assert b64(own) not in markdown_to_html(md, "t")


def test_evidence_image_fields_that_are_not_files_or_http_stay_text(tmp_path):
    claim_image = png(tmp_path / "claim.png", "gold")
    t = {
        k: k
        for k in (
            "claim",
            "note",
            "tool",
            "why",
            "evidence",
            "error",
            "title",
            "summary",
            "reasoning",
            "label",
            "findings",
            "justification",
            "model",
            "failure",
            "stage",
            "date",
            "action",
        )
    }
    t.update(url="https://example.org/p", url2="javascript:alert(1)")
    result = defame_result(t, claim_image, claim_image)
    result.trace[3]["images"] = ["javascript:alert(1)", "data:text/html,<script>alert(1)</script>"]
    assert own_images(result) == {str(claim_image.resolve())}
    page = to_html(result)
    doc = assert_safe(page, {f"data:image/png;base64,{b64(claim_image)}"})
    assert len(doc.srcs()) == 1 and "evidence image: javascript:alert(1)" in doc.text


def test_terminal_lines_carry_no_control_characters():
    from veracity.report.terminal import TerminalPrinter

    printed: list[str] = []
    printer = TerminalPrinter(printed.append)
    printer({"stage": "question", "depth": 1, "question": "Where?\x1b[2J"})
    printer(
        {
            "stage": "answer",
            "depth": 1,
            "question": "Where?\x1b[2J",
            "answer": "Tallinn\x1b[2J\x1b]0;owned\x07\r",
            "evidence": [{"text": "x\x1b[31m", "source": "s\x9b1m"}],
        }
    )
    assert "\x1b" not in printed[0] and printed[0].startswith("\n[1] Q: Where?\ufffd[2J")
    line = printed[1]
    assert "\x1b" not in line and "\x07" not in line and "\r" not in line and "\x9b" not in line
    assert line.startswith("    A: Tallinn\ufffd[2J")


def test_server_reports_escape_leaf_answers_and_link_only_own_images(tmp_path):
    claim_image = png(tmp_path / "0123456789abcdef.png", "gold")
    secret = png(tmp_path / "secret.png", "purple")
    bad = f"It is ![y]({secret}). <script>alert(1)</script> [x](javascript:alert(1))"
    run = {
        "id": "r1",
        "claim": CLAIM,
        "options": {"answer": f"{bad}\n# Prediction with rationale\n===\n- {bad}"},
        "result": {
            "claim": {"text": CLAIM, "images": [str(claim_image)]},
            "pipeline": "answer-check",
            "model": "m",
            "verdict": {"label": "LEAF 0.00", "rationale": bad},
            "usage": {},
            "seconds": 1.0,
        },
    }
    steps = [
        {
            "stage": "leaf_sentence",
            "index": 1,
            "sentence": bad,
            "query": bad,
            "rating": bad,
            "reasoning": bad,
            "supported": False,
            "evidence": [{"text": bad, "source": bad, "url": f"file://{secret}"}],
        },
        {"stage": "leaf_score", "score": 0.0, "supported": 0, "checked": 1, "note": bad},
    ]
    result = server_reports.result_of(run, steps)
    here = {claim_image.name: server_reports.StoredImage(claim_image, "http://srv/api/checks/r1/images/1", "image/png")}
    md = server_reports.to_markdown(run, result, images=here)
    assert "![y](" not in md and "\n## Prediction with rationale\n" in md
    assert md.index("## Sentences") < md.index("\n## Prediction with rationale\n")
    page = server_reports.to_html(run, result, images=here)
    doc = assert_safe(page, set(), secret)
    assert doc.text.count(words(bad)) >= 6  # answer (twice), sentence, query, reasoning, evidence, note...


# -- the CLI: a scripted model and a real index ---------------------------------------------------------------


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(veracity_cmd() + args, capture_output=True, text=True, env=env, timeout=120)


def test_cli_report_does_not_embed_a_file_named_by_the_model(tmp_path, cli_env):
    secret = png(tmp_path / "secret.png", "purple")
    rules = json.loads(json.dumps(SERVER_RULES))
    for r in rules["rules"]:
        if r["match"] == "Answer =$":
            r["reply"] = f" Tallinn ![y]({secret}) <script>alert(1)</script>"
    model = write_rules(tmp_path / "rules.json", rules)
    report = tmp_path / "r.html"
    r = run_cli(["check", "--model", model, "--report", str(report), CLAIM], cli_env)
    assert r.returncode == 0, r.stderr
    page = report.read_text()
    doc = assert_safe(page, set(), secret)
    assert f"Tallinn ![y]({secret}) <script>alert(1)</script>" in doc.text
    md = tmp_path / "r.md"
    assert run_cli(["check", "--model", model, "--report", str(md), CLAIM], cli_env).returncode == 0
    assert md_text(f"Tallinn ![y]({secret}) <script>alert(1)</script>") in md.read_text()


def test_cli_report_does_not_embed_a_file_named_by_an_index_document(tmp_path, cli_env):
    from veracity.retrieval import Index
    from veracity.retrieval.documents import Document

    secret = png(tmp_path / "secret.png", "purple")
    Index.build(
        [
            Document(
                id="orrin",
                title="Orrin Bridge [t](javascript:alert(1))",
                text=f"The Orrin Bridge is a stone bridge in Tallinn. ![x]({secret}) <img src=x onerror=alert(1)>",
            ),
            Document(id="other", title="Sardines", text="Sardines are small oily fish."),
        ],
        tmp_path / "idx",
    )
    model = write_rules(tmp_path / "rules.json")
    report = tmp_path / "r.html"
    r = run_cli(
        [
            "check",
            "--model",
            model,
            "--index",
            str(tmp_path / "idx"),
            "--qa",
            "retriever-reader",
            "--report",
            str(report),
            CLAIM,
        ],
        cli_env,
    )
    assert r.returncode == 0, r.stderr
    page = report.read_text()
    doc = assert_safe(page, set(), secret)
    assert f"![x]({secret}) <img src=x onerror=alert(1)>" in doc.text  # the passage, shown as written
    assert "Orrin Bridge [t](javascript:alert(1))" in doc.text


# -- the server's downloads ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_srv(server_factory):
    """A model whose answer names a local image, over an index whose documents do too; LEAF's rater as well."""
    from worlds import CLI_RULES, DOCS

    from veracity.retrieval import Index
    from veracity.retrieval.documents import Document

    base = server_factory.base
    secret = png(base / "secret.png", "purple")
    rules = json.loads(json.dumps(SERVER_RULES))
    for r in rules["rules"]:
        if r["match"] == "Answer =$":
            r["reply"] = f" Tallinn ![y]({secret}) <script>alert(1)</script> [x](javascript:alert(1))"
    rules["rules"] += CLI_RULES["rules"]
    docs = DOCS + [
        Document(
            id="hostile",
            title="Carpal tunnel ![t](" + str(secret) + ")",
            text=f"Where is the Orrin Bridge? Carpal tunnel syndrome entrapment neuropathy median "
            f"nerve ![x]({secret}) <script>alert(2)</script>",
        )
    ]
    Index.build(docs, base / "hostile-idx")
    model = write_rules(base / "hostile-rules.json", rules)
    srv = server_factory(["--model", model, "--index", str(base / "hostile-idx"), "--rate-limit", "0"], name="hostile")
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        client.secret = secret
        yield client


def finish(client: httpx.Client, body: dict) -> str:
    import time

    r = client.post("/api/checks", json=body)
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    deadline = time.time() + 60
    while time.time() < deadline:
        run = client.get(f"/api/checks/{run_id}").json()
        if run["status"] not in ("queued", "running"):
            assert run["status"] == "done", run
            return run_id
        time.sleep(0.05)
    raise AssertionError("the run did not finish")


def test_server_report_does_not_embed_a_file_named_by_the_model(hostile_srv):
    secret = hostile_srv.secret
    run_id = finish(hostile_srv, {"claim": CLAIM, "pipeline": "qacheck", "qa": "closed-book"})
    r = hostile_srv.get(f"/api/checks/{run_id}/report.html")
    csp = r.headers["content-security-policy"]  # a second line of defence: the page may run and fetch nothing
    assert "default-src 'none'" in csp and "script-src" not in csp and r.headers["x-content-type-options"] == "nosniff"
    page = r.text
    doc = assert_safe(page, set(), secret)
    assert f"Tallinn ![y]({secret}) <script>alert(1)</script> [x](javascript:alert(1))" in doc.text
    md = hostile_srv.get(f"/api/checks/{run_id}/report.md").text
    assert "![y](" not in md and "<script>" not in md


def test_server_report_of_an_index_document_and_an_answer_check(hostile_srv):
    from worlds import Q_CTS

    secret = hostile_srv.secret
    run_id = finish(
        hostile_srv,
        {
            "claim": "Carpal tunnel syndrome is a median nerve entrapment.",
            "pipeline": "qacheck",
            "qa": "retriever-reader",
        },
    )
    page = hostile_srv.get(f"/api/checks/{run_id}/report.html").text
    assert f"![x]({secret}) <script>alert(2)</script>" in assert_safe(page, set(), secret).text
    answer = f"Carpal tunnel syndrome is a nerve entrapment ![y]({secret}). <script>alert(3)</script>"
    run_id = finish(hostile_srv, {"question": Q_CTS, "answer": answer})
    page = hostile_srv.get(f"/api/checks/{run_id}/report.html").text
    doc = assert_safe(page, set(), secret)
    assert f"![y]({secret}). <script>alert(3)</script>" in doc.text
    md = hostile_srv.get(f"/api/checks/{run_id}/report.md").text
    assert "![y](" not in md and "<script>" not in md


# -- properties: any text in any field ---------------------------------------------------------------------

PAYLOADS = [
    "![x](/etc/passwd)",
    "![x](<{secret}>)",
    "![x]({secret})",
    "[a](javascript:alert(1))",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<javascript:alert(1)>",
    "&lt;",
    "&#106;",
    "&amp;",
    "```",
    "~~~",
    "    ",
    "1. ",
    "1) ",
    "- ",
    "+ ",
    "* ",
    "---",
    "===",
    "# ",
    "> ",
    "|",
    "|---|",
    "[r]: javascript:alert(1)\n\n[r]",
    "<https://evil.example/>",
    "\\",
    "`",
    "*",
    "_",
    "\n",
    "\r\n",
    "\0",
    "\t",
    " ",
    "\u2028",
    "\x85",
    "\x1b[31m",
    "javascript:",
    "data:text/html,<script>",
    "file:///etc/passwd",
    "<!-- x -->",
    "<?php ?>",
    "<![CDATA[x]]>",
    "<a href='javascript:x'>",
    "\u202e",
    "é",
    "😀",
]
MD_CHARS = "![]()<>&;#*_`\\|~-+=.:/ \n\t\0'\"jsavcript123"


def untrusted(secret: Path) -> st.SearchStrategy[str]:
    payloads = [p.replace("{secret}", str(secret)) for p in PAYLOADS]
    return st.one_of(
        st.text(max_size=60),
        st.text(alphabet=MD_CHARS, max_size=60),
        st.lists(st.one_of(st.sampled_from(payloads), st.text(alphabet=MD_CHARS, max_size=4)), max_size=6).map("".join),
    )


def urls(secret: Path) -> st.SearchStrategy[str]:
    return st.one_of(
        untrusted(secret),
        st.sampled_from(
            [
                "https://ok.example/a_(b)",
                "javascript:alert(1)",
                " JaVaScRiPt:alert(1)",
                "http://x.example/<script>",
                " https://x.example/ y",
                "data:text/html,<script>alert(1)</script>",
                str(secret),
                f"file://{secret}",
            ]
        ),
        st.text(max_size=30).map(lambda t: "https://e.example/" + t),
    )


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    base = tmp_path_factory.mktemp("report-images")
    return png(base / "claim.png", "gold"), png(base / "collection.png", "teal"), png(base / "secret.png", "purple")


FIELDS = (
    "claim",
    "note",
    "tool",
    "why",
    "evidence",
    "error",
    "title",
    "summary",
    "reasoning",
    "label",
    "findings",
    "justification",
    "model",
    "failure",
    "stage",
    "date",
    "action",
    "question",
    "answer",
)
PROPS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@PROPS
@given(data=st.data())
def test_any_text_in_any_field_renders_safely_and_literally(images, data):
    claim_image, evidence_image, secret = images
    text = untrusted(secret)
    t = {k: data.draw(text, label=k) for k in FIELDS}
    t["url"], t["url2"] = data.draw(urls(secret), label="url"), data.draw(urls(secret), label="url2")
    result = defame_result(t, claim_image, evidence_image)
    result.trace += [
        {
            "stage": "answer",
            "depth": 1,
            "question": t["question"],
            "answer": t["answer"],
            "evidence": [
                {"text": t["evidence"], "source": t["title"], "url": t["url"]},
                {"text": t["summary"], "source": t["title"], "doc_id": t["note"]},
            ],
        }
    ]
    own = {
        f"data:image/png;base64,{b64(claim_image)}",
        f"data:image/png;base64,{b64(evidence_image)}",
        "https://img.example/e.png",
    }
    page = to_html(result)
    doc = assert_safe(page, own, secret)
    assert len(doc.srcs()) == (3 if t["summary"] else 1)  # the claim's image, the evidence images if shown
    for key in (
        "claim",
        "note",
        "why",
        "evidence",
        "error",
        "summary",
        "reasoning",
        "findings",
        "justification",
        "failure",
        "question",
        "answer",
        "action",
        "title",
    ):
        assert words(t[key]) in doc.text, key
    # the server's download of the same run, as an answer check too
    run = {"id": "r", "claim": t["claim"], "options": {"answer": t["answer"]}, "result": result.to_dict()}
    steps = result.trace + [
        {
            "stage": "leaf_sentence",
            "index": 1,
            "sentence": t["answer"],
            "query": t["question"],
            "rating": t["label"],
            "reasoning": t["reasoning"],
            "evidence": [{"text": t["evidence"], "source": t["title"], "url": t["url"]}],
        },
        {"stage": "leaf_score", "score": 0.0, "supported": 0, "checked": 1, "note": t["note"]},
    ]
    stored = server_reports.result_of(run, steps)
    page = server_reports.to_html(run, stored, images={})
    doc = assert_safe(page, own, secret)
    for line in t["answer"].splitlines():
        assert words(line) in doc.text


@PROPS
@given(text=st.one_of(st.text(), st.text(alphabet=MD_CHARS)))
def test_escaped_text_renders_as_exactly_itself(text):
    for md, tag in ((md_text(text), None), (_md_code(text), "code")):
        body = markdown_to_html(md, "t").split("<body>\n", 1)[1].removesuffix("</body></html>\n")
        if not words(text):
            continue
        inner = body.removeprefix("<p>").removesuffix("</p>\n")
        if tag:
            inner = inner.removeprefix("<code>").removesuffix("</code>")
        assert "<" not in inner and html.unescape(inner) == words(text), (md, body)


@PROPS
@given(tail=st.text(max_size=40), scheme=st.sampled_from(["http://", "https://", "HTTPS://"]))
def test_http_urls_stay_one_link_with_their_text(tail, scheme):
    url = scheme + "e.example/" + tail
    md = f"[{md_text('label')}]({_md_url(url)}) after"
    doc = Page(markdown_to_html(md, "t"))
    assert len(doc.hrefs()) == 1 and doc.hrefs()[0].lower().startswith(scheme.lower())
    assert "label after" in doc.text
    assert _md_url("javascript:" + tail) is None and _md_url("/" + tail) is None


# -- the page on a phone -----------------------------------------------------------------------------------


def test_report_css_fits_a_phone():
    page = to_html(qacheck_result(CLAIM, "Where?", "Tallinn", []))
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    css = page[page.index("<style>") : page.index("</style>")]
    assert "overflow-wrap:anywhere" in css and "img{max-width:100%" in css
    assert re.search(r"pre\{[^}]*overflow-x:auto", css) and re.search(r"\.wide\{[^}]*overflow-x:auto", css)


def test_report_does_not_scroll_sideways_on_a_phone(chromium_path, tmp_path):
    from playwright.sync_api import sync_playwright

    long_url = "https://example.org/" + "a-very-long-path-segment" * 12
    word = "Donaudampfschifffahrtsgesellschaftskapitän" * 4
    evidence = [{"text": f"{word} {long_url}", "source": long_url, "url": long_url}]
    result = qacheck_result(f"{word} {long_url}", f"Where is {word}?", long_url, evidence, rationale=word)
    result.usage["by_stage"] = {
        f"stage-{i}-{word}": {"calls": 1, "prompt_tokens": 123456789, "completion_tokens": 123456789, "seconds": 1.0}
        for i in range(3)
    }
    wide = png(tmp_path / "wide.png", "gold", (2000, 300))
    page = to_html(result).replace(
        "</body>", f'<pre><code>{word * 3}</code></pre><p><img src="data:image/png;base64,{b64(wide)}"></p></body>'
    )
    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        ctx = browser.new_context(
            viewport={"width": 360, "height": 740}, device_scale_factor=2, is_mobile=True, has_touch=True
        )
        p = ctx.new_page()
        p.set_content(page)
        widths = p.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]")
        assert widths[2] == 360 and widths[0] <= 360 and widths[1] <= 360, widths  # no zooming out either
        browser.close()
    finally:
        pw.stop()


def test_cli_output_shows_escape_sequences_from_the_model_as_replacement_characters(tmp_path, cli_env):
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            {
                "rules": [
                    {
                        "match": "step by step\\.\\nAnswer:$",
                        "reply": "\nThe bridge\x1b[2J is in Tallinn\x1b]0;owned\x07.\n",
                    },
                    {"match": "final answer is:$", "reply": "True"},
                ]
            }
        )
    )
    r = subprocess.run(
        veracity_cmd()
        + ["check", "--pipeline", "cot", "--model", f"scripted:{rules}", "The Orrin Bridge\x1b[31m stands in Tallinn."],
        capture_output=True,
        env=cli_env,
        timeout=120,
    )
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "Rationale:" in out and "\ufffd[2J" in out
    assert "\x1b" not in out and "\x07" not in out
