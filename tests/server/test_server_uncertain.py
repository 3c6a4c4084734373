"""An uncertain verdict reads as uncertain everywhere the server shows it, and what a run that read no source cannot
offer: real HTTP requests against `veracity serve` (a subprocess on 127.0.0.1) with the scripted QACheck model and no
index, so that every verdict rests on the model's memory (uncertain, leaning the model's label).

- the run page's badge and the history's: "Uncertain, leaning Supported" in the uncertain colour, never a green
  "Supported" with the uncertain note below it; the API's list and detail lead with it, the label kept as it was;
  the reports say it first;
- a text check whose claims were all uncertain: its factuality is "not determined", never "0%";
- such a run read no evidence: the page offers no Re-check and says why, the API answers 409 saying the same.
"""

from __future__ import annotations

import re

import httpx
import pytest
from conftest import write_rules
from test_server_api import finished, wait_for

CLAIM = "The Orrin Bridge stands in Tallinn."
TEXT = "The Orrin Bridge stands in Tallinn. Marie Curie was born in Warsaw. The Danube flows through Vienna."
UNCERTAIN = "Uncertain, leaning Supported"


@pytest.fixture(scope="module")
def site(server_factory):
    srv = server_factory(
        ["--model", write_rules(server_factory.base / "rules.json"), "--rate-limit", "0"], name="uncertain"
    )
    with httpx.Client(base_url=srv.url, timeout=60) as client:
        yield client


def done(client: httpx.Client, path: str, body: dict) -> dict:
    r = client.post(path, json=body)
    assert r.status_code == 202, r.text
    run = wait_for(client, r.json()["id"], finished, timeout=120)
    assert run["status"] == "done", run
    return run


def badge(html: str, where: str) -> tuple[str, str]:
    """(class, text) of the first badge inside the element whose markup starts with `where`."""
    part = html[html.index(where) :]
    m = re.search(r'<span class="badge ([^"]*)">([^<]*)</span>', part)
    assert m, part[:500]
    return m.group(1), m.group(2)


def test_a_verdict_resting_on_memory_reads_uncertain_on_its_page_in_the_history_the_api_and_the_reports(site):
    run = done(site, "/api/checks", {"claim": CLAIM, "pipeline": "qacheck"})
    v = run["verdict"]
    # the API: the label kept for the clients that read it, the uncertainty and its wording first
    assert v["label"] == "Supported" and v["basis"] == "memory"
    assert list(v)[:2] == ["uncertain", "shown_as"] and v["uncertain"] is True and v["shown_as"] == UNCERTAIN
    assert run["shown_as"] == UNCERTAIN and run["uncertain"] is True and run["label"] == "Supported"
    listed = next(r for r in site.get("/api/checks").json()["items"] if r["id"] == run["id"])
    assert (listed["shown_as"], listed["uncertain"], listed["label"]) == (UNCERTAIN, True, "Supported")

    # the run page: one badge, in the uncertain colour, saying it; no green "Supported" anywhere in the verdict
    page = site.get(f"/checks/{run['id']}").text
    start = page.index('<section class="verdict')
    verdict = page[start : page.index("</section>", start)]
    assert '<section class="verdict label-uncertain"' in verdict and "label-supported" not in verdict
    assert badge(verdict, '<p class="verdict-label">') == ("big label-uncertain", UNCERTAIN)
    assert "Uncertain because it rests on the model" in verdict and "memory only" in verdict
    # the history ("Past checks"): the same words, the same colour
    history = site.get("/partials/history").text
    entry = history[history.index(f'data-run-id="{run["id"]}"') :]
    assert badge(entry, f'data-run-id="{run["id"]}"') == ("label-uncertain", UNCERTAIN)

    # the reports: the verdict line and the prediction say it first
    md = site.get(f"/api/checks/{run['id']}/report.md").text
    assert f"- **Verdict:** {UNCERTAIN}" in md and "**Verdict:** Supported" not in md
    assert f"## Prediction with rationale\n\n**{UNCERTAIN}**" in md
    doc = site.get(f"/api/checks/{run['id']}/report.json").json()
    assert list(doc["verdict"])[:2] == ["uncertain", "shown_as"] and doc["verdict"]["shown_as"] == UNCERTAIN


def test_a_run_that_read_no_evidence_is_not_offered_a_recheck_and_says_why(site):
    run = done(site, "/api/checks", {"claim": CLAIM, "pipeline": "qacheck"})
    page = site.get(f"/checks/{run['id']}").text
    assert 'id="recheck-run"' not in page and "Re-check the evidence" not in page
    m = re.search(r'<p class="hint no-recheck" id="no-recheck">([^<]*)</p>', page)
    assert m and "nothing to re-check" in m.group(1) and "memory" in m.group(1), page[-3000:]
    r = site.post(f"/api/checks/{run['id']}/recheck")
    assert r.status_code == 409 and r.json()["error"] == "nothing_to_recheck", r.text
    assert "nothing to re-check" in r.json()["detail"] and "memory" in r.json()["detail"]
    # the form posted anyway (a page left open): the run's page again, saying so, and no recheck stored
    r = site.post(f"/checks/{run['id']}/recheck", headers={"Origin": str(site.base_url).rstrip("/")})
    assert r.status_code == 409 and "Could not re-check" in r.text and "nothing to re-check" in r.text
    assert not [x for x in site.get("/api/checks").json()["items"] if x["pipeline"] == "recheck"]


def test_a_text_whose_claims_were_all_uncertain_has_no_factuality_not_zero(site):
    run = done(site, "/api/texts", {"text": TEXT, "pipeline": "qacheck", "extract": "rules"})
    summary = run["text"]["summary"]
    assert summary["checked"] == summary["uncertain"] == 3 and summary["decided"] == 0
    assert summary["factuality"] is None
    assert run["label"] == "Factuality not determined (0 of 3 claims decided)"
    page = site.get(f"/checks/{run['id']}").text
    assert "Factuality not determined (0 of 3 claims decided)" in page and "0%" not in page
    assert "not determined: none of the 3 checked claims was decided (3 uncertain)" in page
    # each claim reads as every uncertain verdict does
    assert page.count(f'<span class="badge o-uncertain">{UNCERTAIN}</span>') == 3
    history = site.get("/partials/history").text
    assert badge(history, f'data-run-id="{run["id"]}"')[1] == "Factuality not determined (0 of 3 claims decided)"
    md = site.get(f"/api/checks/{run['id']}/report.md").text
    assert "| Factuality (supported / decided) | not determined" in md and "0%" not in md
