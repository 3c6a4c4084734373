"""The one error shape of the HTTP API: a status, a stable code and a sentence saying what to fix."""

from __future__ import annotations


class ApiError(Exception):
    """Answered as `{"error": code, "detail": detail}` with `status` (and `headers`)."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers or {}

    def named(self, name: str) -> "ApiError":
        """The same error about one of several things (an image: `image 2 (cat.png): ...`)."""
        return ApiError(self.status, self.code, f"{name}: {self.detail}", self.headers)

    def body(self) -> dict[str, str]:
        return {"error": self.code, "detail": self.detail}


INTERNAL_ERROR = ("internal error: the check stopped on an unexpected error on the server (the server's log has "
                  "the details)")
MAX_ERROR_CHARS = 240


def short_error(text: str | None) -> str | None:
    """What a user is shown of a run's failure: one short line. An unexpected exception's text (which may quote
    a prompt) is never shown: it is in the server's log; the first line of any other message, cut at
    MAX_ERROR_CHARS. Applied when a failure is stored and again when one is shown (runs stored before)."""
    if not text:
        return text
    if text.startswith("internal error"):
        return INTERNAL_ERROR
    lines = text.strip().splitlines()
    first = lines[0].strip() if lines else ""
    return first if len(first) <= MAX_ERROR_CHARS else first[:MAX_ERROR_CHARS - 1].rstrip() + "…"
