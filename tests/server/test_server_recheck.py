"""Re-checking a stored run on the server: POST /api/checks/{id}/recheck and the run page's Re-check button, with
real HTTP requests against `veracity serve` and a real browser; the index on disk is rebuilt between the check and
its recheck, as a user's index is."""

from __future__ import annotations

import re

import httpx
import pytest
from conftest import write_rules
from test_server_api import finished, wait_for

from veracity.retrieval import Document, Index

CLAIM = "Mount Everest is 8,849 metres high."
EVEREST = "Mount Everest is Earth's highest mountain, in the Himalayas. Its summit is 8,849 metres high."


def build(path, text: str = EVEREST) -> None:
    Index.build(
        [
            Document("everest", "Mount Everest", text, url="https://example.org/everest", date="2020-05-01"),
            Document("nile", "Nile", "The Nile flows into the Mediterranean Sea."),
        ],
        path,
    )


@pytest.fixture(scope="module")
def site(server_factory):
    index = server_factory.base / "recheck-idx"
    build(index)
    srv = server_factory(
        ["--model", write_rules(server_factory.base / "rules.json"), "--index", str(index), "--rate-limit", "0"],
        name="recheck",
    )
    with httpx.Client(base_url=srv.url, timeout=60) as client:
        client.index = index
        yield client


def checked(client: httpx.Client) -> str:
    """A finished check of CLAIM by the evidence-only verifier (no model call); its run id."""
    build(client.index)
    r = client.post("/api/checks", json={"claim": CLAIM, "pipeline": "verifier"})
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    run = wait_for(client, run_id, finished, timeout=60)
    assert run["status"] == "done", run
    return run_id


def test_recheck_over_http_says_what_changed_and_links_both_runs(site):
    run_id = checked(site)
    r = site.post(f"/api/checks/{run_id}/recheck")
    assert r.status_code == 201, r.text
    same = r.json()
    assert same["rechecks"] == run_id and same["headline"] == "Evidence unchanged" and same["exit_status"] == 0
    assert same["counts"]["unchanged"] >= 1 and same["holds"] is True and r.headers["location"].endswith(same["id"])

    build(site.index, EVEREST.replace("8,849", "8,848"))  # the index is rebuilt with the document changed
    r = site.post(f"/api/checks/{run_id}/recheck")
    assert r.status_code == 201, r.text
    changed = r.json()
    assert changed["changed"] is True and changed["exit_status"] == 1
    [item] = [i for i in changed["items"] if i["status"] == "changed"]
    assert "[-8,849-] {+8,848+}" in item["diff"] and item["evidence"]["doc_id"] == "everest"

    stored = site.get(f"/api/checks/{changed['id']}").json()
    assert stored["pipeline"] == "recheck" and stored["status"] == "done"
    assert stored["label"] == changed["headline"]
    assert [s["stage"] for s in stored["steps"]].count("recheck_item") == len(changed["items"])

    old_page = site.get(f"/checks/{run_id}").text  # the old run's page links to both of its rechecks
    assert "Re-checks of this run" in old_page
    assert f'href="/checks/{same["id"]}"' in old_page and f'href="/checks/{changed["id"]}"' in old_page
    new_page = site.get(f"/checks/{changed['id']}").text
    assert f'Re-check of <a href="/checks/{run_id}">run {run_id}</a>' in new_page
    assert re.search(r"<del>8,849</del>\s*<ins>8,848</ins>", new_page)
    assert 'id="recheck-run"' not in new_page  # a recheck is not rechecked itself
    md = site.get(f"/api/checks/{changed['id']}/report.md").text
    assert "## Evidence, read again" in md and "**changed**" in md

    r = site.post(f"/api/checks/{changed['id']}/recheck")
    assert r.status_code == 409 and r.json()["error"] == "not_recheckable"
    assert site.post("/api/checks/nope/recheck").status_code == 404
    # the page's button posts a form: another site's page cannot make a visitor's browser post it
    r = site.post(f"/checks/{run_id}/recheck", headers={"origin": "http://evil.example"})
    assert r.status_code == 403 and "this server's own page" in r.text


def test_the_recheck_button_shows_each_item_and_the_old_run_lists_it(site, browser):
    from playwright.sync_api import expect

    run_id = checked(site)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(30_000)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{site.base_url}/checks/{run_id}")
        expect(page.locator(".ev .when").first).to_contain_text("published 2020-05-01 · indexed ")
        build(site.index, EVEREST.replace("Himalayas", "Mahalangur Himal"))
        page.get_by_role("button", name="Re-check the evidence").click()
        expect(page).not_to_have_url(f"{site.base_url}/checks/{run_id}")
        expect(page.locator(".recheck-of")).to_contain_text(f"Re-check of run {run_id}")
        item = page.locator(".step.recheck").filter(has_text="Mount Everest")
        expect(item.locator(".badge")).to_have_text("changed")
        expect(item.locator(".diff del")).to_have_text("Himalayas.")
        expect(item.locator(".diff ins")).to_have_text("Mahalangur Himal.")
        expect(page.locator(".verdict-label .badge")).to_have_text(re.compile("Evidence changed|Verdict may not hold"))
        expect(page.locator("#verdict-h")).to_have_text("Re-check")
        expect(page.get_by_label("Pipeline")).to_have_value("qacheck")  # the form is ready for a new check
        new_url = page.url
        page.get_by_role("link", name=f"run {run_id}").click()
        expect(page.locator(".rechecks a")).to_have_count(1)
        page.locator(".rechecks a").click()
        expect(page).to_have_url(new_url)
    finally:
        ctx.close()
    assert not errors, errors
