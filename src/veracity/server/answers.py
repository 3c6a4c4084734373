"""Answer check on the server: LEAF's `AnswerChecker` run as a pipeline, so that it goes through the same
executor, tracer, store and event stream as a claim check.

The run's `claim` is the question; the answer travels in the claim's metadata (stored in the run's
`options` column as {"answer": ...}). The checker emits `leaf_sentence` steps (sentence, query, evidence,
rating, confidence) and a `leaf_score`; the verdict's label is "LEAF <score>", its rationale says how many
sentences were supported. The rater is `leaf.rater_model` when configured, else the run's model.
`leaf_summary` reads the answer check back from a run's view items (`views.run_view`).

It is offered by the server only (not in the pipeline registry): a question and an answer are not a claim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..inputs import InputError, clean_answer, clean_question
from ..leaf.factcheck import AnswerChecker
from ..leaf.rater import Rater
from ..leaf.sentences import answer_sentences
from ..pipeline import Context, Pipeline
from ..types import Claim, Verdict
from .errors import ApiError
from .views import run_view

if TYPE_CHECKING:
    from ..config import Config

NAME = "answer-check"
DESCRIPTION = (
    "check an answer to a question sentence by sentence against the index (LEAF): each sentence "
    "supported or not, with its evidence"
)


class AnswerCheckPipeline(Pipeline):
    name = NAME
    description = DESCRIPTION
    input_kind = "answer"
    labels = ()

    def __init__(self, config: Config, rater: Rater, checker: AnswerChecker | None = None) -> None:
        self.checker = checker or AnswerChecker.from_config(config)
        self.rater = rater

    def needs_retriever(self, config: Config) -> bool:
        return True

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        answer = str(claim.metadata.get("answer") or "")
        result = self.checker.check(
            claim.text, answer, model=self.rater.bind(ctx), retriever=ctx.retriever, tracer=ctx.tracer
        )
        rationale = f"{result.supported} of {result.checked} sentences supported by the index."
        if result.note:
            rationale += f" Note: {result.note}."
        return Verdict(
            label=f"LEAF {result.score:.2f}",
            rationale=rationale,
            confidence=None,
            parse_failures=list(result.parse_failures),
        )


def check_answer_input(
    question: str | None, answer: str | None, *, max_question_chars: int, max_answer_chars: int
) -> tuple[str, str]:
    """The question (whitespace squeezed) and the answer (line breaks kept: they separate list items), by the
    rules of `inputs` (the CLI's too), or a 400 saying what is wrong."""
    try:
        q = clean_question(question, max_question_chars)
        a = clean_answer(answer, max_answer_chars)
        answer_sentences(a, 1)
    except InputError as e:
        if e.code.endswith("_too_long"):  # the limit is the server's, not a config key the client could raise
            what, limit = (
                ("question", max_question_chars) if e.code.startswith("question") else ("answer", max_answer_chars)
            )
            raise ApiError(
                400, e.code, f"the {what} has {e.length} characters; this server accepts at most {limit}: shorten it"
            ) from None
        raise ApiError(400, e.code, str(e)) from None
    except UserError as e:
        raise ApiError(400, "answer_empty", str(e)) from None
    return q, a


def leaf_summary(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The answer check in a run's steps: {"score", "supported", "checked", ..., "sentences": [...]}, from its
    view items (a `leaf` item per sentence, the last `leaf_score`)."""
    items, _ = run_view(steps)
    sentences = [it for it in items if it["kind"] == "leaf"]
    score = next((it for it in reversed(items) if it["kind"] == "leaf_score"), None)
    if not sentences and score is None:
        return None
    out = {k: v for k, v in (score or {}).items() if k != "kind"}
    out["sentences"] = [{k: v for k, v in it.items() if k != "kind"} for it in sentences]
    return out
