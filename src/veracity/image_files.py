"""Images as the fact-checker handles them: checked, decoded once, identified by their SHA-256.

`load_image` reads a local path, a ``data:`` URL or (through a fetcher) an http(s) URL and returns
an `ImageFile`; `image_from_bytes` does the checking. Whatever is wrong with an image (missing,
empty, too large, not an image, truncated, an unsupported format, too many pixels) raises one
`ImageError` that names the image; no Pillow exception escapes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, unquote_to_bytes, urlparse

from PIL import Image

from .errors import UserError

#: The formats accepted, with their MIME type and file extension.
FORMATS: dict[str, tuple[str, str]] = {
    "JPEG": ("image/jpeg", "jpg"),
    "PNG": ("image/png", "png"),
    "GIF": ("image/gif", "gif"),
    "WEBP": ("image/webp", "webp"),
    "BMP": ("image/bmp", "bmp"),
}
SUPPORTED = ", ".join(FORMATS)
MAX_BYTES = 20_000_000
MAX_PIXELS = 40_000_000


class ImageError(UserError):
    """An image that cannot be used: one line saying what is wrong with which image."""


@dataclass(frozen=True)
class ImageFile:
    """A checked image: its bytes, format and size. Two images with the same bytes are the same image."""

    source: str  # the path or URL it came from
    data: bytes
    format: str  # one of FORMATS
    width: int
    height: int
    sha256: str

    @property
    def mime(self) -> str:
        return FORMATS[self.format][0]

    @property
    def extension(self) -> str:
        return FORMATS[self.format][1]

    def data_url(self) -> str:
        """The image as a ``data:`` URL, the way vision models take inline images."""
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def pil(self) -> Image.Image:
        """A fresh decoded copy (safe: the bytes were fully decoded once when the image was checked)."""
        image = Image.open(io.BytesIO(self.data))
        image.load()
        return image

    def save_to(self, folder: str | Path) -> Path:
        """Write the image once as ``folder/<sha256[:16]>.<ext>`` and return that path."""
        path = Path(folder) / f"{self.sha256[:16]}.{self.extension}"
        if path.is_file() and path.stat().st_size == len(self.data):
            return path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(self.data)
            tmp.replace(path)
        except OSError as e:
            raise UserError(f"cannot save image {_short(self.source)} to {folder}: {e.strerror or e}") from None
        return path

    def __repr__(self) -> str:  # the bytes would flood a traceback
        return (
            f"ImageFile(source={_short(self.source)!r}, format={self.format!r}, "
            f"size={self.width}x{self.height}, sha256={self.sha256[:12]!r})"
        )


def load_image(
    ref: str,
    *,
    max_bytes: int = MAX_BYTES,
    max_pixels: int = MAX_PIXELS,
    fetch: Callable[[str], bytes] | None = None,
    local_roots: tuple[Path, ...] | None = None,
) -> ImageFile:
    """Load an image from a local path, a ``data:`` URL, or an http(s) URL through `fetch`.

    `local_roots`: None lets any local file be read (the user's own images); a tuple lets only files inside
    those folders be read (references that came from search results, pages or documents are untrusted:
    `()` refuses every local file). Raises ImageError (one line naming the image) for anything that keeps
    it from being used.
    """
    ref = ref.strip()
    if not ref:
        raise ImageError("empty image reference: give a file path or a URL")
    if ref[:5].lower() == "data:":
        data, source = _decode_data_url(ref)
    elif ref.split(":", 1)[0].lower() in ("http", "https"):
        data, source = _fetch(ref, fetch), ref
    elif ref[:7].lower() == "file://":
        source = unquote(urlparse(ref).path)
        data = _read_file(allowed_local(Path(source), local_roots), max_bytes)
    elif "://" in ref:
        raise ImageError(f"cannot load image {_short(ref)}: only file paths, data: URLs and http(s) URLs are supported")
    else:
        source = ref
        data = _read_file(allowed_local(Path(ref).expanduser(), local_roots), max_bytes)
    return image_from_bytes(data, source, max_bytes=max_bytes, max_pixels=max_pixels)


def image_from_bytes(
    data: bytes, source: str, *, max_bytes: int = MAX_BYTES, max_pixels: int = MAX_PIXELS
) -> ImageFile:
    """Check and identify image bytes; `source` names the image in errors."""
    name = _short(source)
    if not data:
        raise ImageError(f"image {name} is empty (0 bytes)")
    if len(data) > max_bytes:
        raise ImageError(f"image {name} is too large: {_size(len(data))}, the limit is {_size(max_bytes)}")
    if _looks_like_svg(data):
        raise _unsupported(name, "SVG")
    fmt, width, height = _decode(data, name, max_pixels)
    return ImageFile(
        source=source, data=bytes(data), format=fmt, width=width, height=height, sha256=hashlib.sha256(data).hexdigest()
    )


def _decode(data: bytes, name: str, max_pixels: int) -> tuple[str, int, int]:
    """Open, check format and size, verify, and fully decode; returns (format, width, height)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. Pillow's "Corrupt EXIF data": metadata.py reports on EXIF
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                fmt, (width, height) = image.format or "unknown", image.size
                if fmt not in FORMATS:
                    raise _unsupported(name, fmt)
                if width * height > max_pixels:
                    raise _too_many_pixels(name, width, height, max_pixels)
                image.verify()
            with Image.open(io.BytesIO(data)) as image:
                image.load()  # verify() does not decode the pixels: truncated data shows only here
        except ImageError:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise ImageError(f"image {name} has too many pixels to decode safely") from None
        except Image.UnidentifiedImageError:
            raise ImageError(
                f"{name} is not an image (or not in a format Pillow reads; supported: {SUPPORTED})"
            ) from None
        except Exception as e:  # Pillow reports damage with many exception types
            detail = " ".join(str(e).split())[:120]
            raise ImageError(f"image {name} is truncated or corrupt{f' ({detail})' if detail else ''}") from None
    return fmt, width, height


def allowed_local(path: Path, roots: tuple[Path, ...] | None) -> Path:
    """`path`, when local files may be read from where it lies (see `load_image`); else an ImageError."""
    if roots is None:
        return path
    real = path.resolve()
    for root in roots:
        if real.is_relative_to(Path(root).resolve()):
            return real
    raise ImageError(
        f"image {_short(str(path))} is a local file named by untrusted text (a search result, page "
        "or document): only http(s) images and the image collection's own files are read"
    )


def _read_file(path: Path, max_bytes: int) -> bytes:
    """The file's bytes, read up to `max_bytes` (a device or FIFO such as /dev/zero is cut off there)."""
    from .reading import read_limited

    return read_limited(path, max_bytes, "image", error=ImageError)


def _decode_data_url(url: str) -> tuple[bytes, str]:
    header, comma, payload = url.partition(",")
    if not comma:
        raise ImageError("malformed data: URL (no comma before the data)")
    params = header[5:].split(";")
    media_type = params[0].strip().lower() or "no media type"
    source = f"data:{media_type} URL"
    try:
        if "base64" in (p.strip().lower() for p in params[1:]):
            return base64.b64decode("".join(unquote(payload).split()), validate=True), source
        return unquote_to_bytes(payload), source
    except (binascii.Error, ValueError):
        raise ImageError(f"malformed {source}: its base64 data does not decode") from None


def _fetch(url: str, fetch: Callable[[str], bytes] | None) -> bytes:
    if fetch is None:
        raise ImageError(
            f"cannot load image {_short(url)}: remote images need a fetcher (download it and give "
            "the file path instead)"
        )
    try:
        return fetch(url)
    except ImageError:
        raise
    except Exception as e:
        detail = " ".join(str(e).split()) or type(e).__name__
        raise ImageError(f"cannot download image {_short(url)}: {detail}") from None


def _looks_like_svg(data: bytes) -> bool:
    head = data[:1024].lstrip().lower()
    return head.startswith(b"<") and b"<svg" in head


def _unsupported(name: str, fmt: str) -> ImageError:
    return ImageError(f"image {name} is {fmt}, an unsupported format (supported: {SUPPORTED})")


def _too_many_pixels(name: str, width: int, height: int, limit: int) -> ImageError:
    return ImageError(
        f"image {name} has too many pixels: {width}x{height} = {width * height:,}, the limit is {limit:,}"
    )


def _size(n: int) -> str:
    from .reading import human_size

    return human_size(n)


def _short(source: str, limit: int = 100) -> str:
    source = " ".join(source.split())
    return source if len(source) <= limit else source[: limit - 3] + "..."
