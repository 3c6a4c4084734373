"""The local image collection: building with captions, reverse search, caption search, persistence, the CLI."""

import argparse
import io
import json
import shutil
import sys

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance

from veracity.cli.images import register
from veracity.errors import IndexError_, UserError
from veracity.image_files import image_from_bytes
from veracity.images.collection import ImageCollection, LocalImageProvider
from veracity.web.base import NotSupported


def picture(seed: int, size=(256, 192)) -> Image.Image:
    """A smooth random picture with a few shapes: distinct seeds give distinct perceptual hashes."""
    rng = np.random.default_rng(seed)
    image = Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)).resize(size, Image.BICUBIC)
    draw = ImageDraw.Draw(image)
    for _ in range(3):
        x, y = int(rng.integers(0, size[0] - 40)), int(rng.integers(0, size[1] - 40))
        w, h = int(rng.integers(20, 80)), int(rng.integers(20, 80))
        draw.ellipse([x, y, x + w, y + h], fill=tuple(int(c) for c in rng.integers(0, 256, 3)))
    return image


def encoded(image: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **kw)
    return buf.getvalue()


def as_file(image: Image.Image, fmt="PNG", name="query", **kw):
    return image_from_bytes(encoded(image, fmt, **kw), name)


@pytest.fixture
def photo_folder(tmp_path):
    """Six pictures captioned in every supported way, one uncaptioned, one broken file."""
    root = tmp_path / "photos"
    (root / "2019").mkdir(parents=True)
    picture(1).save(root / "flood.png")
    (root / "flood.txt").write_text("Flooded streets in Venice after the record high tide of November 2019\n")
    picture(2).save(root / "protest.jpg", quality=90)
    (root / "protest.json").write_text(
        json.dumps(
            {
                "caption": "Crowds march against the pension reform in Paris",
                "page_url": "https://news.example/paris",
                "page_title": "Pension protests fill Paris streets",
                "date": "2023-03-07",
            }
        )
    )
    picture(3).save(root / "2019" / "fire.webp")
    picture(4).save(root / "2019" / "bridge.gif")
    picture(5).save(root / "volcano.jpg")
    picture(6).save(root / "uncaptioned.png")
    (root / "captions.jsonl").write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "image": "2019/fire.webp",
                    "caption": "Wildfire smoke over the Amazon rainforest in August 2019",
                    "page_url": "https://example.org/amazon",
                    "date": "2019-08-20",
                },
                {
                    "image": "2019/bridge.gif",
                    "caption": "The Morandi bridge in Genoa after its collapse",
                    "date": "2018-08-14",
                },
                {"image": "volcano.jpg", "caption": "an old caption that the sidecar replaces"},
            ]
        )
        + "\n"
    )
    (root / "volcano.jpg.json").write_text(
        json.dumps(
            {"caption": "Lava fountains at the Fagradalsfjall volcano in Iceland", "page_title": "Iceland eruption"}
        )
    )
    (root / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not really a JPEG")
    (root / "notes.md").write_text("not an image, not looked at")
    return root


@pytest.fixture
def collection(photo_folder, tmp_path):
    return ImageCollection.build(photo_folder, tmp_path / "coll")


def test_build_reads_images_and_captions(collection, photo_folder, tmp_path):
    assert len(collection) == 6
    by_path = {img.path: img for img in collection.images}
    assert sorted(by_path) == [
        "2019/bridge.gif",
        "2019/fire.webp",
        "flood.png",
        "protest.jpg",
        "uncaptioned.png",
        "volcano.jpg",
    ]
    assert by_path["flood.png"].caption.startswith("Flooded streets in Venice")
    assert by_path["protest.jpg"].page_url == "https://news.example/paris"
    assert by_path["protest.jpg"].date == "2023-03-07"
    assert by_path["2019/fire.webp"].page_url == "https://example.org/amazon"
    assert by_path["volcano.jpg"].caption.startswith("Lava fountains")  # the sidecar wins over the manifest
    assert by_path["uncaptioned.png"].caption is None
    assert all(len(img.phash) == 16 and len(img.dhash) == 16 for img in collection.images)
    assert collection.manifest["images"] == 6 and collection.manifest["captioned"] == 5
    assert collection.manifest["skipped"] == 1
    assert [w for w in collection.warnings if "broken.jpg" in w]
    manifest = json.loads((tmp_path / "coll" / "collection.json").read_text())
    assert manifest["format_version"] == 1 and manifest["images"] == 6 and manifest["created"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".coll")]  # no temporary folder left


