"""Each import format read from files written in its documented shape (schema.org ClaimReview as pages embed it and
feeds collect it, the Google Fact Check Tools API's claims:search response, CSV, CheckThat! vclaims), and the
errors a malformed record gets: the file and the record named."""

from __future__ import annotations

import json

import pytest

from veracity.errors import UserError
from veracity.factchecks.formats import read_files
from veracity.factchecks.record import iso_date

# schema.org ClaimReview as Google's structured-data guide shows it (one review of one claim)
CLAIM_REVIEW = {
    "@context": "https://schema.org",
    "@type": "ClaimReview",
    "url": "https://example.com/news/science/worldisflat.html",
    "claimReviewed": "The world is flat",
    "itemReviewed": {
        "@type": "Claim",
        "author": {
            "@type": "Organization",
            "name": "Square World Society",
            "sameAs": "https://example.flatworlders.com",
        },
        "datePublished": "2016-06-20",
        "appearance": {
            "@type": "OpinionNewsArticle",
            "url": "https://example.flatworlders.com/we-know-that-the-world-is-flat",
            "headline": "We Know The World Is Flat",
        },
    },
    "author": {"@type": "Organization", "name": "Example.com science watch"},
    "reviewRating": {
        "@type": "Rating",
        "ratingValue": "1",
        "bestRating": "5",
        "worstRating": "1",
        "alternateName": "False",
    },
    "datePublished": "2016-06-22",
}

GOOGLE_RESPONSE = {
    "claims": [
        {
            "text": "5G networks spread the coronavirus",
            "claimant": "Social media posts",
            "claimDate": "2020-03-30T00:00:00Z",
            "claimReview": [
                {
                    "publisher": {"name": "Full Fact", "site": "fullfact.org"},
                    "url": "https://fullfact.org/health/5G-not-accelerating-coronavirus/",
                    "title": "5G is not accelerating the spread of the new coronavirus",
                    "reviewDate": "2020-03-31T00:00:00Z",
                    "textualRating": "Incorrect",
                    "languageCode": "en",
                },
                {
                    "publisher": {"site": "afp.com"},
                    "url": "https://factcheck.afp.com/5g-covid",
                    "title": "No link between 5G and COVID-19",
                    "reviewDate": "2020-04-02T10:00:00Z",
                    "textualRating": "False",
                    "languageCode": "en",
                },
            ],
        }
    ],
    "nextPageToken": "CAo",
}


def test_claim_review_object_page_feed_and_lines(tmp_path):
    (tmp_path / "review.json").write_text(json.dumps(CLAIM_REVIEW))
    page = (
        "<!doctype html><html><head><title>Fact check</title>"
        '<script type="application/ld+json">' + json.dumps(CLAIM_REVIEW) + "</script>"
        '<script type="application/ld+json">{"@context": "https://schema.org", "@type": "BreadcrumbList"}</script>'
        "</head><body>...</body></html>"
    )
    (tmp_path / "page.html").write_text(page)
    other = {**CLAIM_REVIEW, "url": "https://example.com/moon", "claimReviewed": "The Moon is made of cheese"}
    feed = {
        "@context": "https://schema.org",
        "@type": "DataFeed",
        "dataFeedElement": [
            {"@type": "DataFeedItem", "item": [CLAIM_REVIEW]},
            {"@type": "DataFeedItem", "item": [other]},
        ],
    }
    (tmp_path / "feed.json").write_text(json.dumps(feed))
    (tmp_path / "graph.jsonld").write_text(json.dumps({"@graph": [CLAIM_REVIEW, other]}))
    records, problems = read_files(
        [tmp_path / "review.json", tmp_path / "page.html", tmp_path / "feed.json", tmp_path / "graph.jsonld"]
    )
    assert problems == []
    assert len(records) == 6
    first = records[0]
    assert first.claim == "The world is flat"
    assert first.rating == "False"
    assert first.publisher == "Example.com science watch"
    assert first.date == "2016-06-22"
    assert first.claimant == "Square World Society"
    assert first.appeared == "https://example.flatworlders.com/we-know-that-the-world-is-flat"
    assert first.format == "claimreview"
    assert records[1].key == first.key  # the page holds the same review: one fact-check
    assert records[3].claim == "The Moon is made of cheese"


def test_rating_without_words_reads_as_value_of_best():
    from veracity.factchecks.formats import read_json_value

    review = {**CLAIM_REVIEW, "reviewRating": {"@type": "Rating", "ratingValue": 2, "bestRating": 5}}
    [record] = list(read_json_value("x", review))
    assert record.rating == "2/5"


def test_google_response_gives_one_record_per_review(tmp_path):
    (tmp_path / "search.json").write_text(json.dumps(GOOGLE_RESPONSE))
    records, problems = read_files([tmp_path / "search.json"])
    assert problems == []
    assert [(r.publisher, r.rating, r.date) for r in records] == [
        ("Full Fact", "Incorrect", "2020-03-31"),
        ("afp.com", "False", "2020-04-02"),
    ]
    assert {r.claim for r in records} == {"5G networks spread the coronavirus"}
    assert records[0].claimant == "Social media posts"
    assert records[0].title.startswith("5G is not accelerating")
    assert records[0].key != records[1].key


