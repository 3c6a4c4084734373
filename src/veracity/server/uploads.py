"""Images uploaded with a check, for pipelines that look at images (DEFAME).

An upload is checked in two steps before a check is queued: `limits.check_image` (not empty, not too
large, a JPEG, PNG, GIF or WebP by its first bytes, the declared type matching the content), then a
real decode (`image_files.image_from_bytes`: truncated or corrupt files, decompression bombs). A
good image is kept once, by content hash, as `<sha256[:16]>.<ext>` in the server's images folder
(`ServerSettings.images_path`, next to the database), and the check gets its path as `Claim.images`.

The `run_images` table says which run uses which file. Deleting a run deletes its files that no other
run uses; files no run uses (a crash between saving and queueing) are swept at startup. `lock` keeps
a file from being deleted between another request saving it and queueing the run that uses it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..inputs import InputError, check_image_bytes, check_image_count, decode_image
from ..reading import human_size
from .errors import ApiError
from .limits import api_error

if TYPE_CHECKING:
    from ..image_files import ImageFile
    from .store import RunStore

log = logging.getLogger("veracity.server")

STORED_NAME = re.compile(r"[0-9a-f]{16}\.(?:jpg|png|gif|webp|bmp)")
_DATA_URL = re.compile(r"data:([^,;]*)((?:;[^,;]*)*),", re.IGNORECASE)


@dataclass
class Upload:
    """One image as the client sent it: its bytes, its file name and the type it declared (if any)."""

    data: bytes
    filename: str | None = None
    declared: str | None = None


def clean_filename(name: str | None) -> str | None:
    """A file name fit to show and to put in a header: its last part, printable, at most 120 characters."""
    if not name:
        return None
    name = re.split(r"[\\/]", str(name))[-1]
    name = "".join(ch for ch in unicodedata.normalize("NFC", name) if unicodedata.category(ch)[0] != "C")
    name = " ".join(name.split())[:120]
    return name or None


def _label(index: int, filename: str | None) -> str:
    return f"image {index}" + (f" ({filename})" if filename else "")


def decode_base64(
    data: str, *, name: str, noun: str, max_bytes: int, codes: tuple[str, str], advice: str
) -> tuple[bytes, str | None]:
    """A file sent inside a JSON request: `data` is base64 (line breaks ignored, the URL-safe alphabet too) or a
    data: URL, whose type is returned as declared. Refused before decoding when it is over `max_bytes` anyway.
    `codes`: the error codes for bad encoding and too large; `name`/`noun` name it in the errors ("image 1",
    "the image"), `advice` says what to do when it is too large."""
    bad_encoding, too_large = codes
    text = data.strip() if isinstance(data, str) else ""
    declared = None
    if text[:5].lower() == "data:":
        m = _DATA_URL.match(text)
        if not m or "base64" not in [p.strip().lower() for p in m.group(2).split(";")]:
            raise ApiError(400, bad_encoding, f"{name}: a data: URL must be base64-encoded (data:TYPE;base64,...)")
        declared = m.group(1) or None
        text = text[m.end() :]
    payload = "".join(text.split())  # line breaks of MIME-style base64 do not count
    if len(payload) // 4 * 3 > max_bytes + 3:  # refuse before decoding what is too large anyway
        raise ApiError(
            413,
            too_large,
            f"{name}: {noun} has about {human_size(len(payload) * 3 / 4)}; the limit is "
            f"{human_size(max_bytes)}: {advice}",
        )
    altchars = b"-_" if ("-" in payload or "_" in payload) else None  # the URL-safe alphabet is fine too
    try:
        raw = base64.b64decode(payload + "=" * (-len(payload) % 4), altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(
            400, bad_encoding, f"{name}: `data` is not valid base64: send the file's bytes in base64, or a data: URL"
        ) from None
    return raw, declared


def upload_from_base64(data: str, filename: str | None, media_type: str | None, index: int, max_bytes: int) -> Upload:
    """Decode one image of a JSON request: `data` is base64, or a data: URL whose type counts as declared."""
    filename = clean_filename(filename)
    raw, declared = decode_base64(
        data,
        name=_label(index, filename),
        noun="the image",
        max_bytes=max_bytes,
        codes=("image_encoding", "image_too_large"),
        advice="upload a smaller or more compressed image",
    )
    return Upload(raw, filename, media_type or declared)


class ImageUploads:
    def __init__(self, folder: Path, store: RunStore, *, max_bytes: int, max_images: int) -> None:
        self.folder = Path(folder)
        self.store = store
        self.max_bytes = max_bytes
        self.max_images = max_images
        self.lock = threading.RLock()

    # -- checking -----------------------------------------------------------------------------------

    def check_count(self, n: int) -> None:
        try:
            check_image_count(n, self.max_images)
        except InputError as e:
            raise api_error(e) from None

    def check(self, uploads: list[Upload]) -> list[tuple[ImageFile, str | None]]:
        """Each upload checked and decoded, duplicates dropped: [(image, file name)], or an ApiError that
        names the image (its number in the request, and its file name when given)."""
        self.check_count(len(uploads))
        out: list[tuple[ImageFile, str | None]] = []
        seen: set[str] = set()
        for i, up in enumerate(uploads, start=1):
            name = _label(i, up.filename)
            try:
                check_image_bytes(up.data, up.declared, self.max_bytes)
            except InputError as e:
                raise api_error(e).named(name) from None
            try:
                image = decode_image(up.data, up.filename or f"upload {i}", self.max_bytes)
            except InputError as e:
                raise api_error(e).named(name) from None
            if image.sha256 not in seen:
                seen.add(image.sha256)
                out.append((image, up.filename))
        return out

    # -- keeping (call with `lock` held) -------------------------------------------------------------

    def save(self, images: list[tuple[ImageFile, str | None]]) -> list[dict[str, Any]]:
        """Write the images (once per content) and describe them as the run keeps them."""
        infos = []
        for image, filename in images:
            try:
                path = image.save_to(self.folder)
            except UserError as e:
                log.error("%s", e)
                raise ApiError(
                    507, "image_not_saved", "the server could not store the image (see its log): try again later"
                ) from None
            infos.append(
                {
                    "file": path.name,
                    "filename": filename,
                    "media_type": image.mime,
                    "bytes": len(image.data),
                    "width": image.width,
                    "height": image.height,
                    "sha256": image.sha256,
                }
            )
        return infos

    def release(self, files: list[str]) -> None:
        """Delete the files no run uses any more."""
        for f in files:
            if STORED_NAME.fullmatch(f) and not self.store.image_in_use(f):
                try:
                    (self.folder / f).unlink(missing_ok=True)
                except OSError as e:
                    log.warning("could not delete unused image %s: %s", f, e)

    def sweep(self) -> int:
        """At startup: delete the files in the folder that no run uses. Returns how many."""
        if not self.folder.is_dir():
            return 0
        with self.lock:
            used = self.store.all_image_files()
            orphans = [p for p in self.folder.iterdir() if STORED_NAME.fullmatch(p.name) and p.name not in used]
            for p in orphans:
                try:
                    p.unlink(missing_ok=True)
                except OSError as e:
                    log.warning("could not delete unused image %s: %s", p.name, e)
        return len(orphans)

    def path(self, file: str) -> Path | None:
        """The stored file's path, or None for a name that is not one of ours."""
        return self.folder / file if STORED_NAME.fullmatch(file) else None