@pytest.mark.parametrize("variant", ["resized", "jpeg", "brighter", "all three"])
def test_reverse_search_finds_altered_copies(collection, variant):
    original = picture(2)
    if variant == "resized":
        query = as_file(original.resize((128, 96)))
    elif variant == "jpeg":
        query = as_file(original, "JPEG", quality=55)
    elif variant == "brighter":
        query = as_file(ImageEnhance.Brightness(original).enhance(1.15))
    else:
        query = as_file(ImageEnhance.Brightness(original.resize((400, 300))).enhance(1.1), "JPEG", quality=70)
    matches = collection.reverse(query, k=3)
    assert matches and matches[0].path == "protest.jpg"
    top = matches[0]
    assert top.distance <= 6 and not top.exact
    assert top.caption.startswith("Crowds march") and top.page_title == "Pension protests fill Paris streets"
    assert top.page_url == "https://news.example/paris" and top.date == "2023-03-07"
    assert top.file == collection.root / "protest.jpg" and top.file.is_file()


def test_exact_copies_come_first(collection, photo_folder):
    image = image_from_bytes((photo_folder / "flood.png").read_bytes(), "flood.png")
    first = collection.reverse(image, k=1)[0]
    assert first.path == "flood.png" and first.exact and first.distance == 0


def test_reverse_search_rejects_unrelated_images(collection):
    for seed in (100, 101, 102):
        assert collection.reverse(as_file(picture(seed)), k=3) == []
    assert collection.reverse(as_file(Image.new("RGB", (100, 100), "gray")), k=3) == []


def test_max_distance_bounds_the_matches(collection):
    query = as_file(ImageEnhance.Brightness(picture(5)).enhance(1.2), "JPEG", quality=40)
    distance = collection.reverse(query, k=1)[0].distance
    assert collection.reverse(query, k=1, max_distance=64)[0].path == "volcano.jpg"
    if distance > 0:
        assert collection.reverse(query, k=1, max_distance=distance - 1) == []


def test_caption_search_ranks_the_right_caption_first(collection):
    assert collection.search_captions("Venice flooding high tide")[0].path == "flood.png"
    assert collection.search_captions("pension reform protest Paris")[0].path == "protest.jpg"
    assert collection.search_captions("Iceland eruption lava", k=1)[0].path == "volcano.jpg"
    genoa = collection.search_captions("bridge collapse Genoa", k=5)
    assert genoa[0].path == "2019/bridge.gif" and genoa[0].score > 0 and genoa[0].distance is None
    assert collection.search_captions("zebra xylophone") == []
    with pytest.raises(UserError):
        collection.search_captions("   ")


def test_persistence_round_trip(collection, tmp_path):
    loaded = ImageCollection.load(tmp_path / "coll")
    assert loaded.images == collection.images
    assert loaded.root == collection.root and loaded.path == (tmp_path / "coll").resolve()
    query = as_file(picture(3).resize((200, 150)), "JPEG")
    assert [m.path for m in loaded.reverse(query)] == [m.path for m in collection.reverse(query)]
    assert loaded.search_captions("Amazon wildfire smoke")[0].path == "2019/fire.webp"


def test_rebuilding_replaces_the_collection(photo_folder, tmp_path, collection):
    (photo_folder / "uncaptioned.png").unlink()
    rebuilt = ImageCollection.build(photo_folder, tmp_path / "coll")
    assert len(rebuilt) == 5 and len(ImageCollection.load(tmp_path / "coll")) == 5


def test_load_errors_are_one_line(tmp_path, collection):
    with pytest.raises(IndexError_, match="no image collection at .*veracity images build"):
        ImageCollection.load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexError_, match="not an image collection"):
        ImageCollection.load(tmp_path / "empty")
    coll = tmp_path / "coll"
    records = (coll / "images.jsonl").read_text()
    (coll / "images.jsonl").write_text(records.splitlines()[0] + "\n")
    with pytest.raises(IndexError_, match="says 6 images but images.jsonl has 1"):
        ImageCollection.load(coll)
    (coll / "images.jsonl").write_text("{not json\n" + records)
    with pytest.raises(IndexError_, match="line 1 is unreadable"):
        ImageCollection.load(coll)
    (coll / "images.jsonl").write_text(records)
    ImageCollection.load(coll)
    shutil.rmtree(coll / "captions")
    with pytest.raises(IndexError_, match="caption index captions/ is missing or damaged"):
        ImageCollection.load(coll)
    (coll / "collection.json").write_text("{broken")
    with pytest.raises(IndexError_, match="corrupt image collection .*collection.json is unreadable"):
        ImageCollection.load(coll)


