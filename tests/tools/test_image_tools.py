"""DEFAME's image tools through ToolCall and ImageStore: reverse search, metadata, geolocation."""

import io
import json
import sys
import types

import numpy as np
import pytest
from PIL import ExifTags, Image

from veracity.image_files import image_from_bytes
from veracity.images import geolocate
from veracity.images.collection import ImageCollection, LocalImageProvider
from veracity.images.geolocate import NO_WEIGHTS, Geolocator
from veracity.tools.base import ImageStore, ToolCall
from veracity.tools.image_tools import Geolocate, ImageMetadataTool, ReverseSearch
from veracity.web.base import NotSupported, SearchError, SearchHit


def picture(seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)).resize((256, 192), Image.BICUBIC)


def image_file(image: Image.Image, fmt="PNG", **kw):
    buf = io.BytesIO()
    image.save(buf, fmt, **kw)
    return image_from_bytes(buf.getvalue(), f"claim.{fmt.lower()}")


def call_with(*images, claim_date=None) -> ToolCall:
    store = ImageStore()
    for image in images:
        store.add(image)
    return ToolCall(claim_date=claim_date, images=store)


@pytest.fixture
def provider(tmp_path):
    root = tmp_path / "pics"
    root.mkdir()
    records = [
        (
            "old.png",
            {
                "caption": "Tanks in the streets during the 2014 parade rehearsal",
                "page_url": "https://archive.example/2014/parade",
                "page_title": "Parade rehearsal",
                "date": "2014-05-03",
            },
        ),
        (
            "new.png",
            {
                "caption": "Storm damage on the coast",
                "page_url": "https://news.example/storm",
                "page_title": "Storm hits the coast",
                "date": "2024-02-01",
            },
        ),
        (
            "checked.png",
            {
                "caption": "Fact check: this photo is old",
                "page_url": "https://www.snopes.com/fact-check/x",
                "page_title": "Snopes",
            },
        ),
    ]
    for seed, (name, fields) in enumerate(records, start=1):
        picture(seed).save(root / name)
        (root / name).with_suffix(".json").write_text(json.dumps(fields))
    return LocalImageProvider(ImageCollection.build(root, tmp_path / "coll"))


def test_reverse_search_turns_matches_into_evidence(provider):
    tool = ReverseSearch(provider, k=3)
    out = tool.run("<image:1>", call_with(image_file(picture(1).resize((180, 135)), "JPEG", quality=70)))
    assert out.error is None and len(out.results) == 1
    ev = out.results[0]
    assert ev.text.startswith("Tanks in the streets during the 2014 parade rehearsal")
    assert "Found on Parade rehearsal (https://archive.example/2014/parade)." in ev.text
    assert "near-identical" in ev.text
    assert ev.source == "Parade rehearsal" and ev.url == "https://archive.example/2014/parade"
    assert ev.date == "2014-05-03" and ev.images == [str(provider.collection.root / "old.png")]
    assert out.action.render() == "reverse_search(<image:1>)"


def test_reverse_search_applies_the_claim_date_cut_off(provider):
    tool = ReverseSearch(provider)
    query = image_file(picture(2), "JPEG", quality=80)
    assert len(tool.run("<image:1>", call_with(query)).results) == 1
    out = tool.run("<image:1>", call_with(query, claim_date="2020-01-01"))
    assert out.results == [] and out.error is None
    assert any("after the claim date 2020-01-01" in note for note in out.notes)


def test_reverse_search_drops_excluded_domains(provider):
    query = image_file(picture(3))
    out = ReverseSearch(provider).run("<image:1>", call_with(query))
    assert out.results == [] and any("excluded domains (snopes.com)" in n for n in out.notes)
    kept = ReverseSearch(provider, excluded=()).run("<image:1>", call_with(query))
    assert "exact copy" in kept.results[0].text or "near-identical" in kept.results[0].text


def test_reverse_search_with_no_match_says_so(provider):
    out = ReverseSearch(provider).run("<image:1>", call_with(image_file(picture(50))))
    assert out.results == [] and out.error is None and out.notes


def test_bad_image_reference(provider):
    call = call_with(image_file(picture(1)))
    for tool in (ReverseSearch(provider), ImageMetadataTool(), Geolocate(Geolocator(None))):
        out = tool.run("<image:4>", call)
        assert out.results == [] and "'<image:4>' is not an image of this fact-check (images: <image:1>)" == out.error


