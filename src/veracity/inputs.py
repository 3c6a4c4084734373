"""User input: the one set of rules for claims, texts, dates, questions, answers and images that the CLI, the HTTP
API and the page share. Each rule raises a coded `InputError`: the CLI prints its message, the server answers
its code (see server/limits.py). Reading the files a user names, with a size limit, is `reading.py`.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from .errors import UserError
from .reading import human_size

if TYPE_CHECKING:
    from .image_files import ImageFile

# -- user text: one set of rules for the CLI, the HTTP API and the page ------------------------------------------

#: the longest answer the answer check (LEAF) takes, in characters (the server's --max-answer-chars changes it)
DEFAULT_MAX_ANSWER_CHARS = 10_000


class InputError(UserError):
    """Bad user input, with a `code` the HTTP API answers with (400 `{"error": code}`); the CLI prints the message."""

    def __init__(self, code: str, message: str, length: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.length = length  # the text's length, for *_too_long


class ClaimError(InputError):
    """What is wrong with a claim: claim_empty, claim_too_long, invalid_claim."""


def decode_user_text(value: str | bytes, what: str) -> str:
    """Text a user gave (argument, file, standard input) as str, or a UserError naming `what` is wrong."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"the {what} is not valid UTF-8 (byte {e.start}); re-encode it as UTF-8") from None
    if any("\udc80" <= ch <= "\udcff" for ch in value):  # undecodable bytes from argv (surrogateescape)
        raise UserError(f"the {what} is not valid UTF-8; re-encode it as UTF-8")
    return value


def clean_claim_text(text: str | bytes, max_chars: int) -> str:
    """The claim as the pipelines see it, or a ClaimError saying what is wrong with it."""
    try:
        text = decode_user_text(text, "claim")
    except UserError as e:
        raise ClaimError("invalid_claim", str(e)) from None
    if "\x00" in text:
        raise ClaimError("invalid_claim", "the claim contains NUL characters")
    text = " ".join(text.split())
    if not text:
        raise ClaimError("claim_empty", "the claim is empty: give the statement to check")
    if len(text) > max_chars:
        raise ClaimError(
            "claim_too_long",
            f"the claim has {len(text)} characters; the limit is {max_chars} "
            "(raise max_claim_chars in the config to allow more)",
            length=len(text),
        )
    return text


def _answer_check_text(value: str | bytes | None, what: str, max_chars: int, *, squeeze: bool, hint: str) -> str:
    try:
        text = decode_user_text(value or "", what).replace("\x00", "")
    except UserError as e:
        raise InputError(f"invalid_{what}", str(e)) from None
    text = " ".join(text.split()) if squeeze else text.strip()
    if not text:
        raise InputError(f"{what}_empty", f"the {what} is empty: give {hint}")
    if len(text) > max_chars:
        raise InputError(
            f"{what}_too_long", f"the {what} has {len(text)} characters; the limit is {max_chars}", length=len(text)
        )
    return text


def clean_question(value: str | bytes | None, max_chars: int) -> str:
    """An answer check's question, whitespace squeezed (question_empty, question_too_long)."""
    return _answer_check_text(value, "question", max_chars, squeeze=True, hint="the question the answer replies to")


def clean_answer(value: str | bytes | None, max_chars: int = DEFAULT_MAX_ANSWER_CHARS) -> str:
    """An answer to fact-check, line breaks kept: they separate list items (answer_empty, answer_too_long)."""
    return _answer_check_text(value, "answer", max_chars, squeeze=False, hint="the answer text to fact-check")


