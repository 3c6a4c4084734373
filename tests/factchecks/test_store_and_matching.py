"""The fact-check store (imports that update instead of doubling, a failed import that loses nothing, damaged
folders named) and matching real posts against it with the shipped re-ranker, through the CLI as a user runs it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from factcheck_data import records, write_jsonl

from veracity.cli import main
from veracity.errors import UserError
from veracity.factchecks.matcher import Matcher, clean_post
from veracity.factchecks.record import FactCheck
from veracity.factchecks.stores import open_store


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fc") / "store"
    open_store(folder, create=True).import_records([FactCheck.from_dict(r) for r in records()])
    return folder


def test_reimport_updates_in_place_and_keeps_embeddings(store_dir, tmp_path):
    import shutil

    folder = tmp_path / "store"
    shutil.copytree(store_dir, folder)
    store = open_store(folder)
    before = np.array(store.vectors("claim"))
    rows = records()
    rows[0] = {**rows[0], "rating": "Pants on Fire!"}  # the publisher changed its rating
    rows.append({"claim": "Bananas are berries.", "rating": "True", "publisher": "Snopes", "url": "https://x.org/b"})
    summary = store.import_records([FactCheck.from_dict(r) for r in rows])
    assert (summary.added, summary.updated, summary.unchanged, summary.total) == (1, 1, len(rows) - 2, len(rows))
    again = open_store(folder)
    assert len(again) == len(rows)
    assert again.records[0].rating == "Pants on Fire!"
    assert np.allclose(again.vectors("claim")[: len(before)], before)  # same texts, same rows, nothing re-encoded
    assert again.records[-1].claim == "Bananas are berries."


def test_a_failed_import_leaves_the_store_as_it_was(store_dir, tmp_path, monkeypatch):
    import shutil

    from veracity.retrieval.bm25 import BM25Ranker

    folder = tmp_path / "store"
    shutil.copytree(store_dir, folder)
    store = open_store(folder)

    def disk_full(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(BM25Ranker, "save", disk_full)
    with pytest.raises(UserError, match="No space left on device"):
        store.import_records([FactCheck(claim="A new claim that never lands.")])
    kept = open_store(folder)
    assert [r.claim for r in kept.records] == [r["claim"] for r in records()]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".store.building")]


def test_missing_and_damaged_stores_are_named(tmp_path, store_dir):
    import shutil

    with pytest.raises(UserError, match="veracity factchecks import"):
        open_store(tmp_path / "none")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not a veracity fact-check store"):
        open_store(tmp_path / "other", create=True)
    folder = tmp_path / "store"
    shutil.copytree(store_dir, folder)
    lines = (folder / "factchecks.jsonl").read_text().splitlines()
    (folder / "factchecks.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(UserError, match="says 16 records but factchecks.jsonl has 15"):
        open_store(folder)


def test_post_noise_is_removed():
    post = (
        "Turn off your 5G router!! It spreads the virus \U0001f631\U0001f631 #StaySafe #COVID19 "
        "https://t.co/xYz pic.twitter.com/AbC123 \u2014 Jo Bloggs (@jo_bloggs) March 3, 2020"
    )
    assert clean_post(post) == (
        "Turn off your 5G router!! It spreads the virus Stay Safe COVID 19 \u2014 Jo Bloggs March 3, 2020"
    )
    assert (
        clean_post("RT @BBCBreaking: Fire at the cathedral &amp; nearby")
        == "BBC Breaking: Fire at the cathedral & nearby"
    )


@pytest.mark.parametrize(
    ("post", "expected", "shown"),
    [
        (
            "Turn off your 5G router!! It spreads the virus \U0001f631 #coronavirus pic.twitter.com/AbC123 "
            "\u2014 Jo (@jo_k) March 3, 2020",
            "5G mobile networks spread the coronavirus.",
            True,
        ),
        ("Masks are dangerous, they poison you with CO2", "Wearing a face mask causes carbon dioxide poisoning.", True),
        # a loose paraphrase ("maths", "as a kid") ranks its fact-check first, but below the threshold: related only
        ("Einstein was bad at maths as a kid", "Albert Einstein failed mathematics at school.", False),
    ],
)
def test_a_post_finds_the_fact_check_of_its_claim(store_dir, post, expected, shown):
    matcher = Matcher(open_store(store_dir))
    [best] = matcher.rank(post, 1)
    assert best.factcheck.claim == expected
    assert (best.probability >= matcher.threshold) is shown
    assert [m.factcheck.claim for m in matcher.match(post)][:1] == ([expected] if shown else [])


@pytest.mark.parametrize("claim", ["The Danube flows into the Black Sea.", "I love pizza on Fridays."])
def test_a_claim_nobody_checked_finds_none(store_dir, claim):
    matcher = Matcher(open_store(store_dir))
    assert matcher.match(claim) == []
    assert matcher.rank(claim, 1)[0].probability < 0.1


def test_cli_import_match_and_info(tmp_path, capsys):
    store = tmp_path / "fc"
    data = write_jsonl(tmp_path / "checks.jsonl")
    assert main(["factchecks", "import", str(data), "--store", str(store)]) == 0
    assert "16 fact-checks added, 0 updated, 0 already there; 16 in the store" in capsys.readouterr().out
    assert main(["factchecks", "import", str(data), "--store", str(store)]) == 0
    assert "0 fact-checks added, 0 updated, 16 already there" in capsys.readouterr().out

    assert (
        main(["factchecks", "match", "Drinking hot water kills the coronavirus, my aunt says", "--store", str(store)])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("Published fact-checks: published fact-check found: AFP Fact Check rated it 'False'")
    assert 'False - AFP Fact Check, 2020-03-12: "Drinking hot water every 15 minutes kills the coronavirus."' in out
    assert "https://example.org/fact-check/1" in out

    assert main(["factchecks", "match", "The Danube flows into the Black Sea.", "--store", str(store), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["found"] is False and found["matches"] == []
    assert found["summary"] == "no published fact-check found (searched 16 in the store)"

    assert main(["factchecks", "info", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "16 fact-checks in" in out and "Snopes" in out


def test_cli_bad_record_stops_the_import_and_loses_nothing(tmp_path, capsys):
    store = tmp_path / "fc"
    assert main(["factchecks", "import", str(write_jsonl(tmp_path / "good.jsonl")), "--store", str(store)]) == 0
    capsys.readouterr()
    bad = tmp_path / "feed.jsonl"
    bad.write_text(
        json.dumps({"claim": "Fine claim.", "rating": "True"}) + "\n" + json.dumps({"rating": "False"}) + "\n"
    )
    assert main(["factchecks", "import", str(bad), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "1 record(s) could not be read; nothing was imported" in err
    assert "feed.jsonl, line 2: not a fact-check" in err
    assert len(open_store(store)) == 16
    assert main(["factchecks", "import", str(bad), "--store", str(store), "--skip-bad"]) == 0
    captured = capsys.readouterr()
    assert "1 fact-check added" in captured.out and "skipped: feed.jsonl, line 2" in captured.err
    assert len(open_store(store)) == 17


def test_cli_match_without_a_store_says_what_to_do(capsys):
    assert main(["factchecks", "match", "Anything at all."]) == 2
    assert "import published fact-checks first (veracity factchecks import FILE)" in capsys.readouterr().err


def test_proxy_units_carry_their_published_fact_checks_first(store_dir):
    from veracity.config import load_config
    from veracity.proxy.checking import add_factchecks, result_view

    answer = "5G networks spread the coronavirus. The Danube flows into the Black Sea."
    steps = [
        {"stage": "leaf_sentence", "index": i, "sentence": s, "query": s, "evidence": [], "rating": "Supported",
         "supported": True, "confidence": 0.9, "reasoning": ""}
        for i, s in enumerate(["5G networks spread the coronavirus.", "The Danube flows into the Black Sea."], 1)
    ] + [{"stage": "leaf_score", "score": 1.0, "checked": 2, "total_sentences": 2}]  # fmt: skip
    view = result_view(steps, answer)
    config = load_config(overrides={"factchecks.store": str(store_dir)})
    add_factchecks(view["units"], config)
    first, second = view["units"]
    assert list(first)[:4] == ["index", "text", "span", "published_factchecks"]
    assert first["published_factchecks"][0]["claim"] == "5G mobile networks spread the coronavirus."
    assert first["published_factchecks"][0]["rating"] == "False"
    assert second["published_factchecks"] == []
    off = result_view(steps, answer)
    add_factchecks(off["units"], load_config(overrides={"factchecks.store": "off"}))
    assert "published_factchecks" not in off["units"][0]
