"""Limits on what a client may ask: claim length, claim date, uploaded images and texts, and how often.

Each check raises an `ApiError` whose detail says what to fix.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING

from ..inputs import ClaimError, DateError, InputError, check_claim_date, check_image_bytes, clean_claim_text
from .errors import ApiError

if TYPE_CHECKING:
    from .store import RunStore

# what an input rule's InputError code answers over HTTP (the rest are 400s)
STATUS = {"image_too_large": 413, "image_type": 415, "text_too_long": 413, "text_binary": 415}


def api_error(e: InputError) -> ApiError:
    """An input rule's coded error as the HTTP API answers it."""
    return ApiError(STATUS.get(e.code, 400), e.code, str(e))


def check_claim(text: str, max_chars: int) -> str:
    """The claim as the pipelines will see it (`clean_claim_text`), or a 400 saying what is wrong."""
    if not isinstance(text, str):
        raise ApiError(400, "invalid_claim", "claim must be a string")
    try:
        return clean_claim_text(text, max_chars)
    except ClaimError as e:
        if e.code == "claim_too_long":  # the config hint of the CLI's message is not the client's to act on
            raise ApiError(
                400,
                e.code,
                f"the claim has {e.length} characters; this server accepts at most "
                f"{max_chars}: shorten it to the one statement you want checked",
            ) from None
        raise ApiError(400, e.code, str(e)) from None


MAX_EVIDENCE_PASSAGES = 20
MAX_EVIDENCE_CHARS = 200_000  # all passages together


def check_evidence(texts: list[str] | None) -> list[str]:
    """The passages a client gave to check the claim against (none: []), stripped, or a 400/413 saying what is
    wrong: at most MAX_EVIDENCE_PASSAGES, none empty, MAX_EVIDENCE_CHARS in all."""
    if not texts:
        return []
    if len(texts) > MAX_EVIDENCE_PASSAGES:
        raise ApiError(
            400,
            "too_many_passages",
            f"{len(texts)} evidence passages; at most {MAX_EVIDENCE_PASSAGES}: join related ones into one text",
        )
    out = [t.replace("\x00", "").strip() for t in texts]
    empty = [n for n, t in enumerate(out, start=1) if not t]
    if empty:
        raise ApiError(
            400,
            "evidence_empty",
            f"evidence passage {empty[0]} is empty: give the text the claim is to be checked against, or leave it out",
        )
    total = sum(len(t) for t in out)
    if total > MAX_EVIDENCE_CHARS:
        raise ApiError(
            413,
            "evidence_too_long",
            f"the evidence has {total} characters; this server accepts at most "
            f"{MAX_EVIDENCE_CHARS}: keep the passages that bear on the claim",
        )
    return out


def check_date(text: str | None) -> str | None:
    """The claim date as YYYY-MM-DD (None when not given), or a 400 `invalid_date` saying what is wrong
    (the rule is `inputs.check_claim_date`, shared with the CLI)."""
    try:
        return check_claim_date(text)
    except DateError as e:
        raise ApiError(400, e.code, str(e)) from None


def check_image(data: bytes, declared_type: str | None, max_bytes: int) -> str:
    """Validate one uploaded image (`inputs.check_image_bytes`, shared with the CLI); returns its MIME type."""
    try:
        return check_image_bytes(data, declared_type, max_bytes)
    except InputError as e:
        raise api_error(e) from None


class RateLimiter:
    """A token bucket per client: `per_minute` checks a minute, at most `burst` at once. 0 turns it off."""

    MAX_CLIENTS = 10_000

    def __init__(self, per_minute: int, burst: int, shared: RunStore | None = None) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(max(1, min(burst, per_minute))) if per_minute else 0.0
        self.shared = shared  # a store several workers share (PostgreSQL): the buckets are kept there
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, last time)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, client: str, now: float | None = None) -> float:
        """Spend one token for `client`: 0.0 when allowed, else the seconds until one is available."""
        if not self.enabled:
            return 0.0
        if self.shared is not None:
            return self.shared.take_token(client, self.rate * 60.0, self.capacity)
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
            raise ApiError(
                429,
                "rate_limited",
                f"too many checks from this client: at most {round(self.rate * 60)} a minute; try again in {secs} s",
                headers={"Retry-After": str(secs)},
            )
