"""Search providers against a local server playing Serper and SearXNG, and over a local index."""

import socket
import time
from types import SimpleNamespace

import pytest
from web_stub import Reply, WebStub

from veracity.errors import UserError
from veracity.retrieval.documents import Document
from veracity.retrieval.index import Index
from veracity.web import search as search_mod
from veracity.web.base import NotSupported, SearchError
from veracity.web.search import LocalSearch, SearxngSearch, SerperSearch, make_provider


@pytest.fixture
def web(monkeypatch):
    monkeypatch.setattr(search_mod, "RETRY_PAUSE_S", 0.01)
    stub = WebStub()
    yield stub
    stub.close()


def serper(web, **kw):
    return SerperSearch("test-key", base_url=web.url(), timeout=kw.pop("timeout", 5), **kw)


ORGANIC = {
    "organic": [
        {
            "title": "Orrin Bridge opens",
            "link": "https://news.example/orrin",
            "snippet": "The bridge opened.",
            "date": "Mar 5, 2024",
            "position": 1,
        },
        {"title": "No date", "link": "https://blog.example/b", "snippet": "Blog post."},
        {"title": "Relative", "link": "https://c.example/c", "snippet": "x", "date": "2 days ago"},
        {"title": "No link"},
        "junk",
    ]
}


# --------------------------------------------------------------------------- Serper


def test_serper_web_request_and_parsing(web):
    web.routes["/search"] = Reply(body=ORGANIC)
    hits = serper(web).web("orrin bridge", 3, before="2024-05-01")
    req = web.requests[-1]
    assert req.method == "POST" and req.path == "/search"
    assert req.headers["x-api-key"] == "test-key"
    assert req.headers["content-type"].startswith("application/json")
    assert req.json() == {"q": "orrin bridge", "num": 3, "tbs": "cdr:1,cd_max:5/1/2024"}
    assert [h.url for h in hits] == ["https://news.example/orrin", "https://blog.example/b", "https://c.example/c"]
    assert hits[0].title == "Orrin Bridge opens" and hits[0].snippet == "The bridge opened."
    assert hits[0].date == "2024-03-05" and hits[1].date is None
    assert hits[2].date is not None and len(hits[2].date) == 10  # "2 days ago" -> a real date


def test_serper_no_cutoff_and_partial_cutoff(web):
    web.routes["/search"] = Reply(body={"organic": []})
    s = serper(web)
    assert s.web("q", 2) == []
    assert web.requests[-1].json() == {"q": "q", "num": 2}
    s.web("q", 2, before="2020-02")
    assert web.requests[-1].json()["tbs"] == "cdr:1,cd_max:2/29/2020"


def test_serper_images(web):
    web.routes["/images"] = Reply(
        body={
            "images": [
                {
                    "title": "Bridge at night",
                    "imageUrl": "https://img.example/b.jpg",
                    "link": "https://news.example/p",
                    "thumbnailUrl": "https://t.example/b.jpg",
                    "source": "News Example",
                    "imageWidth": 800,
                    "imageHeight": 600,
                },
                {"title": "no image url", "link": "https://x.example"},
            ]
        }
    )
    hits = serper(web).images("orrin bridge", 5)
    assert web.requests[-1].path == "/images" and web.requests[-1].json() == {"q": "orrin bridge", "num": 5}
    assert len(hits) == 1
    assert hits[0].image_url == "https://img.example/b.jpg" and hits[0].url == "https://news.example/p"
    assert hits[0].extra["thumbnail"] == "https://t.example/b.jpg"


def test_serper_reverse_needs_public_url(web):
    web.routes["/lens"] = Reply(
        body={
            "organic": [
                {"title": "Match", "link": "https://a.example/1", "imageUrl": "https://a.example/1.jpg", "source": "A"}
            ],
            "visual_matches": [
                {"title": "Same", "link": "https://a.example/1"},
                {"title": "Other", "link": "https://b.example/2", "thumbnailUrl": "https://b.example/t.jpg"},
            ],
        }
    )
    s = serper(web)
    hits = s.reverse(SimpleNamespace(source="https://cdn.example/photo.jpg"), 5)
    assert web.requests[-1].path == "/lens" and web.requests[-1].json() == {"url": "https://cdn.example/photo.jpg"}
    assert web.requests[-1].headers["x-api-key"] == "test-key"
    assert [h.url for h in hits] == ["https://a.example/1", "https://b.example/2"]
    assert hits[1].image_url == "https://b.example/t.jpg"
    n = len(web.requests)
    for source in ("/home/me/photo.jpg", None, "data:image/png;base64,xx"):
        with pytest.raises(NotSupported, match="public http\\(s\\) URL"):
            s.reverse(SimpleNamespace(source=source), 5)
    assert len(web.requests) == n  # nothing was sent


