"""Answering pipelines for multiple-choice questions, each answer fact-checked by LEAF.

Registered by name (see `veracity pipelines`), so `veracity eval --dataset mirage --pipeline
answer:plain` runs them. The claim is the question; its options come from `claim.metadata["options"]`
(the MIRAGE loader puts them there). The verdict's label is the chosen option's key, its rationale
the answer text, its confidence the probability of that key when the backend scores options. The
fact-check of the final answer is in the trace (`leaf_sentence` per sentence, `leaf_score`, and one
`leaf_final` step with the score that `veracity leaf report` and the benchmark read back).

- `answer:plain`    the model answers from its own knowledge (the paper's original answers).
- `answer:rag`      MedRAG-style RAG: the question is the query; its passages go in the prompt.
- `answer:fc-rag`   Fact-Check-Then-RAG: answer, fact-check; while the score is below 1.0 and at
                    most `leaf.max_rounds` times, put the passages retrieved for the failed
                    sentences in the prompt, answer again and check again. The best-scoring answer
                    is kept (a later answer wins a tie: it saw the knowledge). A round stops early
                    when the failed sentences brought no passages, or the same ones as an earlier
                    round (the same prompt would give the same answer).
- `answer:rank-N`   sample N answers (temperature `leaf.temperature`), keep the highest-scoring one
                    (the first among equals); `answer:rank` takes N from `leaf.samples`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..pipeline import Context, Pipeline, register
from ..types import Claim, Verdict
from .answering import Answer, Answerer
from .factcheck import AnswerChecker, LeafResult, ensure_searchable
from .options import format_options, options_of
from .rater import Rater

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.model import RunModel

NO_ANSWER = "(no answer)"


def question_context(question: str, options: dict[str, str]) -> str:
    """What the fact-checker sees as the question: the question with its options."""
    return f"{question}\n{format_options(options)}" if options else question


class AnswerPipeline(Pipeline):
    labels: tuple[str, ...] = ()  # the question's option keys
    input_kind = "multiple_choice"

    def __init__(self, config: Config, name: str = "") -> None:
        self.name = name or self.name
        self.settings = config.leaf
        self.answerer = Answerer(config)
        self.checker = AnswerChecker.from_config(config)
        self.rater = Rater(config)

    def needs_retriever(self, config: Config) -> bool:
        return True  # every answer is fact-checked against the index

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        options = options_of(claim.metadata)
        if options is None:
            raise UserError(
                f"pipeline {self.name!r} answers multiple-choice questions: the question needs "
                "options (claim metadata 'options', as the mirage dataset gives; or "
                "`veracity leaf answer --options FILE`)"
            )
        ensure_searchable(ctx.retriever)
        rater = self.rater.bind(ctx)
        final, result, extra = self.answer(claim.text, options, ctx, rater)
        ctx.tracer.emit(
            "leaf_final",
            pipeline=self.name,
            letter=final.letter,
            option=options.get(final.letter or "", None),
            stated=final.stated,
            score=result.score,
            supported=result.supported,
            checked=result.checked,
            total_sentences=result.total_sentences,
            note=result.note,
            rater=rater.model_id,
            **extra,
        )
        failures = ([final.parse_failure] if final.parse_failure else []) + result.parse_failures
        return Verdict(
            label=final.letter or NO_ANSWER, rationale=final.text, confidence=final.confidence, parse_failures=failures
        )

    # -- building blocks --------------------------------------------------------------------------

    def answer_and_check(
        self,
        question: str,
        options: dict[str, str],
        ctx: Context,
        rater: RunModel,
        *,
        kind: str = "plain",
        knowledge=None,
        temperature: float = 0.0,
        seed: int | None = None,
        label: dict[str, Any] | None = None,
    ) -> tuple[Answer, LeafResult]:
        ans = self.answerer.answer(
            question,
            options,
            model=ctx.model,
            tracer=ctx.tracer,
            kind=kind,
            knowledge=knowledge,
            temperature=temperature,
            seed=seed,
            label=label,
        )
        result = self.checker.check(
            question_context(question, options),
            ans.text,
            model=rater,
            retriever=ctx.retriever,
            tracer=ctx.tracer,
            allow_empty=True,
            label=label,
        )
        return ans, result

    def answer(
        self, question: str, options: dict[str, str], ctx: Context, rater: RunModel
    ) -> tuple[Answer, LeafResult, dict[str, Any]]:
        ans, result = self.answer_and_check(question, options, ctx, rater, kind="plain")
        return ans, result, {}


class PlainAnswer(AnswerPipeline):
    """The model answers from its own knowledge; the answer is fact-checked."""


class RagAnswer(AnswerPipeline):
    """MedRAG style: the question is the query, the retrieved passages go in the answer prompt."""

    def answer(self, question, options, ctx, rater):
        passages = ctx.retriever.search(question, k=self.settings.rag_top_k)
        ctx.tracer.emit("retrieval", query=question, results=[p.to_dict() for p in passages])
        ans, result = self.answer_and_check(question, options, ctx, rater, kind="rag", knowledge=passages)
        return ans, result, {}


class FactCheckThenRag(AnswerPipeline):
    """Answer; fact-check; regenerate with the failed sentences' passages until the score is 1.0."""

    def answer(self, question, options, ctx, rater):
        ans, result = self.answer_and_check(question, options, ctx, rater, kind="plain", label={"round": 0})
        rounds = [(ans, result)]
        best = 0
        stop = "score 1.0" if result.score >= 1.0 else "max_rounds"
        shown: list[tuple] = []
        while result.score < 1.0 and len(rounds) <= self.settings.max_rounds:
            knowledge = result.failed_evidence(self.settings.max_knowledge)
            if not knowledge:
                stop = "no passages were retrieved for the failed sentences"
                break
            keys = tuple((e.doc_id, e.text) for e in knowledge)
            if keys in shown:  # the same prompt again: a greedy answer would repeat itself
                stop = "the failed sentences brought no new passages"
                break
            shown.append(keys)
            r = len(rounds)
            ctx.tracer.emit(
                "fc_rag_round",
                round=r,
                score_before=result.score,
                failed_sentences=[s.index for s in result.failed],
                knowledge=[e.to_dict() for e in knowledge],
            )
            ans, result = self.answer_and_check(
                question, options, ctx, rater, kind="fc-rag", knowledge=knowledge, label={"round": r}
            )
            rounds.append((ans, result))
            if result.score >= rounds[best][1].score:
                best = r
            if result.score >= 1.0:
                stop = "score 1.0"
        summary = [{"round": i, "letter": a.letter, "score": res.score} for i, (a, res) in enumerate(rounds)]
        ctx.tracer.emit("fc_rag_done", rounds=len(rounds) - 1, stop=stop, chosen_round=best, history=summary)
        ans, result = rounds[best]
        return ans, result, {"rounds": len(rounds) - 1, "chosen_round": best, "history": summary}


