"""The wikipedia search provider and retriever against a local server replaying MediaWiki's Action API (search,
then plain-text extracts with canonical URLs, in formatversion=2 as the API documents it): what is asked, how
politely (User-Agent, maxlag, pacing, Retry-After), what fails how, the evidence it gives, a real check over it and
`veracity recheck` asking the API again."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time

import pytest
from web_stub import Reply, WebStub

from veracity import __version__
from veracity.check import run_check
from veracity.cli import main
from veracity.config import DefameConfig, load_config
from veracity.errors import ConfigError, UserError
from veracity.llm.model import Model
from veracity.llm.scripted import ScriptedBackend
from veracity.registry import get_pipeline
from veracity.tools.base import ToolCall
from veracity.tools.web_search import WebSearch
from veracity.types import Claim
from veracity.web import wikipedia as wiki_mod
from veracity.web.base import NotSupported, SearchError
from veracity.web.scrape import Scraper
from veracity.web.search import make_provider
from veracity.web.wikipedia import WikipediaSearch
from veracity.web.wikipedia_retriever import WikipediaRetriever, wikipedia_retriever

API_PATH = "/{lang}/w/api.php"

EVEREST_INTRO = (
    "Mount Everest is Earth's highest mountain above sea level, located in the Mahalangur Himal "
    "sub-range of the Himalayas."
)
EVEREST_BODY = (
    "Its elevation of 8,849 metres was most recently established in 2020 by the Chinese and Nepali "
    "authorities.\n\nThe first recorded ascent was in 1953, by Tenzing Norgay and Edmund Hillary, who "
    "reached the summit on 29 May after a long expedition from the south."
)
K2_INTRO = "K2 is the second-highest mountain on Earth, after Mount Everest, in the Karakoram range."
K2_BODY = "It was first climbed in 1954 by an Italian expedition led by Ardito Desio."
NILE_INTRO = "The Nile is a major river in northeastern Africa."
NILE_BODY = "It flows into the Mediterranean Sea near Alexandria."


def whole(intro: str, body: str, section: str = "History") -> str:
    """A whole article's plain-text extract as TextExtracts writes it (sections as == wiki headings ==)."""
    return f"{intro}\n\n\n== {section} ==\n{body}"


