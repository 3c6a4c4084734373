"""QACheck: question-guided multi-hop verification.

The loop of the paper: the claim verifier D(c, C) decides whether the context C of validated
question-answer pairs is enough; if not, the question generator Q(c, C) asks the next question,
the QA module A(q) answers it with evidence, and the validator V(c, (q, a), C) keeps the pair only
when it adds useful knowledge. When D says yes, or after `max_iterations` rounds, the reasoner
R(c, C) gives the label and its rationale.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..pipeline import Context, Pipeline, register
from ..types import Claim, QAStep, Verdict
from ..verdicts import reason_then_label
from ..verify.decide import check_evidence, verifier_enabled
from .prompts import QUESTION_FIRST, QUESTION_FOLLOWUP, REASONER, REASONER_LABEL, VALIDATOR, VERIFIER
from .qa import QA_MODULES, QAModule

if TYPE_CHECKING:
    from ..config import Config, QACheckConfig
    from ..verify.decide import EvidenceDecision


def _norm(q: str) -> str:
    return re.sub(r"\W+", " ", q.lower()).strip()


class QACheck(Pipeline):
    description = "Question-guided multi-hop verification (QACheck)"

    def __init__(
        self,
        config: Config,
        name: str = "qacheck",
        *,
        qa: str | None = None,
        validator: bool | None = None,
        verifier: bool | None = None,
        max_iterations: int | None = None,
        evidence_verifier: bool = True,
    ) -> None:
        self.name = name
        c: QACheckConfig = config.qacheck
        self.qa_name = qa or c.qa  # "auto": chosen per check (`qa_for`)
        self.use_validator = c.validator if validator is None else validator
        self.use_verifier = c.verifier if verifier is None else verifier
        self.max_iterations = max_iterations or c.max_iterations
        self.max_rejected = c.max_rejected
        self.use_evidence_verifier = evidence_verifier
        names = ("retriever-reader", "reciter-reader") if self.qa_name == "auto" else (self.qa_name,)
        self.qa_modules: dict[str, QAModule] = {n: QA_MODULES[n](config.prompts_dir, c.top_k) for n in names}
        pd = config.prompts_dir
        self.p_verifier = VERIFIER.load(pd)
        self.p_first = QUESTION_FIRST.load(pd)
        self.p_followup = QUESTION_FOLLOWUP.load(pd)
        self.p_validator = VALIDATOR.load(pd)
        self.p_reasoner = REASONER.load(pd)
        self.p_reasoner_label = REASONER_LABEL.load(pd)

    def needs_retriever(self, config: Config) -> bool:
        return self.qa_name == "retriever-reader"

    def qa_for(self, ctx: Context) -> str:
        """The QA module of a check: the configured one, or with "auto" the retriever-reader where a source is there
        and the trained verifier does not read it (any model but the embedded one: a check of it would otherwise
        read nothing, its answers recited from memory), else the reciter-reader (the embedded model, whose
        recitations the verifier's reading of the sources decides over; or no source at all)."""
        if self.qa_name != "auto":
            return self.qa_name
        verifier_reads = self.use_evidence_verifier and verifier_enabled(ctx.config.verifier, ctx.model.model_id)
        return "retriever-reader" if ctx.retriever is not None and not verifier_reads else "reciter-reader"

    # -- the five modules (each call's prompt spec is in prompts.py; a parse failure goes to `failures`) ------

    def claim_verifier(
        self,
        claim: Claim,
        context: list[QAStep],
        ctx: Context,
        failures: list[str] | None = None,
        decisions: dict | None = None,
    ) -> bool:
        """D(c, C): is the context enough? In evidence settings, when the trained verifier reads the evidence so far
        as decisive with a confidence of at least verifier.uncertain_below, it is, and the model is not asked."""
        d = self._evidence_decision(claim, context, ctx, decisions)
        if d is not None and d.decisive and not d.uncertain_reason:
            ctx.tracer.emit(
                "verifier", depth=len(context), enough=True, confidence=d.confidence, by="evidence_verifier"
            )
            return True
        ch = self.p_verifier.ask(ctx.model, failures=failures, CLAIM=claim.text, QA_CONTEXTS=context)
        enough = ch.value == "Yes"
        ctx.tracer.emit("verifier", depth=len(context), enough=enough, confidence=ch.confidence)
        return enough

    def question_generator(
        self,
        claim: Claim,
        context: list[QAStep],
        ctx: Context,
        attempt: int,
        resample: bool,
        failures: list[str] | None = None,
    ) -> str | None:
        # Greedy decoding would repeat a question the validator just rejected: sample instead.
        sampling = dict(temperature=0.7 if resample else 0.0, seed=attempt if resample else None)
        if context:
            return self.p_followup.ask(
                ctx.model,
                failures=failures,
                **sampling,
                CLAIM=claim.text,
                QA_CONTEXTS=context,
                Q_INDEX=len(context) + 1,
            ).value
        return self.p_first.ask(ctx.model, failures=failures, **sampling, CLAIM=claim.text).value

    def validator(
        self, claim: Claim, step: QAStep, context: list[QAStep], ctx: Context, failures: list[str] | None = None
    ) -> bool:
        ch = self.p_validator.ask(ctx.model, failures=failures, CLAIM=claim.text, QA_CONTEXTS=context, NEW_QA_PAIR=step)
        useful = ch.value != "No"
        ctx.tracer.emit("validator", depth=step.depth, question=step.question, useful=useful, confidence=ch.confidence)
        return useful

    def reasoner(
        self,
        claim: Claim,
        context: list[QAStep],
        ctx: Context,
        failures: list[str] | None = None,
        decisions: dict | None = None,
    ) -> Verdict:
        """R(c, C): the model's rationale and label; in evidence settings the trained verifier's reading of the
        retrieved evidence decides when it is decisive, and the rationale says so when the model concluded
        otherwise (verifier.use; ablation `qacheck-no-evidence-verifier`). When it is not decisive the model's label
        stands, with the verifier's probability of it as its confidence, uncertain when the verifier read otherwise;
        in a two-label set the verifier's leaning is taken instead, uncertain (`EvidenceDecision.undecided`)."""
        verdict = reason_then_label(
            ctx,
            self.p_reasoner,
            self.p_reasoner_label,
            failures=[] if failures is None else failures,
            CONTEXTS=context,
            CLAIM=claim.text,
        )
        d = self._evidence_decision(claim, context, ctx, decisions)
        if d is None:
            return verdict
        if not d.decisive:  # uncertain: the model's label, or the verifier's leaning in a two-label set (decide.py)
            verdict.label, verdict.confidence, verdict.uncertain_reason = d.undecided(verdict.label)
            return verdict
        if d.label != verdict.label:
            verdict.rationale = (
                f"{d.rationale}\nThe model's own reasoning concluded {verdict.label}: {verdict.rationale}"
            )
        verdict.label, verdict.confidence, verdict.uncertain_reason = d.label, d.confidence, d.uncertain_reason
        return verdict

    def _evidence_decision(
        self, claim: Claim, context: list[QAStep], ctx: Context, decisions: dict | None = None
    ) -> EvidenceDecision | None:
        """The trained verifier's reading of the evidence retrieved so far (an `evidence_verifier` step), or None
        when it is off (verifier.use, or this ablation) or there is no real evidence (closed-book, recited).

        `decisions` (one check's, keyed by the context's length: the context only grows) keeps each reading, so the
        reasoner reuses the one that stopped the loop instead of verifying the same evidence again."""
        if decisions is not None and len(context) in decisions:
            return decisions[len(context)]
        d = None
        if self.use_evidence_verifier and verifier_enabled(ctx.config.verifier, ctx.model.model_id):
            passages = self._retrieved(claim, context, ctx)
            if passages:
                d = check_evidence(ctx.config.verifier, ctx.tracer, claim.text, passages, ctx.labels or self.labels)
        if decisions is not None:
            decisions[len(context)] = d
        return d

    def _retrieved(self, claim: Claim, context: list[QAStep], ctx: Context) -> list:
        """Evidence from the index: the passages the questions retrieved, and the claim's own top passages."""
        if ctx.retriever is None:
            return []
        found = [e for step in context for e in step.evidence] if self.qa_for(ctx) == "retriever-reader" else []
        found += ctx.retriever.search(claim.text, k=ctx.config.verifier.top_k)
        seen: set[str] = set()
        return [e for e in found if not (e.text in seen or seen.add(e.text))]

    # -- the loop ---------------------------------------------------------------------------------

    def check(self, claim: Claim, ctx: Context) -> Verdict:
        qa = self.qa_for(ctx)
        context: list[QAStep] = []
        failures: list[str] = []  # every parse failure of the check, in order (also in the trace)
        asked: set[str] = set()
        rejected = 0  # questions in a row rejected by the validator or repeated
        decisions: dict = {}  # the trained verifier's readings of the evidence, by context length
        stop_reason = "max_iterations"
        for attempt in range(self.max_iterations):
            if self.max_rejected and rejected >= self.max_rejected:
                stop_reason = "rejected"
                break
            # With an empty context there is nothing to judge yet: the first question is always asked.
            if context and self.use_verifier and self.claim_verifier(claim, context, ctx, failures, decisions):
                stop_reason = "verifier"
                break
            question = self.question_generator(claim, context, ctx, attempt, resample=rejected > 0, failures=failures)
            if question is None:
                stop_reason = "no_question"
                break
            depth = len(context) + 1
            if _norm(question) in asked:
                ctx.tracer.emit("question", depth=depth, question=question, duplicate=True)
                rejected += 1
                continue
            asked.add(_norm(question))
            ctx.tracer.emit("question", depth=depth, question=question)
            answer, evidence = self.qa_modules[qa].answer(question, ctx, failures)
            step = QAStep(depth=depth, question=question, answer=answer, evidence=evidence)
            ctx.tracer.emit(
                "answer",
                depth=depth,
                question=question,
                answer=answer,
                qa=qa,
                evidence=[e.to_dict() for e in evidence],
            )
            if self.use_validator:
                step.useful = self.validator(claim, step, context, ctx, failures)
            if step.useful is False:
                rejected += 1
            else:
                rejected = 0
                context.append(step)
        ctx.tracer.emit("context_done", depth=len(context), reason=stop_reason)
        verdict = self.reasoner(claim, context, ctx, failures, decisions)
        verdict.steps = context
        if qa != "retriever-reader" and decisions.get(len(context)) is None:
            verdict.basis = "memory"  # closed-book or recited answers, and no passage read by the verifier
        return verdict


def _variant(name: str, description: str, qa: str = "choice", **kw) -> None:
    fixed = {} if qa == "choice" else {"qa": qa}  # "choice": the configured QA module
    register(name, description, kind=QACheck, qa=qa, index="retriever-reader")(
        lambda config, name: QACheck(config, name, **fixed, **kw)
    )


_variant("qacheck", "QACheck with the configured QA module (default auto: the sources where the verifier is off)")
_variant("qacheck-retriever-reader", "QACheck, retriever-reader QA over an index", qa="retriever-reader")
_variant("qacheck-closed-book", "QACheck, closed-book QA (the paper's FLAN-T5 mode)", qa="closed-book")
_variant("qacheck-reciter-reader", "QACheck, reciter-reader QA", qa="reciter-reader")
_variant("qacheck-no-validator", "QACheck ablation: every QA pair is kept", validator=False)
_variant("qacheck-no-verifier", "QACheck ablation: always run max iterations", verifier=False)
_variant(
    "qacheck-no-evidence-verifier",
    "QACheck ablation: the reasoner decides without the trained evidence verifier",
    evidence_verifier=False,
)
_variant("qacheck-1-iter", "QACheck ablation: at most 1 question", max_iterations=1)
_variant("qacheck-3-iter", "QACheck ablation: at most 3 questions", max_iterations=3)