def test_build_errors(tmp_path, photo_folder):
    with pytest.raises(UserError, match="no such folder"):
        ImageCollection.build(tmp_path / "nowhere", tmp_path / "out")
    (tmp_path / "no-images").mkdir()
    with pytest.raises(UserError, match="no usable images"):
        ImageCollection.build(tmp_path / "no-images", tmp_path / "out")
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.tex").write_text("do not delete")
    with pytest.raises(UserError, match="refusing to overwrite"):
        ImageCollection.build(photo_folder, tmp_path / "precious")
    assert (tmp_path / "precious" / "thesis.tex").exists()


def test_caption_problems_are_warnings(tmp_path):
    root = tmp_path / "pics"
    root.mkdir()
    picture(1).save(root / "a.png")
    picture(2).save(root / "b.png")
    (root / "a.json").write_text("[1, 2]")
    (root / "b.json").write_text(json.dumps({"caption": "B", "date": "last Tuesday"}))
    (root / "captions.jsonl").write_text('{"image": "missing.png", "caption": "x"}\nnot json\n')
    coll = ImageCollection.build(root)
    assert coll.path is None  # built in memory only
    text = "\n".join(coll.warnings)
    assert "ignored a.json of a.png" in text
    assert "ignored the date 'last Tuesday' of b.png" in text
    assert "no image missing.png" in text and "line 2" in text
    assert {img.path: img.date for img in coll.images} == {"a.png": None, "b.png": None}


def test_output_folder_inside_the_image_folder_is_not_indexed(photo_folder):
    coll = ImageCollection.build(photo_folder, photo_folder / "index")
    again = ImageCollection.build(photo_folder, photo_folder / "index")
    assert len(coll) == len(again) == 6


def test_collection_without_captions(tmp_path):
    root = tmp_path / "pics"
    root.mkdir()
    picture(1).save(root / "a.png")
    ImageCollection.build(root, tmp_path / "c")
    coll = ImageCollection.load(tmp_path / "c")
    assert coll.search_captions("anything") == []
    assert coll.reverse(as_file(picture(1)))[0].path == "a.png"


# --------------------------------------------------------------------------- the provider


def test_local_image_provider(collection, tmp_path):
    provider = LocalImageProvider(tmp_path / "coll")
    assert provider.name == "local-images"
    hits = provider.images("Paris pension protest", 2)
    assert hits[0].title == "Pension protests fill Paris streets"
    assert hits[0].url == "https://news.example/paris" and hits[0].date == "2023-03-07"
    assert hits[0].text.startswith("Crowds march") and hits[0].image_url == str(collection.root / "protest.jpg")
    flood = provider.images("Venice tide", 1)[0]
    assert flood.title.startswith("Flooded streets") and flood.url is None  # no page title: the caption
    found = provider.reverse(as_file(picture(4).resize((300, 225)), "JPEG"), 3)
    assert found[0].doc_id == "2019/bridge.gif" and found[0].extra["distance"] <= 6
    assert found[0].title.startswith("The Morandi bridge") and found[0].image_url.endswith("bridge.gif")
    untitled = provider.reverse(as_file(picture(6)), 1)[0]
    assert untitled.title == "uncaptioned.png" and untitled.text is None
    with pytest.raises(NotSupported):
        provider.web("anything", 3)


# --------------------------------------------------------------------------- the command line


def run_cli(argv: list[str]) -> int:
    """`veracity images ...` through the main CLI once it is wired in, else through the images parser alone."""
    from veracity import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "images" in sub.choices:
        return cli.main(argv)
    parser = argparse.ArgumentParser(prog="veracity")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UserError as e:
        print(f"veracity: error: {e}", file=sys.stderr)
        return 2


def test_cli_build_and_search(photo_folder, tmp_path, capsys):
    out = tmp_path / "cli-coll"
    assert run_cli(["images", "build", str(photo_folder), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "Indexed 6 images (5 with captions)" in captured.out
    assert "broken.jpg" in captured.err

    assert run_cli(["images", "search", str(out), "--query", "Venice high tide"]) == 0
    text = capsys.readouterr().out
    assert text.lstrip().startswith("1. flood.png") and "caption: Flooded streets in Venice" in text

    query = tmp_path / "copy.jpg"
    picture(2).resize((120, 90)).save(query, quality=60)
    assert run_cli(["images", "search", str(out), "--image", str(query), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results[0]["path"] == "protest.jpg" and results[0]["distance"] <= 6
    assert results[0]["page_url"] == "https://news.example/paris"

    picture(77).save(tmp_path / "other.png")
    assert run_cli(["images", "search", str(out), "--image", str(tmp_path / "other.png")]) == 0
    assert "No matching images." in capsys.readouterr().out


def test_cli_errors(tmp_path, capsys):
    assert run_cli(["images", "search", str(tmp_path / "nothing"), "--query", "x"]) == 2
    assert "veracity: error: no image collection at" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_cli(["images", "search", str(tmp_path), "--query", "x", "--image", "y.png"])