class FakeWiki:
    """One language edition of Wikipedia's api.php on the stub: list=search and prop=extracts|info (formatversion=2),
    with the API's limits (whole-article extracts one page at a time, the rest under `continue`). `queue` holds
    replies sent before the normal ones; `times` when each request arrived."""

    def __init__(self, stub: WebStub, language: str = "en") -> None:
        self.language = language
        self.pages: dict[int, tuple[str, str, str]] = {
            21: ("Mount Everest", EVEREST_INTRO, EVEREST_BODY),
            22: ("K2", K2_INTRO, K2_BODY),
            30: ("Nile", NILE_INTRO, NILE_BODY),
        }
        self.queue: list[Reply] = []
        self.times: list[float] = []
        self.in_flight = self.most_in_flight = 0
        self.delay = 0.0
        self._lock = threading.Lock()
        stub.routes[API_PATH.replace("{lang}", language)] = self

    def url(self, pageid: int) -> str:
        return f"https://{self.language}.wikipedia.org/wiki/{self.pages[pageid][0].replace(' ', '_')}"

    def text(self, pageid: int, intro: bool) -> str:
        title, first, body = self.pages[pageid]
        return first if intro else whole(first, body)

    def __call__(self, request) -> Reply:
        with self._lock:
            self.times.append(time.monotonic())
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            if self.queue:
                return self.queue.pop(0)
            q = request.query
            if q.get("list") == "search":
                return Reply(body=self.search(q))
            if "extracts" in q.get("prop", "").split("|"):
                return Reply(body=self.extracts(q))
            return Reply(
                body={
                    "error": {
                        "code": "badvalue",
                        "info": "Unrecognized parameters.",
                        "docref": "See https://en.wikipedia.org/w/api.php for API usage.",
                    }
                }
            )
        finally:
            with self._lock:
                self.in_flight -= 1

    def search(self, q: dict) -> dict:
        words = set(re.findall(r"\w+", q["srsearch"].lower()))
        scored = []
        for pageid, (title, first, body) in self.pages.items():
            found = words & set(re.findall(r"\w+", f"{title} {first} {body}".lower()))
            if found:
                scored.append((-len(found), pageid, found))
        scored.sort()
        results = []
        for _, pageid, found in scored[: int(q.get("srlimit", 10))]:
            snippet = self.pages[pageid][1][:80]
            for w in found:
                snippet = re.sub(
                    rf"\b({re.escape(w)})\b", r'<span class="searchmatch">\1</span>', snippet, count=1, flags=re.I
                )
            results.append(
                {"ns": 0, "title": self.pages[pageid][0], "pageid": pageid, "snippet": snippet.replace("'", "&#039;")}
            )
        return {
            "batchcomplete": True,
            "continue": {"sroffset": len(results), "continue": "-||"},
            "query": {"searchinfo": {"totalhits": len(scored)}, "search": results},
        }

    def extracts(self, q: dict) -> dict:
        ids = [int(x) for x in q["pageids"].split("|")]
        intro = q.get("exintro") in ("1", "true", "")
        start = int(q.get("excontinue", 0))
        out: dict = {"batchcomplete": True}
        pages = []
        for n, pageid in enumerate(sorted(ids)):
            if pageid not in self.pages:
                pages.append({"pageid": pageid, "missing": True})
                continue
            page = {
                "pageid": pageid,
                "ns": 0,
                "title": self.pages[pageid][0],
                "contentmodel": "wikitext",
                "pagelanguage": self.language,
                "pagelanguagehtmlcode": self.language,
                "pagelanguagedir": "ltr",
                "touched": "2024-05-01T10:00:00Z",
                "lastrevid": 1000 + pageid,
                "length": 5000,
                "fullurl": self.url(pageid),
                "editurl": self.url(pageid).replace("/wiki/", "/w/index.php?title=") + "&action=edit",
                "canonicalurl": self.url(pageid),
            }
            if intro or n == start:  # whole articles: one extract per request
                page["extract"] = self.text(pageid, intro)
            pages.append(page)
        if not intro and len(ids) - start > 1:
            out = {
                "continue": {"excontinue": start + 1, "continue": "||info"},
                "warnings": {
                    "extracts": {
                        "warnings": '"exlimit" was too large for a whole article extracts request, lowered to 1.'
                    }
                },
            }
        out["query"] = {"pages": pages}
        return out


@pytest.fixture
def web(monkeypatch):
    monkeypatch.setattr(wiki_mod, "RETRY_PAUSE_S", 0.01)
    stub = WebStub()
    yield stub
    stub.close()


@pytest.fixture
def fake(web):
    return FakeWiki(web)


def wiki(web, language="en", **kw) -> WikipediaSearch:
    kw.setdefault("timeout", 5)
    kw.setdefault("min_interval", 0)
    return WikipediaSearch(language, base_url=web.url(API_PATH), **kw)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- the requests


def test_search_then_one_batched_extracts_request_in_the_language_edition(web):
    de = FakeWiki(web, "de")
    hits = wiki(web, "de").web("Mount Everest Himalayas", 3)
    search, extracts = web.requests
    assert search.path == extracts.path == "/de/w/api.php"  # the edition's endpoint
    assert search.method == "GET"
    assert search.query == {
        "action": "query",
        "list": "search",
        "srsearch": "Mount Everest Himalayas",
        "srlimit": "3",
        "srnamespace": "0",
        "srprop": "snippet",
        "format": "json",
        "formatversion": "2",
        "maxlag": "5",
    }
    assert extracts.query["prop"] == "extracts|info" and extracts.query["inprop"] == "url"
    assert extracts.query["exintro"] == "1" and extracts.query["explaintext"] == "1"
    assert extracts.query["pageids"] == "21|22" and extracts.query["maxlag"] == "5"  # both articles, one request
    for request in web.requests:
        agent = request.headers["user-agent"]
        assert agent.startswith(f"veracity/{__version__} (") and "fact-checking" in agent and "httpx/" in agent
    assert [h.title for h in hits] == ["Mount Everest", "K2"]  # the API's order
    assert [h.url for h in hits] == [de.url(21), de.url(22)]
    assert hits[0].text == EVEREST_INTRO  # the extract itself: nothing needs scraping
    assert hits[0].snippet.startswith("Mount Everest is Earth's highest") and "<span" not in hits[0].snippet
    assert hits[0].origin.source_sha256 == sha(EVEREST_INTRO)
    assert (hits[0].origin.quote_start, hits[0].origin.quote_end) == (0, len(EVEREST_INTRO))
    assert hits[0].origin.found_by["language"] == "de" and hits[0].origin.found_by["extract"] == "intro"