def test_csv_with_header_aliases_and_quoted_commas(tmp_path):
    (tmp_path / "checks.csv").write_text(
        "Claim Reviewed,Textual Rating,Publisher,URL,Review Date,Claimant\n"
        '"Drinking hot water kills the virus, doctors say",False,PolitiFact,https://p.example/1,"March 3, 2020",'
        "Facebook post\n"
        "The Eiffel Tower grows in summer,True,Snopes,https://s.example/2,2021-07-01,\n"
    )
    records, problems = read_files([tmp_path / "checks.csv"])
    assert problems == []
    assert records[0].claim == "Drinking hot water kills the virus, doctors say"
    assert (records[0].rating, records[0].publisher, records[0].date) == ("False", "PolitiFact", "2020-03-03")
    assert records[1].rating == "True" and records[1].claimant == ""


def test_checkthat_vclaims_lines_and_folder(tmp_path):
    rows = [
        {
            "id": "vclaim-sno-a",
            "title": "Did a Shark Swim on a Highway?",
            "subtitle": "A photo went viral.",
            "vclaim": "A shark swam on a flooded highway in Houston.",
            "date": "28 August 2017",
            "author": "Dan Evon",
        },
        {"vclaim_id": "vclaim-sno-b", "title": "Lottery", "subtitle": "", "vclaim": "A man won the lottery twice."},
    ]
    (tmp_path / "v.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    folder = tmp_path / "vclaims"
    folder.mkdir()
    for r in rows:
        (folder / f"{r.get('id') or r['vclaim_id']}.json").write_text(json.dumps(r))
    records, problems = read_files([tmp_path / "v.jsonl"], publisher="Snopes")
    assert problems == []
    assert [r.key for r in records] == ["vclaim-sno-a", "vclaim-sno-b"]
    assert records[0].date == "2017-08-28" and records[0].publisher == "Snopes"
    assert records[0].match_text.startswith("Did a Shark Swim on a Highway?. A photo went viral.")
    from_folder, _ = read_files([folder])
    assert sorted(r.key for r in from_folder) == ["vclaim-sno-a", "vclaim-sno-b"]


def test_malformed_records_are_named(tmp_path):
    bad_review = {k: v for k, v in CLAIM_REVIEW.items() if k != "claimReviewed"}
    bad_review["itemReviewed"] = {"@type": "Claim"}
    (tmp_path / "reviews.json").write_text(json.dumps([CLAIM_REVIEW, bad_review]))
    (tmp_path / "lines.jsonl").write_text(json.dumps({"vclaim": "ok"}) + "\n{not json\n" + json.dumps({"vclaim": ""}))
    (tmp_path / "bad.csv").write_text("claim,rating\nfine,False\n,True\na,b,c\n")
    (tmp_path / "nothing.csv").write_text("headline,rating\nx,y\n")
    (tmp_path / "google.json").write_text(json.dumps({"claims": [{"text": "no reviews here"}]}))
    (tmp_path / "latin1.json").write_bytes('{"vclaim": "caf\xe9"}'.encode("latin-1"))
    records, problems = read_files([tmp_path])
    assert [r.claim for r in records] == ["fine", "ok", "The world is flat"]
    joined = "\n".join(problems)
    assert "reviews.json, record 2: it has no claimReviewed" in joined
    assert "lines.jsonl, line 2: not JSON" in joined
    assert "lines.jsonl, line 3: its vclaim is empty" in joined
    assert "bad.csv, line 3: the claim is empty" in joined
    assert "bad.csv, line 4: 3 fields where the header has 2" in joined
    assert "nothing.csv: the CSV header (headline, rating) has no claim column" in joined
    assert "google.json, record 1: the claim has no claimReview" in joined
    assert "latin1.json: not UTF-8 text" in joined


def test_wrong_format_named_and_missing_paths(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(CLAIM_REVIEW))
    records, problems = read_files([tmp_path / "r.json"], "google")
    assert records == [] and problems == ["r.json, record 1: a claimreview record, not google"]
    with pytest.raises(UserError, match="no such file"):
        read_files([tmp_path / "missing.json"])
    with pytest.raises(UserError, match="unknown fact-check format"):
        read_files([tmp_path / "r.json"], "rss")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no fact-check files"):
        read_files([tmp_path / "empty"])


@pytest.mark.parametrize(
    ("given", "iso"),
    [
        ("2020-01-14T10:00:00Z", "2020-01-14"),
        ("26 May 2015", "2015-05-26"),
        ("May 26, 2015", "2015-05-26"),
        ("sometime in 2019", "sometime in 2019"),
        ("", ""),
    ],
)
def test_dates(given, iso):
    assert iso_date(given) == iso
