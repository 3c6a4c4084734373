"""Limits on what a client may ask: claim length, claim date, uploaded images, and how often.

Each check raises an `ApiError` whose detail says what to fix.
"""

from __future__ import annotations

import math
import re
import threading
import time
from datetime import date, datetime, timedelta, timezone

from ..inputs import ClaimError, DateError, check_claim_date, clean_claim_text, human_size
from .errors import ApiError

# Image types DEFAME will accept, recognised by their first bytes (never by the name or declared type alone).
IMAGE_TYPES = {"image/jpeg": "JPEG", "image/png": "PNG", "image/gif": "GIF", "image/webp": "WebP"}
TYPE_NAMES = ", ".join(list(IMAGE_TYPES.values())[:-1]) + " or " + list(IMAGE_TYPES.values())[-1]
# names clients use for those types (browsers and old software): they declare the same type
TYPE_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png"}


def check_claim(text: str, max_chars: int) -> str:
    """The claim as the pipelines will see it (`clean_claim_text`), or a 400 saying what is wrong."""
    if not isinstance(text, str):
        raise ApiError(400, "invalid_claim", "claim must be a string")
    try:
        return clean_claim_text(text, max_chars)
    except ClaimError as e:
        if e.code == "claim_too_long":  # the config hint of the CLI's message is not the client's to act on
            raise ApiError(400, e.code, f"the claim has {e.length} characters; this server accepts at most "
                           f"{max_chars}: shorten it to the one statement you want checked") from None
        raise ApiError(400, e.code, str(e)) from None


def check_date(text: str | None) -> str | None:
    """The claim date as YYYY-MM-DD (None when not given), or a 400 `invalid_date` saying what is wrong
    (the rule is `inputs.check_claim_date`, shared with the CLI)."""
    try:
        return check_claim_date(text)
    except DateError as e:
        raise ApiError(400, e.code, str(e)) from None


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


def check_image(data: bytes, declared_type: str | None, max_bytes: int) -> str:
    """Validate one uploaded image; returns its MIME type (for DEFAME uploads)."""
    if not data:
        raise ApiError(400, "image_empty", "the uploaded image is empty")
    if len(data) > max_bytes:
        raise ApiError(413, "image_too_large",
                       f"the image has {human_size(len(data))}; the limit is {human_size(max_bytes)}: "
                       "upload a smaller or more compressed image")
    kind = sniff_image(data)
    if kind is None:
        raise ApiError(415, "image_type",
                       f"the upload is not a {TYPE_NAMES} image: convert it to one of these")
    declared = (declared_type or "").split(";")[0].strip().lower()
    declared = TYPE_ALIASES.get(declared, declared)
    if declared and declared not in ("application/octet-stream", kind):
        raise ApiError(415, "image_type",
                       f"the upload says it is {declared} but its content is {IMAGE_TYPES[kind]}: "
                       "upload the file unchanged")
    return kind


class RateLimiter:
    """A token bucket per client: `per_minute` checks a minute, at most `burst` at once. 0 turns it off."""

    MAX_CLIENTS = 10_000

    def __init__(self, per_minute: int, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(max(1, min(burst, per_minute))) if per_minute else 0.0
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, last time)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, client: str, now: float | None = None) -> float:
        """Spend one token for `client`: 0.0 when allowed, else the seconds until one is available."""
        if not self.enabled:
            return 0.0
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.get(client, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[client] = (tokens - 1.0, now)
                self._prune(now)
                return 0.0
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def _prune(self, now: float) -> None:
        if len(self._buckets) <= self.MAX_CLIENTS:
            return
        full_after = self.capacity / self.rate
        for k in [k for k, (_, t) in self._buckets.items() if now - t > full_after]:
            del self._buckets[k]

    def check(self, client: str) -> None:
        wait = self.take(client)
        if wait > 0:
            secs = max(1, math.ceil(wait))
            raise ApiError(429, "rate_limited",
                           f"too many checks from this client: at most {round(self.rate * 60)} a minute; "
                           f"try again in {secs} s", headers={"Retry-After": str(secs)})
