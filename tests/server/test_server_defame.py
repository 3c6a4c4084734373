"""DEFAME through the HTTP API and the page's plain form: a claim with images and a date, against the real
server (`veracity serve` on 127.0.0.1, a subprocess, real HTTP) with the scripted backend.

The server takes at most 2 images of at most 50 kB each, so the limits are cheap to reach.
"""

from __future__ import annotations

import base64
import json
import os
import re
from datetime import date, timedelta

import httpx
import pytest
from conftest import write_rules
from test_server_api import finished, read_sse, wait_for
from worlds import DEFAME_RULES, jpeg_bytes, png_bytes

CLAIM = "This photo shows the Orrin Bridge in Tallinn in May 2024."
MAX_IMAGE_BYTES = 50_000


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def images_dir(srv) -> os.PathLike:
    return srv.db.with_name(f"{srv.db.stem}-images")


@pytest.fixture(scope="module")
def dsrv(server_factory):
    model = write_rules(server_factory.base / "defame-rules.json", DEFAME_RULES)
    return server_factory(
        ["--model", model, "--rate-limit", "0", "--max-images", "2", "--max-image-mb", str(MAX_IMAGE_BYTES / 1e6)],
        name="defame",
    )


@pytest.fixture(scope="module")
def api(dsrv):
    with httpx.Client(base_url=dsrv.url, timeout=30) as client:
        yield client


def start(client, **body) -> httpx.Response:
    return client.post("/api/checks", json={"claim": CLAIM, "pipeline": "defame", **body})


# -- a check with an image and a date ------------------------------------------------------------------


def test_defame_check_with_an_image_and_a_date(api, dsrv):
    png = png_bytes()
    r = start(api, date="2024-05-15", images=[{"data": b64(png), "filename": "bridge.png"}])
    assert r.status_code == 202, r.text
    accepted = r.json()
    run_id = accepted["id"]
    assert accepted["date"] == "2024-05-15"
    [im] = accepted["images"]
    assert im["index"] == 1 and im["filename"] == "bridge.png" and im["media_type"] == "image/png"
    assert (im["width"], im["height"], im["bytes"]) == (48, 32, len(png))
    assert im["url"] == f"/api/checks/{run_id}/images/1"

    # the steps stream as DEFAME emits them
    events = read_sse(api, f"/api/checks/{run_id}/events")
    stages = [d["stage"] for kind, _, d in events if kind == "step"]
    for st in ("images", "plan", "action", "summary", "develop", "judge", "justify"):
        assert st in stages, st
    assert events[-1][0] == "done" and events[-1][2]["status"] == "done"
    assert events[-1][2]["verdict"]["label"] == "Refuted"

    run = api.get(f"/api/checks/{run_id}").json()
    assert run["date"] == "2024-05-15" and run["image_count"] == 1
    assert run["images"] == accepted["images"]
    action = next(s for s in run["steps"] if s["stage"] == "action")
    assert action["action"] == "image_metadata(<image:1>)" and "PNG image, 48x32" in action["results"][0]["text"]
    listed = next(x for x in api.get("/api/checks").json()["items"] if x["id"] == run_id)
    assert listed["date"] == "2024-05-15" and listed["image_count"] == 1

    # the image itself, as uploaded, and stored once by content hash beside the database
    got = api.get(im["url"])
    assert got.status_code == 200 and got.content == png and got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff" and "bridge.png" in got.headers["content-disposition"]
    assert [p.name for p in images_dir(dsrv).iterdir()] == [f"{im['sha256'][:16]}.png"]
    assert api.get(f"/api/checks/{run_id}/images/2").status_code == 404

    # the reports: HTML embeds the image, Markdown links it on the server, JSON describes it
    html = api.get(f"/api/checks/{run_id}/report.html").text
    assert "data:image/png;base64," in html and str(images_dir(dsrv)) not in html
    assert "Claim date: 2024-05-15" in html
    md = api.get(f"/api/checks/{run_id}/report.md").text
    assert f"]({dsrv.url}/api/checks/{run_id}/images/1)" in md and str(images_dir(dsrv)) not in md
    assert "Claim date: 2024-05-15" in md and "### Evidence from `image_metadata(<image:1>)`" in md
    doc = api.get(f"/api/checks/{run_id}/report.json").json()
    assert doc["claim"]["date"] == "2024-05-15" and doc["images"][0]["url"] == dsrv.url + im["url"]

    # the run's page: the date, the thumbnail, and DEFAME's steps in words
    page = api.get(f"/checks/{run_id}").text
    assert f'<img src="/api/checks/{run_id}/images/1" alt="Claim image 1: bridge.png"' in page
    assert "Claim date</span> 2024-05-15" in page
    assert "Round 1 · Plan" in page and "<code>image_metadata(image 1)</code>" in page
    assert "A PNG image with no EXIF metadata" in page and "Judgement · round 1" in page
    assert '<a href="https://example.org/orrin" rel="noopener noreferrer nofollow">Orrin Bridge facts</a>' in page
    assert 'value="2024-05-15"' in page  # the form, ready to check again with the same date


