"""The MCP tools: each check is started as the web server starts it (server/checks.py `start_check`,
server/texts.py `start_text`), so it is a stored run under the same limits, visible in the page's history; the
tool follows the run's steps (a progress notification per step, with what the run is doing) and answers with
the result read back from the store, as structured content plus a short text.

A client that cancels the call (or goes away) stops the run at its next step; it is kept as interrupted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver.exceptions import ToolError

from ..errors import UserError
from ..failures import short_error
from ..server import store as st
from ..server.answers import NAME as ANSWER_CHECK
from ..server.api_schemas import detail
from ..server.checks import CheckIn, start_check
from ..server.errors import ApiError
from ..server.texts import NAME as TEXT_CHECK
from ..server.texts import TextIn, start_text
from ..server.uploads import Upload, upload_from_base64
from ..server.views import LiveView
from ..textcheck.outcomes import factuality_of, factuality_words, outcome_words
from ..textcheck.run import evidence_of
from ..verdict_words import verdict_words, words_of
from . import schemas as sc

if TYPE_CHECKING:
    from ..server.state import ServerState

#: progress(done steps, message) -> None: one MCP progress notification
Progress = Callable[[int, str], Awaitable[None]]
CANCELLED = "cancelled: the MCP client stopped waiting for it"
CLIENT = "mcp"  # the rate limiter's name for the MCP client


def tool_error(e: Exception) -> ToolError:
    """A tool error with the reason, in the words the HTTP API uses, except where it sends the reader to an HTTP
    route an agent over MCP cannot call: the pipelines are listed by `veracity pipelines`."""
    detail = e.detail if isinstance(e, ApiError) else str(e)
    return ToolError(detail.replace("GET /api/pipelines", "`veracity pipelines`"))


class Tools:
    """The tools over one ServerState. `local_files`: image paths are read from this machine's disk (stdio: the
    client runs here); over HTTP they are refused."""

    def __init__(self, state: ServerState, *, local_files: bool, pipeline: str | None = None) -> None:
        self.s = state
        self.local_files = local_files
        self.pipeline = pipeline  # of a claim or text check that names none

    # -- following a run --------------------------------------------------------------------------------------

    async def _started(self, start: Callable[[], Any]) -> Any:
        try:
            return await anyio.to_thread.run_sync(start)
        except (ApiError, UserError) as e:
            raise tool_error(e) from None

    async def follow(self, run_id: str, progress: Progress) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Wait for the run, reporting each step but the model calls; (the stored run, its steps without model
        calls). A ToolError when it failed; cancelled (the client's cancellation) -> the run is stopped."""
        done = False
        view = LiveView()
        count = 0

        async def step(data: dict[str, Any]) -> None:
            nonlocal count
            status = view.add(data)["status"]
            if data.get("stage") == "model_call":  # a call inside a step: the step says what is done
                return
            count += 1
            await progress(count, status or str(data.get("stage", "")).replace("_", " "))

        try:
            await self.s.manager.follow(run_id, step)
            done = True
        finally:
            if not done:  # cancelled, or the client went away: nobody waits for the run any more
                self.s.manager.cancel(run_id, CANCELLED)
        run = await anyio.to_thread.run_sync(self.s.store.get, run_id)
        if run is None:
            raise ToolError(f"run {run_id} was deleted while it ran")
        if run["status"] != st.DONE:
            raise ToolError(
                f"the check failed ({run['status']}): {short_error(run['error']) or 'no reason recorded'}"
                f" (run {run_id})"
            )
        steps = [
            d for _, d in await anyio.to_thread.run_sync(self.s.store.steps, run_id) if d.get("stage") != "model_call"
        ]
        return run, steps

    # -- the tools ----------------------------------------------------------------------------------------------

    async def check_claim(
        self,
        progress: Progress,
        claim: str,
        pipeline: str | None = None,
        date: str | None = None,
        image_path: str | None = None,
        image_base64: str | None = None,
        evidence: list[str] | None = None,
    ) -> sc.ClaimResult:
        uploads = None
        if image_path is not None or image_base64 is not None:
            uploads = [self._image(image_path, image_base64)]
        body = CheckIn(claim=claim, pipeline=pipeline or self.pipeline, date=date, evidence=evidence)
        run_id, _ = await self._started(lambda: start_check(self.s, body, CLIENT, uploads))
        run, steps = await self.follow(run_id, progress)
        r = run.get("result") or {}
        v = r.get("verdict") or {}
        return sc.ClaimResult(
            run_id=run_id,
            claim=run["claim"],
            pipeline=run["pipeline"],
            model=run["model"],
            published_factchecks=sc.published((r.get("factchecks") or {}).get("matches")),
            shown_as=words_of(v).text,
            label=str(v.get("label", "")),
            confidence=v.get("confidence"),
            uncertain=bool(v.get("uncertain")),
            uncertain_reason=v.get("uncertain_reason") or "",
            basis=v.get("basis") or "evidence",
            rationale=v.get("rationale") or "",
            evidence=sc.passages(evidence_of(r.get("trace") or steps)),
            confidence_note=v.get("confidence_note") or "",
            seconds=r.get("seconds"),
        )

    def _image(self, path: str | None, data: str | None) -> Upload:
        if path is not None and data is not None:
            raise ToolError("give image_path or image_base64, not both")
        if data is not None:
            try:
                return upload_from_base64(data, None, None, 1, self.s.uploads.max_bytes)
            except ApiError as e:
                raise tool_error(e) from None
        if not self.local_files:
            raise ToolError(
                "image_path names a file on the server's disk, which an MCP client over HTTP may not "
                "read: send the image as image_base64"
            )
        p = Path(str(path)).expanduser()
        if not p.is_file():
            raise ToolError(f"no image file at {p}")
        if p.stat().st_size > self.s.uploads.max_bytes:
            raise ToolError(f"{p.name} has {p.stat().st_size:,} bytes; the limit is {self.s.uploads.max_bytes:,}")
        return Upload(data=p.read_bytes(), filename=p.name)

    async def check_text(
        self,
        progress: Progress,
        text: str,
        pipeline: str | None = None,
        max_claims: int | None = None,
        evidence: list[str] | None = None,
    ) -> sc.TextResult:
        if max_claims is not None and max_claims < 1:
            raise ToolError(f"max_claims must be at least 1, not {max_claims}")
        body = TextIn(text=text, pipeline=pipeline or self.pipeline, max_claims=max_claims, evidence=evidence)
        run_id, _, _ = await self._started(lambda: start_text(self.s, body, CLIENT))
        run, steps = await self.follow(run_id, progress)
        d = detail(self.s, run, steps)["text"] or {}
        summary = d.get("summary") or {}
        claims = [
            sc.TextClaim(
                id=int(c.get("id", 0)),
                text=str(c.get("text", "")),
                spans=[list(x) for x in c.get("spans") or []],
                outcome=str(c.get("outcome", "")),
                shown_as=outcome_words(str(c.get("outcome", "")), c.get("label")),
                label=c.get("label"),
                confidence=c.get("confidence"),
                rationale=c.get("rationale") or "",
                note=c.get("note") or "",
                evidence=sc.passages(c.get("evidence")),
            )
            for c in d.get("claims") or []
        ]
        counts = {k: v for k, v in summary.items() if isinstance(v, int) and not isinstance(v, bool)}
        return sc.TextResult(
            run_id=run_id,
            pipeline=str((run.get("options") or {}).get("pipeline") or run["pipeline"]),
            model=run["model"],
            factuality=factuality_of(summary)[0],
            factuality_text=factuality_words(summary),
            counts=counts,
            note=summary.get("note"),
            claims=claims,
        )

    async def check_answer(self, progress: Progress, question: str, answer: str) -> sc.AnswerResult:
        body = CheckIn(question=question, answer=answer, pipeline=ANSWER_CHECK)
        run_id, _ = await self._started(lambda: start_check(self.s, body, CLIENT))
        run, steps = await self.follow(run_id, progress)
        leaf = detail(self.s, run, steps)["leaf"] or {}
        sentences = [
            sc.SentenceResult(
                index=x.get("index"),
                sentence=str(x.get("sentence", "")),
                supported=bool(x.get("supported")),
                rating=x.get("rating"),
                confidence=x.get("confidence"),
                query=x.get("query") or "",
                reasoning=x.get("reasoning") or "",
                evidence=sc.passages(x.get("evidence")),
            )
            for x in leaf.get("sentences") or []
        ]
        return sc.AnswerResult(
            run_id=run_id,
            question=run["claim"],
            score=leaf.get("score"),
            supported=int(leaf.get("supported") or 0),
            checked=int(leaf.get("checked") or 0),
            note=leaf.get("note"),
            sentences=sentences,
        )

    async def search_evidence(self, query: str, k: int = 5) -> sc.SearchResult:
        retriever = self.s.manager.retriever
        if retriever is None:
            raise ToolError(
                "no evidence index: start `veracity mcp` with --index DIR (build one with `veracity index build`)"
            )
        query = query.strip()
        if not query:
            raise ToolError("the query is empty")
        if not 1 <= k <= 50:
            raise ToolError(f"k must be between 1 and 50, not {k}")
        found = await anyio.to_thread.run_sync(lambda: retriever.search(query, k))
        return sc.SearchResult(
            query=query,
            passages=[
                sc.Passage(text=e.text, source=e.source or None, url=getattr(e, "url", None), score=e.score)
                for e in found
            ],
        )

    async def find_factchecks(self, text: str, k: int = 5, related: bool = False) -> sc.FactCheckResult:
        from ..factchecks.lookup import NO_STORE, find, store_in_use

        if not text.strip():
            raise ToolError("the text is empty")
        if not 1 <= k <= 20:
            raise ToolError(f"k must be between 1 and 20, not {k}")
        store = store_in_use(self.s.config)
        if store is None:
            raise ToolError(NO_STORE)
        try:
            found = await anyio.to_thread.run_sync(lambda: find(text, store=store, k=k, related=related))
        except UserError as e:
            raise ToolError(str(e)) from None
        d = found.to_dict()
        return sc.FactCheckResult(
            text=text,
            found=d["found"],
            summary=d["summary"],
            matches=sc.published(d["matches"]),
            related=sc.published(d["related"]),
        )

    async def ground_answer(self, answer: str, documents: list[str]) -> sc.GroundingResult:
        from ..grounding import ground

        try:
            result = await anyio.to_thread.run_sync(
                lambda: ground(
                    answer, documents, config=self.s.config, max_answer_chars=self.s.settings.max_answer_chars
                )
            )
        except UserError as e:
            raise ToolError(str(e)) from None
        d = result.to_dict()
        keep = set(sc.GroundedSentence.model_fields)
        return sc.GroundingResult(
            grounded_share=d["grounded_share"],
            summary=d["summary"],
            sentences=[sc.GroundedSentence(**{k: v for k, v in x.items() if k in keep}) for x in d["sentences"]],
            documents=d["documents"],
        )

    async def get_run(self, run_id: str) -> sc.RunResult:
        run = await anyio.to_thread.run_sync(self.s.store.get, run_id.strip())
        if run is None:
            raise ToolError(f"no run {run_id!r}: it never existed or was deleted")
        steps = [
            d
            for _, d in await anyio.to_thread.run_sync(self.s.store.steps, run["id"])
            if d.get("stage") != "model_call"
        ]
        d = detail(self.s, run, steps)
        kind = "text" if run["pipeline"] == TEXT_CHECK else "answer" if d.get("answer") is not None else "claim"
        verdict = {k: v for k, v in (d.get("verdict") or {}).items() if k != "steps"} or None
        return sc.RunResult(
            id=d["id"],
            status=d["status"],
            kind=kind,
            claim=d["claim"],
            pipeline=d["pipeline"],
            model=d["model"],
            shown_as=d["shown_as"],
            uncertain=d["uncertain"],
            label=d["label"],
            confidence=d["confidence"],
            error=d["error"],
            created_at=d["created_at"],
            verdict=verdict,
            text=d.get("text"),
            leaf=d.get("leaf"),
        )


