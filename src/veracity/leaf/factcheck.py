"""The answer fact-checker: SAFE adapted as in LEAF, with the question as context.

For each sentence of an answer (see `sentences.py`):
1. the rater model writes ONE search query, seeing the question (prompt `leaf_query`);
2. the retriever returns the top-k passages for it (k = `leaf.top_k`, 3 by default);
3. the rater decides Supported / Not Supported, seeing the passages, the question and the sentence
   (prompt `leaf_rate`): optionally a short reasoning first, then the decision through
   `choose` (scored by log-probability on the embedded model, never parsed from free text there).
   Where the trained verifier rates instead (`verifier.use`), it reads the sentence as it reads on its own
   (a leading pronoun resolved by rule: `sentences.py`), since it sees neither the question nor the sentences
   before; so is the query when no model writes one (`write_queries=False`).

LEAF score = supported sentences / checked sentences. Every sentence keeps its query, its evidence,
the rater's reasoning and its rating, and is emitted as one `leaf_sentence` trace step; the result
is emitted as `leaf_score`.

A decision that asserts neither label unambiguously (HTTP backends, after one retry; read strictly by
`strict_choose`: "I cannot tell whether it is Supported" is not Supported) counts as Not Supported and
is recorded as a parse failure: a sentence is only supported when the rater said so.

Over a server that answers calls in parallel (an OpenAI-compatible backend), up to `concurrency` sentences
are checked at once; the trace and the failures are the same as one after the other (`_check_all`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..types import Evidence
from ..verify.decide import check_evidence, verifier_enabled
from .prompts import NOT_SUPPORTED, QUERY, RATING, REASONING, SUPPORTED
from .sentences import Sentences, answer_units

if TYPE_CHECKING:
    from ..config import Config, LeafConfig, VerifierConfig
    from ..llm.model import RunModel
    from ..retrieval.base import Retriever
    from ..trace import Tracer


@dataclass
class SentenceCheck:
    index: int  # 1-based position in the answer
    sentence: str
    query: str
    evidence: list[Evidence] = field(default_factory=list)
    rating: str | None = None  # Supported | Not Supported | None when the rater's decision was unusable
    reasoning: str = ""
    confidence: float | None = None  # probability of the rating, when the backend scores options
    read_as: str = ""  # the sentence as the verifier read it, its pronoun resolved (leaf/sentences.py); "": as written
    #: why the rating is uncertain (the trained verifier's: its sources do not address the sentence, or its confidence
    #: is below the threshold); "" when decided, or rated by the model
    uncertain_reason: str = ""

    @property
    def supported(self) -> bool:
        return self.rating == SUPPORTED

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "sentence": self.sentence,
            "query": self.query,
            "evidence": [e.to_dict() for e in self.evidence],
            "rating": self.rating,
            "supported": self.supported,
            "reasoning": self.reasoning,
            "confidence": self.confidence,
            **({"read_as": self.read_as} if self.read_as else {}),
            **({"uncertain_reason": self.uncertain_reason} if self.uncertain_reason else {}),
        }


@dataclass
class LeafResult:
    """The fact-check of one answer."""

    sentences: list[SentenceCheck]
    total_sentences: int  # sentences in the answer; more than were checked when the cap applied
    max_sentences: int
    parse_failures: list[str] = field(default_factory=list)

    @property
    def checked(self) -> int:
        return len(self.sentences)

    @property
    def supported(self) -> int:
        return sum(s.supported for s in self.sentences)

    @property
    def score(self) -> float:
        """Supported / checked sentences; 0.0 for an answer with no sentence (nothing is supported)."""
        return self.supported / self.checked if self.checked else 0.0

    @property
    def capped(self) -> bool:
        return self.total_sentences > self.max_sentences

    @property
    def note(self) -> str | None:
        if self.total_sentences == 0:
            return "the answer is empty: no sentence to check (LEAF score 0)"
        if self.capped:
            return (
                f"the answer has {self.total_sentences} sentences; only the first {self.max_sentences} are "
                f"checked (leaf.max_sentences) and the score covers those"
            )
        return None

    @property
    def failed(self) -> list[SentenceCheck]:
        return [s for s in self.sentences if not s.supported]

    def failed_evidence(self, limit: int | None = None) -> list[Evidence]:
        """The passages retrieved for the sentences that did not pass, in order, without repeats."""
        seen: set[tuple[str | None, str]] = set()
        out: list[Evidence] = []
        for s in self.failed:
            for e in s.evidence:
                key = (e.doc_id, " ".join(e.text.split()))
                if key not in seen:
                    seen.add(key)
                    out.append(e)
        return out[:limit] if limit is not None else out

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "supported": self.supported,
            "checked": self.checked,
            "total_sentences": self.total_sentences,
            "capped": self.capped,
            "note": self.note,
            "sentences": [s.to_dict() for s in self.sentences],
            "parse_failures": list(self.parse_failures),
        }


def ensure_searchable(retriever: Retriever | None) -> None:
    """A UserError when there is nothing to retrieve from: no index, or an index with no passages."""
    if retriever is None:
        raise UserError(
            "fact-checking an answer needs an index to retrieve from: pass --index DIR "
            "(build one with `veracity index build`)"
        )
    index = getattr(retriever, "index", retriever)
    try:
        size = len(index)  # type: ignore[arg-type]
    except TypeError:
        return  # a retriever that cannot say how big it is (e.g. a web search)
    if size == 0:
        where = getattr(index, "path", None)
        raise UserError(
            f"the index{f' {where}' if where else ''} is empty: it holds no passages to check "
            "the answer against; rebuild it from a corpus with text"
        )


def index_retriever(config):
    """The retriever of config.index, checked to have something to search (ensure_searchable)."""
    from ..check import open_retriever

    retriever = open_retriever(config)
    ensure_searchable(retriever)
    return retriever


class AnswerChecker:
    """Checks answers sentence by sentence. Holds the settings and prompts; no per-run state."""

    def __init__(
        self,
        settings: LeafConfig,
        prompts_dir: str | None = None,
        verifier: VerifierConfig | None = None,
        concurrency: int = 1,
        *,
        write_queries: bool = True,
    ) -> None:
        self.settings = settings
        # False: each sentence is its own search query (no model call; the evidence-only checks of `veracity proxy
        # --pipeline verifier`, where the trained verifier rates and no model is called at all)
        self.write_queries = write_queries
        self.concurrency = concurrency  # sentences checked at once where the backend runs calls in parallel
        self.verifier = verifier  # the trained evidence verifier's settings; None: the rater model always rates
        self.p_query = QUERY.load(prompts_dir)  # specs: prompts.py
        self.p_reasoning = REASONING.load(prompts_dir)
        self.p_rating = RATING.load(prompts_dir)

    @classmethod
    def from_config(cls, config: Config, *, write_queries: bool = True) -> AnswerChecker:
        return cls(config.leaf, config.prompts_dir, config.verifier, config.concurrency, write_queries=write_queries)

    def check(
        self,
        context: str,
        answer: str,
        *,
        model: RunModel,
        retriever: Retriever | None,
        tracer: Tracer,
        allow_empty: bool = False,
        label: dict[str, Any] | None = None,
    ) -> LeafResult:
        """Fact-check `answer` given `context` (the question, with its options when it has them).

        `label` is added to the trace steps (e.g. which round or sample of a pipeline the answer is).
        Raises UserError for an empty answer (unless `allow_empty`) and for a missing or empty index.
        """
        ensure_searchable(retriever)
        split = answer_units(answer, self.settings.max_sentences, units=self.settings.units, allow_empty=allow_empty)
        label = label or {}
        result = LeafResult(sentences=[], total_sentences=split.total, max_sentences=self.settings.max_sentences)
        if split.capped or split.total == 0:
            tracer.emit("leaf_note", note=result.note, **label)
        result.sentences.extend(self._check_all(split, context, model, retriever, tracer, result, label))
        tracer.emit(
            "leaf_score",
            score=result.score,
            supported=result.supported,
            checked=result.checked,
            total_sentences=result.total_sentences,
            capped=result.capped,
            note=result.note,
            **label,
        )
        return result

    def _check_all(
        self,
        split: Sentences,
        context: str,
        model: RunModel,
        retriever: Retriever,
        tracer: Tracer,
        result: LeafResult,
        label: dict[str, Any],
    ) -> list[SentenceCheck]:
        """Check the sentences, up to `concurrency` at once when the backend runs calls in parallel
        (`RunModel.map_in_order`: the trace reads as if they had been checked one after the other); each keeps its
        own failure list, merged in the sentences' order."""

        def one(i: int, run_model: RunModel, own: Tracer) -> tuple[SentenceCheck, LeafResult]:
            scratch = LeafResult(sentences=[], total_sentences=0, max_sentences=0)
            return self.check_sentence(
                i + 1, split.checked[i], context, run_model, retriever, own, scratch, label, read_as=split.reading(i)
            ), scratch

        done = model.map_in_order(one, range(len(split.checked)), workers=self.concurrency, tracer=tracer)
        for _, scratch in done:  # the parse failures in the sentences' order, however they ran
            result.parse_failures.extend(scratch.parse_failures)
        return [check for check, _ in done]

    def check_sentence(
        self,
        index: int,
        sentence: str,
        context: str,
        model: RunModel,
        retriever: Retriever,
        tracer: Tracer,
        result: LeafResult,
        label: dict[str, Any],
        *,
        read_as: str = "",
    ) -> SentenceCheck:
        """Check one sentence; `read_as` is the sentence as it reads on its own (leaf/sentences.py), which the
        verifier reads and, when no model writes the queries, the query is (default: as written)."""
        t0 = time.perf_counter()
        read_as = read_as or sentence
        query = self.generate_query(sentence, context, model, tracer, result) if self.write_queries else read_as
        evidence = retriever.search(query, k=self.settings.top_k)
        check = SentenceCheck(
            index=index,
            sentence=sentence,
            query=query,
            evidence=evidence,
            read_as=read_as if read_as != sentence else "",
        )
        self.rate(check, context, model, tracer, result)
        tracer.emit("leaf_sentence", **label, **check.to_dict(), seconds=round(time.perf_counter() - t0, 3))
        return check

    def generate_query(self, sentence: str, context: str, model: RunModel, tracer: Tracer, result: LeafResult) -> str:
        reply = self.p_query.ask(
            model, tracer=tracer, failures=result.parse_failures, CONTEXT=context, STATEMENT=sentence
        )
        return reply.value if reply.ok else sentence

    def rate(self, check: SentenceCheck, context: str, model: RunModel, tracer: Tracer, result: LeafResult) -> None:
        if self.verifier is not None and verifier_enabled(self.verifier, model.model_id):
            # the trained verifier rates the sentence against the retrieved passages (verifier.use)
            d = check_evidence(
                self.verifier, tracer, check.read_as or check.sentence, check.evidence, (SUPPORTED, NOT_SUPPORTED)
            )
            check.rating, check.confidence, check.reasoning = d.label, d.confidence, d.rationale
            check.uncertain_reason = d.uncertain_reason
            return
        slots = dict(KNOWLEDGE=check.evidence, CONTEXT=context, STATEMENT=check.sentence)
        reasoning = None  # the rater decides at once
        if self.settings.rater_reasoning:
            reasoning = check.reasoning = self.p_reasoning.ask(model, tracer=tracer, **slots).value
        choice = self.p_rating.ask(model, tracer=tracer, failures=result.parse_failures, REASONING=reasoning, **slots)
        check.rating = choice.value
        check.confidence = choice.confidence
