"""The DEFAME pipeline and its ablations, registered by name (defame, defame-no-develop, ...): the rounds, and the
develop, judge and justify stages. The plan stage is planning.py; execute and summarize are execution.py."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..pipeline import Context, Pipeline, register
from ..tools.base import ImageStore, ToolCall
from ..types import Claim, Evidence, Verdict
from ..verdicts import UNVERIFIED, choose_label, label_block
from ..verify.decide import EvidenceDecision, check_evidence, verifier_enabled
from ..web.filters import STALE
from .execution import execute, summarize
from .judgement import Reading, combine, load_calibration
from .planning import Planner
from .prompts import SPECS
from .record import Record, Round
from .stage import add_step, images_for_model
from .steps import Develop, Images, Judge, Justify
from .toolbox import Toolbox, build_toolbox

if TYPE_CHECKING:
    from ..config import Config, DefameConfig


class Defame(Pipeline):
    """Plan, execute, summarize, develop, judge (back to planning on not-enough-information), justify."""

    accepts_images = True

    def __init__(
        self,
        config: Config,
        name: str = "defame",
        *,
        drop_tools: frozenset[str] = frozenset(),
        single_turn: bool = False,
        static_actions: bool = False,
        develop: bool = True,
    ) -> None:
        self.config = config
        self.name = name
        self.dc: DefameConfig = config.defame
        self.labels = tuple(self.dc.labels)
        self.drop_tools = drop_tools
        self.max_rounds = 1 if single_turn else self.dc.max_iterations
        self.develop_stage = develop
        pd = config.prompts_dir
        self.prompts = {spec.name.removeprefix("defame."): spec.load(pd) for spec in SPECS}  # specs: prompts.py
        self.planner = Planner(self.dc, self.prompts, pd, static=static_actions)  # the plan stage: planning.py
        self.calibration = load_calibration()  # the judge's rules and calibrated confidence (judgement.py)

    def needs_retriever(self, config: Config) -> bool:
        return config.defame.search == "local"

    # ------------------------------------------------------------------ the run
    def check(self, claim: Claim, ctx: Context) -> Verdict:
        toolbox = build_toolbox(self.dc, ctx.retriever, drop=self.drop_tools)
        try:
            return self._check(claim, ctx, toolbox)
        finally:
            toolbox.close()

    def _check(self, claim: Claim, ctx: Context, toolbox: Toolbox) -> Verdict:
        store = ImageStore()
        record = Record(claim=claim)
        failures: list[str] = []
        self._load_claim_images(claim, store, record, toolbox, ctx)
        labels, nei, rules = self._label_set(ctx)
        call = ToolCall(claim_date=claim.date, images=store, claim=claim.text)
        executed: set[tuple[str, str]] = set()
        seen: set[tuple[str, str]] = set()  # every result read so far (source, text)
        notes: list[str] = []  # what the verdict's reader should know about its evidence (possibly stale sources)
        by_model = self._summarize_by_model(ctx)
        label, confidence, reason = nei or labels[0], None, ""
        for n in range(1, self.max_rounds + 1):
            rnd = record.new_round()
            actions = self.planner.plan(rnd, record, toolbox, store, executed, ctx, failures)
            outputs = execute(actions, toolbox, call, ctx, n)
            for a in actions:
                executed.add(a.key())
            found = {(r.url or r.source, r.text) for out, _ in outputs for r in out.results}
            if n > 1 and found <= seen:  # nothing new to do, or nothing new found: the last judgement is final
                for _, run in outputs:
                    record.add(run)  # the round's searches stay in the record and the trace
                # ... but "not enough information" is not an answer here, or an undecided claim takes the stated
                # prior's label (defame.undecided = prior): decide now, as the last round would
                if nei not in labels or (label == nei and self.dc.undecided == "prior"):
                    label, confidence, reason = self._judge(
                        record.rounds[-2], record, store, labels, nei, rules, ctx, failures, final=True
                    )
                break
            seen |= found
            notes += [x for out, _ in outputs for x in out.notes if x.startswith(STALE) and x not in notes]
            summarize(
                self.prompts["summarize"],
                self.dc.max_images,
                rnd,
                outputs,
                record,
                store,
                toolbox,
                ctx,
                failures,
                by_model=by_model,
            )
            if self.develop_stage:
                self._develop(rnd, record, store, ctx)
            final = n == self.max_rounds
            label, confidence, reason = self._judge(rnd, record, store, labels, nei, rules, ctx, failures, final=final)
            if label != nei or (nei in labels and final):
                break
        justification = self._justify(record, store, label, ctx)
        return Verdict(
            label=label,
            rationale=justification,
            confidence=confidence,
            parse_failures=failures,
            basis="evidence" if record.findings() or claim.images else "memory",
            notes=notes,
            uncertain_reason=reason,
        )

    # ------------------------------------------------------------------ helpers
    def _summarize_by_model(self, ctx: Context) -> bool:
        """Whether the model summarizes each result (defame.summarize; auto: not where the trained verifier judges,
        since it reads the sources' own sentences and a small model's summary can invert its source)."""
        if self.dc.summarize == "auto":
            return not verifier_enabled(self.config.verifier, ctx.model.model_id)
        return self.dc.summarize == "model"

    def _label_set(self, ctx: Context) -> tuple[tuple[str, ...], str | None, str]:
        """(labels to score against, the not-enough-information label, rules for the judge)."""
        labels = tuple(ctx.labels) if ctx.labels else self.labels
        rules = ctx.label_rules or self.dc.rules
        nei = next((x for x in labels if re.match(r"not enough", x, re.IGNORECASE)), None)
        if nei is None and not ctx.labels:
            nei = self.dc.nei_label if self.dc.nei_label in labels else None
        if nei is None:  # the caller's labels have none: use ours for the rounds before the last
            nei = self.dc.nei_label
        return labels, nei, rules

    def _load_claim_images(
        self, claim: Claim, store: ImageStore, record: Record, toolbox: Toolbox, ctx: Context
    ) -> None:
        from ..image_files import load_image

        # a broken image is the user's error: say so
        refs = [store.add(load_image(ref, fetch=toolbox.fetch_image)) for ref in claim.images]
        if claim.images:  # the record notes a text-only model (record.TEXT_ONLY_NOTE)
            add_step(
                record, ctx, Images(refs=refs, sources=list(claim.images), model_sees_images=ctx.model.accepts_images)
            )

    def _develop(self, rnd: Round, record: Record, store: ImageStore, ctx: Context) -> None:
        text = self.prompts["develop"].ask(ctx.model, images=images_for_model(store, ctx), RECORD=record).value
        add_step(record, ctx, Develop(round=rnd.number, text=text))

    def _judge(
        self,
        rnd: Round,
        record: Record,
        store: ImageStore,
        labels: tuple[str, ...],
        nei: str | None,
        rules: str,
        ctx: Context,
        failures: list[str],
        *,
        final: bool,
    ) -> tuple[str, float | None, str]:
        """The round's label, its confidence, and why it is uncertain ("" unless no source decides and the label is
        the model's pick or the sources' leaning). The model writes its key findings and picks a label (scored);
        with the trained verifier on, the label comes from its reading of each source by the judge's rules, the
        model's pick one input (judgement.py), and the confidence is the judge's own calibrated one."""
        options = list(labels)
        if nei and nei not in options and not final:
            options.append(nei)
        readings, scores, decision = self._verify(record, options, ctx)
        slots = dict(LABELS=label_block(options, rules), RECORD=record, SCORES=scores)
        images = images_for_model(store, ctx)
        findings = self.prompts["judge"].ask(ctx.model, images=images, **slots).value
        pick, confidence, probabilities = choose_label(
            ctx,
            self.prompts["judge.label"],
            options,
            fallback=nei if nei in options else UNVERIFIED,
            failures=failures,
            images=images,
            FINDINGS=findings,
            **slots,
        )  # no default label
        label, by, reason, score = pick, "model", "", None
        if readings is not None:
            out = combine(
                readings,
                options,
                pick,
                self.calibration,
                nei_allowed=nei in options,
                final=final and self.dc.undecided == "prior",
            )
            label, by, score = out.label, out.decided_by, out.score
            # the judge's calibrated confidence; where it has none (a label the model picked), the model's own
            # probability of the label
            confidence = out.confidence if out.confidence is not None else (probabilities or {}).get(label)
            if by == "verifier" and decision is not None:
                reason = retrieved_reason(decision, label)
            if by != "verifier":
                reason = (
                    f"no source read decides the claim (the trained verifier's strongest reading of a source "
                    f"is below {self.calibration.decisive_at:.2f}); {label} is "
                    + {
                        "model": "the language model's choice",
                        "prior": "the label most often right for an undecided claim under the stated label "
                        "prior (a stream of checked claims is mostly false)",
                    }.get(by, "the side the sources lean to")
                )
        add_step(
            record,
            ctx,
            Judge(
                round=rnd.number,
                label=label,
                confidence=confidence,
                findings=findings,
                probabilities=probabilities,
                final=final or label != nei,
                verifier=scores or None,
                decided_by=by,
                model_pick=pick,
                score=score,
            ),
        )
        return label, confidence, reason

    def _verify(
        self, record: Record, options: list[str], ctx: Context
    ) -> tuple[list[Reading] | None, list[dict[str, Any]], EvidenceDecision | None]:
        """The trained verifier's reading of the claim against each finding so far (verifier.use; auto: with the
        embedded model), for the judge's rules and its prompt; None when the verifier is off ([] with no findings).
        It reads each source's own sentences nearest the claim, not the model's summary (a summary can restate the
        claim, which the verifier would read as support)."""
        if not verifier_enabled(self.config.verifier, ctx.model.model_id):
            return None, [], None
        found = [f for f in record.findings() if f.evidence.strip()]
        if not found:
            return [], [], None
        passages = [Evidence(text=f.evidence, source=f.source, url=f.url) for f in found]
        decision = check_evidence(self.config.verifier, ctx.tracer, record.claim.text, passages, options)
        per = decision.verification.per_passage
        scores = [
            {"source": f.source, **{k: round(p[k], 3) for k in ("supported", "refuted", "nei")}}
            for f, p in zip(found, per)
        ]
        return [Reading.of(p) for p in per], scores, decision

    def _justify(self, record: Record, store: ImageStore, label: str, ctx: Context) -> str:
        text = (
            self.prompts["justify"]
            .ask(ctx.model, images=images_for_model(store, ctx), RECORD=record, VERDICT=label)
            .value
        )
        links = [f"[{f.source}]({f.url})" for f in record.findings() if f.url]
        add_step(record, ctx, Justify(text=text, sources=links))
        return text


def _variant(name: str, description: str, **kw) -> None:
    register(name, description, kind=Defame, index="local-search")(lambda config, name: Defame(config, name, **kw))


_variant("defame", "DEFAME: plan tool actions, search, summarize, develop, judge (up to 3 rounds), justify")
_variant("defame-no-geolocation", "DEFAME ablation: without the geolocation tool", drop_tools=frozenset({"geolocate"}))
_variant(
    "defame-no-reverse-search",
    "DEFAME ablation: without reverse image search",
    drop_tools=frozenset({"reverse_search"}),
)
_variant("defame-no-image-search", "DEFAME ablation: without image search", drop_tools=frozenset({"image_search"}))
_variant("defame-no-web-search", "DEFAME ablation: without web search", drop_tools=frozenset({"web_search"}))
_variant("defame-single-turn", "DEFAME ablation: one round only, no return to planning", single_turn=True)
_variant("defame-static-actions", "DEFAME ablation: every tool once on the claim, no planning", static_actions=True)
_variant("defame-no-develop", "DEFAME ablation: judge right after the evidence, no develop stage", develop=False)


def retrieved_reason(decision: EvidenceDecision, label: str) -> str:
    """Why a label the sources decided is still uncertain ("" when it is not): DEFAME's sources are found by its
    searches, so the label is shown as decided only where the trained verifier's reading of all of them together
    passes the rule and threshold calibrated on evidence a search found (verifier.json `retrieved_rule`: decided
    verdicts right 90% of the time on claims searched as checks search) and reads the same label. The judge's own
    confidence is calibrated on gold-evidence claim sets; on AVeriTeC's real-world sources its decided verdicts were
    right 13 times in 22."""
    if decision.uncertain_reason:
        return decision.uncertain_reason
    if decision.label != label:
        return (
            f"the trained verifier reads the sources together as {decision.label} ({decision.confidence:.2f}), "
            f"not {label}"
        )
    return ""
