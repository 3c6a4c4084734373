"""How a failure is said to a user: one short line, and a model server's failure in plain words (what failed,
what to try) with its technical line (the server's address and any quoted prompt text removed) kept apart.
Shared by the web server, the text checks and the command line (no dependency on either)."""

from __future__ import annotations

import re

INTERNAL_ERROR = (
    "internal error: the check stopped on an unexpected error on the server (the server's log has the details)"
)
MAX_ERROR_CHARS = 240
BACKEND_ERROR = "model backend error: "  # how a stored run's failure says the model server failed
SEARCH_ERROR = "search error: "  # ... and a search provider (an unreachable SearXNG, a Serper quota)
PROMPT_REMOVED = "[text removed]"
# a quoted stretch of 30 characters or more in a model server's reply: it may quote the prompt
_QUOTED = re.compile(r"""(?P<q>['"`])(?:\\.|(?!(?P=q)).){30,}?(?P=q)""", re.S)
_URL = re.compile(r"\bhttps?://[^\s,;)]*[^\s,;):.]")


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
    return first if len(first) <= MAX_ERROR_CHARS else first[: MAX_ERROR_CHARS - 1].rstrip() + "…"


def backend_error(message: str, *, search: bool = False) -> str:
    """A model server's failure as a run stores it: one short line, any long quoted text in its reply (which can
    quote the prompt and its demonstrations) removed. The server's log keeps the whole message. `search`: the
    failure was a search provider's (web/base.py SearchError), said as such, not as the model's."""
    prefix = SEARCH_ERROR if search else BACKEND_ERROR
    return short_error(prefix + _QUOTED.sub(lambda m: m["q"] + PROMPT_REMOVED + m["q"], message)) or ""


# (what in a model server's failure, what the page says failed, what to try)
_BACKEND_FAILURES = (
    (
        "timed out",
        "The model server took too long to answer.",
        "Try again in a moment; a shorter claim or text needs less time.",
    ),
    (
        "cannot reach",
        "The model server could not be reached.",
        "Try again in a moment; if it keeps failing, the server’s operator needs to start the model server.",
    ),
    ("429", "The model server is busy or over its quota.", "Wait a minute, then try again."),
    (
        "malformed reply",
        "The model server sent a reply that could not be read.",
        "Try again; if it keeps failing, the server’s operator can find the details in the server’s log.",
    ),
    (
        "returned no choices",
        "The model server sent an empty reply.",
        "Try again; if it keeps failing, the server’s operator can find the details in the server’s log.",
    ),
)


def failure_view(error: str | None) -> dict[str, str | None]:
    """A failed run's error as the page shows it: what failed and what to try, in plain words ("message",
    "advice"), and the technical line behind a "details" toggle ("details": the stored line without the model
    server's address; None when there is nothing more to say)."""
    text = short_error(error) or ""
    if not text.startswith(BACKEND_ERROR):
        return {"message": text, "advice": None, "details": None}
    detail = _URL.sub("the model server", text[len(BACKEND_ERROR) :])
    for mark, message, advice in _BACKEND_FAILURES:
        if mark in detail:
            return {"message": message, "advice": advice, "details": detail}
    status = re.search(r"HTTP (\d{3})", detail)
    message = f"The model server answered with an error{f' (HTTP {status[1]})' if status else ''}."
    return {
        "message": message,
        "advice": "Try again; if it keeps failing, the server’s operator can find the details in the server’s log.",
        "details": detail,
    }
