"""The Google Fact Check Tools API as an online source, against a local server that replays its documented
responses (claims:search, its paging, its error body): what it finds is kept in the store and matched offline
afterwards; a bad key or an unreachable API is a clear error that never shows the key."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from test_formats import GOOGLE_RESPONSE

from veracity.cli import main
from veracity.factchecks.stores import open_store

PAGE_2 = {
    "claims": [
        {
            "text": "Holding your breath for 10 seconds tests you for COVID-19",
            "claimant": "Viral message",
            "claimReview": [
                {"publisher": {"name": "Reuters", "site": "reuters.com"}, "url": "https://r.example/breath",
                 "title": "Holding breath is not a test", "reviewDate": "2020-03-20T00:00:00Z",
                 "textualRating": "False", "languageCode": "en"}
            ],
        }
    ]
}  # fmt: skip


@pytest.fixture
def api():
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            url = urlparse(self.path)
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            requests.append((url.path, q))
            if q.get("key") != "good-key":
                status, body = 400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                               "status": "INVALID_ARGUMENT"}}  # fmt: skip
            elif q.get("pageToken") == "CAo":
                status, body = 200, PAGE_2
            else:
                status, body = 200, GOOGLE_RESPONSE
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1alpha1/claims:search", requests
    server.shutdown()


def test_online_results_are_kept_and_matched(api, tmp_path, monkeypatch, capsys):
    url, requests = api
    monkeypatch.setenv("VERACITY_FACTCHECK_API_URL", url)
    monkeypatch.setenv("VERACITY_FACTCHECK_API_KEY", "good-key")
    store = tmp_path / "fc"
    assert main(["factchecks", "match", "5G spreads the coronavirus", "--online", "--language", "en",
                 "--store", str(store), "--json"]) == 0  # fmt: skip
    found = json.loads(capsys.readouterr().out)
    assert found["online"] == 3  # two reviews of one claim, then the second page
    assert [q.get("pageToken") for _, q in requests] == [None, "CAo"]
    assert requests[0][1]["query"] == "5G spreads the coronavirus" and requests[0][1]["languageCode"] == "en"
    assert found["found"] is True
    assert {m["publisher"] for m in found["matches"]} == {"Full Fact", "afp.com"}
    assert found["matches"][0]["claim"] == "5G networks spread the coronavirus"
    assert len(open_store(store)) == 3
    # offline afterwards: no key, no server
    monkeypatch.delenv("VERACITY_FACTCHECK_API_KEY")
    assert main(["factchecks", "match", "Can you test for COVID by holding your breath for 10 seconds?",
                 "--store", str(store)]) == 0  # fmt: skip
    assert "Reuters" in capsys.readouterr().out


def test_bad_key_missing_key_and_unreachable_api(api, tmp_path, monkeypatch, capsys):
    url, _ = api
    monkeypatch.setenv("VERACITY_FACTCHECK_API_URL", url)
    monkeypatch.setenv("VERACITY_FACTCHECK_API_KEY", "wrong-key-123")
    assert main(["factchecks", "match", "anything", "--online", "--store", str(tmp_path / "fc")]) == 3
    err = capsys.readouterr().err
    assert "the Google Fact Check Tools API answered 400: API key not valid" in err and "wrong-key-123" not in err
    monkeypatch.delenv("VERACITY_FACTCHECK_API_KEY")
    assert main(["factchecks", "match", "anything", "--online", "--store", str(tmp_path / "fc")]) == 2
    assert "needs a key: set VERACITY_FACTCHECK_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("VERACITY_FACTCHECK_API_KEY", "good-key")
    monkeypatch.setenv("VERACITY_FACTCHECK_API_URL", "http://127.0.0.1:9/claims:search")
    assert main(["factchecks", "match", "anything", "--online", "--store", str(tmp_path / "fc")]) == 3
    assert "the Google Fact Check Tools API is unreachable" in capsys.readouterr().err