def test_the_default_endpoint_and_the_language_codes(monkeypatch):
    assert WikipediaSearch().api_url == "https://en.wikipedia.org/w/api.php"
    assert WikipediaSearch("zh-min-nan").api_url == "https://zh-min-nan.wikipedia.org/w/api.php"
    assert WikipediaSearch(" DE ").language == "de"
    assert WikipediaSearch("simple").api_url == "https://simple.wikipedia.org/w/api.php"
    assert WikipediaSearch("fr", base_url="http://127.0.0.1:9/w/api.php").api_url == "http://127.0.0.1:9/w/api.php"
    for bad in ("english", "e", "en_US", "../en", "en.evil.example/x?", ""):
        with pytest.raises(UserError, match="is not a Wikipedia language code") as e:
            WikipediaSearch(bad)
        assert "\n" not in str(e.value)
    with pytest.raises(UserError, match="not an http\\(s\\) URL"):
        WikipediaSearch("en", base_url="ftp://example.org/api.php")
    monkeypatch.setenv("VERACITY_CONTACT", "factchecks@example.org")
    assert "(open-source fact-checking toolkit; factchecks@example.org)" in WikipediaSearch().user_agent


def test_configuration_and_the_flag(tmp_path):
    config = load_config(overrides={"defame.search": "wikipedia", "defame.wikipedia_language": "fr"}, env={})
    assert config.defame.search == "wikipedia" and config.defame.wikipedia_language == "fr"
    assert config.defame.wikipedia_url is None
    with pytest.raises(ConfigError, match="defame.wikipedia_language: 'French' is not a Wikipedia language code"):
        load_config(overrides={"defame.wikipedia_language": "French"}, env={})
    with pytest.raises(ConfigError, match="defame.wikipedia_url: .* is not an http"):
        load_config(overrides={"defame.wikipedia_url": "file:///etc/passwd"}, env={})
    import argparse

    from veracity.cli.options import config_from, pipeline_options

    parser = argparse.ArgumentParser(parents=[pipeline_options()])
    parser.add_argument("--config")
    args = parser.parse_args(["--search", "wikipedia", "--wikipedia-language", "simple"])
    config = config_from(args)
    assert (config.defame.search, config.defame.wikipedia_language) == ("wikipedia", "simple")


# --------------------------------------------------------------------------- politeness and failures


def test_429_with_retry_after_is_waited_for_then_succeeds(web, fake):
    fake.queue = [Reply(429, "Too many requests", headers={"Retry-After": "1"})]
    found = wiki(web, backoff=0.05).find("Nile Africa", 3)  # the wait is the server's, not the backoff
    assert [m.title for m in found] == ["Nile"]
    assert len(fake.times) == 2 and fake.times[1] - fake.times[0] >= 0.95  # waited as asked


def test_maxlag_error_is_retried_after_the_wait_it_asks(web, fake):
    fake.queue = [
        Reply(
            body={
                "error": {
                    "code": "maxlag",
                    "info": "Waiting for 10.64.16.8: 7 seconds lagged",
                    "host": "10.64.16.8",
                    "lag": 7,
                    "type": "db",
                    "docref": "See https://en.wikipedia.org/w/api.php for API usage.",
                }
            },
            headers={"Retry-After": "1", "X-Database-Lag": "7"},
        )
    ]
    assert [m.title for m in wiki(web, backoff=0.05).find("Nile", 3)] == ["Nile"]
    assert fake.times[1] - fake.times[0] >= 0.95


