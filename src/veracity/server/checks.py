"""Starting a check and reading a stored run's images: what the API (api_checks.py) and the pages (pages.py) share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from .answers import NAME as ANSWER_CHECK
from .answers import check_answer_input
from .errors import ApiError
from .limits import check_claim, check_date, check_evidence
from .requests import ANSWER, claim_request
from .uploads import Upload, upload_from_base64

if TYPE_CHECKING:
    from .state import ServerState

MAX_OFFSET = 1_000_000_000  # the furthest a history page starts: beyond any history; SQLite takes at most 2**63 - 1


# -- the request to start a check (schemas of the OpenAPI document) ------------------------------------

TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="  # a 1x1 PNG: the example of the OpenAPI document


class ImageIn(BaseModel):
    """One image of the claim, inline in the JSON request."""

    data: str = Field(
        description="the image file's bytes in base64 (line breaks are ignored), or a data: URL "
        "such as `data:image/png;base64,iVBORw0...`. JPEG, PNG, GIF or WebP; at most "
        "`max_image_bytes` bytes decoded (GET /api/pipelines)",
        examples=[TINY_PNG],
    )
    filename: str | None = Field(
        None,
        max_length=255,
        description="the file's name: shown with the run and named in errors",
        examples=["photo.png"],
    )
    media_type: str | None = Field(
        None,
        max_length=100,
        description="the type the client says the image is (default: that of the "
        "data: URL, if any); it must match the content, which is what "
        "counts",
        examples=["image/png"],
    )


class CheckIn(BaseModel):
    claim: str | None = Field(
        None,
        description="the statement to check (claim pipelines)",
        examples=["Lars Onsager won the Nobel prize when he was 30 years old."],
    )
    date: str | None = Field(
        None,
        description="when the claim was made, YYYY-MM-DD (not in the future). DEFAME "
        "ignores sources published after it; other claim pipelines keep "
        "it with the run",
        examples=["2024-05-15"],
    )
    images: list[ImageIn] | None = Field(
        None,
        description="images the claim is about, for pipelines with "
        "`accepts_images` (defame and its ablations): at most "
        "`max_images` of them (GET /api/pipelines)",
    )
    evidence: list[str] | None = Field(
        None,
        description="passages to check the claim against instead of the "
        "server's index (claim pipelines): each one document, read "
        "whole in the order given when they fit in what a step "
        "reads, else searched; at most 20, 200,000 characters "
        "in all",
        examples=[["The Danube flows into the Black Sea."]],
    )
    question: str | None = Field(None, description="answer-check: the question the answer replies to")
    answer: str | None = Field(
        None,
        description="answer-check: the answer to fact-check sentence by sentence against the server's index (LEAF)",
    )
    pipeline: str | None = Field(
        None,
        description="a pipeline name from GET /api/pipelines (default: qacheck, or "
        "answer-check when question or answer is given)",
    )
    qa: str | None = Field(
        None,
        description="QACheck's question-answering module: retriever-reader, closed-book "
        "or reciter-reader (default: the server's)",
    )
    model: str | None = Field(None, description="one of the models the server offers (default: the first)")


# -- a stored run's images -------------------------------------------------------------------------


def image_url(run_id: str, index: int) -> str:
    return f"/api/checks/{run_id}/images/{index}"


def stored_images(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The image records of a run's options (a damaged record reads as an empty one)."""
    infos = (run.get("options") or {}).get("images") or []
    return [info if isinstance(info, dict) else {} for info in infos] if isinstance(infos, list) else []


