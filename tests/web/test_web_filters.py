"""Excluded domains, the claim-date cut-off and date parsing (veracity.web.filters)."""

from datetime import date, datetime

import pytest

from veracity.config import EXCLUDED_BOT_HOSTILE, EXCLUDED_FACT_CHECKERS
from veracity.web.base import SearchHit
from veracity.web.filters import (
    DEFAULT_EXCLUDED,
    excluded_by,
    filter_hits,
    last_day,
    published_after,
    to_iso_date,
)


def test_default_list_is_both_tables():
    assert DEFAULT_EXCLUDED == EXCLUDED_FACT_CHECKERS + EXCLUDED_BOT_HOSTILE
    assert len(EXCLUDED_FACT_CHECKERS) == 19 and len(EXCLUDED_BOT_HOSTILE) == 12
    assert "snopes.com" in EXCLUDED_FACT_CHECKERS and "irs.gov" in EXCLUDED_BOT_HOSTILE


@pytest.mark.parametrize(
    "url, pattern",
    [
        ("https://www.snopes.com/fact-check/bridge/", "snopes.com"),
        ("https://x.com/someone/status/1", "x.com"),
        ("https://mobile.x.com/someone", "x.com"),
        ("http://X.COM:8080/a", "x.com"),
        ("https://www.reuters.com/fact-check/abc", "reuters.com/fact-check"),
        ("https://www.reuters.com/Article/Fact-Check/abc-idUS", "reuters.com/article/fact-check"),
        ("https://apnews.com/apfactcheck/x", "apnews.com/APFactCheck"),
        ("https://www.thequint.com/news/webqoof/claim", "thequint.com/news/webqoof"),
        ("https://factcheck.afp.com/doc.afp.com.123", "factcheck.afp.com"),
        ("youtube.com/watch?v=1", "youtube.com"),  # no scheme
        ("https://snopes.com./x", "snopes.com"),  # trailing dot
    ],
)
def test_excluded(url, pattern):
    assert excluded_by(url, DEFAULT_EXCLUDED) == pattern


@pytest.mark.parametrize(
    "url",
    [
        "https://www.dropbox.com/s/1",  # ends with "x.com" but is not x.com
        "https://max.com/show",
        "https://box.com/",
        "https://www.reuters.com/world/europe/story",  # reuters, but not its fact-check section
        "https://apnews.com/article/bridge",
        "https://www.thequint.com/news/politics",
        "https://afp.com/en/news",  # factcheck.afp.com is a subdomain rule, not afp.com
        "https://notsnopes.com/",
        "https://snopes.com.evil.example/",
        "https://example.org/?ref=snopes.com",
        "not a url at all",
        "https://[::1/",  # unparseable
    ],
)
def test_not_excluded(url):
    assert excluded_by(url, DEFAULT_EXCLUDED) is None


def test_excluded_without_url_or_patterns():
    assert excluded_by(None, DEFAULT_EXCLUDED) is None
    assert excluded_by("", DEFAULT_EXCLUDED) is None
    assert excluded_by("https://snopes.com/x", []) is None
    assert excluded_by("https://www.example.org/a", ["www.example.org"]) == "www.example.org"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2024-03-05", "2024-03-05"),
        ("2024-03-05T10:11:12Z", "2024-03-05"),
        ("2024-03-05 10:11:12", "2024-03-05"),
        ("2020-05", "2020-05"),
        ("2020", "2020"),
        ("Mar 5, 2024", "2024-03-05"),
        ("March 5, 2024", "2024-03-05"),
        ("Sep. 30, 2021", "2021-09-30"),
        ("5 Mar 2024", "2024-03-05"),
        ("March 2024", "2024-03"),
        ("2 days ago", "2024-03-29"),
        ("1 week ago", "2024-03-24"),
        ("5 hours ago", "2024-03-31"),
        ("an hour ago", "2024-03-31"),
        ("1 month ago", "2024-02-29"),
        ("2 years ago", "2022-03-31"),
        ("yesterday", "2024-03-30"),
        (date(2020, 1, 2), "2020-01-02"),
        (datetime(2020, 1, 2, 23, 59), "2020-01-02"),
        ("2024-02-30", None),
        ("Foo 5, 2024", None),
        ("2024 was a good year", None),
        ("", None),
        (None, None),
    ],
)
def test_to_iso_date(value, expected):
    assert to_iso_date(value, today=date(2024, 3, 31)) == expected


def test_published_after_compares_shared_precision():
    assert published_after("2020-05-02", "2020-05-01")
    assert not published_after("2020-05-01", "2020-05-01")  # the same day is allowed
    assert not published_after("2020-04-30", "2020-05-01")
    assert not published_after("2020-05-20", "2020-05")  # same month: not certainly after
    assert published_after("2020-06", "2020-05-31")
    assert published_after("2021", "2020-12-31")
    assert published_after("2020-05-02T00:00:00", "2020-05-01T23:00:00")
    assert not published_after(None, "2020-05-01")
    assert not published_after("sometime", "2020-05-01")
    assert not published_after("2020-05-02", None)


def test_last_day():
    assert last_day("2020-02") == date(2020, 2, 29)
    assert last_day("2021") == date(2021, 12, 31)
    assert last_day("2020-05-03") == date(2020, 5, 3)
    assert last_day("never") is None


def hit(url, date=None, title="t"):
    return SearchHit(title=title, url=url, snippet="s", date=date)


def test_filter_hits_drops_and_explains():
    hits = [
        hit("https://www.snopes.com/a"),
        hit("https://news.example/1", "2020-04-01"),
        hit("https://youtube.com/watch?v=1"),
        hit("https://news.example/2", "2020-06-01"),
        hit("https://news.example/3"),
        hit(None, "2019-01-01"),
        hit("https://m.snopes.com/b"),
        hit("https://news.example/4", "2020-05-01"),
    ]
    kept, notes = filter_hits(hits, excluded=DEFAULT_EXCLUDED, before="2020-05-01")
    assert [h.url for h in kept] == ["https://news.example/1", "https://news.example/3", None, "https://news.example/4"]
    assert notes == [
        "dropped 3 results from excluded domains (snopes.com, youtube.com)",
        "dropped 1 result published after the claim date 2020-05-01",
    ]


def test_filter_hits_quiet_when_nothing_dropped():
    hits = [hit("https://news.example/1", "2030-01-01"), hit("https://news.example/2")]
    assert filter_hits(hits, excluded=DEFAULT_EXCLUDED, before=None) == (hits, [])
    assert filter_hits(hits, excluded=[], before="2020-01-01")[1] == [
        "dropped 1 result published after the claim date 2020-01-01"
    ]


@pytest.mark.parametrize(
    "url, pattern",
    [
        ("https://web.archive.org/web/20210310031315/https://www.politifact.com/", "politifact.com"),
        ("https://archive.ph/2021.01.01-000000/https://www.snopes.com/fact-check/x", "snopes.com"),
        ("https://web.archive.org/web/2021id_/http://reuters.com/fact-check/x", "reuters.com/fact-check"),
        ("https://web.archive.org/web/20210415044925/https://fred.stlouisfed.org/series/payems", None),
        ("https://archive.ph/abcde", None),
    ],
)
def test_archived_copies_are_judged_by_the_page_they_keep(url, pattern):
    assert excluded_by(url, DEFAULT_EXCLUDED) == pattern