@pytest.mark.parametrize(
    "status, body, match",
    [
        (401, {"message": "Unauthorized."}, r"rejected the API key .*HTTP 401.*check SERPER_API_KEY"),
        (403, {"message": "Unauthorized."}, r"rejected the API key .*HTTP 403.*check SERPER_API_KEY"),
        (429, {"message": "Too many requests"}, r"quota exceeded \(HTTP 429"),
        (400, {"message": "Not enough credits"}, r"quota exceeded \(HTTP 400: Not enough credits"),
        (400, {"message": "Query is required"}, r"rejected the request: HTTP 400: Query is required"),
    ],
)
def test_serper_http_errors(web, status, body, match):
    web.routes["/search"] = Reply(status, body)
    with pytest.raises(SearchError, match=match) as e:
        serper(web).web("q", 3)
    assert "test-key" not in str(e.value)
    assert len(web.requests) == 1  # 4xx: no retry


def test_serper_5xx_is_retried_once(web):
    web.routes["/search"] = Reply(502, "bad gateway")
    with pytest.raises(SearchError, match=r"search provider serper at .*/search failed: HTTP 502"):
        serper(web).web("q", 3)
    assert len(web.requests) == 2

    answers = iter([Reply(500, "oops"), Reply(body=ORGANIC)])
    web.routes["/search"] = lambda request: next(answers)
    assert len(serper(web).web("q", 1)) == 1


def test_serper_invalid_json(web):
    web.routes["/search"] = Reply(body="<html>not json</html>")
    with pytest.raises(SearchError, match="returned invalid JSON"):
        serper(web).web("q", 3)
    web.routes["/search"] = Reply(body=[1, 2])
    with pytest.raises(SearchError, match="not an object"):
        serper(web).web("q", 3)


def test_serper_timeout_never_hangs(web):
    web.routes["/search"] = Reply(body=ORGANIC, delay=3)
    start = time.monotonic()
    with pytest.raises(SearchError, match=r"serper unreachable at .*: no answer within 0.3 s"):
        serper(web, timeout=0.3).web("q", 3)
    assert time.monotonic() - start < 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_provider(monkeypatch):
    monkeypatch.setattr(search_mod, "RETRY_PAUSE_S", 0.01)
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SearchError, match=rf"search provider serper unreachable at {url}/search: "):
        SerperSearch("k", base_url=url, timeout=2).web("q", 3)
    with pytest.raises(SearchError, match=rf"search provider searxng unreachable at {url}/search"):
        SearxngSearch(url, timeout=2).web("q", 3)


# --------------------------------------------------------------------------- SearXNG

SEARX = {
    "query": "q",
    "results": [
        {
            "url": "https://news.example/a",
            "title": "A",
            "content": "About A.",
            "publishedDate": "2024-03-05T00:00:00",
            "engines": ["bing"],
            "score": 1.5,
        },
        {"url": "https://news.example/b", "title": "B", "content": "About B.", "publishedDate": None},
        {"title": "no url"},
    ],
    "unresponsive_engines": [],
}


def test_searxng_web(web):
    web.routes["/search"] = Reply(body=SEARX)
    hits = SearxngSearch(web.url() + "/", timeout=5).web("orrin bridge", 5, before="2024-01-01")
    req = web.requests[-1]
    assert req.method == "GET" and req.path == "/search"
    assert req.query == {"q": "orrin bridge", "format": "json", "categories": "general"}
    assert [(h.url, h.title, h.snippet, h.date) for h in hits] == [
        ("https://news.example/a", "A", "About A.", "2024-03-05"),
        ("https://news.example/b", "B", "About B.", None),
    ]
    assert hits[0].score == 1.5
    assert len(SearxngSearch(web.url("/search"), timeout=5).web("x", 1)) == 1  # a URL ending in /search works too
    assert web.requests[-1].path == "/search"


