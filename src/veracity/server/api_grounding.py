"""`POST /api/ground`: which sentences of an answer the documents given with it support (veracity.grounding), in
one request, without a run: no model is called and nothing of the documents is stored."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..errors import UserError
from .api_routing import api_router
from .api_schemas import ERRORS
from .errors import ApiError
from .state import state

router = api_router()
MAX_DOCUMENTS = 50


class DocumentIn(BaseModel):
    text: str = Field(description="the document's text")
    id: str | None = Field(None, description="its id (default doc-N, by its place)")
    title: str | None = None
    url: str | None = None


class GroundIn(BaseModel):
    answer: str = Field(description="the answer (or any text) whose sentences are checked")
    documents: list[DocumentIn] = Field(description="the documents it should rest on", min_length=1)


@router.post("/ground", responses=ERRORS, summary="Which sentences of an answer the given documents support")
async def ground_answer(body: GroundIn, request: Request) -> dict[str, Any]:
    """Every sentence of `answer` against every part of `documents`: `label` (supported, not_supported,
    contradicted), `probability` that the documents support it, `decided`, `shown_as`, and the `quote` (document id,
    offsets, text) that decided it; over the whole answer `grounded_share` of the decided sentences (null: not
    determined). 400 `invalid_answer` for an empty or overlong answer, 400 `invalid_documents` for documents with no
    text, too many (over 50) or too large (over the server's text limit in all)."""
    from ..grounding import as_documents, ground

    s = state(request)
    limit = s.settings.max_text_bytes
    if len(body.documents) > MAX_DOCUMENTS:
        raise ApiError(400, "invalid_documents", f"give at most {MAX_DOCUMENTS} documents, not {len(body.documents)}")
    if sum(len(d.text.encode("utf-8", "surrogatepass")) for d in body.documents) > limit:
        raise ApiError(400, "invalid_documents", f"the documents hold over {limit:,} bytes together: give fewer")
    try:  # read here, so that a document's fault is told from the answer's
        docs = as_documents([d.model_dump() for d in body.documents])
    except UserError as e:
        raise ApiError(400, "invalid_documents", str(e)) from None
    try:
        result = await run_in_threadpool(
            ground, body.answer, docs, config=s.config, max_answer_chars=s.settings.max_answer_chars
        )
    except UserError as e:
        raise ApiError(400, "invalid_answer", str(e)) from None
    return result.to_dict()