def test_images_as_data_urls_and_jpeg(api):
    jpg = jpeg_bytes()
    r = start(
        api,
        images=[
            {"data": "data:image/jpeg;base64," + b64(jpg)},
            {"data": b64(png_bytes(color="navy")), "media_type": "image/png"},
        ],
    )
    assert r.status_code == 202, r.text
    images = r.json()["images"]
    assert [i["media_type"] for i in images] == ["image/jpeg", "image/png"] and images[0]["filename"] is None
    run = wait_for(api, r.json()["id"], finished)
    assert run["status"] == "done" and run["date"] is None
    assert api.get(images[0]["url"]).content == jpg


# -- what clients get wrong ----------------------------------------------------------------------------


def _truncated_png() -> bytes:
    data = png_bytes((64, 64), "red")
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    "body,status,code,says",
    [
        ({"images": [{"data": b64(_truncated_png()), "filename": "cut.png"}]}, 400, "image_broken", "cut.png"),
        (
            {"images": [{"data": b64(b"\x89PNG\r\n\x1a\n" + os.urandom(2 * MAX_IMAGE_BYTES))}]},
            413,
            "image_too_large",
            "100.0 kB; the limit is 50.0 kB",
        ),
        (
            {"images": [{"data": b64(b"%PDF-1.7 not a picture"), "filename": "doc.pdf"}]},
            415,
            "image_type",
            "image 1 (doc.pdf): the upload is not a JPEG, PNG, GIF or WebP image",
        ),
        (
            {"images": [{"data": b64(png_bytes()), "media_type": "image/jpeg"}]},
            415,
            "image_type",
            "says it is image/jpeg but its content is PNG",
        ),
        (
            {"images": [{"data": "data:image/png;base64," + b64(png_bytes())[:-8] + "!!!!"}]},
            400,
            "image_encoding",
            "not valid base64",
        ),
        ({"images": [{"data": ""}]}, 400, "image_empty", "empty"),
        (
            {"images": [{"data": b64(png_bytes(color=c))} for c in ("red", "green", "blue")]},
            400,
            "too_many_images",
            "at most 2",
        ),
        (
            {"pipeline": "direct", "images": [{"data": b64(png_bytes())}]},
            400,
            "images_not_accepted",
            "'direct' does not look at images",
        ),
        ({"date": "15/05/2024"}, 400, "invalid_date", "YYYY-MM-DD"),
        ({"date": "2024-02-30"}, 400, "invalid_date", "does not exist"),
        ({"date": (date.today() + timedelta(days=3)).isoformat()}, 400, "invalid_date", "in the future"),
        ({"date": 20240515}, 422, "invalid_request", "date"),
        ({"images": "photo.png"}, 422, "invalid_request", "images"),
    ],
)
def test_bad_images_and_dates_say_what_to_fix(api, dsrv, body, status, code, says):
    before = sorted(p.name for p in images_dir(dsrv).glob("*")) if images_dir(dsrv).exists() else []
    r = start(api, **body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == code and says in r.json()["detail"], r.json()
    after = sorted(p.name for p in images_dir(dsrv).glob("*")) if images_dir(dsrv).exists() else []
    assert after == before  # nothing kept from a refused request


def test_answer_check_takes_no_images_or_date(api):
    r = api.post("/api/checks", json={"question": "Q?", "answer": "A.", "images": [{"data": b64(png_bytes())}]})
    assert r.status_code == 400 and r.json()["error"] == "images_not_accepted"
    r = api.post("/api/checks", json={"question": "Q?", "answer": "A.", "date": "2024-05-15"})
    assert r.status_code == 400 and r.json()["error"] == "date_not_applicable"


def test_a_body_past_the_upload_limit_is_refused_before_it_is_read(api):
    huge = {"claim": CLAIM, "pipeline": "defame", "images": [{"data": "A" * 1_500_000}]}
    r = api.post("/api/checks", json=huge)
    assert r.status_code == 413 and r.json()["error"] == "body_too_large" and "images" in r.json()["detail"]

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"claim": "x", "images": [{"data": "'
        for _ in range(40):
            yield b"A" * 65536
        yield b'"}]}'

    r = api.post("/api/checks", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "body_too_large"
    # other routes keep the ordinary limit
    r = api.post("/login", content=b"x" * 1_100_000, headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413


# -- deleting, and what is kept ------------------------------------------------------------------------


def test_deleting_a_run_deletes_its_images_unless_another_run_uses_them(api, dsrv):
    png = png_bytes(color="purple")
    ids = [start(api, images=[{"data": b64(png)}]).json()["id"] for _ in range(2)]
    for run_id in ids:
        wait_for(api, run_id, finished)
    sha = api.get(f"/api/checks/{ids[0]}").json()["images"][0]["sha256"]
    stored = images_dir(dsrv) / f"{sha[:16]}.png"
    assert stored.is_file()
    assert api.delete(f"/api/checks/{ids[0]}").status_code == 204
    assert stored.is_file()  # the second run still shows it
    assert api.get(f"/api/checks/{ids[1]}/images/1").content == png
    assert api.delete(f"/api/checks/{ids[1]}").status_code == 204
    assert not stored.exists()
    assert api.get(f"/api/checks/{ids[1]}/images/1").status_code == 404


def test_images_no_run_uses_are_swept_at_startup(server_factory):
    db = server_factory.base / "sweep.sqlite"
    folder = db.with_name("sweep-images")
    folder.mkdir()
    orphan = folder / "0123456789abcdef.png"  # saved, but its run was never queued (a crash in between)
    orphan.write_bytes(png_bytes())
    other = folder / "notes.txt"  # not one of ours: left alone
    other.write_text("keep")
    srv = server_factory(
        ["--model", write_rules(server_factory.base / "sweep.json", DEFAME_RULES), "--rate-limit", "0"],
        db=db,
        name="sweep",
    )
    srv.stop()
    assert not orphan.exists() and other.exists()


# -- the page's plain form (no JavaScript): multipart ---------------------------------------------------


def test_the_plain_form_sends_images_and_a_date(api):
    png = png_bytes(color="olive")
    r = api.post(
        "/checks",
        data={"claim": CLAIM, "pipeline": "defame", "date": "2024-05-15", "model": ""},
        files=[("image", ("olive.png", png, "image/png"))],
    )
    assert r.status_code == 303, r.text
    run = wait_for(api, r.headers["location"].rsplit("/", 1)[1], finished)
    assert run["status"] == "done" and run["date"] == "2024-05-15"
    assert run["images"][0]["filename"] == "olive.png" and api.get(run["images"][0]["url"]).content == png

    # an empty file input sends a nameless, empty part: not an image, so not refused
    r = api.post(
        "/checks", data={"claim": CLAIM, "pipeline": "direct"}, files=[("image", ("", b"", "application/octet-stream"))]
    )
    assert r.status_code == 303, r.text

    # errors come back as the form again, with what was typed
    r = api.post(
        "/checks",
        data={"claim": CLAIM, "pipeline": "direct", "date": "2024-05-15"},
        files=[("image", ("olive.png", png, "image/png"))],
    )
    assert r.status_code == 400 and "does not look at images" in r.text and "<form" in r.text
    r = api.post("/checks", data={"claim": CLAIM, "pipeline": "defame", "date": "yesterday"})
    assert r.status_code == 400 and "YYYY-MM-DD" in r.text
    r = api.post(
        "/checks",
        data={"claim": CLAIM, "pipeline": "defame"},
        files=[("image", ("cut.png", _truncated_png(), "image/png"))],
    )
    assert r.status_code == 400 and "cut.png" in r.text


def test_page_offers_images_and_date_for_defame(api):
    page = api.get("/").text
    assert 'enctype="multipart/form-data"' in page
    assert re.search(r'<div id="image-field" class="row two" hidden>', page)  # qacheck is the default
    assert '<input type="file" id="image-nojs" name="image"' in page  # inside <noscript>
    data = json.loads(
        re.search(r'<script type="application/json" id="catalog-data">(.*?)</script>', page, re.S).group(1)
    )
    by = {p["name"]: p for p in data["pipelines"]}
    assert by["defame"]["accepts_images"] and by["defame"]["available"] and not by["qacheck"]["accepts_images"]
    assert data["max_images"] == 2 and data["max_image_bytes"] == MAX_IMAGE_BYTES


def test_openapi_documents_images_and_date(api):
    schema = api.get("/openapi.json").json()
    check_in = schema["components"]["schemas"]["CheckIn"]["properties"]
    assert "YYYY-MM-DD" in check_in["date"]["description"]
    assert "ImageIn" in json.dumps(check_in["images"])
    image_in = schema["components"]["schemas"]["ImageIn"]
    assert "base64" in image_in["properties"]["data"]["description"] and image_in["required"] == ["data"]
    post = schema["paths"]["/api/checks"]["post"]
    assert {"400", "413", "415"} <= set(post["responses"]) and "image_broken" in post["description"]
    assert "/api/checks/{run_id}/images/{index}" in schema["paths"]


def test_images_need_the_token_like_the_rest_of_the_api(server_factory):
    token = "defame-token-0123456789abcdef"
    srv = server_factory(
        ["--model", write_rules(server_factory.base / "auth-defame.json", DEFAME_RULES), "--rate-limit", "0"],
        env_extra={"VERACITY_API_TOKEN": token},
        name="defame-auth",
    )
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        r = c.post(
            "/api/checks",
            headers=auth,
            json={"claim": CLAIM, "pipeline": "defame", "images": [{"data": b64(png_bytes())}]},
        )
        assert r.status_code == 202, r.text
        url = r.json()["images"][0]["url"]
        assert c.get(url).status_code == 401
        assert c.get(url, headers=auth).status_code == 200


# -- units: dates, base64, the page's fold of DEFAME's steps ---------------------------------------------


def test_check_date():
    from veracity.server.errors import ApiError
    from veracity.server.limits import check_date

    assert check_date(None) is None and check_date("  ") is None
    assert check_date(" 2024-05-15 ") == "2024-05-15"
    for bad in ("2024-5-15", "20240515", "2024-W20-3", "2024-13-01", "2024-05-15T10:00", "9999-01-01"):
        with pytest.raises(ApiError) as e:
            check_date(bad)
        assert e.value.code == "invalid_date" and e.value.status == 400, bad


def test_upload_from_base64():
    from veracity.server.errors import ApiError
    from veracity.server.uploads import upload_from_base64

    png = png_bytes()
    text = b64(png)
    wrapped = "\n".join(text[i : i + 76] for i in range(0, len(text), 76))  # MIME line breaks
    assert upload_from_base64(wrapped, "a.png", None, 1, 10_000).data == png
    assert upload_from_base64(text.rstrip("="), None, None, 1, 10_000).data == png  # padding left out
    urlsafe = base64.urlsafe_b64encode(png).decode()
    assert upload_from_base64(urlsafe, None, None, 1, 10_000).data == png
    up = upload_from_base64("data:image/jpg;base64," + text, "../../etc/x.png", None, 1, 10_000)
    assert up.declared == "image/jpg" and up.filename == "x.png"  # the last part of a path only
    with pytest.raises(ApiError) as e:
        upload_from_base64("data:image/png," + text, None, None, 2, 10_000)
    assert e.value.code == "image_encoding" and e.value.detail.startswith("image 2:")


def test_defame_steps_fold_into_cards():
    from veracity.server.views import link_parts, run_view

    action = 'web_search("bridge")'
    steps = [
        {"stage": "images", "refs": ["<image:1>"], "sources": ["/x.png"], "model_sees_images": False},
        {
            "stage": "plan",
            "round": 1,
            "actions": [action],
            "fallback": False,
            "rejected": ["fly()"],
            "unavailable": {"geolocate": "no weights"},
        },
        {
            "stage": "action",
            "round": 1,
            "action": action,
            "notes": ["dropped 1 result"],
            "error": None,
            "results": [
                {"source": "A", "url": "https://a.example/1", "text": "a"},
                {"source": "B", "url": "javascript:alert(1)", "text": "b"},
            ],
        },
        {
            "stage": "summary",
            "round": 1,
            "action": action,
            "source": "A",
            "url": "https://a.example/1",
            "summary": "A says so.",
        },
        {
            "stage": "summary",
            "round": 1,
            "action": action,
            "source": "B",
            "url": "javascript:alert(1)",
            "summary": None,
        },
        {"stage": "develop", "round": 1, "text": "Thinking."},
        {"stage": "judge", "round": 1, "label": "Not Enough Information", "confidence": 0.4, "final": False},
        {"stage": "plan", "round": 2, "actions": [], "unavailable": {"geolocate": "no weights"}},
        {"stage": "judge", "round": 2, "label": "Refuted", "confidence": 0.9, "final": True},
        {"stage": "justify", "text": "See [A](https://a.example/1).", "sources": ["[A](https://a.example/1)"] * 2},
    ]
    items, _ = run_view(steps)
    assert [i["kind"] for i in items] == ["images", "plan", "action", "develop", "judge", "plan", "judge", "justify"]
    card = items[2]
    assert [(r["summarized"], r["summary"], r["href"]) for r in card["results"]] == [
        (True, "A says so.", "https://a.example/1"),
        (True, None, None),
    ]  # no javascript: link
    assert items[1]["unavailable"] and not items[5]["unavailable"]  # said once, in round 1
    assert items[7]["sources"] == [{"title": "A", "url": "https://a.example/1"}]
    assert link_parts("See [A](https://a.example/1).") == [
        {"text": "See ", "href": None},
        {"text": "A", "href": "https://a.example/1"},
        {"text": ".", "href": None},
    ]
    assert link_parts("[x](javascript:alert(1))") == [{"text": "[x](javascript:alert(1))", "href": None}]


def test_reports_find_the_images_by_file_name_after_the_folder_moved(tmp_path):
    from veracity.server.reports import StoredImage, result_of, to_html, to_markdown

    png = png_bytes(color="gold")
    name = "0123456789abcdef.png"
    (tmp_path / name).write_bytes(png)
    old = f"/data/that/moved/runs-images/{name}"  # where the image was when the run ran
    run = {
        "id": "r1",
        "claim": CLAIM,
        "options": {},
        "result": {
            "claim": {"text": CLAIM, "images": [old], "date": "2024-05-15"},
            "pipeline": "defame",
            "model": "m",
            "verdict": {"label": "Refuted", "rationale": "No."},
            "usage": {},
            "seconds": 1.0,
        },
    }
    steps = [
        {"stage": "images", "refs": ["<image:1>"], "sources": [old], "model_sees_images": True},
        {"stage": "plan", "round": 1, "actions": []},
        {"stage": "judge", "round": 1, "label": "Refuted", "confidence": None},
    ]
    result = result_of(run, steps)
    here = {name: StoredImage(tmp_path / name, "http://srv/api/checks/r1/images/1", "image/png")}
    md = to_markdown(run, result, images=here)
    assert "](http://srv/api/checks/r1/images/1)" in md and "/data/that/moved" not in md
    page = to_html(run, result, images=here)
    assert f'<img src="data:image/png;base64,{b64(png)}"' in page and "/data/that/moved" not in page
    gone = {name: StoredImage(tmp_path / "nothing-here.png", "http://srv/api/checks/r1/images/1", "image/png")}
    assert '<img src="http://srv/api/checks/r1/images/1"' in to_html(run, result, images=gone)
