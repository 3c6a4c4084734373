"""How a check was asked, stored with its run, and the job a worker rebuilds from it: over a shared queue
(`veracity serve --db postgresql://...` started several times) the worker that runs a check is not always the one
that accepted it. The request holds what the API received once it was validated: the pipeline's name and QA
module as asked, the model, whether evidence came with the claim, and for a text check the text itself (a run's
text is otherwise stored only by its first step). The claim, its date, images, evidence and answer are the run's
own columns and options.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..claims.sources import Source
from .errors import ApiError
from .runs import Job
from .texts import TEXT, TextCheckPipeline

if TYPE_CHECKING:
    from .catalog import Catalog

CLAIM, ANSWER = "claim", "answer"


def claim_request(
    pipeline: str, qa: str | None, model: str | None, *, evidence_given: bool = False, kind: str = CLAIM
) -> dict[str, Any]:
    """A claim check's (or with kind=ANSWER an answer check's) request, as `Catalog.resolve` takes it (a text
    check's: texts.text_request)."""
    return {"input": kind, "pipeline": pipeline, "qa": qa, "model": model, "evidence_given": evidence_given}


def job_for(catalog: Catalog, images_folder: Path, run: dict[str, Any]) -> Job:
    """The job of a claimed run (RunStore.claim), with its pipeline and config resolved by this worker's catalog;
    an ApiError when this worker cannot run it (e.g. it does not offer the run's model)."""
    request = run.get("request")
    if not isinstance(request, dict) or request.get("input") not in (CLAIM, ANSWER, TEXT):
        raise ApiError(400, "not_runnable", "the run was stored without how it was asked: submit it again")
    options = run.get("options") or {}
    kind = request["input"]
    pipeline, config, _ = catalog.resolve(
        str(request.get("pipeline")),
        request.get("qa"),
        request.get("model"),
        input_kind=ANSWER if kind == ANSWER else CLAIM,
        evidence_given=bool(request.get("evidence_given")),
    )
    metadata: dict[str, Any] = {}
    if kind == ANSWER:
        metadata["answer"] = options.get("answer")
    if kind == TEXT:
        src = request.get("source") or {}
        source = Source(
            text=str(src.get("text") or ""),
            origin=str(src.get("origin") or ""),
            kind=str(src.get("kind") or "text"),
            title=str(src.get("title") or ""),
            note=str(src.get("note") or ""),
        )
        pipeline = TextCheckPipeline(
            pipeline,
            source,
            extract=str(request.get("extract") or "auto"),
            max_claims=request.get("max_claims"),
            max_tokens=request.get("max_tokens"),
        )
    images = [
        str(images_folder / str(info.get("file")))
        for info in options.get("images") or []
        if isinstance(info, dict) and info.get("file")
    ]
    evidence = [str(t) for t in options.get("evidence") or []]
    return Job(
        run["id"],
        run["claim"],
        pipeline,
        config,
        config.model,
        metadata,
        images=images,
        date=options.get("date"),
        evidence=evidence,
        request=request,
    )
