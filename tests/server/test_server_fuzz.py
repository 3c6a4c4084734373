"""A bounded fuzzer of the HTTP API against the real server (`veracity serve` on 127.0.0.1, scripted backend).

A seeded generator sends a few hundred requests: JSON bodies of odd types written as raw text (NaN and
Infinity literals, numbers out of range, lone surrogate escapes, long and odd strings, deep nesting), odd
content types, random query parameters, headers and paths, page forms, event streams with odd
Last-Event-IDs. Every answer must be below 500; every API error must be the JSON `{"error", "detail"}` shape;
afterwards the server must be healthy, run a check to the end, and have logged no traceback.

VERACITY_FUZZ_SEED and VERACITY_FUZZ_REQUESTS change the seed and the count (default 20261130 and 800).
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field

import httpx
import pytest
from conftest import write_rules
from test_server_api import CLAIM, finished, read_sse, start_check, wait_for

SEED = int(os.environ.get("VERACITY_FUZZ_SEED", "20261130"))
REQUESTS = int(os.environ.get("VERACITY_FUZZ_REQUESTS", "800"))
TIME_BUDGET = 60.0  # seconds: the fuzzer stops sending when it has used this much

PIPELINES = ["qacheck", "direct", "cot", "defame", "answer-check", "qacheck-closed-book", "nope", ""]
KEYS = ["claim", "date", "images", "question", "answer", "pipeline", "qa", "model", "extra", ""]
ODD_TEXT = [
    "",
    " ",
    "\x00",
    "\u202e",
    "<script>alert(1)</script>",
    "{{ 7*7 }}",
    "'; DROP TABLE runs;--",
    "\U0001f600",
    "e\u0301",
    "\ufeff",
    "x" * 3000,
    "Tallinn\n" * 50,
    "../../etc/passwd",
    "%00",
    "\r\n\r\n",
    "2024-05-15",
    "9999-12-31",
    "2024-02-30",
    "0000-01-01",
    "-1",
    "1e999",
    "NaN",
    CLAIM,
]
# raw JSON tokens no json.dumps writes: the parser must refuse them cleanly
RAW_NUMBERS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999999",
    "-1e400",
    "9" * 5000,
    "12345678901234567890123",
    "1.5",
    "-0",
    "0",
    "1E+2",
    "2e-400",
]
RAW_STRINGS = ['"\\ud800"', '"It is \\ud800 here."', '"\\udfff\\ud800"', '"\\ud83d\\ude00"', '"\\u0000"', '"a\\udc00b"']


@dataclass
class Tally:
    tried: int = 0
    handled: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def record(self, what: str, r: httpx.Response, api: bool) -> None:
        self.tried += 1
        self.by_status[r.status_code] = self.by_status.get(r.status_code, 0) + 1
        problem = None
        if r.status_code >= 500:
            problem = f"{r.status_code}"
        elif r.status_code >= 400 and (api or r.headers.get("content-type", "").startswith("application/json")):
            try:
                body = r.json()
            except ValueError:
                body = None
            if not (
                isinstance(body, dict) and isinstance(body.get("error"), str) and isinstance(body.get("detail"), str)
            ):
                problem = f"{r.status_code} without the error shape: {r.text[:200]!r}"
        if problem:
            self.failures.append(f"{what}: {problem}")
        else:
            self.handled += 1


class Gen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def text(self) -> str:
        r = self.rng
        kind = r.random()
        if kind < 0.4:
            return r.choice(ODD_TEXT)
        if kind < 0.7:
            return "".join(
                chr(r.choice([r.randint(32, 126), r.randint(0x80, 0x2FFF), r.randint(0x10000, 0x10FFFF)]))
                for _ in range(r.randint(0, 40))
            )
        return r.choice(ODD_TEXT) + r.choice(ODD_TEXT)

    def raw_string(self) -> str:
        if self.rng.random() < 0.3:
            return self.rng.choice(RAW_STRINGS)
        return json.dumps(self.text(), ensure_ascii=self.rng.random() < 0.5)

    def raw_value(self, depth: int = 0) -> str:
        r = self.rng
        kind = r.random()
        if depth > 3 or kind < 0.35:
            return self.raw_string()
        if kind < 0.55:
            return r.choice(RAW_NUMBERS + [str(r.randint(-(2**70), 2**70)), repr(r.uniform(-1e6, 1e6))])
        if kind < 0.65:
            return r.choice(["true", "false", "null"])
        if kind < 0.8:
            return "[" + ", ".join(self.raw_value(depth + 1) for _ in range(r.randint(0, 4))) + "]"
        return self.raw_object(depth + 1)

    def image(self) -> str:
        r = self.rng
        parts = {
            '"data"': r.choice(
                [self.raw_string(), '"aGVsbG8="', '"data:image/png;base64,iVBORw0KGgo="', self.raw_value(2)]
            ),
            '"filename"': r.choice([self.raw_string(), '"photo.png"', self.raw_value(2)]),
            '"media_type"': r.choice(['"image/png"', '"text/html"', self.raw_string(), self.raw_value(2)]),
        }
        keep = [f"{k}: {v}" for k, v in parts.items() if r.random() < 0.8]
        return "{" + ", ".join(keep) + "}"

    def raw_object(self, depth: int = 0) -> str:
        r = self.rng
        items = []
        for k in r.sample(KEYS, r.randint(0, 5)):
            if k == "pipeline" and r.random() < 0.7:
                v = json.dumps(r.choice(PIPELINES))
            elif k == "images" and r.random() < 0.7:
                v = "[" + ", ".join(self.image() for _ in range(r.randint(0, 5))) + "]"
            elif k == "claim" and r.random() < 0.3:
                v = json.dumps(CLAIM)
            else:
                v = self.raw_value(depth + 1)
            key = self.raw_string() if k == "extra" else json.dumps(k)
            items.append(f"{key}: {v}")
        return "{" + ", ".join(items) + "}"

    def near_valid(self) -> str:
        """A body that would start a check, with one field (or one image) odd: it gets past the JSON layer to
        the checks of the pipeline, the model, the date, the answer and the images."""
        r = self.rng
        fields = {"claim": json.dumps(CLAIM), "pipeline": json.dumps(r.choice(["qacheck", "direct", "defame"]))}
        if r.random() < 0.3:
            fields = {"question": json.dumps("Where is the Orrin Bridge?"), "answer": json.dumps("In Tallinn.")}
        key = r.choice(KEYS[:-2])
        fields[key] = (
            self.raw_string()
            if r.random() < 0.5
            else "[" + self.image() + "]"
            if key == "images"
            else self.raw_value(2)
        )
        return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in fields.items()) + "}"

    def body(self) -> bytes:
        r = self.rng
        kind = r.random()
        if kind < 0.3:
            text = self.near_valid()
        elif kind < 0.75:
            text = self.raw_object()
        elif kind < 0.85:
            text = self.raw_value()
        elif kind < 0.9:
            text = r.choice(["[" * 3000, "{" * 50 + "}" * 50, '{"claim": "unterminated', "", "{,}", '{"a":1}{'])
        else:
            return bytes(r.randint(0, 255) for _ in range(r.randint(0, 64)))
        return text.encode("utf-8", "surrogatepass")

    def content_type(self) -> str | None:
        return self.rng.choice(
            ["application/json"] * 6
            + [
                "application/json; charset=latin-1",
                "text/plain",
                "application/x-www-form-urlencoded",
                None,
                "application/merge-patch+json",
                "multipart/form-data",
            ]
        )

    def number_text(self) -> str:
        return self.rng.choice(
            [
                "0",
                "1",
                "-1",
                "20",
                "100",
                "101",
                "9223372036854775807",
                "9223372036854775808",
                str(2**64),
                "1e20",
                "1.5",
                "abc",
                "",
                "NaN",
                "-0",
                "٣",
                "0x10",
                " 5",
                "1_000",
                "9" * 400,
            ]
        )

    def run_id(self, known: list[str]) -> str:
        r = self.rng
        return r.choice(known + ["0123456789abcdef", "%ff%fe", "..", "a" * 300, "%00", "x%2F..%2Fy", "%ed%a0%80"])

    def headers(self) -> dict[str, bytes]:
        r = self.rng
        out: dict[str, bytes] = {}
        for name in r.sample(
            [
                "X-Forwarded-For",
                "Last-Event-ID",
                "Accept",
                "Authorization",
                "Cookie",
                "Origin",
                "X-Real-IP",
                "Forwarded",
                "Accept-Language",
            ],
            r.randint(0, 3),
        ):
            value = r.choice(
                [
                    self.text(),
                    "203.0.113.9",
                    "Bearer " + "x" * 40,
                    "veracity_session=abc",
                    "http://evil.example",
                    "99999999999999999999999",
                    "*/*",
                ]
            )
            out[name] = value.encode("utf-8", "surrogatepass").replace(b"\r", b"").replace(b"\n", b"")
            if (
                not out[name]
                or out[name][:1] in (b" ", b"\t")
                or out[name][-1:] in (b" ", b"\t")
                or b"\x00" in out[name]
            ):
                out[name] = b"x"
        return out


def fuzz_request(client: httpx.Client, gen: Gen, known: list[str], tally: Tally) -> None:
    r = gen.rng
    kind = r.random()
    headers = gen.headers()
    if kind < 0.45:  # a check through the API
        ctype = gen.content_type()
        if ctype:
            headers["content-type"] = ctype.encode()
        resp = client.post("/api/checks", content=gen.body(), headers=headers)
        tally.record("POST /api/checks", resp, api=True)
        if resp.status_code == 202:
            known.append(resp.json()["id"])
        return
    if kind < 0.55:  # the page's form
        data = {
            k: gen.text()
            for k in r.sample(
                ["claim", "pipeline", "qa", "model", "mode", "question", "answer", "date"], r.randint(0, 6)
            )
        }
        if "mode" in data and r.random() < 0.5:
            data["mode"] = r.choice(["claim", "answer"])
        if "pipeline" in data and r.random() < 0.5:
            data["pipeline"] = r.choice(PIPELINES)
        files = (
            {
                "image": (
                    gen.text()[:60] or "x.png",
                    bytes(r.randint(0, 255) for _ in range(r.randint(0, 40))),
                    "image/png",
                )
            }
            if r.random() < 0.3
            else None
        )
        headers.pop("Origin", None)
        resp = client.post(
            "/checks",
            data={k: v.replace("\x00", "") for k, v in data.items()},
            files=files,
            headers=headers,
            follow_redirects=False,
        )
        tally.record("POST /checks", resp, api=False)
        return
    if kind < 0.75:  # lists and pages with odd query parameters
        path = r.choice(
            [
                "/api/checks",
                "/api/checks",
                "/partials/history",
                "/",
                f"/checks/{gen.run_id(known)}",
                f"/checks/{gen.run_id(known)}/panel",
                "/api/pipelines",
                "/api/health",
            ]
        )
        params = {k: gen.number_text() for k in r.sample(["offset", "limit", "calls", "x"], r.randint(0, 3))}
        resp = client.get(path, params=params, headers=headers)
        tally.record(f"GET {path} {params}", resp, api=path.startswith("/api/"))
        return
    if kind < 0.85:  # one run: read it, its images and reports, or delete it
        run_id = gen.run_id(known)
        path = r.choice(
            [
                f"/api/checks/{run_id}",
                f"/api/checks/{run_id}/images/{gen.number_text()}",
                f"/api/checks/{run_id}/report.{r.choice(['md', 'html', 'json', 'pdf', ''])}",
            ]
        )
        method = "DELETE" if r.random() < 0.1 else "GET"
        resp = client.request(method, path, headers=headers)
        tally.record(f"{method} {path}", resp, api=True)
        if method == "DELETE" and resp.status_code == 204 and run_id in known:
            known.remove(run_id)
        return
    if kind < 0.93:  # the event stream, resumed from an odd Last-Event-ID
        run_id = gen.run_id(known)
        headers["Last-Event-ID"] = gen.number_text().strip().encode() or b"x"
        url = f"/api/checks/{run_id}/events"
        with client.stream("GET", url, headers=headers, timeout=20) as resp:
            if resp.status_code == 200:
                text = "".join(resp.iter_text())
                if "event: done" not in text:
                    tally.failures.append(f"GET {url} ({headers['Last-Event-ID']!r}): the stream ended without done")
            else:
                resp.read()
            tally.record(f"GET {url}", resp, api=True)
        return
    # odd methods and paths
    method = r.choice(["PUT", "PATCH", "OPTIONS", "DELETE", "POST", "GET"])
    path = r.choice(
        [
            "/api/checks/%ff",
            "/api/%00",
            "/api/checks/" + "x" * 2000,
            "/static/../app.py",
            "/static/%2e%2e/app.py",
            "/api/checks/x/report.",
            "/api/pipelines",
            "/login?next=//evil",
            "/api/checks/x/images/-1",
            "/api/checks/x/images/99999999999999999999",
        ]
    )
    resp = client.request(method, path, headers=headers, content=gen.body() if method in ("POST", "PUT") else None)
    tally.record(f"{method} {path}", resp, api=path.startswith("/api/"))


@pytest.fixture(scope="module")
def fuzz_server(server_factory):
    model = write_rules(server_factory.base / "rules-fuzz.json")
    return server_factory(
        [
            "--model",
            model,
            "--rate-limit",
            "0",
            "--max-queue",
            "10000",
            "--max-claim-chars",
            "500",
            "--max-images",
            "3",
        ],
        name="fuzz",
    )


def test_api_fuzz_never_fails(fuzz_server):
    rng = random.Random(SEED)
    gen = Gen(rng)
    tally = Tally()
    started = time.monotonic()
    with httpx.Client(base_url=fuzz_server.url, timeout=30) as client:
        known = [start_check(client)]
        wait_for(client, known[0], finished)
        while tally.tried < REQUESTS and time.monotonic() - started < TIME_BUDGET:
            try:
                fuzz_request(client, gen, known, tally)
            except httpx.HTTPError as e:  # the server closed the connection or never answered
                tally.tried += 1
                tally.failures.append(f"transport error: {type(e).__name__}: {e}")
        # healthy afterwards: it answers, and a check still runs to the end
        health = client.get("/api/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        run_id = start_check(client)
        events = read_sse(client, f"/api/checks/{run_id}/events")
        assert events[-1][2]["status"] == "done"
        assert client.get("/api/checks", params={"limit": 100}).status_code == 200
    seconds = time.monotonic() - started
    print(
        f"\nAPI fuzz (seed {SEED}): {tally.tried} requests tried, {tally.handled} handled, "
        f"{len(tally.failures)} failed in {seconds:.1f} s; statuses {dict(sorted(tally.by_status.items()))}"
    )
    assert fuzz_server.proc.poll() is None, "the server died"
    assert not tally.failures, "\n".join(tally.failures[:10]) + "\n" + "\n".join(fuzz_server.log[-60:])
    assert tally.tried >= min(REQUESTS, 200), f"only {tally.tried} requests in {TIME_BUDGET} s"
    log = "\n".join(fuzz_server.log)
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
