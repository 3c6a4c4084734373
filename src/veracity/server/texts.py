"""Text check on the server: `veracity check-text` (textcheck/) run as a pipeline, so that it goes through the
same executor, tracer, store and event stream as a claim check.

The run's `claim` is the text's title (its HTML title, else its first words); the text itself is in the run's
first steps (`text_extraction`, textcheck/steps.py), which also list every claim with its spans; each claim's
result follows as a `text_claim` step as soon as it is known, and a `text_summary` ends the check. The run's
options keep how it was asked: the claim pipeline, the extraction method, the budget and where the text came
from. The verdict's label is "Factuality <score>" (supported / decided claims, with their count when some were not
decided), "Factuality not determined" when no claim was decided, or "No checkable claim".

It is offered by the server only, at POST /api/texts (not in the pipeline registry): a text is not a claim.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..claims import METHODS
from ..claims.sources import TEXT_FILE_TYPES, Source, text_of
from ..errors import UserError
from ..inputs import InputError, clean_text_input
from ..pipeline import Context, Pipeline
from ..reading import human_size
from ..textcheck.outcomes import factuality_label, factuality_words
from ..textcheck.report import to_html, to_markdown
from ..textcheck.run import TextCheck, check_text
from ..textcheck.steps import TextExtraction
from ..textcheck.stored import text_check_from_steps
from ..types import Claim, Verdict
from .errors import ApiError
from .limits import api_error, check_evidence
from .uploads import clean_filename, decode_base64
from .views import run_view

if TYPE_CHECKING:
    from ..config import Config
    from .state import ServerState

NAME = "text-check"
DESCRIPTION = "extract the claims of a text, check each with a claim pipeline, and show them on the text"
TITLE_CHARS = 100


# -- the request (schemas of the OpenAPI document) ---------------------------------------------------------


class TextFileIn(BaseModel):
    """A document whose text is checked, inline in the JSON request."""

    data: str = Field(
        description="the file's bytes in base64 (line breaks are ignored), or a data: URL. Plain "
        "text, Markdown, HTML or PDF (told by its content, else by its name)"
    )
    filename: str | None = Field(
        None, max_length=255, description="the file's name: shown with the run", examples=["article.html"]
    )


class TextIn(BaseModel):
    text: str | None = Field(
        None,
        description="the text whose claims to check (line breaks are kept)",
        examples=["Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903."],
    )
    file: TextFileIn | None = Field(None, description="or a file to read the text from (.txt, .md, .html, .pdf)")
    pipeline: str | None = Field(
        None,
        description="the claim pipeline that checks each claim (GET /api/pipelines; "
        "default: `defaults.text_pipeline` there)",
    )
    qa: str | None = Field(None, description="QACheck's question-answering module, for the qacheck pipeline")
    model: str | None = Field(None, description="one of the models the server offers (default: the first)")
    extract: Literal["auto", "rules", "model"] = Field(
        "auto",
        description="how claims are extracted: rules, model, or auto (the model behind an HTTP server, else the rules)",
    )
    max_claims: int | None = Field(
        None,
        ge=1,
        description="check at most this many claims; the rest are listed, "
        "not checked (default and most: the server's "
        "`texts.max_claims`)",
    )
    max_tokens: int | None = Field(None, ge=1, description="stop checking claims once this many model tokens are used")
    evidence: list[str] | None = Field(
        None,
        description="documents to check the claims against instead of the "
        "server's index (a summary against its source): at most "
        "20, 200,000 characters in all",
    )


# -- the text check as a pipeline ---------------------------------------------------------------------------


class TextCheckPipeline(Pipeline):
    name = NAME
    description = DESCRIPTION
    input_kind = "text"
    labels = ()

    def __init__(
        self,
        inner: Pipeline,
        source: Source,
        *,
        extract: str = "auto",
        max_claims: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.inner = inner
        self.source = source
        self.extract = extract
        self.max_claims = max_claims
        self.max_tokens = max_tokens

    def needs_retriever(self, config: Config) -> bool:
        return self.inner.needs_retriever(config)

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        # over a server with parallel slots up to `concurrency` claims are checked at once (told in text order)
        try:
            check = check_text(
                self.source,
                self.inner,
                ctx.model.model,
                ctx.config,
                retriever=ctx.retriever,
                extract=self.extract,
                max_claims=self.max_claims,
                max_tokens=self.max_tokens,
                workers=ctx.config.concurrency if ctx.model.parallel else 1,
                tracer=ctx.tracer,
                meter=ctx.meter,
            )
        except Exception:
            self.keep_text(ctx)
            raise
        return text_verdict(check)

    def keep_text(self, ctx: Context) -> None:
        """A check that failed before its claims were found still keeps its text (the run's steps are where the
        text is stored): reopened, the failed run shows it and the form holds it, ready to check again."""
        if not any(step.stage == TextExtraction.kind for step in ctx.tracer.steps):
            src = self.source
            ctx.tracer.emit(
                TextExtraction(
                    text=src.text,
                    title=src.title,
                    origin=src.origin,
                    source_kind=src.kind,
                    source_note=src.note,
                    method=self.extract,
                    note="the check stopped before its claims were found",
                )
            )


def text_verdict(check: TextCheck) -> Verdict:
    """A checked text as a run's verdict: its factuality score, and what the counts were."""
    s = check.summary()
    if check.checked:
        label = factuality_label(s)  # over the decided claims, with their count; "not determined" when none was
        rationale = (
            f"{s['supported']} of {s['checked']} checked claims supported, {s['refuted']} refuted, "
            f"{s['uncertain']} uncertain. Factuality {factuality_words(s)}."
        )
    else:
        label = "No checkable claim" if not check.extraction.checkable else "No claim checked"
        rationale = "Nothing was checked."
    if check.note:
        rationale = f"{check.note[0].upper()}{check.note[1:]}. {rationale}"
    rest = [
        f"{s[k]} {what}"
        for k, what in (
            ("not_checkable", "not checkable"),
            ("ambiguous", "ambiguous"),
            ("not_checked", "not checked (over the budget)"),
        )
        if s[k]
    ]
    if rest:
        rationale += f" Not sent to the pipeline: {', '.join(rest)}."
    if s.get("failed"):
        rationale += f" {s['failed']} failed with a model backend error (see each claim)."
    if check.stopped:
        rationale += f" Stopped early: {check.stopped}."
    return Verdict(
        label=label, rationale=rationale, confidence=None, parse_failures=list(check.extraction.parse_failures)
    )


