"""Published fact-checks over the HTTP API and the page (real requests against `veracity serve`), and over MCP (the
SDK's own client against `veracity mcp` on stdio): a check's run carries them before its verdict, a route and a tool
of their own find them, and a server without a store says how to get one."""

from __future__ import annotations

import sys
import time

import anyio
import httpx
import pytest
from conftest import server_env, write_rules
from factcheck_data import imported_store
from mcp import Client
from mcp.client.stdio import StdioServerParameters

CLAIM = "Turn off 5G!! The masts are spreading the coronavirus #5G pic.twitter.com/xyz123"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return imported_store(tmp_path_factory.mktemp("fcstore"))


@pytest.fixture(scope="module")
def site(server_factory, store):
    srv = server_factory(
        ["--model", write_rules(server_factory.base / "rules.json"), "--rate-limit", "0"],
        env_extra={"VERACITY_FACTCHECKS": str(store)},
        name="factchecks",
    )
    with httpx.Client(base_url=srv.url, timeout=60) as client:
        yield client


def finished_run(client: httpx.Client, run_id: str, timeout: float = 120) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        run = client.get(f"/api/checks/{run_id}").json()
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish in {timeout} s")


def test_a_run_carries_its_published_fact_checks_before_the_verdict(site):
    r = site.post("/api/checks", json={"claim": CLAIM, "pipeline": "qacheck"})
    assert r.status_code == 202, r.text
    run = finished_run(site, r.json()["id"])
    assert run["status"] == "done", run
    keys = list(run)
    assert keys.index("factchecks") == keys.index("verdict") - 1
    fc = run["factchecks"]
    assert fc["found"] is True and fc["summary"] == "published fact-check found: Full Fact rated it 'False'"
    assert fc["matches"][0]["claim"] == "5G mobile networks spread the coronavirus."
    assert fc["matches"][0]["url"] == "https://example.org/fact-check/0"
    assert run["steps"][1]["stage"] == "published_factchecks"

    page = site.get(f"/checks/{run['id']}").text
    block = page[page.index('<li class="step published-factchecks found">') :]
    block = block[: block.index("</li>")]
    assert "Published fact-checks" in block and "published fact-check found: Full Fact rated it" in block
    assert '<span class="badge b-rating">False</span> “5G mobile networks spread the coronavirus.”' in block
    assert 'href="https://example.org/fact-check/0"' in block and "Full Fact" in block
    assert page.index("published-factchecks") < page.index('<section class="verdict')

    md = site.get(f"/api/checks/{run['id']}/report.md").text
    assert "## Published fact-checks" in md and "**False**: 5G mobile networks spread the coronavirus." in md


def test_the_match_route(site):
    r = site.post("/api/factchecks/match", json={"text": "Do face masks poison you with carbon dioxide?"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["found"] is True and body["store_size"] == 16
    assert body["matches"][0]["claim"] == "Wearing a face mask causes carbon dioxide poisoning."
    assert 0.5 < body["matches"][0]["probability"] <= 1
    none = site.post("/api/factchecks/match", json={"text": "The Danube flows into the Black Sea.", "related": True})
    assert none.json()["found"] is False and none.json()["matches"] == []
    assert none.json()["summary"].startswith("no published fact-check found")
    assert len(none.json()["related"]) == 5
    empty = site.post("/api/factchecks/match", json={"text": "   "})
    assert empty.status_code == 400 and empty.json()["error"] == "invalid_text"


def test_a_server_without_a_store_says_how_to_get_one(server_factory):
    srv = server_factory(["--model", write_rules(server_factory.base / "rules2.json")], name="nostore")
    r = httpx.post(f"{srv.url}/api/factchecks/match", json={"text": "5G spreads the virus"}, timeout=30)
    assert r.status_code == 404
    assert r.json()["error"] == "no_factcheck_store" and "veracity factchecks import" in r.json()["detail"]


def test_mcp_finds_fact_checks_and_check_claim_shows_them_first(store, tmp_path):
    model = write_rules(tmp_path / "rules.json")
    env = {**server_env(tmp_path), "VERACITY_FACTCHECKS": str(store)}
    client = Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "veracity.cli", "mcp", "--model", model, "--db", str(tmp_path / "runs.sqlite")],
            env=env,
            cwd=str(tmp_path),
        )
    )

    async def main():
        async with client as c:
            found = await c.call_tool("find_factchecks", {"text": "vaccines give kids autism"})
            none = await c.call_tool("find_factchecks", {"text": "The Danube flows into the Black Sea."})
            checked = await c.call_tool("check_claim", {"claim": CLAIM})
            return found, none, checked

    found, none, checked = anyio.run(main)
    assert not found.is_error, found.content
    assert found.structured_content["found"] is True
    assert found.structured_content["matches"][0]["claim"] == "Vaccines cause autism in children."
    assert found.content[0].text.startswith("Published fact-check found: PolitiFact rated it 'False'.\n- False - ")
    assert none.structured_content["found"] is False
    assert none.content[0].text.startswith("No published fact-check found (searched 16 in the store).")
    out = checked.structured_content
    assert out["published_factchecks"][0]["publisher"] == "Full Fact"
    assert checked.content[0].text.startswith(
        'Published fact-check: False - Full Fact, 2020-04-03: "5G mobile networks spread the coronavirus."'
    )