class FailingProvider:
    name = "broken"

    def __init__(self, exc):
        self.exc = exc

    def reverse(self, image, k):
        raise self.exc


@pytest.mark.parametrize(
    "exc,expected",
    [
        (
            NotSupported("SearXNG has no reverse image search"),
            "the broken search provider has no reverse image search (SearXNG",
        ),
        (SearchError("search provider serper: HTTP 403 (bad key)"), "HTTP 403 (bad key)"),
    ],
)
def test_provider_failures_are_errors_not_exceptions(exc, expected):
    out = ReverseSearch(FailingProvider(exc)).run("<image:1>", call_with(image_file(picture(1))))
    assert expected in out.error and out.results == []


class ListProvider:
    name = "fake-lens"

    def reverse(self, image, k):
        self.asked = k
        return [
            SearchHit(
                title=f"Page {i}",
                url=f"https://site{i}.example/p",
                snippet=f"snippet {i}",
                date="2010-01-01",
                image_url=f"https://img.example/{i}.jpg",
            )
            for i in range(10)
        ]


def test_web_provider_hits_are_capped_at_k():
    provider = ListProvider()
    out = ReverseSearch(provider, k=2).run("<image:1>", call_with(image_file(picture(1))))
    assert provider.asked == 6  # 2k + 2, so that some survive the filters
    assert [e.source for e in out.results] == ["Page 0", "Page 1"]
    assert out.results[0].text == "snippet 0\nFound on Page 0 (https://site0.example/p)."
    assert out.results[0].images == ["https://img.example/0.jpg"]


def test_image_metadata_tool():
    exif = Image.Exif()
    exif[ExifTags.Base.Make], exif[ExifTags.Base.Model] = "Apple", "iPhone 12"
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal] = "2021:07:04 18:30:00"
    photo = image_file(picture(1), "JPEG", exif=exif)
    plain = image_file(picture(2))
    call = call_with(plain, photo)
    out = ImageMetadataTool().run("<image:2>", call)
    assert out.error is None and len(out.results) == 1
    assert out.results[0].source == "EXIF metadata of <image:2>"
    assert "Camera: Apple iPhone 12." in out.results[0].text and "2021-07-04T18:30:00" in out.results[0].text
    stripped = ImageMetadataTool().run("<image:1>", call).results[0].text
    assert "No EXIF metadata (often stripped by social media; absence proves nothing)." in stripped


def test_tool_descriptions_for_the_planner(provider):
    for tool in (ReverseSearch(provider), ImageMetadataTool(), Geolocate(Geolocator(None))):
        assert tool.takes_image and tool.usage() == f"{tool.name}(<image:k>)"
        assert 60 < len(tool.description()) < 400 and "\n" not in tool.description()
    assert ReverseSearch(provider).unavailable() is None and ImageMetadataTool().unavailable() is None


# --------------------------------------------------------------------------- geolocation


def test_geolocate_without_weights_is_unavailable():
    tool = Geolocate(Geolocator.from_config(None))
    assert tool.unavailable() == NO_WEIGHTS
    assert tool.unavailable() == (
        "geolocation needs local GeoCLIP/CLIP weights (set defame.geoclip_weights); none configured"
    )
    out = tool.run("<image:1>", call_with(image_file(picture(1))))
    assert out.error == NO_WEIGHTS and out.results == []


def test_geolocate_without_the_package(tmp_path, monkeypatch):
    monkeypatch.setattr(geolocate, "_geoclip_installed", lambda: False)
    reason = Geolocate(Geolocator.from_config(str(tmp_path))).unavailable()
    assert "geoclip package" in reason and "pip install" in reason


def fake_geoclip(monkeypatch, load):
    module = types.ModuleType("geoclip")
    module.GeoCLIP = type("GeoCLIP", (), {"from_pretrained": staticmethod(load)})
    monkeypatch.setitem(sys.modules, "geoclip", module)


@pytest.fixture
def release(tmp_path):
    folder = tmp_path / "geoclip-release"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "geoclip-geolocation", "format_version": 1}')
    (folder / "model.safetensors").write_bytes(b"")
    return folder


def test_geolocate_checks_the_weights_folder(tmp_path, monkeypatch):
    fake_geoclip(monkeypatch, lambda *a, **k: pytest.fail("must not load"))
    missing = Geolocator(str(tmp_path / "nowhere")).unavailable()
    assert "does not exist" in missing and "defame.geoclip_weights" in missing
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    assert "missing model.safetensors" in Geolocator(str(tmp_path / "half")).unavailable()


