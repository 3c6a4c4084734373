"""A check shows the published fact-checks of its claim first, in the terminal, the JSON and the report, once the
user imported some; a setting lets a clear match decide the verdict; evaluation runs never consult the store."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import veracity_cmd
from factcheck_data import write_jsonl
from stub_server import QACHECK_RULES

CLAIM = "Drinking hot water kills the coronavirus, a doctor said on Facebook."


def veracity(*args, env, timeout=180):
    return subprocess.run(veracity_cmd() + list(args), capture_output=True, env=env, timeout=timeout)


@pytest.fixture
def env(cli_env, tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(QACHECK_RULES))
    r = veracity("factchecks", "import", str(write_jsonl(tmp_path / "checks.jsonl")), env=cli_env)
    assert r.returncode == 0, r.stderr.decode()
    assert "16 fact-checks added" in r.stdout.decode()
    return {**cli_env, "VERACITY_MODEL": f"scripted:{rules}"}


def test_check_shows_the_published_fact_check_before_its_verdict(env, tmp_path):
    report = tmp_path / "report.md"
    r = veracity("check", CLAIM, "--report", str(report), env=env)
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    line = "Published fact-checks: published fact-check found: AFP Fact Check rated it 'False'"
    assert line in out
    assert 'False - AFP Fact Check, 2020-03-12: "Drinking hot water every 15 minutes kills the coronavirus."' in out
    assert out.index(line) < out.index("[1] Q:") < out.index("Verdict:")
    md = report.read_text()
    assert "## Published fact-checks" in md
    assert (
        "- **False**: Drinking hot water every 15 minutes kills the coronavirus. ([AFP Fact Check, 2020-03-12](" in md
    )
    assert md.index("## Published fact-checks") < md.index("## Prediction with rationale")

    r = veracity("check", CLAIM, "--json", env=env)
    doc = json.loads(r.stdout)
    assert list(doc)[list(doc).index("factchecks") + 1] == "verdict"  # shown before the verdict
    assert doc["factchecks"]["found"] is True
    assert doc["factchecks"]["matches"][0]["publisher"] == "AFP Fact Check"
    assert doc["trace"][1]["stage"] == "published_factchecks"
    assert doc["verdict"]["label"] == "Supported"  # the pipeline's own verdict: a match informs nothing by default


def test_a_claim_nobody_checked_says_so(env):
    r = veracity("check", "The Orrin Bridge stands in Tallinn.", env=env)
    assert r.returncode == 0, r.stderr.decode()
    assert "Published fact-checks: no published fact-check found (searched 16 in the store)" in r.stdout.decode()


def test_inform_lets_a_clear_rating_decide_and_keeps_the_pipelines_verdict(env, tmp_path):
    (tmp_path / "veracity.toml").write_text("[factchecks]\ninform = true\n")
    r = veracity("check", CLAIM, "--json", "--config", str(tmp_path / "veracity.toml"), env=env)
    doc = json.loads(r.stdout)
    v = doc["verdict"]
    assert v["label"] == "Refuted" and v["uncertain"] is False
    assert v["rationale"].startswith("AFP Fact Check published a fact-check of this claim on 2020-03-12, rating")
    assert "'False'" in v["rationale"]
    assert v["notes"][0].startswith("the pipeline's own verdict, before the published fact-check decided it: Supported")
    assert v["confidence"] == pytest.approx(doc["factchecks"]["matches"][0]["probability"], abs=1e-3)


def test_the_store_can_be_turned_off(env, tmp_path):
    (tmp_path / "off.toml").write_text('[factchecks]\nstore = "off"\n')
    r = veracity("check", CLAIM, "--json", "--config", str(tmp_path / "off.toml"), env=env)
    doc = json.loads(r.stdout)
    assert "factchecks" not in doc
    assert all(s["stage"] != "published_factchecks" for s in doc["trace"])


def test_check_text_shows_each_claims_published_fact_checks(env, tmp_path):
    text = tmp_path / "post.txt"
    text.write_text("5G masts spread the coronavirus, experts warn. The Orrin Bridge stands in Tallinn.")
    doc = tmp_path / "doc.txt"
    doc.write_text("The Orrin Bridge is a stone bridge in Tallinn, Estonia.")
    report = tmp_path / "text.md"
    r = veracity("check-text", str(text), "--evidence-file", str(doc), "--pipeline", "lexical", "--extract", "rules",
                 "--no-progress", "--report", str(report), env=env)  # fmt: skip
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    line = '[1] published fact-check: False - Full Fact, 2020-04-03: "5G mobile networks spread the coronavirus."'
    assert line in out
    assert out.index(line) < out.index("[1] ", out.index(line) + len(line))  # before the claim's own verdict
    assert "[2] published fact-check" not in out
    assert "published fact-check: **False**, [Full Fact, 2020-04-03](https://example.org/fact-check/0)" in (
        report.read_text()
    )
    r = veracity("check-text", str(text), "--evidence-file", str(doc), "--pipeline", "lexical", "--extract", "rules",
                 "--json", env=env)  # fmt: skip
    claims = json.loads(r.stdout)["claims"]
    assert claims[0]["factchecks"][0]["publisher"] == "Full Fact" and "factchecks" not in claims[1]


def test_a_damaged_store_is_said_and_the_check_goes_on(env, tmp_path):
    store = tmp_path / "xdg-data" / "veracity" / "factchecks"
    lines = (store / "factchecks.jsonl").read_text().splitlines()
    (store / "factchecks.jsonl").write_text("\n".join(lines[:3]) + "\n")
    r = veracity("check", CLAIM, env=env)
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "the fact-check store cannot be read: corrupt fact-check store" in out
    assert "says 16 records but factchecks.jsonl has 3" in out and "\nVerdict: " in out