# -- starting one ------------------------------------------------------------------------------------------


def read_text(body: TextIn, max_bytes: int) -> Source:
    """The text of the request (`text`, or `file` read like `veracity check-text FILE`), by the rules of `inputs`
    and `claims.sources` (the CLI's too), or an ApiError: 400 text_empty, text_and_file, invalid_text,
    file_encoding, file_unreadable; 413 text_too_long, file_too_large; 415 text_binary."""
    if body.text is not None and body.file is not None:
        raise ApiError(400, "text_and_file", "send the text as `text` or a file as `file`, not both")
    try:
        if body.file is not None:
            name = clean_filename(body.file.filename) or "upload"
            data, _ = decode_base64(
                body.file.data,
                name=f"file {name}",
                noun="the file",
                max_bytes=max_bytes,
                codes=("file_encoding", "file_too_large"),
                advice=f"check a part of it ({max_bytes:,} bytes at most)",
            )
            return text_of(data, name, max_bytes=max_bytes)
        if body.text is None:
            raise ApiError(
                400,
                "text_empty",
                f"no text: send the text to check as `text`, or a file as `file` ({', '.join(TEXT_FILE_TYPES)})",
            )
        return Source(clean_text_input(body.text, max_bytes, what="text"), "pasted text", "text")
    except InputError as e:
        raise api_error(e) from None
    except UserError as e:  # a PDF without a text layer, an HTML page with no visible text, a damaged file
        raise ApiError(400, "file_unreadable", str(e)) from None


def run_title(source: Source) -> str:
    """What the history and the page call a text check: its title, else its first words."""
    words = " ".join((source.title or source.text[: 4 * TITLE_CHARS]).split())
    return words if len(words) <= TITLE_CHARS else words[: TITLE_CHARS - 1].rstrip() + "…"


TEXT = "text"  # a text check's request's input (requests.py)


