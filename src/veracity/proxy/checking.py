"""Checking one answer as a stored run, and the `veracity` object the proxy adds to the reply.

Each check is the web server's answer check (`server.answers.AnswerCheckPipeline`: LEAF's `AnswerChecker`)
submitted to a `RunManager` over the same run store the web page's history reads, so every checked answer is a
run there, with its steps. The proxy waits for the run through the manager's subscription (the steps as they
are emitted, then `done`), and reads the units, their verdicts and evidence from the `leaf_sentence` steps.

With `--pipeline verifier` each sentence is its own search query and the trained verifier rates it against the
passages (no model call); otherwise LEAF's rater model writes a query per sentence and rates it (or the verifier
rates, where `verifier.use` says so).

A check never fails the request: an answer too long or empty is `skipped`, a run that fails, cannot be queued or
takes longer than the check timeout is `failed` with the reason, and without an evidence source the answer is
`unchecked`, saying why. The answer is delivered in every case.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from ..claims.sentences import sentence_spans
from ..failures import short_error
from ..inputs import InputError, clean_answer
from ..leaf.factcheck import AnswerChecker, LeafResult, SentenceCheck
from ..leaf.rater import Rater
from ..server import store as st
from ..server.answers import AnswerCheckPipeline
from ..server.errors import ApiError
from ..types import Evidence
from ..verdict_words import verdict_words
from .evidence import NO_EVIDENCE, NO_REQUEST_DOCUMENTS, EvidenceSource

if TYPE_CHECKING:
    from ..config import Config
    from ..server.runs import RunManager

PIPELINES = ("leaf", "verifier")  # the model rater (LEAF as configured), or evidence-only with the trained verifier
CHECKED, FAILED, SKIPPED, UNCHECKED = "checked", "failed", "skipped", "unchecked"


def checking_config(config: Config, pipeline: str) -> Config:
    """The run config of `pipeline`: `verifier` turns the trained verifier on for every rating."""
    if pipeline == "verifier":
        return replace(config, verifier=replace(config.verifier, use="on"))
    return config


def question_of(messages: Any, max_chars: int) -> str:
    """What the answer replies to: the last user message's text (whitespace squeezed; its last `max_chars`
    characters when longer, since a chat's question is at its end)."""
    text = ""
    for m in reversed(messages if isinstance(messages, list) else []):
        if isinstance(m, dict) and m.get("role") == "user":
            text = content_text(m.get("content"))
            break
    text = " ".join(text.split()) or "(no question)"
    return text if len(text) <= max_chars else "…" + text[-(max_chars - 1) :]


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts (a part whose text is no string, which no
    client sends, has none)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


