"""The page's "Check a text" mode in a real browser: Playwright driving Debian's chromium against `veracity serve`.

The direct baseline decides each claim over a BM25 index of the article's sources, its replies coming from the
OpenAI-compatible stub (tests/worlds.py's text rules, 0.6 s a call), so the claims can be watched being coloured
on the text one after the other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import rules_responder, write_rules
from stub_server import StubServer
from test_server_browser import page  # noqa: F401  (the page fixture; the browser is conftest's)
from worlds import ARTICLE, BORN, DANUBE, NOBEL, TEXT_DOCS, TEXT_RULES

SCREENSHOT = Path("/tmp/veracity_text_check.png")


@pytest.fixture(scope="module")
def text_site(server_factory):
    from veracity.retrieval import Index

    Index.build(TEXT_DOCS, server_factory.base / "browser-text-idx")
    stub = StubServer(rules_responder(TEXT_RULES, delay=0.6))
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
            str(server_factory.base / "browser-text-idx"),
        ],
        name="browser-texts",
    )
    yield srv.url
    stub.close()


def background(locator) -> str:
    return locator.evaluate("e => getComputedStyle(e).backgroundColor")


def test_paste_a_text_watch_its_claims_coloured_then_evidence_history_and_report(page, text_site):  # noqa: F811
    from playwright.sync_api import expect

    page.goto(text_site + "/")
    expect(page.get_by_label("Text", exact=True)).to_be_hidden()
    page.get_by_role("radio", name="Check a text").check()
    expect(page.get_by_role("heading", name="Check a text")).to_be_visible()
    expect(page.get_by_label("Claim", exact=True)).to_be_hidden()
    expect(page.get_by_label("Images")).to_be_hidden()

    # nothing to check: said at once, nothing sent
    page.get_by_role("button", name="Check text").click()
    expect(page.locator("#form-error")).to_contain_text("The text is empty")
    expect(page.get_by_label("Text", exact=True)).to_be_focused()

    page.get_by_label("Text", exact=True).fill(ARTICLE)
    page.get_by_label("Pipeline").select_option("direct")
    page.get_by_label("Claims found by").select_option("rules")
    page.get_by_role("button", name="Check text").click()

    # the text appears with every claim's passage marked, then each is coloured as its verdict arrives
    live = page.locator("#run[data-live='1']")
    expect(live.locator("#text-view")).to_have_text(ARTICLE)
    marks = live.locator("#text-view a.mark")
    expect(marks).to_have_count(5)
    expect(live.locator("#text-view a.mark.o-supported")).to_have_count(1)
    expect(live.locator("#text-view a.mark.o-pending")).to_have_count(2)  # the other two still being checked
    expect(live.locator("#text-view a.mark.o-not_checkable")).to_have_text("Do you like rivers?")
    expect(live.locator("#steps .tclaim.o-pending")).to_have_count(2)
    assert page.locator(".verdict").count() == 0

    # then the score, and the finished run as the server renders it
    verdict = page.locator(".verdict")
    expect(verdict).to_be_visible()
    expect(verdict.locator(".verdict-label")).to_contain_text("Factuality 67%")
    expect(verdict.locator(".rationale")).to_contain_text("2 of 3 checked claims supported, 1 refuted")
    refuted = page.locator("#text-view a.mark.o-refuted")
    expect(refuted).to_have_text(DANUBE)
    supported = page.locator("#text-view a.mark.o-supported")
    expect(supported).to_have_count(2)
    expect(supported.first).to_have_text(BORN)
    assert background(refuted) != background(supported.first)
    assert background(refuted) not in ("rgba(0, 0, 0, 0)", "transparent")
    expect(page.locator("#text-view a.mark.o-ambiguous")).to_have_text("He lost it.")
    expect(page.locator("#steps .text-summary")).to_contain_text("67%")

    # a passage, clicked: its claim opens with its evidence
    claim = page.locator("#claim-4")
    expect(claim.locator(".ev").first).to_be_hidden()
    refuted.click()
    expect(claim.locator("details")).to_have_attribute("open", "")
    expect(claim.locator(".ev").first).to_contain_text("second-longest river in Europe")
    expect(claim.locator(".badge")).to_have_text("Refuted")
    expect(claim.locator("summary")).to_be_focused()
    # another passage: its claim opens, the one opened before closes
    page.locator("#text-view a.mark.o-supported").first.click()
    expect(page.locator("#claim-1 details")).to_have_attribute("open", "")
    expect(claim.locator("details")).not_to_have_attribute("open", "")
    refuted.click()
    # the pronoun was resolved: the claim says who
    expect(page.locator("#claim-2 .sent")).to_have_text(NOBEL)
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    # the HTML report: the text with each claim's passage coloured
    with page.expect_download() as dl:
        page.get_by_role("link", name="HTML").click()
    report = Path(dl.value.path()).read_text(encoding="utf-8")
    assert dl.value.suggested_filename.endswith(".html")
    assert re.search(rf'<mark class="o-refuted" id="p-\d+"><a [^>]*>{re.escape(DANUBE)}</a></mark>', report)

    # reopened from the history: the same colours, and the form ready to check the text again
    run_url = page.url
    assert re.search(r"/checks/[0-9a-f]{16}$", run_url)
    page.goto(text_site + "/")
    link = page.locator("#history a", has_text="Marie Curie was born in Warsaw.").first
    expect(link.locator(".badge")).to_have_text("Factuality 67%")
    link.click()
    expect(page).to_have_url(run_url)
    expect(page.locator("#run")).not_to_have_attribute("data-live", "1")
    expect(page.locator("#text-view a.mark.o-refuted")).to_have_text(DANUBE)
    expect(page.get_by_role("radio", name="Check a text")).to_be_checked()
    expect(page.get_by_label("Text", exact=True)).to_have_value(ARTICLE)
    expect(page.get_by_label("Pipeline")).to_have_value("direct")
    page.locator("#text-view a.mark.o-supported").first.click()
    expect(page.locator("#claim-1 .ev").first).to_contain_text("She was born in Warsaw.")
    assert not page.failures, page.failures


def test_upload_a_file_and_check_its_text(page, text_site):  # noqa: F811
    from playwright.sync_api import expect

    page.goto(text_site + "/")
    page.get_by_role("radio", name="Check a text").check()
    page.get_by_label("Pipeline").select_option("direct")
    page.get_by_label("Claims found by").select_option("rules")
    html = f"<html><head><title>Rivers</title></head><body><article><p>{DANUBE}</p></article></body></html>"
    page.get_by_label("Or upload a file").set_input_files(
        [{"name": "rivers.html", "mimeType": "text/html", "buffer": html.encode()}]
    )
    expect(page.get_by_label("Text", exact=True)).to_be_disabled()  # the file is checked, not the box
    page.get_by_role("button", name="Check text").click()
    expect(page.locator("#run-h")).to_have_text("Rivers")
    expect(page.locator(".verdict .verdict-label")).to_contain_text("Factuality 0%")
    expect(page.locator("#text-view")).to_have_text(DANUBE)
    expect(page.locator("#text-meta")).to_contain_text("read from HTML")
    expect(page.locator("#text-view a.mark.o-refuted")).to_have_text(DANUBE)
    assert not page.failures, page.failures


# every change of the live status line, recorded in the page as it happens
RECORD_STATUS = """() => {
  window.statuses = [];
  new MutationObserver(() => {
    const s = document.querySelector("#run-status");
    if (s && s.textContent !== window.statuses[window.statuses.length - 1]) window.statuses.push(s.textContent);
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}"""


def test_the_live_status_says_which_claim_is_checked_n_of_m_and_the_time_so_far(page, text_site):  # noqa: F811
    from playwright.sync_api import expect

    page.goto(text_site + "/")
    page.get_by_role("radio", name="Check a text").check()
    page.get_by_label("Text", exact=True).fill(ARTICLE)
    page.get_by_label("Pipeline").select_option("direct")
    page.get_by_label("Claims found by").select_option("rules")
    page.evaluate(RECORD_STATUS)
    page.get_by_role("button", name="Check text").click()
    status = page.locator("#run-status")
    expect(status).to_contain_text(f"Checking claim 2 of 3: {NOBEL}")
    expect(page.locator("#run-elapsed")).to_have_text(re.compile(r"^\d+ s so far$"))
    expect(page.locator(".verdict")).to_be_visible()
    seen = [s for s in page.evaluate("window.statuses") if s.startswith("Checking claim")]
    # the claims in the order they are checked, each while it is in progress; none of the claims not sent to
    # the pipeline (3 is a question, 5 ambiguous) reads as the one being checked
    assert [s.split(":")[0] for s in dict.fromkeys(s.split(" (")[0] for s in seen)] == [
        "Checking claim 1 of 3",
        "Checking claim 2 of 3",
        "Checking claim 3 of 3",
    ], seen
    assert seen[0].startswith(f"Checking claim 1 of 3: {BORN}") and any(DANUBE in s for s in seen), seen
    assert not any("Ambiguous" in s or "Not checkable" in s for s in page.evaluate("window.statuses"))
    expect(page.locator("#run-elapsed")).to_have_count(0)  # the finished run says its time instead
    expect(status).to_contain_text(re.compile(r"Finished in \d+\.\d s"))
    assert not page.failures, page.failures


def test_a_claim_says_it_waits_for_the_model_and_for_how_long(page, text_site):  # noqa: F811
    from playwright.sync_api import expect

    page.goto(text_site + "/")
    page.get_by_label("Claim", exact=True).fill(BORN)
    page.get_by_label("Pipeline").select_option("direct")
    page.evaluate(RECORD_STATUS)
    page.get_by_role("button", name="Check claim").click()
    expect(page.locator("#run-elapsed")).to_have_text(re.compile(r"^\d+ s so far$"))
    expect(page.locator(".verdict")).to_be_visible()
    statuses = page.evaluate("window.statuses")
    assert "Checking the claim: waiting for the model’s first step…" in statuses, statuses
    assert "Running…" not in statuses


def test_a_finished_text_stays_in_view_on_a_phone_and_the_focus_moves_without_a_jump(browser, text_site):  # noqa: F811
    from playwright.sync_api import expect

    ctx = browser.new_context(viewport={"width": 375, "height": 700}, is_mobile=True, reduced_motion="reduce")
    ctx.set_default_timeout(15_000)
    page = ctx.new_page()
    try:
        page.goto(text_site + "/")
        page.get_by_role("radio", name="Check a text").check()
        page.get_by_label("Text", exact=True).fill(ARTICLE)
        page.get_by_label("Pipeline").select_option("direct")
        page.get_by_label("Claims found by").select_option("rules")
        page.get_by_role("button", name="Check text").click()
        expect(page.locator("#run[data-live='1'] #text-view a.mark.o-supported")).to_have_count(1)
        top = page.locator("#text-view").evaluate("e => e.getBoundingClientRect().top")
        expect(page.locator(".verdict")).to_be_visible()
        expect(page.locator("#verdict-h")).to_be_focused()
        box = page.locator("#text-view").evaluate(
            "e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight]; }"
        )
        assert box[0] < box[2] and box[1] > 0, box  # the coloured text is on the screen
        assert abs(box[0] - top) < 2, (top, box)  # where it was: no jump to the summary
    finally:
        ctx.close()


def test_the_text_counter_warns_over_the_limit_before_submitting(page, server_factory):  # noqa: F811
    from playwright.sync_api import expect

    model = write_rules(server_factory.base / "rules-none.json", {"rules": []})
    srv = server_factory(["--model", model, "--max-text-mb", "0.05", "--rate-limit", "0"], name="browser-small-texts")
    page.goto(srv.url + "/")
    page.get_by_role("radio", name="Check a text").check()
    expect(page.locator("#text-hint")).to_contain_text("At most 50.0 kB.")
    count = page.locator("#text-count")
    page.get_by_label("Text", exact=True).fill("é" * 20_000)  # 40 kB: under
    expect(count).to_have_text("20000 characters")
    page.get_by_label("Text", exact=True).fill("é" * 30_000)  # 60 kB: said while typing, before any submit
    expect(count).to_have_text("30000 characters: 60.0 kB, 10.0 kB over the limit of 50.0 kB")
    expect(count).to_have_class(re.compile(r"\bover\b"))
    assert count.evaluate("e => getComputedStyle(e).color") != page.locator("#text-hint").evaluate(
        "e => getComputedStyle(e).color"
    )


def test_a_failed_claim_of_a_text_is_said_plainly_with_its_details_behind_a_toggle(page, server_factory):  # noqa: F811
    from playwright.sync_api import expect
    from stub_server import chat_response, message_text

    prompt_quote = "Is this claim true or false? The Rhine flows through Basel and more words follow here"

    def respond(body):
        if "Basel" in message_text(body):  # the server refuses, quoting the prompt, as some do
            return 400, {"error": {"message": f"moderation filter refused the prompt '{prompt_quote}'"}}, 0
        return 200, chat_response("True"), 0

    stub = StubServer(respond)
    try:
        srv = server_factory(
            [
                "--model",
                "stub-model",
                "--base-url",
                stub.url,
                "--no-cache",
                "--rate-limit",
                "0",
                "--decisions",
                "parse",
                "--endpoint",
                "chat",
            ],
            name="browser-text-failure",
        )
        page.goto(srv.url + "/")
        page.get_by_role("radio", name="Check a text").check()
        page.get_by_label("Text", exact=True).fill("The Danube flows through Vienna. The Rhine flows through Basel.")
        page.get_by_label("Pipeline").select_option("direct")
        page.get_by_label("Claims found by").select_option("rules")
        page.get_by_role("button", name="Check text").click()
        expect(page.locator(".verdict")).to_be_visible()
        claim = page.locator("li.tclaim.o-failed")
        claim.locator("summary").first.click()
        failure = claim.locator(".failure")
        expect(failure).to_contain_text("Failed The model server answered with an error (HTTP 400).")
        expect(failure).to_contain_text("Try again")
        details = failure.locator("details.failure-details")
        expect(details.locator("code")).not_to_be_visible()
        details.locator("summary").click()
        expect(details.locator("code")).to_contain_text("moderation filter refused the prompt '[text removed]'")
        assert prompt_quote not in page.content() and stub.url not in page.content()
        assert not page.failures, page.failures
    finally:
        stub.close()


def test_a_text_is_checked_against_documents_pasted_beside_it(page, text_site):  # noqa: F811
    from playwright.sync_api import expect

    source = (
        "The Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in 1871 and crosses the harbour canal."
    )
    page.goto(text_site + "/")
    page.get_by_role("radio", name="Check a text").check()
    page.get_by_label("Text", exact=True).fill("The Orrin Bridge was built in 1871. It crosses the harbour canal.")
    evidence = page.get_by_label("Evidence")
    expect(evidence).to_be_hidden()  # folded until asked for
    page.locator("#evidence-field summary").click()
    evidence.fill(source)
    page.get_by_label("Pipeline").select_option("verifier")  # reads documents: usable with a source given
    page.get_by_label("Claims found by").select_option("rules")
    page.get_by_role("button", name="Check text").click()
    expect(page.locator(".verdict .verdict-label")).to_contain_text("Factuality 100%", timeout=60000)
    page.locator("#text-view a.mark").first.click()
    expect(page.locator("#claim-1 .ev").first).to_contain_text("It was built in 1871")
    expect(page.locator("#claim-1 .badge")).to_have_text("Supported")
    # the answer-check mode has no such box: its sentences are checked against the server's documents
    page.goto(text_site + "/")
    page.get_by_role("radio", name="Check a text").check()
    expect(page.locator("#evidence-field")).to_be_visible()
    page.get_by_role("radio", name="Answer check").check()
    expect(page.locator("#evidence-field")).to_be_hidden()
    page.get_by_role("radio", name="Claim check").check()
    expect(page.locator("#evidence-field")).to_be_visible()
