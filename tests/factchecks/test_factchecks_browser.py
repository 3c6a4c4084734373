"""The page in a real browser (Playwright driving Debian's chromium): a check's published fact-checks appear live,
above its steps and its verdict, with the rating, the publisher's link and the claim as they worded it."""

from __future__ import annotations

import pytest
from conftest import rules_responder
from factcheck_data import imported_store
from stub_server import StubServer

CLAIM = "Drinking hot water kills the coronavirus, says a viral post."


@pytest.fixture(scope="module")
def site(server_factory):
    store = imported_store(server_factory.base)
    stub = StubServer(rules_responder(delay=0.12))
    srv = server_factory(
        ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0"],
        env_extra={"VERACITY_FACTCHECKS": str(store)},
        name="fcbrowser",
    )
    yield srv.url
    stub.close()


def test_the_published_fact_check_is_drawn_live_before_the_steps(browser, site):
    from playwright.sync_api import expect

    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(15_000)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site + "/")
    page.get_by_label("Claim", exact=True).fill(CLAIM)
    page.get_by_label("Pipeline").select_option("qacheck")
    page.get_by_role("button", name="Check claim").click()

    block = page.locator("#steps .step.published-factchecks")
    expect(block).to_be_visible(timeout=90_000)  # the server loads the embedding model for its first match
    expect(block.locator(".q")).to_have_text("published fact-check found: AFP Fact Check rated it 'False'")
    expect(block.locator(".b-rating")).to_have_text("False")
    expect(block.locator(".ev.factcheck p")).to_contain_text(
        "Drinking hot water every 15 minutes kills the coronavirus."
    )
    link = block.locator(".src a")
    expect(link).to_have_text("AFP Fact Check")
    expect(link).to_have_attribute("href", "https://example.org/fact-check/1")
    expect(page.locator(".verdict")).to_be_visible(timeout=60_000)
    # drawn first: before the first question of the check
    steps = page.locator("#steps > li")
    expect(steps.first).to_have_class("step published-factchecks found")
    # the page rendered by the server (a reload) shows the same block
    page.reload()
    expect(page.locator("#steps .step.published-factchecks .b-rating")).to_have_text("False")
    ctx.close()
    assert not errors, errors