def test_geolocate_runs_geoclip_offline(release, monkeypatch):
    import torch

    loads = []

    class Model:
        def predict(self, image_path, top_k):
            assert Image.open(image_path).size == (256, 192)  # GeoCLIP opens what it is given
            gps = torch.tensor([[48.8584, 2.2945], [45.764, 4.8357], [51.5072, -0.1276]])[:top_k]
            return gps, torch.tensor([0.61, 0.22, 0.05])[:top_k]

    def load(path, **kw):
        loads.append((path, kw))
        return Model()

    fake_geoclip(monkeypatch, load)
    tool = Geolocate(Geolocator.from_config(str(release)), top_k=3)
    assert tool.unavailable() is None
    call = call_with(image_file(picture(1)))
    out = tool.run("<image:1>", call)
    assert out.error is None
    assert loads == [(str(release), {"local_files_only": True, "device": "cpu"})]
    text = out.results[0].text
    assert out.results[0].source == "GeoCLIP geolocation of <image:1>"
    assert "1. 48.8584, 2.2945; 61.0%" in text and "3. 51.5072, -0.1276; 5.0%" in text
    tool.run("<image:1>", call)
    assert len(loads) == 1  # loaded once
    guesses = tool.geolocator.predict(call.images.get("<image:1>"), top_k=2)
    lat, lon, prob = guesses[0]
    assert (lat, lon) == pytest.approx((48.8584, 2.2945)) and prob == pytest.approx(0.61)


def test_place_names_come_only_from_an_offline_geocoder(monkeypatch):
    monkeypatch.setitem(sys.modules, "reverse_geocoder", None)  # not installed
    assert geolocate.place_names([(48.85, 2.29)]) == [None]
    fake = types.ModuleType("reverse_geocoder")
    fake.search = lambda coords, mode, verbose: [
        {"name": "Paris", "admin1": "Ile-de-France", "cc": "FR"} for _ in coords
    ]
    monkeypatch.setitem(sys.modules, "reverse_geocoder", fake)
    assert geolocate.place_names([(48.85, 2.29)]) == ["Paris, Ile-de-France, FR"]
    text = Geolocator(None).describe([geolocate.GeoGuess(48.85, 2.29, 0.5)])
    assert "(near Paris, Ile-de-France, FR)" in text


def test_geolocate_never_downloads(release, monkeypatch):
    class LocalEntryNotFoundError(Exception):
        pass

    def load(path, **kw):
        assert kw["local_files_only"] is True
        raise LocalEntryNotFoundError("Cannot find the requested files in the local cache")

    fake_geoclip(monkeypatch, load)
    out = Geolocate(Geolocator(str(release))).run("<image:1>", call_with(image_file(picture(1))))
    assert "not in the local Hugging Face cache" in out.error and "never downloads" in out.error
    assert "\n" not in out.error and out.results == []


def test_geolocate_reports_other_load_failures(release, monkeypatch):
    def load(path, **kw):
        raise ValueError("GeoCLIP checkpoint keys do not match: missing=['logit_scale']")

    fake_geoclip(monkeypatch, load)
    out = Geolocate(Geolocator(str(release))).run("<image:1>", call_with(image_file(picture(1))))
    assert out.error.startswith(f"cannot load GeoCLIP from {release}: GeoCLIP checkpoint keys do not match")


def test_old_geoclip_without_local_loading(release, monkeypatch):
    module = types.ModuleType("geoclip")
    module.GeoCLIP = type("GeoCLIP", (), {})
    monkeypatch.setitem(sys.modules, "geoclip", module)
    out = Geolocate(Geolocator(str(release))).run("<image:1>", call_with(image_file(picture(1))))
    assert "geoclip>=1.3" in out.error


def test_a_match_without_a_page_does_not_repeat_its_caption(tmp_path):
    (tmp_path / "pics").mkdir()
    picture(9).save(tmp_path / "pics" / "a.png")
    (tmp_path / "pics" / "a.txt").write_text("a caption and nothing else")
    provider = LocalImageProvider(ImageCollection.build(tmp_path / "pics"))
    out = ReverseSearch(provider).run("<image:1>", call_with(image_file(picture(9))))
    assert out.results[0].text == (
        "a caption and nothing else\nFound with no page title or URL.\nMatch: an exact copy of the image."
    )
