"""`POST /api/factchecks/match`: the published fact-checks of a claim, a sentence or a post, from the server's
fact-check store (`veracity factchecks import`; factchecks/lookup.py), without running a check. A check's own run
carries them too (`factchecks` before its `verdict`)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from pydantic import BaseModel, Field

from ..errors import UserError
from .api_routing import api_router
from .api_schemas import ERRORS
from .errors import ApiError
from .state import state

router = api_router()
MAX_TEXT_CHARS = 5000


class MatchIn(BaseModel):
    text: str = Field(description="a claim, a sentence or a social-media post (links, handles and emoji are ignored)")
    k: int = Field(5, ge=1, le=20, description="at most this many matches")
    related: bool = Field(False, description="also the best candidates below the threshold")


@router.post("/factchecks/match", responses=ERRORS, summary="Published fact-checks of a claim or post")
def match_factchecks(body: MatchIn, request: Request) -> dict[str, Any]:
    """The matches at or above the re-ranker's threshold, best first: `found`, `summary` ("no published fact-check
    found" when none), `matches` (claim as the publisher worded it, rating in its words, publisher, date, url,
    probability that it checks the same claim), `related` (asked for) and the store's size. 404 `no_factcheck_store`
    when the server has none (import one with `veracity factchecks import`), 400 `invalid_text` for an empty or
    overlong text."""
    from ..factchecks.lookup import NO_STORE, find, store_in_use

    if not body.text.strip() or len(body.text) > MAX_TEXT_CHARS:
        raise ApiError(400, "invalid_text", f"give a text of 1 to {MAX_TEXT_CHARS} characters to match")
    store = store_in_use(state(request).config)
    if store is None:
        raise ApiError(404, "no_factcheck_store", NO_STORE)
    try:
        return find(body.text, store=store, k=body.k, related=body.related).to_dict()
    except UserError as e:
        raise ApiError(400, "invalid_text", str(e)) from None