def test_retries_are_bounded_and_a_long_retry_after_is_not_cut_short(web, fake):
    fake.queue = [Reply(429, "slow down", headers={"Retry-After": "0"})] * 10
    with pytest.raises(SearchError, match=r"rate limited \(HTTP 429\); gave up after 3 tries"):
        wiki(web, max_retries=2).find("Nile", 3)
    assert len(fake.times) == 3

    fake.queue, fake.times = [Reply(429, "slow down", headers={"Retry-After": "120"})], []
    start = time.monotonic()
    with pytest.raises(SearchError, match=r"asks to wait 120 s before trying again \(more than 10 s\)"):
        wiki(web).find("Nile", 3)
    assert len(fake.times) == 1 and time.monotonic() - start < 2  # it gives up rather than retry early

    fake.queue, fake.times = [Reply(503, "upstream busy")] * 2, []  # no Retry-After: a doubling backoff
    assert [m.title for m in wiki(web, backoff=0.2).find("Nile", 3)] == ["Nile"]
    assert len(fake.times) == 3 and fake.times[2] - fake.times[1] >= 0.38


def test_the_apis_error_json_is_one_line(web, fake):
    fake.queue = [
        Reply(
            body={
                "error": {
                    "code": "badvalue",
                    "info": 'Unrecognized value for parameter "list":\nserach.',
                    "docref": "See https://en.wikipedia.org/w/api.php.",
                },
                "servedby": "mw1234",
            }
        )
    ]
    with pytest.raises(SearchError) as e:
        wiki(web).find("Nile", 3)
    message = str(e.value)
    assert message == (
        f"search provider wikipedia at {web.url('/en/w/api.php')}: API error badvalue: "
        'Unrecognized value for parameter "list": serach.'
    )
    assert len(fake.times) == 1  # not retried
    fake.queue = [Reply(403, "Please set a user-agent and respect our robot policy")]
    with pytest.raises(SearchError, match=r"rejected the request: HTTP 403: Please set a user-agent"):
        wiki(web).find("Nile", 3)
    fake.queue = [Reply(body="<html>maintenance</html>")]
    with pytest.raises(SearchError, match="returned invalid JSON"):
        wiki(web).find("Nile", 3)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_and_silent_servers_fail_in_one_line_within_the_timeout(web, fake, monkeypatch):
    monkeypatch.setattr(wiki_mod, "RETRY_PAUSE_S", 0.01)
    url = f"http://127.0.0.1:{free_port()}/w/api.php"
    start = time.monotonic()
    with pytest.raises(SearchError, match=rf"search provider wikipedia unreachable at {url}: ") as e:
        WikipediaSearch("en", base_url=url, timeout=1).web("Nile", 3)
    assert time.monotonic() - start < 1 and "\n" not in str(e.value)

    fake.delay = 3
    start = time.monotonic()
    with pytest.raises(SearchError, match=r"unreachable at .*: no answer within 0.3 s"):
        wiki(web, timeout=0.3).find("Nile", 3)
    assert time.monotonic() - start < 2


