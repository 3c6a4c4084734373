"""The DEFAME pipeline and its ablations, registered by name (defame, defame-no-develop, ...)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from ..llm.base import fewshot
from ..pipeline import Context, Pipeline, register
from ..prompts import load_prompt
from ..tools.base import Action, ImageStore, ToolCall, ToolOutput
from ..types import Claim, Evidence, Verdict
from ..verdicts import UNVERIFIED, choose_label, label_block
from .actions import parse_plan
from .parsing import clean_text, excerpt, grounded, parse_summary
from .record import Finding, Record, Round, evidence_text
from .toolbox import Toolbox, build_toolbox

if TYPE_CHECKING:
    from ..config import Config, DefameConfig
    from ..images.files import ImageFile

RESULT_CHARS = 1500  # source text a summary is written from
SUMMARY_CHARS = 400  # longest summary kept in the record
TEXT_ONLY_NOTE = ("(The model reads text only: the images are known only through the tools' findings, "
                  "not seen directly.)")


def _example_blocks(text: str) -> list[tuple[set[str], str]]:
    blocks = []
    for chunk in re.split(r"^## uses:", text, flags=re.MULTILINE)[1:]:
        head, _, body = chunk.partition("\n")
        blocks.append((set(head.split()), body.strip()))
    return blocks


class Defame(Pipeline):
    """Plan, execute, summarize, develop, judge (back to planning on not-enough-information), justify."""

    accepts_images = True

    def __init__(self, config: "Config", *, drop_tools: frozenset[str] = frozenset(), single_turn: bool = False,
                 static_actions: bool = False, develop: bool = True) -> None:
        self.config = config
        self.dc: "DefameConfig" = config.defame
        self.labels = tuple(self.dc.labels)
        self.drop_tools = drop_tools
        self.max_rounds = 1 if single_turn else self.dc.max_iterations
        self.static_actions = static_actions
        self.develop_stage = develop
        pd = config.prompts_dir
        self.prompts = {n: load_prompt(f"defame_{n}", pd) for n in ("plan", "summarize", "develop", "judge", "justify")}
        self.examples = _example_blocks(load_prompt("defame_plan_examples", pd).body)

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
        call = ToolCall(claim_date=claim.date, images=store)
        executed: set[tuple[str, str]] = set()
        label, confidence = nei or labels[0], None
        for n in range(1, self.max_rounds + 1):
            rnd = record.new_round()
            actions = self._plan(rnd, record, toolbox, store, executed, ctx, failures)
            if not actions and n > 1:  # nothing new to do: the last judgement is final
                record.rounds.pop()
                if nei not in labels:  # ... but "not enough information" is not an answer here: decide now
                    label, confidence = self._judge(record.rounds[-1], record, store, labels, nei, rules, ctx,
                                                    failures, final=True)
                break
            outputs = self._execute(actions, toolbox, call, ctx, n)
            for a in actions:
                executed.add(a.key())
            self._summarize(rnd, outputs, record, store, toolbox, ctx)
            if self.develop_stage:
                self._develop(rnd, record, store, ctx)
            final = n == self.max_rounds
            label, confidence = self._judge(rnd, record, store, labels, nei, rules, ctx, failures, final=final)
            if label != nei or (nei in labels and final):
                break
        justification = self._justify(record, store, label, ctx)
        return Verdict(label=label, rationale=justification, confidence=confidence, parse_failures=failures)

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

    def _load_claim_images(self, claim: Claim, store: ImageStore, record: Record, toolbox: Toolbox,
                           ctx: Context) -> None:
        from ..images.files import load_image

        for ref in claim.images:
            image = load_image(ref, fetch=toolbox.fetch_image)  # a broken image is the user's error: say so
            record.claim_images.append(store.add(image))
        if claim.images and not ctx.model.accepts_images:
            record.image_notes.append(TEXT_ONLY_NOTE)
        if claim.images:
            ctx.tracer.emit("images", refs=list(record.claim_images), sources=list(claim.images),
                            model_sees_images=ctx.model.accepts_images)

    def _plan(self, rnd: Round, record: Record, toolbox: Toolbox, store: ImageStore,
              executed: set[tuple[str, str]], ctx: Context, failures: list[str]) -> list[Action]:
        has_images = len(store) > 0
        offered = toolbox.offered(has_images=has_images)
        unavailable = {n: t.unavailable() for n, t in toolbox.tools.items() if t.unavailable()}
        if self.static_actions:
            actions = [] if executed else self._static_plan(record, offered)
            rnd.actions = [a.render() for a in actions]
            ctx.tracer.emit("plan", round=rnd.number, actions=rnd.actions, static=True, unavailable=unavailable)
            return actions
        if not offered:
            ctx.tracer.emit("plan", round=rnd.number, actions=[], unavailable=unavailable,
                            note="no tool is available (search needs --index DIR or --search serper|searxng): "
                                 "the verdict rests on the claim alone")
            return []
        examples = "\n\n".join(body for uses, body in self.examples if uses <= set(offered))
        prompt = self.prompts["plan"].render(
            TOOLS=toolbox.describe(has_images=has_images), RULES=self._rules_line(),
            EXAMPLES=f"\nExamples:\n\n{examples}\n" if examples else "",
            RECORD=record.render(), EXECUTED=", ".join(record.executed()) or "none")
        out = ctx.model.complete(fewshot(prompt, max_tokens=96, stop=["\n\n", "Record:", "Executed actions:"],
                                         images=self._images_for_model(store, ctx)), stage="plan")
        plan = parse_plan(out.text, offered, executed, self.dc.max_actions)
        how = "planned"
        if not plan.actions:
            failures.append(f"plan (round {rnd.number}): no usable action in {out.text[:120]!r}")
            action = self._constrained_action(prompt, offered, executed, store, ctx)
            how = "constrained"
            if action is None:
                action, how = self._fallback_action(record, offered, executed), "fallback"
            ctx.tracer.emit("parse_failure", for_stage="plan", raw=out.text,
                            fallback=(f"ran {action.render()} ({'tool scored, query generated' if how == 'constrained' else 'the claim itself'})"
                                      if action else "no new action left to try"))
            if action:
                plan.actions.append(action)
        rnd.actions = [a.render() for a in plan.actions]
        ctx.tracer.emit("plan", round=rnd.number, actions=rnd.actions, rejected=plan.rejected, raw=out.text,
                        how=how, fallback=how == "fallback", unavailable=unavailable)
        return plan.actions

    def _constrained_action(self, prompt: str, offered: dict, executed: set[tuple[str, str]], store: ImageStore,
                            ctx: Context) -> Action | None:
        """One action when the free plan named none: the tool by a scored choice, then its argument
        (a generated query, or a scored choice among the images)."""
        fresh = {n: t for n, t in offered.items()
                 if not t.takes_image or any(Action(n, r).key() not in executed for r in store.refs())}
        if not fresh:
            return None
        choice = ctx.model.choose(fewshot(prompt + "\n", max_tokens=8), list(fresh), stage="plan")
        if choice.option is None:
            return None
        tool = fresh[choice.option]
        head = f"{prompt}\n{tool.name}("
        if tool.takes_image:
            refs = [r for r in store.refs() if Action(tool.name, r).key() not in executed]
            if len(refs) > 1:
                pick = ctx.model.choose(fewshot(head, max_tokens=8), refs, stage="plan")
                refs = [pick.option] if pick.option else refs
            return Action(tool.name, refs[0]) if refs else None
        out = ctx.model.complete(fewshot(head + '"', max_tokens=24, stop=['"', "\n", ")"]), stage="plan")
        query = " ".join(out.text.split()).strip(" '\u201c\u201d")
        action = Action(tool.name, query[:200])
        return action if query and action.key() not in executed else None

    def _rules_line(self) -> str:
        rules = self.dc.rules  # planning guidance from the config; the label rules are the judge's
        return f"\nRules:\n{rules.strip()}\n" if rules.strip() else ""

    @staticmethod
    def _fallback_action(record: Record, offered: dict, executed: set[tuple[str, str]]) -> Action | None:
        """The explicit fallback when the plan names no usable action: search the claim itself."""
        candidates = []
        if "web_search" in offered:
            candidates.append(Action("web_search", record.claim.text[:200]))
        for ref in record.claim_images:
            if "reverse_search" in offered:
                candidates.append(Action("reverse_search", ref))
        return next((a for a in candidates if a.key() not in executed), None)

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
                 n: int) -> list[ToolOutput]:
        def run(action: Action) -> ToolOutput:
            try:
                return toolbox.tools[action.tool].run(action.argument, call)
            except Exception as e:  # a tool bug must not lose the fact-check: record it
                return ToolOutput(action, error=f"{type(e).__name__}: {e}")

        if not actions:
            return []
        with ThreadPoolExecutor(max_workers=min(4, len(actions))) as pool:
            outputs = list(pool.map(run, actions))
        for out in outputs:
            d = out.to_dict()
            for r in d["results"]:
                r["text"] = r["text"][:1000]
            ctx.tracer.emit("action", round=n, **d)
        return outputs

    def _summarize(self, rnd: Round, outputs: list[ToolOutput], record: Record, store: ImageStore,
                   toolbox: Toolbox, ctx: Context) -> None:
        for out in outputs:
            action = out.action.render()
            if out.error:
                rnd.failures.append(f"{action}: {out.error}")
                continue
            if not out.results:
                rnd.failures.append(f"{action}: no results")
                continue
            for ev in out.results:
                prompt = self.prompts["summarize"].render(RECORD=record.render(),
                                                          RESULT=evidence_text(ev, RESULT_CHARS))
                gen = ctx.model.complete(fewshot(prompt, max_tokens=120, stop=["\n\n", "Record:", "Search result:"]),
                                         stage="summarize")
                summary = parse_summary(gen.text, SUMMARY_CHARS)
                written_by = "model"
                if summary and not grounded(summary, ev.text, record.claim.text):
                    # the model wrote something not drawn from the source (often the claim again):
                    # quote the source instead, and say so
                    ctx.tracer.emit("parse_failure", for_stage="summarize", raw=gen.text,
                                    fallback="quoted the source's sentences closest to the claim")
                    summary = excerpt(ev.text, record.claim.text, SUMMARY_CHARS) or None
                    written_by = "excerpt"
                refs = self._evidence_images(ev, store, toolbox, ctx) if summary else []
                shown = f'Excerpt: "{summary}"' if summary and written_by == "excerpt" else summary
                ctx.tracer.emit("summary", round=rnd.number, action=action, source=ev.source, url=ev.url,
                                date=ev.date, summary=shown, written_by=written_by,
                                images=evidence_image_refs(ev.images[:4], toolbox.local_image_roots), image_refs=refs)
                if summary:
                    # the record quotes it as data (record.Finding.line), an excerpt marked as such
                    rnd.findings.append(Finding(action=action, source=ev.source or ev.url or "source", url=ev.url,
                                                date=ev.date, summary=summary, image_refs=refs,
                                                excerpt=written_by == "excerpt"))

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
        prompt = self.prompts["develop"].render(RECORD=record.render())
        out = ctx.model.complete(fewshot(prompt, max_tokens=160, stop=["\n\n", "Record:", "Judgement:"],
                                         images=self._images_for_model(store, ctx)), stage="develop")
        rnd.elaboration = clean_text(out.text, 800)
        ctx.tracer.emit("develop", round=rnd.number, text=rnd.elaboration)

    def _judge(self, rnd: Round, record: Record, store: ImageStore, labels: tuple[str, ...], nei: str | None,
               rules: str, ctx: Context, failures: list[str], *, final: bool) -> tuple[str, float | None]:
        options = list(labels)
        if nei and nei not in options and not final:
            options.append(nei)
        prompt = self.prompts["judge"].render(LABELS=label_block(options, rules), RECORD=record.render())
        images = self._images_for_model(store, ctx)
        gen = ctx.model.complete(fewshot(prompt, max_tokens=100, stop=["\n\n", "Verdict:", "Record:"], images=images),
                                 stage="judge")
        findings = clean_text(gen.text, 600)
        label, confidence, probabilities, failed = choose_label(
            ctx, f"{prompt} {findings}\nVerdict:", options, stage="judge",
            fallback=nei if nei in options else UNVERIFIED, images=images)  # never a default label
        failures += failed
        rnd.judgement = label
        ctx.tracer.emit("judge", round=rnd.number, label=label, confidence=confidence, findings=findings,
                        probabilities=probabilities, final=final or label != nei)
        return label, confidence

    def _justify(self, record: Record, store: ImageStore, label: str, ctx: Context) -> str:
        prompt = self.prompts["justify"].render(RECORD=record.render(), VERDICT=label)
        out = ctx.model.complete(fewshot(prompt, max_tokens=160, stop=["\n\n", "Record:", "Justification:"],
                                         images=self._images_for_model(store, ctx)), stage="justify")
        text = clean_text(out.text, 1200)
        links = [f"[{f.source}]({f.url})" for f in record.findings() if f.url]
        ctx.tracer.emit("justify", text=text, sources=links)
        return text


def _variant(name: str, description: str, **kw) -> None:
    register(name, description, kind=Defame, index="local-search")(lambda config: Defame(config, **kw))


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