class AnswerChecks:
    """Checks answers as stored runs; `check(question, answer)` is the `veracity` object of one answer."""

    def __init__(
        self,
        config: Config,
        manager: RunManager,
        evidence: EvidenceSource,
        *,
        pipeline: str = "leaf",
        max_answer_chars: int,
        timeout: float = 60.0,
    ) -> None:
        self.config = checking_config(config, pipeline)
        self.manager = manager
        self.evidence = evidence
        self.pipeline_name = pipeline
        self.timeout = timeout
        self.max_answer_chars = max_answer_chars
        rater = Rater(self.config)
        checker = AnswerChecker.from_config(self.config, write_queries=pipeline != "verifier")
        self.pipeline = AnswerCheckPipeline(self.config, rater, checker)
        self.checker = (
            "trained verifier (grounding: every part of the request's documents read)"
            if evidence.request
            else "trained verifier (each sentence its own query)"
            if pipeline == "verifier"
            else f"LEAF rater {self.config.leaf.rater_model or self.config.model}"
        )

    def _base(self, status: str) -> dict[str, Any]:
        return {
            "status": status,
            "evidence_source": self.evidence.description,
            "checker": self.checker,
            "units_are": self.config.leaf.units,
        }

    def _answer(self, content: Any) -> str | dict[str, Any]:
        """The answer to check, or the `veracity` object of one that is skipped (too long, or empty)."""
        try:
            return clean_answer(content if isinstance(content, str) else "", self.max_answer_chars)
        except InputError as e:
            note = (
                f"the answer has {e.length} characters; this proxy checks at most {self.max_answer_chars} "
                "(--max-answer-chars)"
                if e.code == "answer_too_long"
                else "the answer is empty: nothing to check"
            )
            return {**self._base(SKIPPED), "note": note}

    async def check(self, question: str, content: Any, messages: Any = None) -> dict[str, Any]:
        """The check of `content` (the answer's text) as a reply to `question`; with `--evidence request`, against
        the documents in the request's `messages`."""
        if self.evidence.request:
            return await self._ground(content, messages)
        if self.evidence.retriever is None:
            return {**self._base(UNCHECKED), "note": NO_EVIDENCE}
        answer = self._answer(content)
        if isinstance(answer, dict):
            return answer
        try:
            run_id, _ = await run_in_threadpool(
                self.manager.submit,
                claim=question,
                pipeline=self.pipeline,
                config=self.config,
                qa=None,
                options={"answer": answer, "via": "veracity proxy"},
            )
        except ApiError as e:  # queue full, shutting down
            return {**self._base(FAILED), "error": f"the check could not start: {e.detail}"}
        try:
            steps, final = await asyncio.wait_for(self._wait(run_id), self.timeout)
        except TimeoutError:
            return {
                **self._base(FAILED),
                "run_id": run_id,
                "error": f"the check took longer than {self.timeout:g} s (--check-timeout); it goes on as run {run_id}",
            }
        if final.get("status") != st.DONE:
            return {
                **self._base(FAILED),
                "run_id": run_id,
                "error": f"the check failed: {short_error(final.get('error')) or final.get('status')}",
            }
        view = result_view(steps, content)
        await run_in_threadpool(add_factchecks, view["units"], self.config)
        return {**self._base(CHECKED), "run_id": run_id, "seconds": final.get("seconds"), **view}

    async def _ground(self, content: Any, messages: Any) -> dict[str, Any]:
        """The answer against the documents of its own request (veracity.grounding), checked in this process: no
        model is called, and nothing of the request is stored (its documents may be private)."""
        from ..errors import UserError
        from ..grounding import ground
        from ..grounding.documents import request_documents

        docs = request_documents(messages)
        if not docs:
            return {**self._base(UNCHECKED), "note": NO_REQUEST_DOCUMENTS}
        answer = self._answer(content)
        if isinstance(answer, dict):
            return answer
        try:
            result = await asyncio.wait_for(
                run_in_threadpool(
                    ground, answer, docs, config=self.config, max_sentences=self.config.leaf.max_sentences
                ),
                self.timeout,
            )
        except TimeoutError:
            return {**self._base(FAILED), "error": f"the check took longer than {self.timeout:g} s (--check-timeout)"}
        except UserError as e:
            return {**self._base(FAILED), "error": f"the check failed: {short_error(str(e))}"}
        view = grounding_view(result)
        await run_in_threadpool(add_factchecks, view["units"], self.config)
        return {**self._base(CHECKED), "seconds": round(result.seconds, 4), **view}

    async def _wait(self, run_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The run's steps and its final event, once it has ended."""
        steps: list[dict[str, Any]] = []

        async def add(data: dict[str, Any]) -> None:
            steps.append(data)

        final = await self.manager.follow(run_id, add)
        if final is None:  # it ended before we looked: the store has it
            return await run_in_threadpool(self._stored, run_id)
        return steps, final

    def _stored(self, run_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        run = self.manager.store.get(run_id) or {}
        result = run.get("result") or {}
        final = {"status": run.get("status"), "error": run.get("error"), "seconds": result.get("seconds")}
        return [d for _, d in self.manager.store.steps(run_id)], final


def leaf_result(steps: list[dict[str, Any]]) -> LeafResult:
    """The LeafResult a run's `leaf_sentence` and `leaf_score` steps describe."""
    checks = [
        SentenceCheck(
            index=s["index"],
            sentence=s["sentence"],
            query=s.get("query", ""),
            evidence=[Evidence.from_dict(e) for e in s.get("evidence", [])],
            rating=s.get("rating"),
            reasoning=s.get("reasoning", ""),
            confidence=s.get("confidence"),
            read_as=s.get("read_as") or "",
            uncertain_reason=s.get("uncertain_reason") or "",
        )
        for s in steps
        if s.get("stage") == "leaf_sentence"
    ]
    score = next((s for s in reversed(steps) if s.get("stage") == "leaf_score"), {})
    return LeafResult(
        sentences=checks,
        total_sentences=score.get("total_sentences", len(checks)),
        max_sentences=max(len(checks), score.get("checked", len(checks))),
    )


def result_view(steps: list[dict[str, Any]], answer: str) -> dict[str, Any]:
    """Score and units of a finished check: each unit's verdict, its span [start, end) in `answer` (None when it
    is not a stretch of the answer, e.g. a rewritten claim) and its evidence."""
    result = leaf_result(steps)
    spans = unit_spans(answer, [s.sentence for s in result.sentences])
    units = [
        {
            "index": s.index,
            "text": s.sentence,
            "span": span,
            # how the unit reads (`verdict_words`): one whose rating was unusable is "Uncertain (no verdict)", and
            # one the verifier rated without deciding (its sources do not address it, or below its threshold)
            # "Uncertain, leaning ...", not a decided "Not Supported", though the score counts it unsupported, as
            # LEAF does
            "shown_as": verdict_words(s.rating, uncertain=s.rating is None or bool(s.uncertain_reason)).text,
            "uncertain": s.rating is None or bool(s.uncertain_reason),
            **({"uncertain_reason": s.uncertain_reason} if s.uncertain_reason else {}),
            "verdict": s.rating,
            "supported": s.supported,
            "confidence": s.confidence,
            "query": s.query,
            "reasoning": s.reasoning,
            **({"read_as": s.read_as} if s.read_as else {}),
            "evidence": [e.to_dict() for e in s.evidence],
        }
        for s, span in zip(result.sentences, spans)
    ]
    score = next((s for s in reversed(steps) if s.get("stage") == "leaf_score"), {})
    return {
        "score": result.score,
        "supported": result.supported,
        "checked": result.checked,
        "total_units": score.get("total_sentences", result.checked),
        "note": score.get("note"),
        "units": units,
    }


def grounding_view(result) -> dict[str, Any]:
    """A grounding check (veracity.grounding) in the shape of `result_view`: the score (supported of all checked, as
    LEAF counts; the policies read it), the grounded share of the decided units, and each unit with its verdict,
    span, probability, and the part of a document that decided it as its evidence."""
    from ..grounding.check import WORDS

    units = []
    for s in result.sentences:
        quote = s.quote
        evidence = []
        if quote is not None:
            evidence.append(
                Evidence(
                    text=quote["text"],
                    source=quote.get("title") or quote["document"],
                    doc_id=quote["document"],
                    url=quote.get("url"),
                    quote_start=quote["start"],
                    quote_end=quote["end"],
                    found_by={"retriever": "request", "given": True},
                ).to_dict()
            )
        units.append(
            {
                **s.to_dict(),  # index, text, span, label, shown_as, probability, confidence, quote, reading, ...
                "uncertain": not s.decided,
                "verdict": WORDS[s.label],
                "supported": s.label == "supported" and s.decided,
                "evidence": evidence,
            }
        )
    summary = result.to_dict()
    supported = sum(u["supported"] for u in units)
    return {
        "score": supported / len(units) if units else 0.0,
        "supported": supported,
        "checked": len(units),
        "total_units": result.total_sentences,
        "grounded_share": summary["grounded_share"],
        "grounding": summary["summary"],
        "documents": summary["documents"],
        "note": result.note,
        "units": units,
    }


def add_factchecks(units: list[dict[str, Any]], config: Config) -> None:
    """Each unit's published fact-checks (`published_factchecks`: the matches at the threshold, factchecks/lookup.py),
    when a fact-check store is in use; a store that cannot be read adds nothing (the answer is never held up)."""
    from ..errors import UserError
    from ..factchecks.lookup import find, store_in_use

    store = store_in_use(config)
    if store is None:
        return
    for unit in units:
        try:
            found = find(unit["text"], store=store, k=config.factchecks.k)
        except UserError:
            return
        fields = list(unit.items())  # shown first: right after the unit's text and span
        unit.clear()
        for key, value in fields:
            unit[key] = value
            if key == "span":
                unit["published_factchecks"] = [m.to_dict() for m in found.matches]


def unit_spans(answer: str, units: list[str]) -> list[list[int] | None]:
    """Where each checked unit is in `answer`: the sentence splitter's spans, matched in order; for a unit that
    is not one of the answer's sentences (a claim), the next place its text occurs, else None."""
    segments = sentence_spans(answer)
    out: list[list[int] | None] = []
    at, seg = 0, 0
    for text in units:
        j = next((i for i in range(seg, len(segments)) if segments[i].text == text), None)
        if j is not None:
            out.append([segments[j].start, segments[j].end])
            at, seg = segments[j].end, j + 1
            continue
        found = answer.find(text, at)
        out.append([found, found + len(text)] if found >= 0 else None)
        if found >= 0:
            at = found + len(text)
    return out
