"""Loading and checking images: formats, data URLs, fetchers, and one-line errors for every bad image."""

import base64
import hashlib
import io
import warnings

import pytest
from PIL import Image

from veracity.errors import UserError
from veracity.image_files import FORMATS, ImageError, image_from_bytes, load_image


def encode(fmt: str, size=(64, 48), color=(200, 30, 30), **kw) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, fmt, **kw)
    return buf.getvalue()


def error_of(fn, *args, **kw) -> str:
    with pytest.raises(ImageError) as info:
        fn(*args, **kw)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP", "BMP"])
def test_load_supported_formats_from_a_path(tmp_path, fmt):
    data = encode(fmt)
    path = tmp_path / f"picture.{FORMATS[fmt][1]}"
    path.write_bytes(data)
    image = load_image(str(path))
    assert (image.format, image.width, image.height) == (fmt, 64, 48)
    assert image.sha256 == hashlib.sha256(data).hexdigest()
    assert image.source == str(path)
    assert image.mime == FORMATS[fmt][0]
    assert image.pil().size == (64, 48)
    assert load_image(image.data_url()).sha256 == image.sha256


def test_data_url_round_trip():
    image = image_from_bytes(encode("PNG"), "x.png")
    url = image.data_url()
    assert url.startswith("data:image/png;base64,")
    again = load_image(url)
    assert again.sha256 == image.sha256 and again.format == "PNG"
    assert again.source == "data:image/png URL"
    assert "base64" not in repr(again) and len(repr(again)) < 200  # no bytes in tracebacks


def test_the_bytes_decide_the_format_not_the_name_or_media_type():
    jpeg = encode("JPEG")
    assert image_from_bytes(jpeg, "looks-like.png").format == "JPEG"
    assert load_image("data:image/png;base64," + base64.b64encode(jpeg).decode()).format == "JPEG"


def test_save_to_writes_once_under_the_hash(tmp_path):
    image = image_from_bytes(encode("JPEG"), "x.jpg")
    path = image.save_to(tmp_path / "store")
    assert path == tmp_path / "store" / f"{image.sha256[:16]}.jpg"
    assert path.read_bytes() == image.data
    mtime = path.stat().st_mtime_ns
    assert image.save_to(tmp_path / "store") == path
    assert path.stat().st_mtime_ns == mtime
    assert [p.name for p in (tmp_path / "store").iterdir()] == [path.name]


def test_http_urls_need_a_fetcher():
    message = error_of(load_image, "https://example.org/a.jpg")
    assert "https://example.org/a.jpg" in message and "fetcher" in message
    data = encode("PNG")
    image = load_image("https://example.org/a.png", fetch=lambda url: data)
    assert image.source == "https://example.org/a.png" and image.format == "PNG"


def test_a_failing_fetcher_is_an_image_error():
    def fetch(url):
        raise ConnectionError("connection refused")

    message = error_of(load_image, "http://example.org/a.png", fetch=fetch)
    assert "http://example.org/a.png" in message and "connection refused" in message


def test_missing_file_and_folder(tmp_path):
    assert "not found" in error_of(load_image, str(tmp_path / "nope.jpg"))
    assert "folder" in error_of(load_image, str(tmp_path))


def test_empty_file(tmp_path):
    (tmp_path / "empty.png").write_bytes(b"")
    message = error_of(load_image, str(tmp_path / "empty.png"))
    assert "empty.png" in message and "empty" in message


def test_larger_than_max_bytes_says_size_and_limit(tmp_path):
    data = encode("PNG", size=(300, 300))
    (tmp_path / "big.png").write_bytes(data)
    message = error_of(load_image, str(tmp_path / "big.png"), max_bytes=500)
    assert "big.png" in message and "too large" in message and "500 bytes" in message
    assert "too large" in error_of(image_from_bytes, data, "big.png", max_bytes=500)


def test_too_many_pixels():
    message = error_of(image_from_bytes, encode("PNG", size=(100, 100)), "wide.png", max_pixels=5000)
    assert "wide.png" in message and "100x100" in message and "5,000" in message


@pytest.mark.parametrize("limit", [3000, 1500])  # above Pillow's limit: a warning; above twice the limit: an error
def test_pillow_decompression_bomb_checks_become_image_errors(monkeypatch, limit):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", limit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "too many pixels" in error_of(image_from_bytes, encode("PNG", size=(64, 64)), "bomb.png")


def test_not_an_image():
    message = error_of(image_from_bytes, b"hello, I am text", "notes.txt")
    assert "notes.txt is not an image" in message and "JPEG, PNG, GIF, WEBP, BMP" in message


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "GIF", "WEBP"])
def test_truncated_images(fmt):
    data = encode(fmt, size=(200, 150))
    message = error_of(image_from_bytes, data[: len(data) // 2], f"cut.{fmt.lower()}")
    assert f"cut.{fmt.lower()}" in message
    assert "truncated or corrupt" in message or "is not an image" in message


@pytest.mark.parametrize("fmt,name", [("TIFF", "TIFF"), ("ICO", "ICO")])
def test_unsupported_formats_list_the_supported_ones(fmt, name):
    message = error_of(image_from_bytes, encode(fmt, size=(32, 32)), f"pic.{fmt.lower()}")
    assert f"is {name}, an unsupported format" in message and "supported: JPEG, PNG, GIF, WEBP, BMP" in message


def test_svg_is_unsupported():
    svg = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
    assert "SVG, an unsupported format" in error_of(image_from_bytes, svg, "logo.svg")


def test_malformed_data_urls_and_unknown_schemes():
    assert "no comma" in error_of(load_image, "data:image/png;base64")
    assert "does not decode" in error_of(load_image, "data:image/png;base64,@@not-base64@@")
    assert "only file paths" in error_of(load_image, "ftp://example.org/a.png")
    assert "empty image reference" in error_of(load_image, "   ")


def test_file_urls(tmp_path):
    (tmp_path / "a b.png").write_bytes(encode("PNG"))
    assert load_image((tmp_path / "a b.png").as_uri()).format == "PNG"


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n" + b"\x00" * 40,
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xff\xff\xff\xff\xff\xff\xff\x08\x02\x00\x00\x00garbage",
        b"GIF89a\xff\xff\xff\xff" + b"\x00" * 20,
        b"BM" + b"\xff" * 60,
        b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 20,
        b"\xff\xd8\xff\xe0" + b"\x00" * 30,
    ],
)
def test_no_pillow_exception_escapes(data):
    with pytest.raises(ImageError):
        image_from_bytes(data, "damaged")


def test_image_error_is_a_user_error():
    assert issubclass(ImageError, UserError)


def png_header(width: int, height: int) -> bytes:
    """A valid PNG header and a tiny IDAT chunk: an image that claims a size but holds (almost) no pixels."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00" * 16))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("side", [7000, 50000])  # under and over twice Pillow's own limit
def test_a_header_claiming_a_huge_size_is_refused_before_decoding(side):
    assert "too many pixels" in error_of(image_from_bytes, png_header(side, side), "claims-huge.png")