def test_searxng_images(web):
    web.routes["/search"] = Reply(
        body={
            "results": [
                {
                    "url": "https://news.example/p",
                    "title": "Bridge",
                    "img_src": "https://img.example/b.jpg",
                    "thumbnail_src": "https://img.example/t.jpg",
                },
                {"url": "https://news.example/q", "title": "Proxied", "img_src": "/image_proxy?url=abc"},
                {"url": "https://news.example/r", "title": "No image"},
            ]
        }
    )
    hits = SearxngSearch(web.url(), timeout=5).images("bridge", 5)
    assert web.requests[-1].query["categories"] == "images"
    assert [h.image_url for h in hits] == ["https://img.example/b.jpg", web.url("/image_proxy?url=abc")]
    assert hits[0].url == "https://news.example/p"


def test_searxng_json_disabled_403(web):
    web.routes["/search"] = Reply(403, "Forbidden")
    with pytest.raises(SearchError) as e:
        SearxngSearch(web.url(), timeout=5).web("q", 3)
    assert "403" in str(e.value) and "JSON output is not enabled in its settings.yml" in str(e.value)


def test_searxng_engines_failed(web):
    web.routes["/search"] = Reply(body={"results": [], "unresponsive_engines": [["google", "timeout"]]})
    with pytest.raises(SearchError, match=r"engines failed \(google timeout\)"):
        SearxngSearch(web.url(), timeout=5).web("q", 3)
    web.routes["/search"] = Reply(body={"results": [], "unresponsive_engines": []})
    assert SearxngSearch(web.url(), timeout=5).web("q", 3) == []


def test_searxng_has_no_reverse_search():
    with pytest.raises(NotSupported, match="no reverse image search"):
        SearxngSearch("http://127.0.0.1:9").reverse(SimpleNamespace(source="https://x.example/a.jpg"), 3)


# --------------------------------------------------------------------------- local index


@pytest.fixture(scope="module")
def index():
    return Index.from_documents(
        [
            Document(
                id="orrin",
                title="Orrin Bridge",
                text="The Orrin Bridge is a stone bridge in Tallinn, Estonia.",
                url="https://wiki.example/orrin",
                date="2019-06-01",
            ),
            Document(id="tower", title="Kell Tower", text="Kell Tower is a clock tower in Tartu."),
        ]
    )


def test_local_search(index):
    provider = LocalSearch(index)
    assert provider.name == "local"
    hits = provider.web("Orrin bridge Tallinn", 2)
    assert hits[0].doc_id == "orrin" and hits[0].title == "Orrin Bridge"
    assert hits[0].url == "https://wiki.example/orrin" and hits[0].date == "2019-06-01"
    assert "stone bridge" in hits[0].text and hits[0].score > 0
    assert LocalSearch(index.retriever("bm25"), name="wiki").web("clock tower", 1)[0].url is None
    with pytest.raises(NotSupported, match="text only"):
        provider.images("bridge", 3)
    with pytest.raises(NotSupported, match="text only"):
        provider.reverse(SimpleNamespace(source="x.jpg"), 3)
    with pytest.raises(SearchError, match="empty"):
        provider.web("  ", 3)


# --------------------------------------------------------------------------- make_provider


def test_make_provider(monkeypatch, index):
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    with pytest.raises(UserError, match="set SERPER_API_KEY"):
        make_provider("serper")
    monkeypatch.setenv("SERPER_API_KEY", "from-env")  # read at call time
    p = make_provider("serper", timeout=3)
    assert isinstance(p, SerperSearch) and p._api_key == "from-env" and p.timeout == 3
    assert "from-env" not in repr(p)
    assert make_provider("serper", api_key="explicit")._api_key == "explicit"
    with pytest.raises(UserError, match="needs the instance's URL"):
        make_provider("searxng")
    assert make_provider("SearXNG", url="http://localhost:8888").base_url == "http://localhost:8888"
    with pytest.raises(UserError, match="--search local needs --index DIR"):
        make_provider("local")
    assert isinstance(make_provider("local", retriever=index), LocalSearch)
    with pytest.raises(UserError, match="unknown search provider 'bing'"):
        make_provider("bing")