def test_requests_are_spaced_and_one_at_a_time(web, fake):
    w = wiki(web, min_interval=0.3)
    w.web("Mount Everest", 3)
    w.find("Nile", 3)
    gaps = [b - a for a, b in zip(fake.times, fake.times[1:])]
    assert len(gaps) == 2 and min(gaps) >= 0.29

    fake.times, fake.delay = [], 0.2
    w = wiki(web)  # no pause between requests, yet never two at once from one provider
    threads = [threading.Thread(target=w.find, args=("Nile", 3)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(fake.times) == 4 and fake.most_in_flight == 1


def test_no_images_and_an_empty_query(web, fake):
    w = wiki(web)
    with pytest.raises(NotSupported, match="article text only"):
        w.images("everest", 3)
    with pytest.raises(NotSupported, match="article text only"):
        w.reverse(None, 3)
    with pytest.raises(UserError, match="the search query is empty"):
        w.web("  ", 3)
    assert web.requests == []


# --------------------------------------------------------------------------- DEFAME's web_search


def test_defame_web_search_quotes_the_extracts_without_scraping(web, fake):
    provider = make_provider("wikipedia", url=web.url(API_PATH), language="en", timeout=5)
    assert isinstance(provider, WikipediaSearch) and provider.name == "wikipedia"
    with Scraper(timeout=2, allow_private=True) as scraper:
        out = WebSearch(provider, scraper, k=3).run("Mount Everest", ToolCall())
    assert out.error is None and not any("could not read" in n for n in out.notes)
    assert [e.source for e in out.results] == ["Mount Everest", "K2"]
    everest = out.results[0]
    assert everest.text == EVEREST_INTRO and everest.url == fake.url(21)
    assert everest.text == EVEREST_INTRO[everest.quote_start : everest.quote_end]
    assert everest.source_sha256 == sha(EVEREST_INTRO) and everest.retrieved_at
    assert everest.found_by["tool"] == "web_search" and everest.found_by["provider"] == "wikipedia"
    assert everest.found_by["pageid"] == 21 and everest.found_by["rank"] == 1
    assert {r.path for r in web.requests} == {"/en/w/api.php"}  # no article page was fetched


def test_the_toolbox_uses_the_configured_edition_and_endpoint(web, fake):
    from veracity.defame.toolbox import build_toolbox

    box = build_toolbox(
        DefameConfig(search="wikipedia", wikipedia_language="de", wikipedia_url=web.url(API_PATH), scrape=False), None
    )
    provider = box.tools["web_search"].provider
    assert isinstance(provider, WikipediaSearch) and provider.api_url == web.url("/de/w/api.php")
    assert box.tools["image_search"].unavailable()
    box.close()


# --------------------------------------------------------------------------- the retriever


def test_retriever_passages_are_exact_slices_of_the_whole_extract(web, fake):
    retriever = WikipediaRetriever(wiki(web), articles=2, max_words=20, overlap_words=0)
    found = retriever.search("first ascent Everest 1953 Hillary", 3)
    # one search, then each whole article in a request of its own (the API's limit)
    assert [r.query.get("list") or r.query["pageids"] for r in web.requests] == ["search", "21", "22"]
    assert all("exintro" not in r.query for r in web.requests[1:])
    text = whole(EVEREST_INTRO, EVEREST_BODY)
    top = found[0]
    assert "1953" in top.text and "Hillary" in top.text
    for e in found:
        source = text if e.source == "Mount Everest" else whole(K2_INTRO, K2_BODY)
        assert e.text == source[e.quote_start : e.quote_end]
        assert e.source_sha256 == sha(source)
        assert e.url == fake.url(21 if e.source == "Mount Everest" else 22)
    assert [e.found_by["rank"] for e in found] == [1, 2, 3]
    assert top.found_by == {
        "tool": "wikipedia",
        "retriever": "wikipedia",
        "language": "en",
        "api": web.url("/en/w/api.php"),
        "pageid": 21,
        "extract": "whole",
        "query": "first ascent Everest 1953 Hillary",
        "rank": 1,
        "score": top.score,
    }
    assert top.score > 0 and top.retrieved_at.endswith("+00:00")
    # passages that match the query come first, in the API's order of articles, best first within one
    everest = [e for e in found if e.source == "Mount Everest" and e.score > 0]
    assert found[: len(everest)] == everest and everest == sorted(everest, key=lambda e: -e.score)


def test_retriever_of_the_configuration(web, fake):
    config = load_config(
        overrides={"defame.wikipedia_url": web.url(API_PATH), "defame.wikipedia_language": "en", "defame.timeout": 3},
        env={},
    )
    retriever = wikipedia_retriever(config)
    assert retriever.wiki.api_url == web.url("/en/w/api.php") and retriever.wiki.timeout == 3
    assert retriever.search("Nile river", 2)[0].source == "Nile"
    with pytest.raises(UserError, match="at least 1"):
        retriever.search("Nile", 0)
    retriever.close()


CLAIM = "Mount Everest is 8,849 metres high."


def check_report(tmp_path, web) -> str:
    """What `veracity check --pipeline verifier --search wikipedia --json` writes, run here over the replay."""
    config = load_config(
        overrides={"cache": False, "defame.search": "wikipedia", "defame.wikipedia_url": web.url(API_PATH)}, env={}
    )
    with wikipedia_retriever(config) as retriever:
        result = run_check(
            Claim(CLAIM), get_pipeline("verifier", config), Model(ScriptedBackend([])), config, retriever=retriever
        )
    path = tmp_path / "report.json"
    path.write_text(json.dumps(result.to_dict()))
    return str(path)


def recheck_json(capsys, *args) -> tuple[int, dict]:
    code = main(["recheck", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_check_over_wikipedia_and_its_recheck_through_the_api(tmp_path, web, fake, capsys):
    report = check_report(tmp_path, web)
    stored = json.loads(open(report).read())
    assert stored["verdict"]["label"] == "Supported"
    evidence = [e for step in stored["trace"] for e in step.get("results") or step.get("evidence") or []]
    height = next(e for e in evidence if "8,849" in e["text"])
    text = whole(EVEREST_INTRO, EVEREST_BODY)
    assert height["source"] == "Mount Everest" and height["url"] == fake.url(21)
    assert height["text"] == text[height["quote_start"] : height["quote_end"]]
    assert height["source_sha256"] == sha(text) and height["found_by"]["retriever"] == "wikipedia"

    code, doc = recheck_json(capsys, report, "--allow-private-addresses")
    assert code == 0 and doc["headline"] == "Evidence unchanged"
    assert {i["reason"] for i in doc["items"]} == {"the source reads the same (same SHA-256)"}

    # the article is edited where the quote stands: the API's extract shows it, with a diff
    fake.pages[21] = ("Mount Everest", EVEREST_INTRO, EVEREST_BODY.replace("8,849", "8,848"))
    code, doc = recheck_json(capsys, report, "--allow-private-addresses")
    item = next(i for i in doc["items"] if "8,849" in i["evidence"]["text"])
    assert code == 1 and item["status"] == "changed" and "[-8,849-] {+8,848+}" in item["diff"]

    # the article is deleted
    del fake.pages[21]
    code, doc = recheck_json(capsys, report, "--allow-private-addresses")
    item = next(i for i in doc["items"] if "8,849" in i["evidence"]["text"])
    assert item["status"] == "gone" and "page id 21" in item["reason"]

    # without --allow-private-addresses the local API is not asked at all
    before = len(web.requests)
    code, doc = recheck_json(capsys, report)
    assert {i["status"] for i in doc["items"]} == {"refused"} and len(web.requests) == before
    assert "loopback address" in doc["items"][0]["reason"] and code == 4


def test_defame_evidence_is_rechecked_by_its_lead_section(tmp_path, web, fake, capsys):
    out = WebSearch(make_provider("wikipedia", url=web.url(API_PATH), timeout=5), None, k=2).run(
        "Mount Everest", ToolCall()
    )
    trace = [
        {"stage": "claim", "t": 0, "text": CLAIM, "pipeline": "defame", "model": "m"},
        {"stage": "action", "t": 0.1, "round": 1, **out.to_dict()},
        {"stage": "verdict", "t": 0.2, "label": "Supported", "rationale": "", "confidence": 0.9},
    ]
    path = tmp_path / "defame.json"
    path.write_text(
        json.dumps(
            {
                "claim": {"text": CLAIM},
                "pipeline": "defame",
                "model": "m",
                "verdict": {"label": "Supported", "confidence": 0.9},
                "trace": trace,
            }
        )
    )
    fake.pages[22] = ("K2", K2_INTRO.replace("Karakoram", "Himalaya"), K2_BODY)
    n = len(web.requests)
    code, doc = recheck_json(capsys, str(path), "--allow-private-addresses")
    status = {i["evidence"]["source"]: i["status"] for i in doc["items"]}
    assert status == {"Mount Everest": "unchanged", "K2": "changed"} and code == 1
    [asked] = web.requests[n:]  # both lead sections in one request, as they were read
    assert asked.query["pageids"] == "21|22" and asked.query["exintro"] == "1"
