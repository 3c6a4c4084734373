"""The page in a real browser: Playwright driving Debian's chromium against `veracity serve` on 127.0.0.1.

Model replies come from the OpenAI-compatible stub (the scripted rules, 0.12 s each), so a run takes
about a second and its steps can be watched arriving.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import rules_responder
from stub_server import StubServer, image_parts

ONSAGER = "Lars Onsager won the Nobel prize when he was 30 years old."
SCREENSHOT = Path("/tmp/veracity_screenshot.png")


@pytest.fixture(scope="module")
def site(server_factory):
    stub = StubServer(rules_responder(delay=0.12))
    srv = server_factory(
        ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0"], name="browser"
    )
    yield srv.url
    stub.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    ctx.set_default_timeout(15_000)
    p = ctx.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    # script errors and CSP violations fail the test; failed requests are checked through `p.failures`
    p.on(
        "console",
        lambda m: (
            errors.append(m.text) if m.type == "error" and not m.text.startswith("Failed to load resource") else None
        ),
    )
    p.failures = []
    p.on("response", lambda r: p.failures.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    yield p
    ctx.close()
    assert not errors, errors


def test_submit_watch_steps_verdict_history_and_download(page, site, tmp_path):
    from playwright.sync_api import expect

    page.goto(site + "/")
    # pick the paper's demo claim from the examples
    page.get_by_role("button", name=ONSAGER).click()
    expect(page.get_by_label("Claim", exact=True)).to_have_value(ONSAGER)
    page.get_by_label("Pipeline").select_option("qacheck")
    page.get_by_label("Question answering").select_option("reciter-reader")
    page.get_by_role("button", name="Check claim").click()

    # steps stream in before the verdict exists
    first = page.locator("#steps .step.qa").first
    expect(first).to_be_visible()
    assert page.locator(".verdict").count() == 0
    expect(page.locator("#run-status")).to_contain_text(re.compile(r"Step 1|Running|answered|Weighing"))
    expect(first.locator(".q")).to_contain_text("Where is the Orrin Bridge?")
    expect(first.locator(".ev")).to_contain_text("stone bridge in Tallinn")
    # the recited passage is shown as the model's memory, not as a source
    expect(first.locator(".ev.memory .src")).to_have_text("the model's memory (recited, not a source)")

    # then the verdict with its rationale and usage
    verdict = page.locator(".verdict")
    expect(verdict).to_be_visible()
    expect(verdict.locator(".verdict-label")).to_contain_text("Supported")
    expect(verdict.locator(".rationale")).to_have_text("The Orrin Bridge is in Tallinn.")
    expect(verdict.locator(".usage")).to_contain_text("Model calls")
    expect(verdict.locator(".usage")).to_contain_text("7")
    expect(page.locator(".step.qa .badge.b-kept")).to_have_text("validator: useful, kept")
    expect(page.locator(".step.verifier")).to_contain_text("enough to decide")
    assert re.search(r"/checks/[0-9a-f]{16}$", page.url)
    run_url = page.url
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    # reload: the run is in the history; open it from there
    page.goto(site + "/")
    link = page.locator("#history a", has_text=ONSAGER).first
    expect(link).to_be_visible()
    # the verdict rests on the model's memory: uncertain, in the history as on its page, never a green "Supported"
    expect(link.locator(".badge")).to_have_text("Uncertain, leaning Supported")
    expect(link.locator(".badge")).to_have_class(re.compile(r"\blabel-uncertain\b"))
    link.click()
    expect(page).to_have_url(run_url)
    expect(page.locator("#run")).not_to_have_attribute("data-live", "1")  # rendered by the server
    expect(page.locator(".verdict .verdict-label .badge")).to_have_text("Uncertain, leaning Supported")
    expect(page.locator(".verdict")).to_have_class(re.compile(r"\blabel-uncertain\b"))
    expect(page.locator("#steps .ev")).to_contain_text("stone bridge in Tallinn")
    expect(page.locator("#steps .ev.memory .src")).to_have_text("the model's memory (recited, not a source)")
    expect(page.locator(".verdict .uncertain-why")).to_contain_text("rests on the model's memory only")

    # download the Markdown report
    with page.expect_download() as dl:
        page.get_by_role("link", name="Markdown").click()
    md = Path(dl.value.path()).read_text(encoding="utf-8")
    assert dl.value.suggested_filename.endswith(".md")
    assert md.startswith(f"# Fact-check: {ONSAGER}")
    assert "### Step 1: Where is the Orrin Bridge?" in md and "**Uncertain, leaning Supported**" in md
    assert "> The Orrin Bridge is a stone bridge in Tallinn, Estonia.\n" in md and "*recited by the model*" not in md
    assert "**The model's memory (recited, not a source):**" in md
    assert not page.failures, page.failures


def test_form_follows_the_pipeline_and_reports_errors(page, site):
    from playwright.sync_api import expect

    page.goto(site + "/")
    qa = page.get_by_label("Question answering")
    page.get_by_label("Pipeline").select_option("direct")
    expect(qa).to_be_hidden()
    page.get_by_label("Pipeline").select_option("qacheck-closed-book")
    expect(qa).to_be_disabled()
    expect(qa).to_have_value("closed-book")
    page.get_by_label("Pipeline").select_option("qacheck")
    expect(qa).to_be_enabled()
    expect(page.locator("#image-field")).to_be_hidden()  # qacheck does not look at images
    assert page.locator("#qa option[value=retriever-reader]").is_disabled()  # no index on this server

    page.get_by_label("Claim", exact=True).fill("   ")
    page.get_by_role("button", name="Check claim").click()
    expect(page.get_by_role("alert")).to_contain_text("the claim is empty")
    assert page.failures == [f"400 {site}/api/checks"]


def test_a_claim_checked_against_a_source_pasted_on_the_page(page, site):
    """The optional evidence box: the claim is read against the pasted source (this server has no index), the
    passage is shown as the evidence, and an empty box changes nothing."""
    from playwright.sync_api import expect

    page.goto(site + "/")
    page.get_by_label("Claim", exact=True).fill("The Danube flows through Vienna.")
    assert page.locator("#pipeline option[value=verifier]").is_disabled()  # no index here: nothing to read yet
    expect(page.get_by_label("Evidence", exact=True)).to_be_hidden()  # folded away until asked for
    page.get_by_text("Check it against a source you give").click()
    source = "Europe's second-longest river rises in the Black Forest. The Danube flows through Vienna and Budapest."
    page.get_by_label("Evidence", exact=True).fill(source)
    assert page.locator("#qa option[value=retriever-reader]").is_enabled()  # the source is something to read
    qa = page.get_by_label("Question answering")
    expect(qa).to_have_value("retriever-reader")  # QACheck's questions answered from it, until the user picks one
    expect(page.locator("#qa-desc")).to_contain_text("the source given")
    page.get_by_label("Evidence", exact=True).fill("")
    expect(qa).to_have_value("auto")  # no source: the server's default again
    qa.select_option("closed-book")  # a choice of the user's stays, source or not
    page.get_by_label("Evidence", exact=True).fill(source)
    expect(qa).to_have_value("closed-book")
    page.get_by_label("Pipeline").select_option("verifier")
    page.get_by_role("button", name="Check claim").click()
    verdict = page.locator(".verdict")
    expect(verdict).to_contain_text("Supported", timeout=90_000)  # the server loads the verifier on first use
    expect(page.locator("#steps")).to_contain_text("The Danube flows through Vienna and Budapest")
    # the verifier's step says which passage of the source decided, quoting it
    read = page.locator("#steps li.reasoning")
    expect(read).to_contain_text("Evidence verifier")
    expect(read).to_contain_text('decided by passage [1] (evidence-1): "' + source + '"')
    assert "Uncertain because it rests on the model" not in verdict.inner_text()
    page.reload()  # the run reopened: its source is in the form again, ready to check again
    expect(page.get_by_label("Evidence", exact=True)).to_have_value(source)
    assert page.locator("#pipeline option[value=verifier]").is_enabled()


def test_a_reopened_run_checked_against_several_passages_sends_them_again_as_they_were(page, site, browser):
    """A run asked through the API with several passages, reopened on the page: the box shows them between blank
    lines and the next check reads them as the same passages (with JavaScript and without) until the box is
    edited, when it is one passage, as the hint says."""
    import httpx
    from playwright.sync_api import expect

    passages = ["Paris is in France.", "The Danube flows through Vienna and Budapest."]

    def read_by(run_id: str) -> list[str]:
        with httpx.Client(base_url=site, timeout=30) as c:
            for _ in range(300):
                run = c.get(f"/api/checks/{run_id}").json()
                if run["status"] in ("done", "failed"):
                    break
                page.wait_for_timeout(200)
        assert run["status"] == "done", run
        return [e["text"] for e in next(s for s in run["steps"] if s["stage"] == "retrieval")["results"]]

    with httpx.Client(base_url=site, timeout=30) as c:
        r = c.post(
            "/api/checks",
            json={"claim": "The Danube flows through Vienna.", "pipeline": "verifier", "evidence": passages},
        )
        assert r.status_code == 202, r.text
        first = r.json()["id"]
    assert read_by(first) == passages
    page.goto(f"{site}/checks/{first}")
    box = page.get_by_label("Evidence", exact=True)
    expect(box).to_have_value("\n\n".join(passages))
    hint = page.locator("#evidence-passages-hint")
    expect(hint).to_contain_text("checked against 2 passages")
    page.get_by_role("button", name="Check claim").click()
    expect(page).not_to_have_url(re.compile(first))
    expect(page.locator(".verdict")).to_be_visible(timeout=30_000)
    assert read_by(page.url.rsplit("/", 1)[1]) == passages  # two passages again, not one text

    page.goto(f"{site}/checks/{first}")
    box.press("Control+End")
    box.type(" It rises in the Black Forest.")
    expect(hint).to_have_text("Edited: the box is sent as one passage.")
    page.get_by_role("button", name="Check claim").click()
    expect(page).not_to_have_url(re.compile(first))
    expect(page.locator(".verdict")).to_be_visible(timeout=30_000)
    assert read_by(page.url.rsplit("/", 1)[1]) == ["\n\n".join(passages) + " It rises in the Black Forest."]

    ctx = browser.new_context(java_script_enabled=False)  # the plain form keeps them the same way
    try:
        p = ctx.new_page()
        p.goto(f"{site}/checks/{first}")
        p.get_by_role("button", name="Check claim").click()
        expect(p).to_have_url(re.compile(r"/checks/[0-9a-f]{16}$"))
        assert first not in p.url and read_by(p.url.rsplit("/", 1)[1]) == passages
    finally:
        ctx.close()


def test_pipelines_are_grouped_and_each_mode_says_what_it_does(page, site):
    from playwright.sync_api import expect

    page.goto(site + "/")
    groups = page.locator("#pipeline optgroup")
    expect(groups.first).to_have_attribute("label", "Recommended")
    first = groups.first.locator("option")
    expect(first).to_have_text(["qacheck", "defame", "verifier (needs documents: a source given above, or an index)"])
    research = page.locator("#pipeline optgroup[label^='Research']")
    expect(research.locator("option[value='qacheck-no-evidence-verifier']")).to_have_count(1)
    expect(research.locator("option[value='qacheck']")).to_have_count(0)
    assert groups.last.get_attribute("label").startswith("Research: ablations")
    expect(page.get_by_label("Pipeline")).to_have_value("qacheck")
    # the hint under the mode buttons describes the chosen mode
    hint = page.locator("#mode-hint")
    expect(hint).to_contain_text("One statement, checked step by step")
    page.get_by_role("radio", name="Check a text").check()
    expect(hint).to_contain_text("its claims are found and each is checked")
    expect(hint).not_to_contain_text("One statement")
    # the answer check is off here, said for someone using the page, not the one who started the server
    expect(page.get_by_role("radio", name="Answer check")).to_be_disabled()
    expect(page.locator("#answer-off")).to_have_text(
        "Answer check is off: this server has no documents to check answers against (whoever runs it can add them)."
    )
    assert "--index" not in page.locator("#check-form").inner_text()


def luminance(rgb: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", rgb)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_dark_mode_follows_the_preference_and_the_mode_buttons_are_easy_to_tap(browser, site):
    from playwright.sync_api import expect

    for scheme in ("dark", "light"):
        ctx = browser.new_context(
            viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True, color_scheme=scheme
        )
        page = ctx.new_page()
        try:
            page.goto(site + "/")
            style = lambda sel, prop: page.locator(sel).first.evaluate(f"e => getComputedStyle(e).{prop}")  # noqa: E731
            body_bg, ink = style("body", "backgroundColor"), style("body", "color")
            box = style("#claim", "backgroundColor")
            if scheme == "dark":  # light text on dark ground, the text box too
                assert luminance(body_bg) < 0.2 and luminance(ink) > 0.7 and luminance(box) < 0.2, (body_bg, ink, box)
            else:
                assert luminance(body_bg) > 0.8 and luminance(ink) < 0.3, (body_bg, ink)
            for name in ("Claim check", "Check a text"):
                radio = page.get_by_role("radio", name=name)
                expect(radio).to_be_visible()
                assert radio.bounding_box()["height"] >= 20
                label = page.locator("label.mode-opt", has=radio)
                assert label.bounding_box()["height"] >= 44  # the tap area: the whole label
            page.locator("label.mode-opt", has_text="Check a text").tap()
            expect(page.get_by_role("radio", name="Check a text")).to_be_checked()
        finally:
            ctx.close()


def test_keyboard_and_phone(page, site, browser):
    from playwright.sync_api import expect

    page.goto(site + "/")
    page.keyboard.press("Tab")  # the skip link comes first
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.locator("button.example").nth(1).focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Claim", exact=True)).not_to_have_value("")
    expect(page.get_by_label("Claim", exact=True)).to_be_focused()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"  # focus is visible

    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        p = phone.new_page()
        p.goto(site + "/")
        run = p.locator("#history a").first
        if run.count():
            run.click()
            expect(p.locator("#run")).to_be_visible()
        assert p.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # no sideways scrolling
        p.screenshot(path="/tmp/veracity_screenshot_phone.png", full_page=True)
    finally:
        phone.close()


# -- answer check (LEAF) -----------------------------------------------------------------------------------

ANSWER_SCREENSHOT = Path("/tmp/veracity_answer_check.png")


@pytest.fixture(scope="module")
def leaf_site(server_factory):
    """A server with a real BM25 index of test_leaf.py's documents; the stub answers with its rater's rules
    (0.1 s a call), so the sentences can be watched arriving: one at a time (--concurrency 1; with more, a server
    checks them together and they arrive at once, see tests/llm/test_http_concurrency.py)."""
    from worlds import CLI_RULES, DOCS

    from veracity.retrieval import Index

    Index.build(DOCS, server_factory.base / "browser-idx")
    stub = StubServer(rules_responder(CLI_RULES, delay=0.1))
    srv = server_factory(
        [
            "--model",
            "stub-model",
            "--base-url",
            stub.url,
            "--no-cache",
            "--rate-limit",
            "0",
            "--concurrency",
            "1",
            "--index",
            str(server_factory.base / "browser-idx"),
        ],
        name="browser-leaf",
    )
    yield srv.url
    stub.close()


@pytest.fixture(scope="module")
def leaf_verifier_site(server_factory):
    """A server whose answer checks are rated by the trained verifier (verifier.use = on; the stub only writes the
    queries), over an index of a river's page and another's."""
    from veracity.retrieval import Document, Index

    Index.build(
        [
            Document(
                "danube",
                "Danube",
                "The Danube is the second-longest river in Europe. It flows through "
                "Vienna, Bratislava, Budapest and Belgrade.",
            ),
            Document("seine", "Seine", "The Seine is a river in northern France. It flows through Paris."),
        ],
        server_factory.base / "rivers-idx",
    )
    config = server_factory.base / "verifier-on.toml"
    config.write_text('[verifier]\nuse = "on"\n')
    stub = StubServer(rules_responder({"rules": [{"match": "Search query:$", "reply": " Danube river Paris"}]}))
    srv = server_factory(
        [
            "--model",
            "stub-model",
            "--base-url",
            stub.url,
            "--no-cache",
            "--rate-limit",
            "0",
            "--config",
            str(config),
            "--index",
            str(server_factory.base / "rivers-idx"),
        ],
        name="browser-leaf-verifier",
    )
    yield srv.url
    stub.close()


def test_an_answer_sentence_read_with_its_pronoun_resolved_says_so_on_the_page(page, leaf_verifier_site):
    from playwright.sync_api import expect

    page.goto(leaf_verifier_site + "/")
    page.get_by_label("Answer check").check()
    page.get_by_label("Question", exact=True).fill("Tell me about the Danube.")
    page.get_by_label("Answer", exact=True).fill("The Danube is a river in Europe. It flows through Paris.")
    page.get_by_role("button", name="Check answer").click()
    expect(page.locator(".verdict")).to_be_visible(timeout=60_000)  # the server loads the verifier first
    # the stub gives no log-probabilities, but the verifier rated every sentence with its own confidence
    expect(page.locator(".verdict")).not_to_contain_text("No confidence")
    first, second = page.locator("#steps .step.leaf").nth(0), page.locator("#steps .step.leaf").nth(1)
    expect(second.locator("summary")).to_contain_text("It flows through Paris.")
    second.locator("summary").click()
    expect(second.locator(".read-as")).to_have_text("Read as The Danube flows through Paris.")
    first.locator("summary").click()
    expect(first.locator(".leaf-body")).to_be_visible()
    expect(first.locator(".read-as")).to_have_count(0)  # nothing to resolve: no line
    assert not page.failures, page.failures


def test_answer_check_highlights_unsupported_sentences_with_evidence_on_click(page, leaf_site):
    from playwright.sync_api import expect
    from worlds import PLAIN_CTS, Q_CTS

    page.goto(leaf_site + "/")
    expect(page.get_by_label("Claim", exact=True)).to_be_visible()
    expect(page.get_by_label("Answer", exact=True)).to_be_hidden()
    page.get_by_label("Answer check").check()
    expect(page.get_by_label("Claim", exact=True)).to_be_hidden()
    expect(page.get_by_label("Pipeline")).to_be_hidden()
    expect(page.get_by_role("heading", name="Check an answer")).to_be_visible()
    page.get_by_label("Question", exact=True).fill(Q_CTS)
    page.get_by_label("Answer", exact=True).fill(PLAIN_CTS)
    page.get_by_role("button", name="Check answer").click()

    # the sentences stream in before the score exists
    first = page.locator("#steps .step.leaf").first
    expect(first).to_be_visible()
    assert page.locator(".verdict").count() == 0
    expect(first.locator("summary")).to_contain_text("Carpal tunnel syndrome causes numbness")
    expect(page.locator("#run-h")).to_have_text(Q_CTS)

    # then the score; the unsupported sentences are highlighted and say so in words
    verdict = page.locator(".verdict")
    expect(verdict).to_be_visible()
    expect(verdict.locator(".verdict-label")).to_contain_text("LEAF 0.33")
    expect(verdict.locator(".rationale")).to_contain_text("1 of 3 sentences supported")
    expect(verdict.locator(".usage")).to_contain_text("9")
    unsupported = page.locator("#steps .step.leaf.unsupported")
    expect(unsupported).to_have_count(2)
    expect(page.locator("#steps .step.leaf.supported")).to_have_count(1)
    tendons = unsupported.first
    expect(tendons.locator("summary")).to_contain_text("It is a disorder of the tendons")
    expect(tendons.locator(".badge")).to_have_text("Not Supported")
    bg = tendons.locator(".sent").evaluate("e => getComputedStyle(e).backgroundColor")
    assert bg not in ("rgba(0, 0, 0, 0)", "transparent")

    # its evidence shows on click
    expect(tendons.locator(".ev").first).to_be_hidden()
    tendons.locator("summary").click()
    expect(tendons.locator(".ev").first).to_be_visible()
    expect(tendons.locator(".leaf-body")).to_contain_text("carpal tunnel median nerve compressed entrapment")
    expect(tendons.locator(".ev").first).to_contain_text("entrapment neuropathy")
    expect(tendons.locator(".src").first).to_contain_text("cts-cause")
    # ... and from the keyboard
    other = unsupported.nth(1)
    other.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(other.locator("details")).to_have_attribute("open", "")
    page.screenshot(path=str(ANSWER_SCREENSHOT), full_page=True)

    # it reopens as stored, the form in answer mode with the same question and answer
    run_url = page.url
    page.goto(run_url)
    expect(page.locator("#steps .step.leaf.unsupported")).to_have_count(2)
    expect(page.get_by_label("Answer check")).to_be_checked()
    expect(page.get_by_label("Answer", exact=True)).to_have_value(PLAIN_CTS)
    link = page.locator("#history a", has_text=Q_CTS).first
    expect(link.locator(".badge")).to_have_text("LEAF 0.33")
    assert not page.failures, page.failures


# -- DEFAME: a claim with an image and a date --------------------------------------------------------------

DEFAME_SCREENSHOT = Path("/tmp/veracity_defame.png")
DEFAME_CLAIM = "This photo shows the Orrin Bridge in Tallinn in May 2024."


@pytest.fixture(scope="module")
def defame_site(server_factory):
    """test_server_defame.py's scripted DEFAME run, answered by the stub (0.25 s a call, 6 calls: long enough to
    watch the steps arrive); images of at most 50 kB."""
    from worlds import DEFAME_RULES

    rules = rules_responder(DEFAME_RULES, delay=0.25)
    seen_images: list[str] = []

    def respond(body):  # an OpenAI-compatible model gets the images too (the rules read the text parts)
        seen_images.extend(url[:30] for url in image_parts(body))
        return rules(body)

    respond.seen_images = seen_images
    stub = StubServer(respond)
    stub.seen_images = seen_images
    srv = server_factory(
        ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0", "--max-image-mb", "0.05"],
        name="browser-defame",
    )
    srv.stub = stub
    yield srv
    stub.close()


def test_defame_with_an_image_and_a_date(page, defame_site):
    from playwright.sync_api import expect
    from worlds import png_bytes

    page.goto(defame_site.url + "/")
    image_input, date_input = page.get_by_label("Images"), page.get_by_label("Claim date")
    expect(image_input).to_be_hidden()
    page.get_by_label("Pipeline").select_option("defame")
    expect(image_input).to_be_visible()
    expect(date_input).to_be_visible()
    expect(page.get_by_label("Question answering")).to_be_hidden()

    # too large: said at once, nothing sent
    image_input.set_input_files([{"name": "huge.png", "mimeType": "image/png", "buffer": b"\x89PNG" + bytes(60_000)}])
    expect(page.locator("#form-error")).to_contain_text("huge.png is 60.0 kB; the limit is 50.0 kB")
    page.get_by_label("Claim", exact=True).fill(DEFAME_CLAIM)
    page.get_by_role("button", name="Check claim").click()
    expect(image_input).to_be_focused()
    assert page.locator("#run").count() == 0

    image_input.set_input_files([{"name": "bridge.png", "mimeType": "image/png", "buffer": png_bytes((120, 80))}])
    expect(page.locator("#form-error")).to_be_hidden()
    expect(page.locator("#image-list")).to_contain_text("bridge.png")
    date_input.fill("2024-05-15")
    page.get_by_role("button", name="Check claim").click()

    # the live view: the image and the date at once, then DEFAME's steps in words as they come
    run = page.locator("#run")
    expect(run.locator(".claim-date")).to_contain_text("2024-05-15")
    thumb = run.locator(".thumbs img")
    expect(thumb).to_have_attribute("alt", "Claim image 1: bridge.png")
    live = page.locator("#run[data-live='1']")
    # the claim's images in words, not as the model's tokens
    expect(live.locator(".step.plan").first).to_contain_text("image_metadata(image 1)")
    expect(live.locator(".step.tool").first).to_contain_text("EXIF metadata of image 1")
    expect(live.locator(".step.tool .r-sum").first).to_contain_text("A PNG image with no EXIF metadata")
    assert page.locator(".verdict").count() == 0

    # the verdict, then the finished run as the server renders it
    verdict = page.locator(".verdict")
    expect(verdict).to_be_visible()
    expect(verdict.locator(".verdict-label")).to_contain_text("Refuted")
    expect(page.locator("#steps .step.judge")).to_contain_text("Refuted")
    expect(page.locator("#steps .step.justify a")).to_have_attribute("href", "https://example.org/orrin")
    thumb = page.locator("#run .thumbs img")
    expect(thumb).to_be_visible()
    assert thumb.evaluate("img => img.complete && img.naturalWidth") == 120  # the stored image, loaded
    expect(page.locator("#run .claim-date")).to_contain_text("2024-05-15")
    shown = page.locator("#run").inner_text()
    assert "<image:" not in shown and "Unavailable:" not in shown and "--search" not in shown
    expect(page.locator("#run .thumbs .hint")).to_contain_text("image 1: bridge.png")
    page.screenshot(path=str(DEFAME_SCREENSHOT), full_page=True)

    # reopened: the form is ready to check again with the same pipeline and date
    assert defame_site.stub.seen_images[0].startswith("data:image/png;base64,")  # the model saw the image
    page.goto(page.url)
    expect(page.get_by_label("Pipeline")).to_have_value("defame")
    expect(page.get_by_label("Claim date")).to_have_value("2024-05-15")
    expect(page.locator("#run .thumbs img")).to_be_visible()
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: no sideways scrolling
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert not page.failures, page.failures


def test_defame_form_without_javascript(browser, defame_site, tmp_path):
    from playwright.sync_api import expect
    from worlds import png_bytes

    ctx = browser.new_context(java_script_enabled=False)
    try:
        p = ctx.new_page()
        p.goto(defame_site.url + "/")
        p.get_by_label("Claim", exact=True).fill(DEFAME_CLAIM)
        p.get_by_label("Pipeline").select_option("defame")
        image = tmp_path / "plain.png"
        image.write_bytes(png_bytes((30, 20), "maroon"))
        p.locator("#image-nojs").set_input_files(str(image))  # the <noscript> field (the other stays hidden)
        expect(p.locator("#image")).to_be_hidden()
        p.locator("#date-nojs").fill("2024-05-15")
        p.get_by_role("button", name="Check claim").click()
        expect(p).to_have_url(re.compile(r"/checks/[0-9a-f]{16}$"))
        expect(p.locator("#run .claim-date")).to_contain_text("2024-05-15")  # reloads itself until done
        expect(p.locator("#run .thumbs img")).to_have_attribute("alt", "Claim image 1: plain.png")
        expect(p.locator(".verdict .verdict-label")).to_contain_text("Refuted", timeout=20_000)
    finally:
        ctx.close()


# -- the page's hardening (issue 11, item 10) ---------------------------------------------------------------


def count_posts(page) -> list[str]:
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/api/checks") else None)
    return posts


def test_errors_clear_when_the_mode_changes_or_the_form_is_sent_again(page, leaf_site):
    from playwright.sync_api import expect

    page.goto(leaf_site + "/")
    error = page.locator("#form-error")
    page.get_by_label("Claim", exact=True).fill("   ")
    page.get_by_role("button", name="Check claim").click()
    expect(error).to_contain_text("the claim is empty")
    page.get_by_label("Answer check").check()  # the error was about the claim: it goes
    expect(error).to_be_hidden()
    page.get_by_label("Claim check").check()
    expect(error).to_be_hidden()
    page.get_by_role("button", name="Check claim").click()
    expect(error).to_contain_text("the claim is empty")
    page.get_by_label("Claim", exact=True).fill("x" * 2500)  # another problem: the old message gives way
    page.get_by_role("button", name="Check claim").click()
    expect(error).to_contain_text("2500 characters; the limit is 2000")
    expect(error).not_to_contain_text("the claim is empty")
    page.failures.clear()  # the 400s asked for above


def test_text_over_the_limit_is_refused_with_its_count_not_cut(page, site):
    from playwright.sync_api import expect

    posts = count_posts(page)
    page.goto(site + "/")
    claim = page.get_by_label("Claim", exact=True)
    claim.fill("The Orrin Bridge stands in Tallinn. " * 70)  # 2520 characters, as if pasted
    assert len(claim.input_value()) == 2520  # nothing cut
    expect(page.locator("#claim-count")).to_have_text("2520 / 2000 characters: 520 over the limit")
    expect(page.locator("#claim-count")).to_have_class("over")
    page.get_by_role("button", name="Check claim").click()
    expect(page.locator("#form-error")).to_have_text(
        "The claim has 2520 characters; the limit is 2000: shorten it by 520 characters."
    )
    expect(claim).to_be_focused()
    assert posts == [] and page.locator("#run").count() == 0
    claim.fill(ONSAGER)  # short enough again: the message goes
    expect(page.locator("#form-error")).to_be_hidden()
    expect(page.locator("#claim-count")).to_have_text(f"{len(ONSAGER)} / 2000 characters")


def test_the_button_is_off_while_a_run_streams_so_no_duplicate_starts(page, site):
    from playwright.sync_api import expect

    posts = count_posts(page)
    page.goto(site + "/")
    page.get_by_label("Claim", exact=True).fill(ONSAGER)
    button = page.get_by_role("button", name="Check claim")
    button.click()
    expect(button).to_be_disabled()
    expect(page.locator("#steps .step.qa").first).to_be_visible()  # streaming
    expect(button).to_be_disabled()
    page.locator("#check-form").evaluate("f => f.requestSubmit()")  # Enter in a field, a second press
    button.click(force=True)
    expect(page.locator(".verdict")).to_be_visible()
    expect(button).to_be_enabled()
    assert len(posts) == 1, posts


def test_after_submitting_the_verdict_is_in_view_with_the_focus(page, site):
    from playwright.sync_api import expect

    page.goto(site + "/")
    page.get_by_label("Claim", exact=True).fill(ONSAGER)
    page.get_by_role("button", name="Check claim").click()
    expect(page.locator("#run-h")).to_be_focused()  # the results region, while the steps stream
    expect(page.locator(".verdict")).to_be_visible()
    expect(page.locator("#verdict-h")).to_be_focused()  # not the page body
    page.wait_for_function(
        "() => { const r = document.querySelector('.verdict').getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight - 80; }"
    )
    assert page.evaluate("document.activeElement.textContent") == "Verdict"


def test_deleting_a_run_says_so_and_leaves_no_address_of_it(page, site):
    from playwright.sync_api import expect

    page.goto(site + "/")
    page.get_by_label("Claim", exact=True).fill(ONSAGER)
    page.get_by_role("button", name="Check claim").click()
    expect(page.locator(".verdict")).to_be_visible()
    run_id = page.url.rsplit("/", 1)[1]
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete this run").click()
    notice = page.locator("#run-deleted")
    expect(notice).to_have_text("The run was deleted.")
    expect(notice).to_be_focused()
    expect(page).to_have_url(site + "/")
    expect(page.locator(f"#history a[data-run-id='{run_id}']")).to_have_count(0)
    page.go_back()  # the deleted run's address is not in the history either
    assert run_id not in page.url

    # a run reopened at its own address, then deleted
    page.get_by_label("Claim", exact=True).fill(ONSAGER)
    page.get_by_role("button", name="Check claim").click()
    expect(page.locator(".verdict")).to_be_visible()
    run_url = page.url
    page.goto(run_url)
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Delete this run").click()
    expect(page.locator("#run-deleted")).to_be_visible()
    expect(page).to_have_url(site + "/")
    assert not page.failures, page.failures


@pytest.fixture(scope="module")
def failing_site(server_factory):
    """A model backend that answers nonsense: every run fails with an unexpected error."""
    stub = StubServer(
        lambda body: (
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": "SECRET PROMPT ECHO"}],
            },
            0.05,
        )
    )
    srv = server_factory(
        ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0"], name="browser-failing"
    )
    yield srv.url
    stub.close()


def test_a_failed_run_shows_a_short_message(page, failing_site):
    from playwright.sync_api import expect

    page.goto(failing_site + "/")
    page.get_by_label("Claim", exact=True).fill(ONSAGER)
    page.get_by_role("button", name="Check claim").click()
    failure = page.locator("#run .failure")
    expect(failure).to_contain_text("the check stopped on an unexpected error on the server")
    for text in (failure.inner_text(), page.locator("#run").inner_text()):
        assert "SECRET" not in text and "Error:" not in text and "Traceback" not in text
    expect(page.get_by_role("button", name="Check claim")).to_be_enabled()
    expect(page.locator("#run-h")).to_be_focused()


@pytest.fixture(scope="module")
def refusing_site(server_factory):
    """A model server that answers HTTP 400 with an error quoting the end of the prompt (as llama-server and
    vLLM do for a prompt they cannot take)."""
    stub = StubServer(rules_responder({"rules": []}))
    srv = server_factory(
        ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0"], name="browser-refusing"
    )
    yield srv, stub
    stub.close()


def test_a_model_server_error_is_said_plainly_with_its_details_behind_a_toggle(page, refusing_site):
    from playwright.sync_api import expect

    srv, stub = refusing_site
    page.goto(srv.url + "/")
    page.get_by_label("Claim", exact=True).fill(ONSAGER)
    page.get_by_role("button", name="Check claim").click()
    failure = page.locator("#run .failure")
    expect(failure).to_contain_text("Failed: The model server answered with an error (HTTP 400). Try again")
    details = failure.locator("details")
    expect(details.locator("code")).to_be_hidden()
    shown = page.locator("#run").inner_text()
    assert stub.url.split("//")[1] not in shown and "no rule matches" not in shown and "Question =" not in shown
    details.locator("summary").click()
    code = details.locator("code")
    expect(code).to_contain_text("the model server answered HTTP 400: no rule matches '[text removed]'")
    assert "Question =" not in code.inner_text() and "127.0.0.1" not in code.inner_text()
    # the server's log keeps the whole reply, the quoted prompt included
    assert any("no rule matches" in line and "Question =" in line for line in srv.log)
    expect(page.get_by_role("button", name="Check claim")).to_be_enabled()


def test_a_failed_text_check_reopened_from_the_history_keeps_its_text(page, refusing_site):
    from playwright.sync_api import expect

    srv, _ = refusing_site
    text = "The Orrin Bridge is in Tallinn.\n\nIt was built in 1901."
    page.goto(srv.url + "/")
    page.get_by_role("radio", name="Check a text").check()
    page.get_by_label("Text", exact=True).fill(text)
    page.get_by_label("Claims found by").select_option("model")  # the model server refuses: no claim is found
    page.get_by_role("button", name="Check text").click()
    expect(page.locator("#run .failure")).to_contain_text("The model server answered with an error")
    run_url = page.url
    page.goto(srv.url + "/")
    page.locator("#history a", has_text="The Orrin Bridge is in Tallinn.").first.click()
    expect(page).to_have_url(run_url)
    expect(page.locator("#run .failure")).to_be_visible()
    expect(page.locator("#text-view")).to_have_text(text)
    expect(page.get_by_role("radio", name="Check a text")).to_be_checked()
    expect(page.get_by_label("Text", exact=True)).to_have_value(text)


def test_a_reopened_defame_run_shows_its_images_and_checks_them_again(page, defame_site):
    import base64

    import httpx
    from playwright.sync_api import expect
    from worlds import png_bytes

    with httpx.Client(base_url=defame_site.url, timeout=30) as c:
        image = base64.b64encode(png_bytes((90, 60), "navy")).decode()
        r = c.post(
            "/api/checks",
            json={
                "claim": DEFAME_CLAIM,
                "pipeline": "defame",
                "date": "2024-05-15",
                "images": [{"data": image, "filename": "navy.png"}],
            },
        )
        assert r.status_code == 202, r.text
        first = r.json()["id"]
    page.goto(f"{defame_site.url}/checks/{first}")
    expect(page.get_by_label("Pipeline")).to_have_value("defame")
    expect(page.get_by_label("Claim date")).to_have_value("2024-05-15")
    thumb = page.locator("#reuse-images img")
    expect(thumb).to_have_attribute("alt", "Image 1 of this run: navy.png")
    expect(thumb).to_be_visible()
    page.wait_for_function("() => document.querySelector('#reuse-images img').naturalWidth === 90")

    page.get_by_role("button", name="Check claim").click()  # checked again, with the same image
    expect(page).not_to_have_url(re.compile(first))
    live = page.locator("#run .thumbs img")
    expect(live).to_have_attribute("alt", "Claim image 1: navy.png")
    expect(page.locator(".verdict")).to_be_visible()
    second = page.url.rsplit("/", 1)[1]
    with httpx.Client(base_url=defame_site.url, timeout=30) as c:
        a, b = (c.get(f"/api/checks/{i}").json()["images"][0] for i in (first, second))
    assert a["sha256"] == b["sha256"] and b["filename"] == "navy.png"

    # left out on request: the next check goes without images
    page.goto(f"{defame_site.url}/checks/{first}")
    page.get_by_role("button", name="Leave them out").click()
    expect(page.locator("#reuse-images")).to_have_count(0)
    page.get_by_role("button", name="Check claim").click()
    expect(page).not_to_have_url(re.compile(first))  # the new run's panel, not the reopened one
    third = page.locator(f"#run:not([data-run-id='{first}'])")
    expect(third.locator(".verdict")).to_be_visible(timeout=20_000)
    assert third.locator(".thumbs img").count() == 0
    assert not page.failures, page.failures


def test_a_reopened_defame_run_checks_its_images_again_without_javascript(browser, defame_site):
    import base64

    import httpx
    from playwright.sync_api import expect
    from worlds import png_bytes

    with httpx.Client(base_url=defame_site.url, timeout=30) as c:
        image = base64.b64encode(png_bytes((40, 30), "olive")).decode()
        first = c.post(
            "/api/checks",
            json={"claim": DEFAME_CLAIM, "pipeline": "defame", "images": [{"data": image, "filename": "olive.png"}]},
        ).json()["id"]
    ctx = browser.new_context(java_script_enabled=False)
    try:
        p = ctx.new_page()
        p.goto(f"{defame_site.url}/checks/{first}")
        expect(p.locator("#reuse-images img")).to_have_attribute("alt", "Image 1 of this run: olive.png")
        expect(p.locator("#reuse-drop")).to_be_hidden()  # it needs JavaScript
        p.get_by_role("button", name="Check claim").click()
        expect(p).to_have_url(re.compile(r"/checks/[0-9a-f]{16}$"))
        assert first not in p.url
        expect(p.locator("#run .thumbs img")).to_have_attribute("alt", "Claim image 1: olive.png")
    finally:
        ctx.close()


# -- the live view draws what the server renders ----------------------------------------------------------------

CANON_JS = """
(function () {
  // an element as a canonical string: tag, sorted classes and attributes, its non-blank text and children
  // JSON (a generic item's data) with its keys sorted: the template's tojson sorts them, JSON.stringify does not
  function sorted(v) {
    if (Array.isArray(v)) return v.map(sorted);
    if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
    return v;
  }
  function text(t) {
    t = t.replace(/\\s+/g, " ").trim();
    if (t.startsWith("{")) { try { return JSON.stringify(sorted(JSON.parse(t))); } catch (e) { /* text */ } }
    return t;
  }
  function canon(node) {
    if (node.nodeType === 3) return text(node.textContent);
    if (node.nodeType !== 1) return "";
    const attrs = Array.from(node.attributes).filter((a) => a.name !== "class")
      .map((a) => `${a.name}=${a.value}`).sort().join(" ");
    const kids = Array.from(node.childNodes).map(canon).filter((x) => x !== "").join("|");
    return `<${node.tagName.toLowerCase()}.${Array.from(node.classList).sort().join(".")} ${attrs}>${kids}</>`;
  }
  window.__canon = canon;
})();
"""


def test_the_live_page_draws_view_items_as_the_server_renders_them(browser):
    """static/items.js only draws the items the server folded; it must draw them as templates/steps.html does."""
    import test_steps as ts

    from veracity.server.app import _templates
    from veracity.server.views import run_view

    index = ts.Index.from_documents(ts.DOCS)
    traces = [
        ts.run("qacheck-retriever-reader", ts.QACHECK_RULES, ts.QACHECK_CLAIM, index)[0].trace,
        ts.run("defame", ts.DEFAME_RULES, ts.DEFAME_CLAIM, index, **{"defame.search": "local"})[0].trace,
        ts.run(
            "answer:rag",
            ts.LEAF_RULES,
            ts.Claim(ts.LEAF_QUESTION, metadata={"options": {"A": "yes", "B": "no"}}),
            index,
            **{"leaf.top_k": 1},
        )[0].trace,
        ts.run("direct", [(r"true or false\?\nAnswer:$", " False")], ts.QACHECK_CLAIM)[0].trace,
        ts.OLD_TRACE,
        [
            {
                "stage": "images",
                "refs": ["<image:1>", "<image:2>"],
                "sources": ["/a.png", "/b.png"],
                "model_sees_images": False,
            },
            {
                "stage": "plan",
                "round": 1,
                "actions": [],
                "note": "no tool is available",
                "static": True,
                "fallback": True,
                "rejected": ["fly_to(x): no such tool"],
                "unavailable": {"geolocate": "no weights"},
            },
            {
                "stage": "action",
                "round": 1,
                "action": "image_search(x)",
                "error": "provider down",
                "results": [],
                "notes": ["dropped 2 results"],
            },
            {
                "stage": "summary",
                "round": 1,
                "action": "nothing(x)",
                "source": "S",
                "url": "javascript:x",
                "summary": None,
            },
            {"stage": "leaf_note", "note": "the answer is empty"},
            {
                "stage": "evidence_verifier",
                "verifier": "v",
                "label": "Refuted",
                "confidence": 0.81,
                "passage": 0,
                "probabilities": {"supported": 0.1, "refuted": 0.85, "nei": 0.05},
                "rationale": 'Label Refuted: decided by passage [1] (S): "<b>X</b> is in Riga."',
            },
            {"stage": "judge", "round": 1, "label": "Refuted", "confidence": 0.9, "findings": "F.", "final": True},
        ],
    ]
    items = [it for trace in traces for it in run_view(trace)[0]]
    assert {it["kind"] for it in items} >= {
        "qa",
        "verifier",
        "parse_failure",
        "stop",
        "reasoning",
        "plan",
        "action",
        "develop",
        "judge",
        "justify",
        "images",
        "summary",
        "leaf",
        "leaf_score",
        "leaf_note",
        "retrieval",
        "mc_answer",
        "other",
    }
    env = _templates().env
    server_html = env.from_string(
        '{% import "steps.html" as m with context %}{% for it in items %}{{ m.item(it) }}{% endfor %}'
    ).render(items=items)
    static = Path(__file__).resolve().parents[2] / "src/veracity/server/static"
    ctx = browser.new_context()
    try:
        p = ctx.new_page()
        p.set_content('<ol id="server"></ol><ol id="live"></ol>')
        for script in ("dom.js", "items.js"):  # the markup helpers, then the items' markup (as base.html loads them)
            p.add_script_tag(content=(static / script).read_text())
        p.add_script_tag(content=CANON_JS)
        server, live = p.evaluate(
            """([html, items]) => {
            const s = document.getElementById("server"), l = document.getElementById("live");
            s.innerHTML = html;
            for (const it of items) l.append(window.veracity.drawItem(it));
            s.normalize();  // adjacent text nodes as one
            l.normalize();
            return [Array.from(s.children).map(window.__canon), Array.from(l.children).map(window.__canon)];
        }""",
            [server_html, items],
        )
    finally:
        ctx.close()
    assert len(server) == len(live) == len(items)
    for it, a, b in zip(items, server, live):
        assert a == b, it["kind"]
