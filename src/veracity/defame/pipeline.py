"""The DEFAME pipeline and its ablations, registered by name (defame, defame-no-develop, ...)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..pipeline import Context, Pipeline, register
from ..prompts import load_prompt
from ..tools.base import Action, ImageStore, ToolCall, ToolOutput
from ..types import Claim, Evidence, Verdict
from ..verdicts import UNVERIFIED, choose_label, label_block
from ..verify.decide import check_evidence, verifier_enabled
from ..web.filters import STALE
from .judgement import Reading, combine, load_calibration
from .parsing import excerpt
from .prompts import SPECS, SUMMARY_CHARS
from .record import Record, Round
from .steps import Develop, Images, Judge, Justify, Plan, Summary, ToolRun
from .toolbox import Toolbox, build_toolbox

STOP = "stop"  # the planner's option to end the round's plan (after its first action)
EVIDENCE_CHARS = 1200  # the source's sentences nearest the claim kept per result for the trained verifier

if TYPE_CHECKING:
    from ..config import Config, DefameConfig
    from ..images.files import ImageFile


def _example_blocks(text: str) -> list[tuple[set[str], str]]:
    blocks = []
    for chunk in re.split(r"^## uses:", text, flags=re.MULTILINE)[1:]:
        head, _, body = chunk.partition("\n")
        blocks.append((set(head.split()), body.strip()))
    return blocks


class Defame(Pipeline):
    """Plan, execute, summarize, develop, judge (back to planning on not-enough-information), justify."""

    accepts_images = True

    def __init__(self, config: "Config", name: str = "defame", *, drop_tools: frozenset[str] = frozenset(),
                 single_turn: bool = False, static_actions: bool = False, develop: bool = True) -> None:
        self.config = config
        self.name = name
        self.dc: "DefameConfig" = config.defame
        self.labels = tuple(self.dc.labels)
        self.drop_tools = drop_tools
        self.max_rounds = 1 if single_turn else self.dc.max_iterations
        self.static_actions = static_actions
        self.develop_stage = develop
        pd = config.prompts_dir
        self.prompts = {spec.name.removeprefix("defame."): spec.load(pd) for spec in SPECS}  # specs: prompts.py
        self.examples = _example_blocks(load_prompt("defame_plan_examples", pd).body)
        self.calibration = load_calibration()  # the judge's rules and calibrated confidence (judgement.py)

    def needs_retriever(self, config: "Config") -> bool:
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
        notes: list[str] = []  # what the verdict's reader should know about its evidence (possibly stale sources)
        label, confidence, reason = nei or labels[0], None, ""
        for n in range(1, self.max_rounds + 1):
            rnd = record.new_round()
            actions = self._plan(rnd, record, toolbox, store, executed, ctx, failures)
            if not actions and n > 1:  # nothing new to do: the last judgement is final
                # ... but "not enough information" is not an answer here, or an undecided claim takes the stated
                # prior's label (defame.undecided = prior): decide now, as the last round would
                if nei not in labels or (label == nei and self.dc.undecided == "prior"):
                    label, confidence, reason = self._judge(record.rounds[-2], record, store, labels, nei, rules,
                                                            ctx, failures, final=True)
                break
            outputs = self._execute(actions, toolbox, call, ctx, n)
            notes += [x for out, _ in outputs for x in out.notes if x.startswith(STALE) and x not in notes]
            for a in actions:
                executed.add(a.key())
            self._summarize(rnd, outputs, record, store, toolbox, ctx, failures)
            if self.develop_stage:
                self._develop(rnd, record, store, ctx)
            final = n == self.max_rounds
            label, confidence, reason = self._judge(rnd, record, store, labels, nei, rules, ctx, failures,
                                                    final=final)
            if label != nei or (nei in labels and final):
                break
        justification = self._justify(record, store, label, ctx)
        return Verdict(label=label, rationale=justification, confidence=confidence, parse_failures=failures,
                       basis="evidence" if record.findings() or claim.images else "memory", notes=notes,
                       uncertain_reason=reason)

    def _summaries(self, results: list, record: Record, ctx: Context, failures: list[str]) -> list:
        """One summarize reply per result of one action, each against the record as it stands before any of them
        is added (so they do not depend on each other). Over a server with parallel slots up to `concurrency` calls
        are in flight together; their model calls are traced in the results' order either way."""
        prompt = self.prompts["summarize"]

        def ask(ev: Evidence, model: Any, _tracer: Any) -> Any:  # a parse failure goes to ctx.tracer when recorded
            return prompt.ask(model, failures=failures, tracer=ctx.tracer, defer=True, RECORD=record, RESULT=ev,
                              parse_args=dict(source=ev.text, claim=record.claim.text))

        return ctx.model.map_in_order(ask, results, workers=ctx.config.concurrency, tracer=ctx.tracer)

    # ------------------------------------------------------------------ helpers
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

    def _images_for_model(self, store: ImageStore, ctx: Context) -> tuple[str, ...]:
        if not ctx.model.accepts_images:
            return ()
        return tuple(img.data_url() for img in (store.get(r) for r in store.refs()) if img is not None)

    @staticmethod
    def _add(record: Record, ctx: Context, step) -> None:
        """A step of the record: added to it, and emitted (the same object) to the trace."""
        record.add(step)
        ctx.tracer.emit(step)

    def _load_claim_images(self, claim: Claim, store: ImageStore, record: Record, toolbox: Toolbox,
                           ctx: Context) -> None:
        from ..images.files import load_image

        # a broken image is the user's error: say so
        refs = [store.add(load_image(ref, fetch=toolbox.fetch_image)) for ref in claim.images]
        if claim.images:  # the record notes a text-only model (record.TEXT_ONLY_NOTE)
            self._add(record, ctx, Images(refs=refs, sources=list(claim.images),
                                          model_sees_images=ctx.model.accepts_images))

    def _plan(self, rnd: Round, record: Record, toolbox: Toolbox, store: ImageStore,
              executed: set[tuple[str, str]], ctx: Context, failures: list[str]) -> list[Action]:
        """The round's actions, one at a time: the tool (or, after the round's first action, stopping) is a
        scored choice among the offered tools (`choose`), its argument a scored choice among the images or the one
        text the model writes, a search query. Nothing is parsed, so a plan cannot fail to parse; an action already
        executed (or planned) is never planned again."""
        has_images = len(store) > 0
        offered = toolbox.offered(has_images=has_images)
        unavailable = {n: t.unavailable() for n, t in toolbox.tools.items() if t.unavailable()}
        if self.static_actions:
            actions = [] if executed else self._static_plan(record, offered)
            self._add(record, ctx, Plan(round=rnd.number, actions=[a.render() for a in actions], static=True,
                                        unavailable=unavailable))
            return actions
        if not offered:
            self._add(record, ctx, Plan(round=rnd.number, actions=[], unavailable=unavailable,
                                        note="no tool is available (search needs --index DIR or --search "
                                             "serper|searxng): the verdict rests on the claim alone"))
            return []
        examples = "\n\n".join(body for uses, body in self.examples if uses <= set(offered))
        slots = dict(TOOLS=toolbox.describe(has_images=has_images), RULES=self._rules_line(),
                     EXAMPLES=f"\nExamples:\n\n{examples}\n" if examples else "", RECORD=record)
        actions: list[Action] = []
        planned = set(executed)
        hows: list[str] = []
        notes: list[str] = []
        raws: list[str] = []
        blocked: set[str] = set()  # tools with nothing new to run this round
        images = self._images_for_model(store, ctx)
        while len(actions) < self.dc.max_actions:
            fresh = [n for n, t in offered.items() if n not in blocked
                     and (not t.takes_image or any(Action(n, r).key() not in planned for r in store.refs()))]
            if not fresh:
                notes.append("every offered tool has run on everything it can take")
                break
            # "stop" ends the round's plan after its first action (a round is planned because the judge found not
            # enough evidence, so it runs at least one)
            options = fresh + ([STOP] if actions else [])
            slots["EXECUTED"] = ", ".join(record.executed() + [a.render() for a in actions]) or "none"
            if len(options) == 1:
                name, how = options[0], "only choice"
            else:
                reply = self.prompts["plan.tool"].ask(ctx.model, options=options, failures=failures, defer=True,
                                                      images=images, **slots)
                raws.append(reply.raw)
                name, how = reply.value, "chosen"
                if not reply.ok:  # a backend that reads choices from text, and read none: explicit, recorded
                    name, how = fresh[0], "fallback"
                    reply.fail(f"took the first tool offered, {name}", where=f"round {rnd.number}")
            if name == STOP:
                hows.append("stop chosen")
                break
            action, note = self._argument(offered[name], slots, planned, store, record, ctx, raws, images)
            if note:
                notes.append(note)
            if action is None:
                blocked.add(name)
                continue
            hows.append(how)
            planned.add(action.key())
            actions.append(action)
        self._add(record, ctx, Plan(round=rnd.number, actions=[a.render() for a in actions], raw="\n".join(raws),
                                    how=", ".join(dict.fromkeys(hows)) or None, fallback="fallback" in hows,
                                    unavailable=unavailable, note="; ".join(notes) or None))
        return actions

    def _argument(self, tool, slots: dict, planned: set[tuple[str, str]], store: ImageStore, record: Record,
                  ctx: Context, raws: list[str], images: tuple[str, ...]) -> tuple[Action | None, str]:
        """The chosen tool's argument: an image not yet given to it (a scored choice when there are several), or
        the query the model writes; a query that is empty, the tool list's placeholder, or already run is replaced
        by the claim itself, said in the note. (None, why) when nothing new is left for the tool."""
        if tool.takes_image:
            refs = [r for r in store.refs() if Action(tool.name, r).key() not in planned]
            if len(refs) > 1:
                pick = self.prompts["plan.image"].ask(ctx.model, options=refs, TOOL=tool.name, images=images, **slots)
                raws.append(pick.raw)
                refs = [pick.value] if pick.value else refs  # unread: the first image not yet given to it
            return (Action(tool.name, refs[0]), "") if refs else (None, f"{tool.name}: every image done")
        reply = self.prompts["plan.query"].ask(ctx.model, TOOL=tool.name, images=images, **slots)
        raws.append(reply.raw)
        query = (reply.value or "")[:200]
        if query and Action(tool.name, query).key() not in planned:
            return Action(tool.name, query), ""
        said = f"{tool.name}: the query written ({query!r}) was " + ("run before" if query else "empty")
        action = Action(tool.name, record.claim.text[:200])
        if action.key() in planned:
            return None, f"{said}, and so was the claim itself"
        return action, f"{said}: the claim itself is searched"

    def _rules_line(self) -> str:
        rules = self.dc.rules  # planning guidance from the config; the label rules are the judge's
        return f"\nRules:\n{rules.strip()}\n" if rules.strip() else ""

    @staticmethod
    def _static_plan(record: Record, offered: dict) -> list[Action]:
        """Static actions (ablation): every offered tool once, on the claim text or the claim's images."""
        actions = []
        for name, tool in offered.items():
            if tool.takes_image:
                actions += [Action(name, ref) for ref in record.claim_images]
            else:
                actions.append(Action(name, record.claim.text[:200]))
        return actions

    def _execute(self, actions: list[Action], toolbox: Toolbox, call: ToolCall, ctx: Context,
                 n: int) -> list[tuple[ToolOutput, ToolRun]]:
        def run(action: Action) -> ToolOutput:
            try:
                return toolbox.tools[action.tool].run(action.argument, call)
            except Exception as e:  # a tool bug must not lose the fact-check: record it
                return ToolOutput(action, error=f"{type(e).__name__}: {e}")

        if not actions:
            return []
        with ThreadPoolExecutor(max_workers=min(4, len(actions))) as pool:
            outputs = list(pool.map(run, actions))
        runs = []
        for out in outputs:
            d = out.to_dict()
            d["results"] = [r.cut(1000).to_dict() for r in out.results]  # the trace quotes each source's start
            runs.append((out, ctx.tracer.emit(ToolRun(round=n, **d))))  # joins the record as it is summarized
        return runs

    def _summarize(self, rnd: Round, outputs: list[tuple[ToolOutput, ToolRun]], record: Record, store: ImageStore,
                   toolbox: Toolbox, ctx: Context, failures: list[str]) -> None:
        for out, run in outputs:
            record.add(run)  # an error, or no results, is a failure line of the round (ToolRun.failure)
            action = out.action.render()
            if out.error or not out.results:
                continue
            replies = self._summaries(out.results, record, ctx, failures)
            for ev, gen in zip(out.results, replies):
                summary = gen.value.text
                written_by = "model"
                if not gen.ok:
                    if gen.spec.problem:
                        gen.fail()  # recorded here, in the results' order, however the calls ran
                    # the model wrote something not drawn from the source (often the claim again):
                    # quote the source instead, and say so (the failure is recorded)
                    summary = excerpt(ev.text, record.claim.text, SUMMARY_CHARS) or None
                    written_by = "excerpt"
                refs = self._evidence_images(ev, store, toolbox, ctx) if summary else []
                shown = f'Excerpt: "{summary}"' if summary and written_by == "excerpt" else summary
                # a summary is a finding of the record, quoted as data (record.Finding), an excerpt marked as such
                self._add(record, ctx, Summary(round=rnd.number, action=action, source=ev.source, url=ev.url,
                                               date=ev.date, summary=shown, written_by=written_by,
                                               evidence=excerpt(ev.text, record.claim.text, EVIDENCE_CHARS) or None,
                                               images=evidence_image_refs(ev.images[:4], toolbox.local_image_roots),
                                               image_refs=refs))

    def _evidence_images(self, ev: Evidence, store: ImageStore, toolbox: Toolbox, ctx: Context) -> list[str]:
        """The first image of a relevant result joins the fact-check (for reverse search and the report)."""
        from ..images.files import load_image

        useful = ctx.model.accepts_images or "reverse_search" in toolbox.offered(has_images=True)
        if not useful or not ev.images or len(store) >= self.dc.max_images:
            return []
        try:
            # the reference came from a search result or a page: local files only from the image collection
            image: "ImageFile" = load_image(ev.images[0], fetch=toolbox.fetch_image,
                                            local_roots=toolbox.local_image_roots)
        except Exception:  # a broken or unreachable evidence image is skipped, not fatal
            return []
        return [store.add(image)]

    def _develop(self, rnd: Round, record: Record, store: ImageStore, ctx: Context) -> None:
        text = self.prompts["develop"].ask(ctx.model, images=self._images_for_model(store, ctx), RECORD=record).value
        self._add(record, ctx, Develop(round=rnd.number, text=text))

    def _judge(self, rnd: Round, record: Record, store: ImageStore, labels: tuple[str, ...], nei: str | None,
               rules: str, ctx: Context, failures: list[str], *, final: bool) -> tuple[str, float | None, str]:
        """The round's label, its confidence, and why it is uncertain ("" unless no source decides and the label is
        the model's pick or the sources' leaning). The model writes its key findings and picks a label (scored);
        with the trained verifier on, the label comes from its reading of each source by the judge's rules, the
        model's pick one input (judgement.py), and the confidence is the judge's own calibrated one."""
        options = list(labels)
        if nei and nei not in options and not final:
            options.append(nei)
        readings, scores = self._verify(record, options, ctx)
        slots = dict(LABELS=label_block(options, rules), RECORD=record, SCORES=scores)
        images = self._images_for_model(store, ctx)
        findings = self.prompts["judge"].ask(ctx.model, images=images, **slots).value
        pick, confidence, probabilities = choose_label(
            ctx, self.prompts["judge.label"], options, fallback=nei if nei in options else UNVERIFIED,
            failures=failures, images=images, FINDINGS=findings, **slots)  # no default label
        label, by, reason, score = pick, "model", "", None
        if readings is not None:
            out = combine(readings, options, pick, self.calibration, nei_allowed=nei in options,
                          final=final and self.dc.undecided == "prior")
            label, confidence, by, score = out.label, out.confidence, out.decided_by, out.score
            if by != "verifier":
                reason = (f"no source read decides the claim (the trained verifier's strongest reading of a source "
                          f"is below {self.calibration.decisive_at:.2f}); {label} is "
                          + {"model": "the language model's choice",
                             "prior": "the label most often right for an undecided claim under the stated label "
                                      "prior (a stream of checked claims is mostly false)"}.get(
                              by, "the side the sources lean to"))
        self._add(record, ctx, Judge(round=rnd.number, label=label, confidence=confidence, findings=findings,
                                     probabilities=probabilities, final=final or label != nei, verifier=scores or None,
                                     decided_by=by, model_pick=pick, score=score))
        return label, confidence, reason

    def _verify(self, record: Record, options: list[str], ctx: Context
                ) -> "tuple[list[Reading] | None, list[dict[str, Any]]]":
        """The trained verifier's reading of the claim against each finding so far (verifier.use; auto: with the
        embedded model), for the judge's rules and its prompt; None when the verifier is off ([] with no findings).
        It reads each source's own sentences nearest the claim, not the model's summary (a summary can restate the
        claim, which the verifier would read as support)."""
        if not verifier_enabled(self.config.verifier, ctx.model.model_id):
            return None, []
        found = [f for f in record.findings() if f.evidence.strip()]
        if not found:
            return [], []
        passages = [Evidence(text=f.evidence, source=f.source, url=f.url) for f in found]
        decision = check_evidence(self.config.verifier, ctx.tracer, record.claim.text, passages, options)
        per = decision.verification.per_passage
        scores = [{"source": f.source, **{k: round(p[k], 3) for k in ("supported", "refuted", "nei")}}
                  for f, p in zip(found, per)]
        return [Reading.of(p) for p in per], scores

    def _justify(self, record: Record, store: ImageStore, label: str, ctx: Context) -> str:
        text = self.prompts["justify"].ask(ctx.model, images=self._images_for_model(store, ctx), RECORD=record,
                                           VERDICT=label).value
        links = [f"[{f.source}]({f.url})" for f in record.findings() if f.url]
        self._add(record, ctx, Justify(text=text, sources=links))
        return text