def text_request(
    pipeline: str,
    qa: str | None,
    model: str | None,
    *,
    evidence_given: bool,
    text: str,
    origin: str,
    source_kind: str,
    title: str,
    note: str,
    extract: str,
    max_claims: int | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    """A text check's request (requests.py): the claim pipeline's, and the text with how its claims are found."""
    return {
        "input": TEXT,
        "pipeline": pipeline,
        "qa": qa,
        "model": model,
        "evidence_given": evidence_given,
        "source": {"text": text, "origin": origin, "kind": source_kind, "title": title, "note": note},
        "extract": extract,
        "max_claims": max_claims,
        "max_tokens": max_tokens,
    }


def start_text(s: ServerState, body: TextIn, client: str) -> tuple[str, int, Source]:
    """Validate a request and queue the text check (shared by the API and the page's plain form): (run id, queue
    position, the text as it will be checked)."""
    s.limiter.check(client)
    evidence = check_evidence(body.evidence)
    # with documents to read (the server's index, or the evidence sent) the evidence-only verifier by default
    name = body.pipeline or ("verifier" if evidence and "verifier" in s.catalog.pipelines else s.catalog.text_pipeline)
    info = s.catalog.pipelines.get(name)
    if info is not None and info.input_kind != "claim":
        raise ApiError(
            400,
            "input_not_supported",
            f"pipeline {name!r} does not check claims: a text's claims are checked with a claim pipeline "
            f"(e.g. {s.catalog.text_pipeline}; GET /api/pipelines lists them)",
        )
    pipeline, cfg, qa = s.catalog.resolve(name, body.qa, body.model, evidence_given=bool(evidence))
    if body.extract not in METHODS:  # the schema says so too; the page's plain form comes here unchecked
        raise ApiError(400, "unknown_extract", f"extract must be one of {', '.join(METHODS)}, not {body.extract!r}")
    limit = s.settings.max_text_claims
    if body.max_claims is not None and body.max_claims > limit:
        raise ApiError(
            400,
            "max_claims_too_high",
            f"max_claims is {body.max_claims}; this server checks at most "
            f"{limit} claims of a text: ask for {limit} or fewer",
        )
    source = read_text(body, s.settings.max_text_bytes)
    max_claims = body.max_claims or limit
    text_check = TextCheckPipeline(
        pipeline, source, extract=body.extract, max_claims=max_claims, max_tokens=body.max_tokens
    )
    options = {
        "pipeline": pipeline.name,
        "extract": body.extract,
        "max_claims": max_claims,
        "max_tokens": body.max_tokens,
        "source": {
            "origin": source.origin,
            "kind": source.kind,
            "title": source.title,
            "characters": len(source.text),
            "size": human_size(len(source.text.encode("utf-8"))),
        },
    }
    request = text_request(
        name,
        body.qa,
        body.model,
        evidence_given=bool(evidence),
        text=source.text,
        origin=source.origin,
        source_kind=source.kind,
        title=source.title,
        note=source.note,
        extract=body.extract,
        max_claims=max_claims,
        max_tokens=body.max_tokens,
    )
    run_id, position = s.manager.submit(
        claim=run_title(source),
        pipeline=text_check,
        config=cfg,
        qa=qa,
        options=options,
        evidence=evidence,
        request=request,
    )
    return run_id, position, source


# -- reading one back ----------------------------------------------------------------------------------------


def text_summary(steps: list[dict[str, Any]], *, stopped: bool = False) -> dict[str, Any] | None:
    """The text check in a run's steps, from its view items: {"text", "title", "origin", "method", ...,
    "summary": counts and factuality (once finished), "claims": [each claim with its outcome and evidence]}.
    `stopped`: the run ended unfinished, its pending claims not checked (`run_view`)."""
    items, _ = run_view(steps, stopped=stopped)
    source = next((it for it in items if it["kind"] == "text_source"), None)
    if source is None:
        return None
    summary = next((it for it in reversed(items) if it["kind"] == "text_summary"), None)
    out = {k: v for k, v in source.items() if k not in ("kind", "claims", "checkable")}
    out["summary"] = {k: v for k, v in summary.items() if k not in ("kind", "rows")} if summary else None
    out["claims"] = [{k: v for k, v in it.items() if k != "kind"} for it in items if it["kind"] == "text_claim"]
    return out


def text_report(run: dict[str, Any], steps: list[dict[str, Any]], fmt: str) -> str:
    """A finished text check's report: Markdown or HTML as `veracity check-text --report` writes them (the HTML
    shows the text with each claim's span coloured by its outcome), or its JSON (`--json`, with the run's id)."""
    r = run.get("result") or {}
    check = text_check_from_steps(
        steps,
        pipeline=str((run.get("options") or {}).get("pipeline") or ""),
        model=str(r.get("model") or run.get("model") or ""),
        usage=r.get("usage"),
        seconds=float(r.get("seconds") or 0.0),
    )
    if check is None:
        raise ValueError("the run's steps hold no text")
    if fmt == "md":
        return to_markdown(check)
    if fmt == "html":
        return to_html(check)
    return json.dumps({"id": run["id"], **check.to_dict()}, indent=2, ensure_ascii=False)
