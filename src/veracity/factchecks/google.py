"""The Google Fact Check Tools API (`claims:search`) as an online source of published fact-checks, for users with a
key (https://developers.google.com/fact-check/tools/api). Its results are read by the same parser as a saved
response (formats.py) and kept in the local store, so a claim looked up once is matched offline afterwards.

Tested against a local server that replays the API's documented responses; not measured against the live API.
"""

from __future__ import annotations

import os

from ..errors import SearchError, UserError
from .formats import read_json_value
from .record import FactCheck

DEFAULT_URL = "https://factchecktools.googleapis.com/v1alpha1/claims:search"
KEY_VARIABLE = "VERACITY_FACTCHECK_API_KEY"
MAX_PAGES = 3


def api_key(given: str | None = None) -> str:
    key = given or os.environ.get(KEY_VARIABLE) or os.environ.get("GOOGLE_API_KEY")
    if not key:
        raise UserError(
            f"the Google Fact Check Tools API needs a key: set {KEY_VARIABLE} (or GOOGLE_API_KEY), "
            "or use the local store only"
        )
    return key


def search(
    query: str,
    *,
    key: str | None = None,
    language: str | None = None,
    page_size: int = 10,
    url: str | None = None,
    timeout: float = 20.0,
) -> list[FactCheck]:
    """The fact-checks the API finds for `query` (up to MAX_PAGES pages). Raises SearchError, with the API's own
    reason, when the request fails (a bad key, quota, the network)."""
    import httpx

    if not query.strip():
        raise UserError("the search query is empty")
    endpoint = url or os.environ.get("VERACITY_FACTCHECK_API_URL") or DEFAULT_URL
    params: dict[str, str | int] = {"query": query[:500], "key": api_key(key), "pageSize": page_size}
    if language:
        params["languageCode"] = language
    found: list[FactCheck] = []
    for _ in range(MAX_PAGES):
        try:
            response = httpx.get(endpoint, params=params, timeout=timeout)
        except httpx.HTTPError as e:
            raise SearchError(f"the Google Fact Check Tools API is unreachable ({type(e).__name__}: {e})") from None
        if response.status_code != 200:
            raise SearchError(f"the Google Fact Check Tools API answered {response.status_code}: {_reason(response)}")
        try:
            data = response.json()
        except ValueError:
            raise SearchError("the Google Fact Check Tools API answered with something that is not JSON") from None
        if not isinstance(data, dict):
            raise SearchError("the Google Fact Check Tools API answered with an unexpected shape")
        if not data.get("claims"):
            break
        for item in read_json_value("claims:search response", data, "google"):
            if isinstance(item, FactCheck):
                found.append(item)
        token = data.get("nextPageToken")
        if not token:
            break
        params["pageToken"] = token
    return found


def _reason(response) -> str:
    """The API's error message (its JSON error body), never the key."""
    try:
        error = response.json().get("error", {})
        text = error.get("message") or error.get("status") or ""
    except (ValueError, AttributeError):
        text = response.text[:200]
    return " ".join(str(text).split())[:300] or "no reason given"