#: the longest text `veracity check-text` takes: 10 MB of UTF-8 (and 10 million characters once decoded)
MAX_TEXT_BYTES = 10_000_000
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def clean_text_input(value: str | bytes | None, max_bytes: int = MAX_TEXT_BYTES, *, what: str = "text") -> str:
    """A text to extract claims from, line breaks kept (they end paragraphs and list items), or an InputError:
    text_empty, text_too_long (with the number and the limit), text_binary (NUL or control bytes: an image, an
    archive, a program), invalid_text (not UTF-8)."""
    raw = value or ""
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InputError(
            "text_too_long",
            f"the {what} has {human_size(size)}; the limit is {human_size(max_bytes)}"
            f" ({max_bytes:,} bytes): check a part of it",
            length=size,
        )
    head = raw[:8192]
    if (b"\x00" in head) if isinstance(head, bytes) else ("\x00" in head):
        raise InputError(
            "text_binary",
            f"the {what} is binary data, not text (it contains NUL bytes): give a .txt, .md, .html or .pdf file",
        )
    try:
        text = decode_user_text(raw, what)
    except UserError as e:
        raise InputError("invalid_text", f"{e} (is it a binary file?)") from None
    if len(_CONTROL.findall(text[:8192])) > max(2, len(text[:8192]) // 100):
        raise InputError("text_binary", f"the {what} is binary data, not text (it is full of control characters)")
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise InputError("text_empty", f"the {what} is empty: give the text whose claims to check")
    return text


# -- claim dates ----------------------------------------------------------------------------------------------

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class DateError(InputError):
    """A claim date that is not a real, past YYYY-MM-DD date (the server answers it with 400 invalid_date)."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_date", message)


def check_claim_date(text: str | None) -> str | None:
    """The claim date as YYYY-MM-DD (None when not given), or a DateError saying what is wrong."""
    if text is None or not str(text).strip():
        return None
    value = str(text).strip()
    if not _ISO_DATE.fullmatch(value):
        raise DateError(f"date {value[:40]!r} is not a date: write it as YYYY-MM-DD (e.g. 2024-05-15)")
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise DateError(f"date {value!r} does not exist: check the month and the day") from None
    # a claim cannot be made after today (a day of slack for time zones ahead of UTC)
    latest = (datetime.now(UTC) + timedelta(days=1)).date()
    if day > latest:
        raise DateError(f"date {value} is in the future: give the day the claim was made")
    return day.isoformat()


# -- images -----------------------------------------------------------------------------------------------------

#: image types a claim may carry, recognised by their first bytes (never by the name or declared type alone)
IMAGE_TYPES = {"image/jpeg": "JPEG", "image/png": "PNG", "image/gif": "GIF", "image/webp": "WebP"}
IMAGE_TYPE_NAMES = ", ".join(list(IMAGE_TYPES.values())[:-1]) + " or " + list(IMAGE_TYPES.values())[-1]
# names clients use for those types (browsers and old software): they declare the same type
_TYPE_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png"}


def sniff_image(data: bytes) -> str | None:
    """The MIME type of an image from its first bytes, or None when it is none of IMAGE_TYPES."""
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def check_image_count(n: int, max_images: int) -> None:
    """too_many_images when a claim carries more images than allowed (0: none at all)."""
    if n > max_images:
        if max_images == 0:
            raise InputError(
                "too_many_images",
                "this server takes no images (it was started with --max-images 0): send the claim without them",
            )
        raise InputError(
            "too_many_images", f"{n} images; a check takes at most {max_images}: send the ones the claim is about"
        )


def check_image_bytes(data: bytes, declared_type: str | None, max_bytes: int) -> str:
    """An uploaded image's first checks, before it is decoded: its MIME type, or an InputError
    (image_empty, image_too_large, image_type)."""
    if not data:
        raise InputError("image_empty", "the uploaded image is empty")
    if len(data) > max_bytes:
        raise InputError(
            "image_too_large",
            f"the image has {human_size(len(data))}; the limit is "
            f"{human_size(max_bytes)}: upload a smaller or more compressed image",
        )
    kind = sniff_image(data)
    if kind is None:
        raise InputError("image_type", f"the upload is not a {IMAGE_TYPE_NAMES} image: convert it to one of these")
    declared = (declared_type or "").split(";")[0].strip().lower()
    declared = _TYPE_ALIASES.get(declared, declared)
    if declared and declared not in ("application/octet-stream", kind):
        raise InputError(
            "image_type",
            f"the upload says it is {declared} but its content is {IMAGE_TYPES[kind]}: upload the file unchanged",
        )
    return kind


def decode_image(data: bytes, name: str, max_bytes: int) -> ImageFile:
    """Decode checked image bytes fully (image_broken; image_too_large for too many pixels)."""
    from .image_files import ImageError, image_from_bytes

    try:
        return image_from_bytes(data, name, max_bytes=max_bytes)
    except ImageError as e:
        if "pixels" in str(e):
            raise InputError("image_too_large", f"{e}: upload a smaller image") from None
        raise InputError("image_broken", str(e)) from None


#: the most images one claim may carry on the command line (the server's --max-images sets its own)
MAX_CLAIM_IMAGES = 10


def clean_image_refs(refs: list[str] | None, max_images: int = MAX_CLAIM_IMAGES) -> list[str]:
    """A claim's images as a user names them (paths, data: URLs, http(s) URLs), checked before any model runs:
    local files and data: URLs are read and decoded now (image_broken names the image and what is wrong);
    http(s) URLs are fetched at check time by the guarded fetcher. Duplicates (same reference) are dropped."""
    from .image_files import ImageError, load_image

    refs = [r.strip() for r in (refs or [])]
    check_image_count(len(refs), max_images)
    out: list[str] = []
    for ref in refs:
        if ref.split(":", 1)[0].lower() not in ("http", "https"):
            try:
                load_image(ref)
            except ImageError as e:
                raise InputError("image_broken", str(e)) from None
        if ref not in out:
            out.append(ref)
    return out