def images_of(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The claim's images as the API shows them (the stored file name stays the server's business). Each field
    has its declared type whatever the database holds, so a damaged record cannot fail a read."""

    def num(v: Any) -> int:
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    def text(v: Any) -> str | None:
        return v if isinstance(v, str) else None

    return [
        {
            "index": i,
            "url": image_url(run["id"], i),
            "filename": text(info.get("filename")),
            "media_type": text(info.get("media_type")) or "application/octet-stream",
            "bytes": num(info.get("bytes")),
            "width": num(info.get("width")),
            "height": num(info.get("height")),
            "sha256": text(info.get("sha256")) or "",
        }
        for i, info in enumerate(stored_images(run), start=1)
    ]


# -- starting a check --------------------------------------------------------------------------------


def start_check(s: ServerState, body: CheckIn, client: str, uploads: list[Upload] | None = None) -> tuple[str, int]:
    """Validate a request and queue the check (shared by the API and the page's plain form). The images are
    `body.images` (JSON, base64) or `uploads` (the form's files)."""
    s.limiter.check(client)
    answer_given = body.question is not None or body.answer is not None
    name = body.pipeline or (ANSWER_CHECK if answer_given else "qacheck")
    info = s.catalog.pipelines.get(name)
    has_images = bool(body.images or uploads)
    if info is not None and info.input_kind == "answer":
        if body.claim is not None:
            raise ApiError(
                400,
                "claim_not_applicable",
                f"pipeline {name!r} checks an answer: send `question` and `answer` instead of `claim`",
            )
        if has_images:
            raise ApiError(
                400,
                "images_not_accepted",
                f"pipeline {name!r} checks an answer's text and does not look at images: leave `images` out",
            )
        if body.evidence:
            raise ApiError(
                400,
                "evidence_not_applicable",
                f"pipeline {name!r} checks an answer against the server's index: leave `evidence` out",
            )
        if body.date is not None and str(body.date).strip():
            raise ApiError(
                400,
                "date_not_applicable",
                f"pipeline {name!r} checks an answer against the index and takes no claim date: leave `date` out",
            )
        pipeline, cfg, qa = s.catalog.resolve(name, body.qa, body.model, input_kind="answer")  # index first
        question, answer = check_answer_input(
            body.question,
            body.answer,
            max_question_chars=s.config.max_claim_chars,
            max_answer_chars=s.catalog.max_answer_chars,
        )
        return s.manager.submit(
            claim=question,
            pipeline=pipeline,
            config=cfg,
            qa=qa,
            options={"answer": answer},
            request=claim_request(name, body.qa, body.model, kind=ANSWER),
        )
    if body.claim is None:
        if info is None:
            s.catalog.resolve(name, body.qa, body.model)  # says the pipeline is unknown
        if answer_given:
            raise ApiError(
                400,
                "input_not_supported",
                f"pipeline {name!r} checks a claim: send `claim`, or use "
                f"pipeline {ANSWER_CHECK!r} to check a question's answer",
            )
        raise ApiError(
            422, "invalid_request", f"claim: Field required (or `question` and `answer` with pipeline {ANSWER_CHECK!r})"
        )
    claim = check_claim(body.claim, s.config.max_claim_chars)
    evidence = check_evidence(body.evidence)
    pipeline, cfg, qa = s.catalog.resolve(name, body.qa, body.model, evidence_given=bool(evidence))
    date = check_date(body.date)
    images: list = []
    if has_images:
        if not pipeline.accepts_images:
            takers = [p.name for p in s.catalog.pipelines.values() if p.accepts_images and p.available]
            raise ApiError(
                400,
                "images_not_accepted",
                f"pipeline {name!r} does not look at images: leave `images` out, or choose a pipeline "
                f"that does ({', '.join(takers[:3]) or 'none on this server'})",
            )
        if uploads is None:
            s.uploads.check_count(len(body.images or []))
            uploads = [
                upload_from_base64(im.data, im.filename, im.media_type, i, s.uploads.max_bytes)
                for i, im in enumerate(body.images or [], start=1)
            ]
        images = s.uploads.check(uploads)
    with s.uploads.lock:  # no delete may take a file between saving it and queueing the run that uses it
        infos = s.uploads.save(images)
        try:
            return s.manager.submit(
                claim=claim,
                pipeline=pipeline,
                config=cfg,
                qa=qa,
                date=date,
                images=[(str(s.uploads.folder / i["file"]), i) for i in infos],
                evidence=evidence,
                request=claim_request(name, body.qa, body.model, evidence_given=bool(evidence)),
            )
        except BaseException:
            s.uploads.release([i["file"] for i in infos])
            raise
