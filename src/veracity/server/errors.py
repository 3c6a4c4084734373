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

    def named(self, name: str) -> ApiError:
        """The same error about one of several things (an image: `image 2 (cat.png): ...`)."""
        return ApiError(self.status, self.code, f"{name}: {self.detail}", self.headers)

    def body(self) -> dict[str, str]:
        return {"error": self.code, "detail": self.detail}