def _variant(name: str, description: str, **kw) -> None:
    register(name, description, kind=Defame, index="local-search")(lambda config, name: Defame(config, name, **kw))


_variant("defame", "DEFAME: plan tool actions, search, summarize, develop, judge (up to 3 rounds), justify")
_variant("defame-no-geolocation", "DEFAME ablation: without the geolocation tool", drop_tools=frozenset({"geolocate"}))
_variant("defame-no-reverse-search", "DEFAME ablation: without reverse image search",
         drop_tools=frozenset({"reverse_search"}))
_variant("defame-no-image-search", "DEFAME ablation: without image search", drop_tools=frozenset({"image_search"}))
_variant("defame-no-web-search", "DEFAME ablation: without web search", drop_tools=frozenset({"web_search"}))
_variant("defame-single-turn", "DEFAME ablation: one round only, no return to planning", single_turn=True)
_variant("defame-static-actions", "DEFAME ablation: every tool once on the claim, no planning", static_actions=True)
_variant("defame-no-develop", "DEFAME ablation: judge right after the evidence, no develop stage", develop=False)


def evidence_image_refs(refs: list[str], local_roots: tuple) -> list[str]:
    """The image references of a result that the trace (and so the report, which may embed them) carries:
    http(s) URLs, and local files only inside the image collection. A local path named by a search result, a
    page or a document is untrusted and dropped."""
    from ..images.files import ImageError, allowed_local

    kept = []
    for ref in refs:
        ref = str(ref).strip()
        if ref.split(":", 1)[0].lower() in ("http", "https"):
            kept.append(ref)
        elif ref and "://" not in ref and ref[:5].lower() != "data:" and local_roots:
            try:
                kept.append(str(allowed_local(Path(ref).expanduser(), local_roots)))
            except (ImageError, OSError, ValueError):
                pass
    return kept
