"""The web pages: server-rendered with Jinja2; the scripts of static/ (app.js and the files it starts) add the live view (SSE) on top.

/                 the form, an empty run area and the history
/checks/{id}      the same page with that run: rendered here when finished, followed live while running
/checks/{id}/panel and /partials/history   fragments static/live.js swaps in when a run ends
POST /checks      the form without JavaScript: queue the check (a claim, an answer or a text) and go to its page
/login            where a browser gives the token, when the server needs one
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import UploadFile as StarletteUploadFile  # what the form parser makes

from ..check import for_low_confidence
from ..evidence.stored import nothing_to_recheck
from ..failures import failure_view
from ..quotes import diff_parts
from ..reading import human_size
from ..steps import utc_time
from ..verdict_words import words_of
from . import store as st
from .answers import NAME as ANSWER_CHECK
from .auth import COOKIE, origin_allowed
from .checks import MAX_OFFSET, CheckIn, images_of, start_check, stored_images
from .errors import ApiError
from .rechecks import RECHECK, recheck_run
from .state import state
from .texts import NAME as TEXT_CHECK
from .texts import TextFileIn, TextIn, start_text
from .uploads import Upload, clean_filename
from .views import EXAMPLES, human_time, iso, label_class, link_parts, plain_refs, run_view, source_of

if TYPE_CHECKING:
    from .state import ServerState

router = APIRouter(include_in_schema=False)
HISTORY_PAGE = 15

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    s = state(request)
    resp = s.templates.TemplateResponse(request, name, {"s": s, **context}, status_code=status)
    resp.headers["Content-Security-Policy"] = CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers["Cache-Control"] = "no-store"
    return resp


def login_redirect(request: Request) -> Response | None:
    s = state(request)
    if s.auth.allowed(request.headers, request.cookies):
        return None
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target)}", status_code=303)


def history(s: ServerState, offset: int) -> dict[str, Any]:
    offset = min(max(0, offset), MAX_OFFSET)  # a page never fails over its offset: past the end is empty
    runs, total = s.store.list(HISTORY_PAGE, offset)
    return {
        "runs": runs,
        "total": total,
        "offset": offset,
        "newer": max(0, offset - HISTORY_PAGE) if offset > 0 else None,
        "older": offset + HISTORY_PAGE if offset + HISTORY_PAGE < total else None,
    }


def run_context(s: ServerState, run: dict[str, Any]) -> dict[str, Any]:
    finished = run["status"] not in st.UNFINISHED
    steps = [d for _, d in s.store.steps(run["id"])] if finished else []  # a live run's steps come over SSE
    r = run.get("result") or {}
    options = run.get("options") or {}
    items, calls = run_view(steps, stopped=run["status"] in (st.FAILED, st.INTERRUPTED))
    return {
        "run": run,
        "live": not finished,
        "items": items,
        "calls": calls,
        "rechecks": s.store.rechecks_of(run["id"]),
        "rechecked": options.get("rechecks"),
        "verdict": r.get("verdict"),
        "usage": r.get("usage"),
        "result": r,
        "images": images_of(run),
        "claim_date": options.get("date"),
        # a run that read no source (the model's memory only) is not offered a Re-check: the page says why
        "nothing_to_recheck": nothing_to_recheck(steps) if run["status"] == st.DONE else None,
        "uncertain_meaning": _uncertain_meaning(s) if for_low_confidence(r.get("verdict")) else "",
    }


def _uncertain_meaning(s: ServerState) -> str:
    from ..verify import uncertain_meaning

    return uncertain_meaning(s.config.verifier)


def page_context(s: ServerState, offset: int, run: dict[str, Any] | None = None) -> dict[str, Any]:
    catalog = s.catalog.to_dict()
    form = {
        "mode": "claim",
        "claim": "",
        "evidence": "",
        "question": "",
        "answer": "",
        "date": "",
        "text": "",
        "extract": "auto",
        "max_claims": catalog["texts"]["max_claims"],
        "pipeline": catalog["defaults"]["pipeline"],
        "qa": catalog["defaults"]["qa"],
        "model": catalog["defaults"]["model"],
    }
    if run is not None:  # the form starts as this run was asked, ready to check again
        form.update(model=run["model"] if run["model"] in s.catalog.models else form["model"])
        options = run.get("options") or {}
        if run["pipeline"] == ANSWER_CHECK:
            form.update(mode="answer", question=run["claim"], answer=options.get("answer", ""))
        elif run["pipeline"] == RECHECK:  # a recheck is not asked again: the form keeps the claim, defaults otherwise
            form.update(claim=run["claim"])
        elif run["pipeline"] == TEXT_CHECK:  # the text itself is in the run's steps (run_context, below)
            form.update(
                mode="text",
                pipeline=options.get("pipeline") or catalog["defaults"]["text_pipeline"],
                qa=run["qa"] or form["qa"],
                extract=options.get("extract") or "auto",
                max_claims=options.get("max_claims") or form["max_claims"],
            )
        else:
            given = options.get("evidence")  # the passages it was checked against, shown as one text to edit
            passages = [t for t in given if isinstance(t, str)] if isinstance(given, list) else []
            form.update(
                claim=run["claim"],
                pipeline=run["pipeline"],
                qa=run["qa"] or form["qa"],
                date=options.get("date") or "",
                **evidence_fields(passages),
            )
            info = s.catalog.pipelines.get(run["pipeline"])
            if info is not None and info.accepts_images and images_of(run):
                # shown in the form and sent again with the next check (unless the user chooses others)
                form.update(images=images_of(run), reuse_run=run["id"])
    ctx = {
        "catalog": catalog,
        "examples": EXAMPLES,
        "answer_check": s.catalog.pipelines.get(ANSWER_CHECK),
        "form": form,
        "history": history(s, offset),
        "run": None,
        "today": dt.date.today().isoformat(),
        "image_pipelines": [p["name"] for p in catalog["pipelines"] if p["accepts_images"] and p["available"]],
        # inside <script type="application/json">: no "<" may close the element early
        "catalog_json": json.dumps(catalog).replace("<", "\\u003c"),
    }
    if run is not None:
        ctx.update(run_context(s, run))
        if form["mode"] == "text":
            form["text"] = next((it["text"] for it in ctx["items"] if it["kind"] == "text_source"), "")
    return ctx


@router.get("/", response_class=HTMLResponse)
def index(request: Request, offset: int = 0) -> Response:
    if (r := login_redirect(request)) is not None:
        return r
    return render(request, "page.html", page_context(state(request), offset))


@router.get("/checks/{run_id}", response_class=HTMLResponse)
def run_page(run_id: str, request: Request, offset: int = 0) -> Response:
    if (r := login_redirect(request)) is not None:
        return r
    s = state(request)
    run = s.store.get(run_id)
    if run is None:
        ctx = page_context(s, offset)
        ctx["missing"] = run_id
        return render(request, "page.html", ctx, status=404)
    return render(request, "page.html", page_context(s, offset, run))


@router.get("/checks/{run_id}/panel", response_class=HTMLResponse)
def run_panel(run_id: str, request: Request) -> Response:
    if (r := login_redirect(request)) is not None:
        return r
    s = state(request)
    run = s.store.get(run_id)
    if run is None:
        return render(request, "missing.html", {"missing": run_id}, status=404)
    return render(request, "run.html", run_context(s, run))


@router.get("/partials/history", response_class=HTMLResponse)
def history_panel(request: Request, offset: int = 0) -> Response:
    if (r := login_redirect(request)) is not None:
        return r
    return render(request, "history.html", {"history": history(state(request), offset)})


def chosen_files(parts: list[UploadFile | str] | None) -> list[StarletteUploadFile]:
    """The files of the form's image input: an empty input sends one nameless, empty part, which arrives as
    an empty string (or an empty file): not an image."""
    return [f for f in parts or [] if isinstance(f, StarletteUploadFile) and (f.filename or f.size)]


def form_uploads(files: list[StarletteUploadFile], max_bytes: int) -> list[Upload]:
    """The form's chosen files, each read up to one byte past the limit (enough for check_image to refuse it).
    The type a browser declares is its guess from the file name, so it does not count: the content decides."""
    return [Upload(f.file.read(max_bytes + 1), clean_filename(f.filename), None) for f in files]


def reused_uploads(s: ServerState, run_id: str) -> list[Upload]:
    """The images of an earlier run (the reopened one whose form is sent again), read back from the server's
    images folder; checked again like any upload."""
    run = s.store.get(run_id)
    if run is None:
        raise ApiError(400, "images_gone", f"run {run_id[:40]!r} and its images were deleted: choose the images again")
    uploads = []
    for i, info in enumerate(stored_images(run), start=1):
        path = s.uploads.path(info.get("file") if isinstance(info.get("file"), str) else "")
        if path is None or not path.is_file():
            raise ApiError(
                400, "images_gone", f"image {i} of run {run_id} is no longer on the server: choose the images again"
            )
        with path.open("rb") as f:
            uploads.append(Upload(f.read(s.uploads.max_bytes + 1), clean_filename(info.get("filename")), None))
    return uploads


def form_text(
    text: str,
    file: UploadFile | str | None,
    extract: str,
    max_claims: str,
    pipeline: str,
    qa: str,
    model: str,
    max_bytes: int,
    evidence: list[str] | None = None,
) -> TextIn:
    """The text check the plain form asks for: the chosen file (read up to one byte past the limit, enough for
    the limit's error) or the text, as the API's request."""
    files = chosen_files([file] if file is not None else [])
    upload = None
    if files:
        data = files[0].file.read(max_bytes + 1)
        upload = TextFileIn(data=base64.b64encode(data).decode("ascii"), filename=clean_filename(files[0].filename))
    try:
        limit = int(max_claims) if max_claims.strip() else None
    except ValueError:
        raise ApiError(
            400, "invalid_max_claims", f"claims to check at most: {max_claims[:20]!r} is not a number"
        ) from None
    if limit is not None and limit < 1:
        raise ApiError(400, "invalid_max_claims", "claims to check at most: give 1 or more")
    return TextIn.model_construct(
        text=None if upload else text,
        file=upload,
        pipeline=pipeline or None,
        qa=qa or None,
        model=model or None,
        extract=extract or "auto",
        max_claims=limit,
        max_tokens=None,
        evidence=evidence or None,
    )


@router.post("/checks")
def submit_form(
    request: Request,
    claim: str = Form(""),
    pipeline: str = Form("qacheck"),
    qa: str = Form(""),
    model: str = Form(""),
    mode: str = Form("claim"),
    question: str = Form(""),
    answer: str = Form(""),
    date: str = Form(""),
    reuse_run: str = Form(""),
    image: list[UploadFile | str] | None = File(None),
    text: str = Form(""),
    text_file: UploadFile | str | None = File(None),
    extract: str = Form("auto"),
    max_claims: str = Form(""),
    evidence: str = Form(""),
    evidence_passages: str = Form(""),
) -> Response:
    """The form posted without JavaScript (multipart, with the claim's images for pipelines that take them, or
    the file of a text check): queue the check and show its page (errors: the form again)."""
    if (r := login_redirect(request)) is not None:
        return r
    s = state(request)
    same_origin(request, "checks can only be submitted from this server's own page")
    client = request.client.host if request.client else "unknown"
    if mode == "text":
        info = s.catalog.pipelines.get(pipeline)
        try:
            body = form_text(
                text,
                text_file,
                extract,
                max_claims,
                pipeline,
                qa if info is not None and info.qa == "choice" else "",
                model,
                s.settings.max_text_bytes,
                given_passages(evidence, evidence_passages),
            )
            run_id, _, _ = start_text(s, body, client)
        except ApiError as e:
            ctx = page_context(s, 0)
            ctx["form"].update(
                mode="text",
                text=text,
                pipeline=pipeline,
                qa=qa or ctx["form"]["qa"],
                model=model,
                extract=extract,
                max_claims=max_claims,
                **evidence_fields(given_passages(evidence, evidence_passages)),
            )
            ctx["form_error"] = e.detail
            return render(request, "page.html", ctx, status=e.status)
        return RedirectResponse(f"/checks/{run_id}", status_code=303)
    uploads: list[Upload] = []
    if mode == "answer":
        pipeline = ANSWER_CHECK
        body = CheckIn(question=question, answer=answer, pipeline=pipeline, model=model or None)
    else:
        if evidence.strip() and qa == s.catalog.config.qacheck.qa:
            qa = ""  # the select as the page drew it: a source given is read by the QA module that follows it
        body = CheckIn(
            claim=claim,
            pipeline=pipeline,
            qa=qa or None,
            model=model or None,
            date=date or None,
            evidence=given_passages(evidence, evidence_passages) or None,
        )
    info = s.catalog.pipelines.get(pipeline)
    if info is not None and info.qa != "choice":
        body.qa = None  # the select is hidden for these pipelines; its value does not apply
    try:
        if mode != "answer":
            files = chosen_files(image)
            s.uploads.check_count(len(files))
            uploads = form_uploads(files, s.uploads.max_bytes)
            if not files and reuse_run and info is not None and info.accepts_images:
                uploads = reused_uploads(s, reuse_run)
        run_id, _ = start_check(s, body, client, uploads or None)
    except ApiError as e:
        ctx = page_context(s, 0)
        ctx["form"].update(
            mode="answer" if mode == "answer" else "claim",
            claim=claim,
            question=question,
            answer=answer,
            qa=qa or ctx["form"]["qa"],
            model=model,
            date=date,
            **evidence_fields(given_passages(evidence, evidence_passages)),
        )
        if mode != "answer":
            ctx["form"]["pipeline"] = pipeline
        ctx["form_error"] = e.detail
        return render(request, "page.html", ctx, status=e.status)
    return RedirectResponse(f"/checks/{run_id}", status_code=303)


PASSAGE_BREAK = "\n\n"  # between a reopened run's passages in the evidence box


def evidence_fields(passages: list[str]) -> dict[str, Any]:
    """The form's evidence box showing these passages; several are also kept beside it (`evidence_passages`, JSON)
    to be sent again as they were, not as the one text the box shows."""
    several = len(passages) > 1
    return {
        "evidence": PASSAGE_BREAK.join(passages),
        "evidence_passages": json.dumps(passages) if several else "",
        "evidence_count": len(passages),
    }


def given_passages(text: str, kept: str) -> list[str]:
    """What the evidence box sends: the passages a reopened run was checked against (`kept`, a JSON list beside the
    box) while the box still holds them as it showed them, else the box's text as one passage ([] when empty).
    (static/form.js sends the same from the page with JavaScript.)"""
    if not text.strip():
        return []
    try:
        passages = json.loads(kept) if kept else None
    except ValueError:
        passages = None
    if (
        isinstance(passages, list)
        and passages
        and all(isinstance(x, str) for x in passages)
        and PASSAGE_BREAK.join(passages).replace("\r\n", "\n") == text.replace("\r\n", "\n")
    ):
        return passages
    return [text]


def same_origin(request: Request, refusal: str) -> None:
    """A form posted from another site's page is refused (a browser names the page's origin; none: not a browser;
    'null': this page's own forms under its no-referrer policy). The rule is `auth.origin_allowed`, the MCP
    endpoint's too."""
    if not origin_allowed(request.headers.get("origin"), request.headers.get("host", ""), null_ok=True):
        raise ApiError(403, "cross_origin", refusal)


@router.post("/checks/{run_id}/recheck")
def recheck_form(run_id: str, request: Request) -> Response:
    """The run page's Re-check button: read the run's evidence sources again, store the recheck as a new run and
    show its page (an error: the run's page again, saying why)."""
    if (r := login_redirect(request)) is not None:
        return r
    s = state(request)
    same_origin(request, "runs can only be re-checked from this server's own page")
    try:
        new_id, _ = recheck_run(s, run_id, request.client.host if request.client else "unknown")
    except ApiError as e:
        run = s.store.get(run_id)
        ctx = page_context(s, 0, run)
        ctx["recheck_error"] = e.detail
        return render(request, "page.html", ctx, status=e.status)
    return RedirectResponse(f"/checks/{new_id}", status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> Response:
    return render(request, "login.html", {"next": safe_next(next), "error": None})


@router.post("/login")
def login(request: Request, token: str = Form(""), next: str = Form("/")) -> Response:
    s = state(request)
    if not s.auth.required:
        return RedirectResponse(safe_next(next), status_code=303)
    if not s.auth.token_matches(token.strip()):
        return render(
            request,
            "login.html",
            {"next": safe_next(next), "error": "That token is not the one this server was started with."},
            status=401,
        )
    resp = RedirectResponse(safe_next(next), status_code=303)
    resp.set_cookie(
        COOKIE,
        s.auth.session_value or "",
        httponly=True,
        samesite="strict",
        path="/",
        secure=request.url.scheme == "https",
        max_age=30 * 24 * 3600,
    )
    return resp


def safe_next(target: str) -> str:
    """Only paths on this server (no '//host' or 'http://...')."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def template_globals() -> dict[str, Any]:
    return {
        "human_time": human_time,
        "iso": iso,
        "label_class": label_class,
        "source_of": source_of,
        "link_parts": link_parts,
        "failure_view": failure_view,
        "utc_time": utc_time,
        "diff_parts": diff_parts,
        "plain_refs": plain_refs,
        "human_size": human_size,
        "words_of": words_of,
    }
