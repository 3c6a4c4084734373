"""Bad input never crashes the server (issue 11, items 4 and 6, and the failed-run message of item 10).

The real `veracity serve` on 127.0.0.1 (a subprocess) with the scripted backend; every request is real HTTP.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time

import httpx
import pytest
from conftest import VeracityServer, server_env, veracity_cmd, write_rules
from stub_server import StubServer
from test_server_api import CLAIM, finished, read_sse, start_check, wait_for

from veracity.failures import INTERNAL_ERROR

SURROGATE = "It is \\ud800 here."  # JSON text: a lone high surrogate escape


@pytest.fixture(scope="module")
def hsrv(server_factory):
    model = write_rules(server_factory.base / "rules-hard.json")
    return server_factory(["--model", model, "--rate-limit", "0", "--max-images", "2"], name="hard")


@pytest.fixture(scope="module")
def api(hsrv):
    with httpx.Client(base_url=hsrv.url, timeout=30) as client:
        yield client


def post_raw(client: httpx.Client, text: str, path: str = "/api/checks") -> httpx.Response:
    return client.post(path, content=text.encode(), headers={"content-type": "application/json"})


def assert_error(r: httpx.Response, status: int, code: str | None = None) -> dict:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) >= {"error", "detail"} and isinstance(body["detail"], str), body
    if code is not None:
        assert body["error"] == code, body
    return body


# -- item 4: non-finite numbers and lone surrogates are refused where the body is read ----------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"claim": NaN}',
        '{"claim": Infinity}',
        '{"claim": -Infinity}',
        '{"claim": 1e999999}',
        '{"claim": "A claim.", "date": NaN}',
        '{"claim": "A claim.", "date": -1e400}',
        '{"claim": "A claim.", "images": [{"data": "x", "filename": Infinity}]}',
        '{"question": "Q?", "answer": NaN}',
    ],
)
def test_non_finite_numbers_are_refused(api, text):
    body = assert_error(post_raw(api, text), 400, "invalid_number")
    assert "finite" in body["detail"]


@pytest.mark.parametrize(
    "text, where",
    [
        ('{"claim": "%s"}' % SURROGATE, "claim"),
        (
            '{"claim": "A claim.", "pipeline": "defame", "images": [{"data": "aGVsbG8=", "filename": "a\\udfffb.png"}]}',
            "images.0.filename",
        ),
        ('{"question": "Where is it?", "answer": "%s"}' % SURROGATE, "answer"),
        ('{"claim": "A claim.", "\\ud800": 1}', "key"),
        ('{"claim": "\\udc00"}', "claim"),
    ],
)
def test_lone_surrogates_are_refused(api, text, where):
    body = assert_error(post_raw(api, text), 400, "invalid_text")
    assert "surrogate" in body["detail"] and where in body["detail"]
    assert api.get("/api/health").json()["status"] == "ok"


def test_a_valid_surrogate_pair_is_a_character(api):
    r = post_raw(api, '{"claim": "The Orrin Bridge \\ud83d\\ude00 stands in Tallinn."}')
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    run = wait_for(api, run_id, finished)
    assert "\U0001f600" in run["claim"] and api.get(f"/checks/{run_id}").status_code == 200


def test_other_odd_bodies_get_the_error_shape(api):
    assert_error(post_raw(api, "[" * 100_000), 400, "invalid_json")
    assert_error(
        api.post("/api/checks", content=b'{"claim": "\xff\xfe"}', headers={"content-type": "application/json"}),
        400,
        "invalid_json",
    )
    assert_error(post_raw(api, '{"claim": %s}' % ("9" * 5000)), 400, "invalid_number")
    assert_error(post_raw(api, '{"claim": 12345678901234567890123}'), 422, "invalid_request")
    assert_error(post_raw(api, '{"claim": '), 422, "invalid_request")
    assert_error(post_raw(api, "null"), 422, "invalid_request")
    # the validation error echoes the input: an odd input cannot break it
    assert_error(post_raw(api, '{"claim": ["\\ud83d\\ude00", 1.5, true, {"a": null}]}'), 422, "invalid_request")


# -- item 4: integer query parameters are bounded --------------------------------------------------------


@pytest.mark.parametrize("offset", ["9223372036854775808", str(2**64), "1e20", "99999999999999999999999999"])
def test_huge_offsets_never_fail(api, offset):
    assert_error(api.get("/api/checks", params={"offset": offset}), 422, "invalid_request")
    for path in ("/partials/history", "/", "/checks/0123456789abcdef"):
        r = api.get(path, params={"offset": offset})
        assert r.status_code in (200, 404, 422), (path, r.status_code)
        if r.status_code == 422:
            assert_error(r, 422, "invalid_request")
    r = api.get("/partials/history", params={"offset": "9223372036854775808"})
    assert r.status_code == 200 and "Past checks" in r.text
    assert api.get("/api/checks", params={"offset": 1_000_000_000}).json()["items"] == []


def test_last_event_id_out_of_range_starts_afresh(api):
    run_id = start_check(api)
    full = read_sse(api, f"/api/checks/{run_id}/events")
    steps = [e for e in full if e[0] == "step"]
    for bad in ("99999999999999999999999", str(2**63), "-5", "1e3", "٣".encode(), "abc", "3" * 5000):
        events = read_sse(api, f"/api/checks/{run_id}/events", headers={"Last-Event-ID": bad})
        assert events[-1][0] == "done" and events[-1][2]["status"] == "done"
        assert [e for e in events if e[0] == "step"] == steps, bad  # a fresh start: every step again
    resumed = read_sse(api, f"/api/checks/{run_id}/events", headers={"Last-Event-ID": "3"})
    assert [int(e[1]) for e in resumed if e[0] == "step"] == list(range(4, len(steps)))


# -- item 4: nothing stored can make a read fail --------------------------------------------------------------


def test_stored_bad_text_never_breaks_a_read(api, hsrv):
    """A run written before these checks existed (or by anything else): lone surrogates in JSON escapes, NaN,
    invalid UTF-8 in a text column, a step that is not JSON. Every read still answers."""
    run_id = start_check(api)
    wait_for(api, run_id, finished)
    bad_id = "badbadbadbad0001"
    db = sqlite3.connect(hsrv.db, timeout=30)
    try:
        options = (
            '{"answer": "It is \\ud800 here.", "date": NaN, "images": [{"file": "x\\udc00.png", '
            '"filename": "\\ud800.png", "media_type": "image/png", "width": NaN}]}'
        )
        result = (
            '{"verdict": {"label": "Supported\\ud800", "confidence": NaN, "rationale": "r\\udfff"}, '
            '"usage": {"total": {"calls": Infinity}}, "seconds": NaN, "model": "m"}'
        )
        db.execute(
            "INSERT INTO runs (id, created, started, finished, status, claim, pipeline, qa, model, options, "
            "label, confidence, result, seconds, error) VALUES (?,?,?,?,?,CAST(? AS TEXT),?,?,?,?,?,?,?,?,?)",
            (
                bad_id,
                time.time(),
                time.time(),
                time.time(),
                "done",
                b"Bad \xff\xfe claim",
                "qacheck",
                "closed-book",
                "m",
                options,
                "Supported",
                None,
                result,
                1.0,
                None,
            ),
        )
        db.executemany(
            "INSERT INTO steps (run_id, seq, stage, data) VALUES (?,?,?,?)",
            [
                (bad_id, 0, "claim", '{"stage": "claim", "claim": "x\\ud800y", "t": NaN}'),
                (bad_id, 1, "question", '{"stage": "question", "question": "\\udc00?", "depth": 1}'),
                (bad_id, 2, "answer", "this is not JSON"),
                (bad_id, 3, "verdict", '{"stage": "verdict", "label": "Supported", "confidence": Infinity}'),
            ],
        )
        failed_id = "badbadbadbad0002"
        db.execute(
            "INSERT INTO runs (id, created, status, claim, pipeline, model, options, error) VALUES (?,?,?,?,?,?,?,?)",
            (
                failed_id,
                time.time(),
                "failed",
                "A claim.",
                "qacheck",
                "m",
                "{}",
                "internal error: AssertionError: scripted backend: no rule matches prompt ending 'SECRET PROMPT TEXT'",
            ),
        )
        db.commit()
    finally:
        db.close()
    run = api.get(f"/api/checks/{bad_id}")
    assert run.status_code == 200, "\n".join(hsrv.log[-40:])
    d = run.json()
    assert d["claim"] == "Bad \ufffd\ufffd claim" and d["answer"] == "It is \ufffd here."
    assert d["verdict"]["confidence"] is None and d["steps"][0]["claim"] == "x\ufffdy"
    assert d["steps"][2]["stage"] == "unreadable"
    for path in (
        f"/checks/{bad_id}",
        f"/checks/{bad_id}/panel",
        "/",
        "/partials/history",
        "/api/checks",
        f"/api/checks/{bad_id}/report.md",
        f"/api/checks/{bad_id}/report.json",
        f"/api/checks/{bad_id}/report.html",
        f"/api/checks/{bad_id}/images/1",
    ):
        r = api.get(path)
        assert r.status_code < 500, (path, r.status_code, "\n".join(hsrv.log[-30:]))
    events = read_sse(api, f"/api/checks/{bad_id}/events")
    assert events[-1][0] == "done" and len([e for e in events if e[0] == "step"]) == 4
    # a failure stored with the raw exception (before this fix) is shown as one short line
    failed = api.get(f"/api/checks/{failed_id}").json()
    assert failed["error"].startswith("internal error:") and "SECRET" not in failed["error"]
    assert "SECRET" not in api.get(f"/checks/{failed_id}").text
    assert api.delete(f"/api/checks/{bad_id}").status_code == 204
    assert api.get("/api/health").json()["status"] == "ok"


# -- item 10: a failed run says what happened in a short line; the log keeps the detail ------------------------


def test_a_failed_run_shows_a_short_error_not_the_exception(server_factory):
    """An unexpected exception (here: a backend answering nonsense) is shown as one short line; its text and
    traceback stay in the server's log, with the run's id."""
    stub = StubServer(
        lambda body: (
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": "SECRET PROMPT ECHO"}],
            },
            0,
        )
    )
    try:
        srv = server_factory(
            ["--model", "stub-model", "--base-url", stub.url, "--no-cache", "--rate-limit", "0"], name="failing"
        )
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            run_id = start_check(c)
            done = read_sse(c, f"/api/checks/{run_id}/events")[-1][2]
            assert done == {"status": "failed", "error": INTERNAL_ERROR}
            assert c.get(f"/api/checks/{run_id}").json()["error"] == INTERNAL_ERROR
            page = c.get(f"/checks/{run_id}").text
            assert INTERNAL_ERROR.replace("'", "&#39;") in page and "SECRET" not in page and "Traceback" not in page
        deadline = time.time() + 10
        while time.time() < deadline and not any("Traceback" in line for line in srv.log):
            time.sleep(0.1)
        assert any(f"run {run_id} failed" in line for line in srv.log) and any("Traceback" in x for x in srv.log)
    finally:
        stub.close()


def test_a_backend_error_is_one_short_line(server_factory):
    model = write_rules(server_factory.base / "rules-none.json", {"rules": []})  # no prompt has a reply
    srv = server_factory(["--model", model, "--rate-limit", "0"], name="norules")
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        run_id = start_check(c)
        done = read_sse(c, f"/api/checks/{run_id}/events")[-1][2]
        assert done["status"] == "failed" and len(done["error"]) <= 240 and "\n" not in done["error"]
        assert c.get(f"/api/checks/{run_id}").json()["error"] == done["error"]


# -- item 6: forwarded headers count only from configured proxies ---------------------------------------------


class LoggedServer(VeracityServer):
    """`veracity serve` with its stdout (uvicorn's access log) read too."""

    with_stdout = True


@pytest.fixture
def logged_server(server_factory):
    """start(args, name): a LoggedServer with the scripted rules, stopped after the test."""
    started: list[LoggedServer] = []
    model = write_rules(server_factory.base / "rules-logged.json")

    def start(args: list[str], name: str) -> LoggedServer:
        srv = LoggedServer(
            ["--model", model, *args],
            db=server_factory.base / f"{name}.sqlite",
            env=server_env(server_factory.base),
            cwd=server_factory.base,
        )
        started.append(srv)
        return srv.start()

    yield start
    for srv in started:
        srv.stop(timeout=5)


def access_lines(srv: LoggedServer, n: int, timeout: float = 10) -> list[str]:
    deadline = time.time() + timeout
    while True:
        lines = [line for line in srv.log if '"POST /api/checks HTTP/1.1"' in line]
        if len(lines) >= n or time.time() > deadline:
            return lines
        time.sleep(0.05)


def forged(i: int) -> dict[str, str]:
    return {"X-Forwarded-For": f"203.0.113.{i}", "X-Real-IP": f"198.51.100.{i}", "Forwarded": f"for=192.0.2.{i}"}


def test_forged_forwarded_headers_do_not_escape_the_rate_limit(logged_server):
    srv = logged_server(["--rate-limit", "2"], name="ratelimit")
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        codes = [c.post("/api/checks", json={"claim": CLAIM}, headers=forged(i)).status_code for i in range(20)]
    assert codes[:2] == [202, 202] and set(codes[2:]) == {429}, codes
    access = access_lines(srv, 20)
    assert len(access) == 20 and all("127.0.0.1:" in line for line in access), access[:3]
    assert not any(x in line for line in srv.log for x in ("203.0.113.", "198.51.100.", "192.0.2."))


def test_a_trusted_proxy_names_the_client(logged_server):
    srv = logged_server(
        ["--rate-limit", "2", "--trusted-proxy", "127.0.0.1", "--trusted-proxy", "10.0.0.0/8"], name="proxied"
    )
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        one = {"X-Forwarded-For": "203.0.113.7"}
        assert [c.post("/api/checks", json={"claim": CLAIM}, headers=one).status_code for _ in range(3)] == [
            202,
            202,
            429,
        ]
        # another client behind the same proxy has its own budget; a chain is read from the right, trusted hops
        # skipped, so a client cannot pick its address by prepending one
        two = {"X-Forwarded-For": "198.51.100.1, 203.0.113.8, 10.1.2.3"}
        assert [c.post("/api/checks", json={"claim": CLAIM}, headers=two).status_code for _ in range(3)] == [
            202,
            202,
            429,
        ]
        three = {"X-Forwarded-For": "198.51.100.2, 203.0.113.8"}
        assert c.post("/api/checks", json={"claim": CLAIM}, headers=three).status_code == 429
    access = access_lines(srv, 7)
    assert sum("203.0.113.7:" in line for line in access) == 3 and sum("203.0.113.8:" in x for x in access) == 4


def test_trusted_proxy_must_be_an_address(tmp_path, cli_env):

    model = write_rules(tmp_path / "rules.json")
    r = subprocess.run(
        veracity_cmd()
        + [
            "serve",
            "--model",
            model,
            "--db",
            str(tmp_path / "x.sqlite"),
            "--port",
            "0",
            "--trusted-proxy",
            "proxy.example",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=60,
    )
    assert r.returncode != 0 and "--trusted-proxy 'proxy.example' is not an IP address" in r.stderr
    assert "Traceback" not in r.stderr


def test_settings_take_addresses_and_networks():
    from veracity.errors import UserError
    from veracity.server.settings import ServerSettings

    ServerSettings(db_path="x", trusted_proxies=["127.0.0.1", "::1", "10.0.0.0/8", "fd00::/8"]).validate()
    with pytest.raises(UserError):
        ServerSettings(db_path="x", trusted_proxies=["*"]).validate()


def test_unit_helpers():
    from veracity.failures import short_error
    from veracity.server.api_events import resume_after
    from veracity.server.safe import mend, strict_json

    assert resume_after("3") == 3 and resume_after("99999999999999999999999") == -1 and resume_after(None) == -1
    assert resume_after("٣") == -1 and resume_after("-1") == -1
    assert mend({"a": ["x\ud800", float("nan")], "\udc00": float("inf")}) == {"a": ["x\ufffd", None], "\ufffd": None}
    assert strict_json(b'{"a": [1, 2.5, "\\ud83d\\ude00"]}') == {"a": [1, 2.5, "\U0001f600"]}
    with pytest.raises(json.JSONDecodeError):
        strict_json(b"{")
    assert short_error("internal error: KeyError: 'prompt'").startswith("internal error: the check stopped")
    assert short_error("model backend error: x\nsecond line") == "model backend error: x"
    assert len(short_error("y" * 1000)) == 240


# -- malformed Host headers: refused, not read as loopback ---------------------------------------------------


def _raw_get(url: str, host_header: str) -> tuple[int, bytes]:
    """A GET with exactly this Host header over a plain socket (clients normalise the header otherwise)."""
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=30) as s:
        s.sendall(f"GET /api/checks HTTP/1.1\r\nHost: {host_header}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), data


@pytest.mark.parametrize("host", ["127.0.0.1:{port}@evil.example", "[::1", "localhost:{port}/x", "127.0.0.1 evil"])
def test_malformed_host_headers_are_refused_by_the_running_server(hsrv, host):
    from urllib.parse import urlsplit

    port = urlsplit(hsrv.url).port
    status, body = _raw_get(hsrv.url, host.format(port=port))
    assert status in (400, 421), body[:300]
    assert b'"items"' not in body  # nothing of the API answered
    ok, body = _raw_get(hsrv.url, f"127.0.0.1:{port}")
    assert ok == 200 and b'"items"' in body


def test_the_kept_passages_of_a_reopened_run_are_sent_only_as_the_box_shows_them():
    # the hidden list beside the evidence box is used only while the box holds exactly those passages (line ends as a
    # browser sends them); a forged or broken list, or an edited box, sends the box's text as one passage
    from veracity.server.pages import evidence_fields, given_passages

    fields = evidence_fields(["First passage.", "Second\r\npassage."])
    assert fields["evidence_count"] == 2 and fields["evidence"] == "First passage.\n\nSecond\r\npassage."
    shown = "First passage.\r\n\r\nSecond\r\npassage."  # a form posts its text with CRLF line ends
    assert given_passages(shown, fields["evidence_passages"]) == ["First passage.", "Second\r\npassage."]
    assert given_passages("First passage.", fields["evidence_passages"]) == ["First passage."]
    assert given_passages(shown, '["Injected passage."]') == [shown]
    assert given_passages(shown, "not json") == [shown] and given_passages(shown, "[1, 2]") == [shown]
    assert given_passages("  ", fields["evidence_passages"]) == []
    assert evidence_fields(["Only one."]) == {"evidence": "Only one.", "evidence_passages": "", "evidence_count": 1}