# -- the short text beside the structured content ------------------------------------------------------------------


def claim_text(r: sc.ClaimResult) -> str:
    """The verdict first, worded as every front end words it: an uncertain one leads with "Uncertain, leaning ..."
    (an agent reading the first word is not told a guess is a finding)."""
    words = verdict_words(r.label, uncertain=r.uncertain, confidence=r.confidence)
    lines = [f"Published fact-check: {factcheck_line(m)}" for m in r.published_factchecks]
    lines.append(f"{words.line}: {r.claim}")
    if r.uncertain:
        lines.append(f"Uncertain because {r.uncertain_reason or 'the pipeline said so'}.")
    if r.confidence_note:
        lines.append(f"No confidence: {r.confidence_note}.")
    if r.rationale:
        lines.append(r.rationale)
    for e in r.evidence[:3]:
        where = ", ".join(x for x in (e.source or "unknown source", e.url, e.license) if x)
        lines.append(f"- {_cut_at_word(e.text, 200)} ({where})")
    lines.append(f"Run {r.run_id} ({r.pipeline}, {r.model}).")
    return "\n".join(lines)


def _cut_at_word(text: str, limit: int) -> str:
    """`text` at most `limit` characters, cut at a word's end with "..." (never mid-word)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(",;:") + "..."


def text_text(r: sc.TextResult) -> str:
    fact = "no checkable claim" if not r.counts.get("checked") else f"factuality {r.factuality_text}"
    lines = [f"{len(r.claims)} claims, {fact}. Run {r.run_id}."]
    lines += [
        f"[{c.id}] {c.shown_as or c.outcome}{f' {c.confidence:.2f}' if c.confidence is not None else ''}: {c.text}"
        for c in r.claims
    ]
    if r.note:
        lines.append(r.note)
    return "\n".join(lines)


def answer_text(r: sc.AnswerResult) -> str:
    score = "no sentence checked" if r.score is None else f"LEAF score {r.score:.2f} ({r.supported} of {r.checked})"
    lines = [f"{score}. Run {r.run_id}."]
    lines += [f"- {'Supported' if x.supported else 'Not supported'}: {x.sentence}" for x in r.sentences]
    return "\n".join(lines)


def factcheck_line(m: sc.PublishedFactCheck) -> str:
    from ..factchecks.steps import match_line

    return match_line(m.model_dump())


def factchecks_text(r: sc.FactCheckResult) -> str:
    return "\n".join([r.summary[:1].upper() + r.summary[1:] + "."] + [f"- {factcheck_line(m)}" for m in r.matches])


def grounding_text(r: sc.GroundingResult) -> str:
    lines = [r.summary[:1].upper() + r.summary[1:] + "."]
    for x in r.sentences:
        where = f" ({x.quote['document']} [{x.quote['start']}:{x.quote['end']}])" if x.quote else ""
        lines.append(f"{x.index}. {x.shown_as} ({x.probability:.2f}){where}: {x.text}")
    return "\n".join(lines)


def search_text(r: sc.SearchResult) -> str:
    if not r.passages:
        return f"No passage found for {r.query!r}."
    return "\n".join(f"{i}. {p.text[:300]} ({p.source or 'unknown source'})" for i, p in enumerate(r.passages, 1))


def run_text(r: sc.RunResult) -> str:
    head = f"Run {r.id} ({r.kind}, {r.pipeline}, {r.model}): {r.status}"
    if r.label:
        head += f", {r.shown_as or r.label}" + (f" ({r.confidence:.2f})" if r.confidence is not None else "")
    return head + (f". Error: {r.error}" if r.error else "") + f"\n{r.claim}"