class RankedAnswers(AnswerPipeline):
    """Sample N answers, fact-check each, keep the highest-scoring one."""

    def __init__(self, config: Config, name: str = "answer:rank", samples: int | None = None) -> None:
        super().__init__(config, name)
        self.samples = samples or self.settings.samples

    def answer(self, question, options, ctx, rater):
        drawn = [
            self.answer_and_check(
                question,
                options,
                ctx,
                rater,
                kind="plain",
                temperature=self.settings.temperature,
                seed=i,
                label={"sample": i},
            )
            for i in range(self.samples)
        ]
        best = max(range(len(drawn)), key=lambda i: (drawn[i][1].score, -i))
        summary = [{"sample": i, "letter": a.letter, "score": res.score} for i, (a, res) in enumerate(drawn)]
        ctx.tracer.emit("leaf_samples", samples=summary, chosen=best)
        ans, result = drawn[best]
        return ans, result, {"samples": summary, "chosen_sample": best}


register(
    "answer:plain",
    "Multiple choice: the model answers alone; the answer is fact-checked (LEAF score)",
    kind=PlainAnswer,
    index="always",
)(PlainAnswer)
register(
    "answer:rag",
    "Multiple choice, MedRAG-style RAG: passages retrieved for the question; LEAF-checked",
    kind=RagAnswer,
    index="always",
)(RagAnswer)
register(
    "answer:fc-rag",
    "Multiple choice, Fact-Check-Then-RAG: regenerate with the failed sentences' "
    "passages until the LEAF score is 1.0 (at most leaf.max_rounds)",
    kind=FactCheckThenRag,
    index="always",
)(FactCheckThenRag)
register(
    "answer:rank",
    "Multiple choice: sample leaf.samples answers, keep the best LEAF score",
    kind=RankedAnswers,
    index="always",
)(RankedAnswers)
for _n in (3, 5, 10):
    register(
        f"answer:rank-{_n}",
        f"Multiple choice: sample {_n} answers, keep the best LEAF score",
        kind=RankedAnswers,
        index="always",
    )(lambda config, name, _n=_n: RankedAnswers(config, name, samples=_n))
