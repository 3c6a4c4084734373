"""DEFAME's execute and summarize stages: a round's actions run (a few at once), and each result summarized into a
finding of the record (or quoted, when the model's summary is not drawn from the source), its first image kept."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..tools.base import Action, ImageStore, ToolCall, ToolOutput
from ..types import Evidence
from .parsing import excerpt
from .prompts import SUMMARY_CHARS
from .record import Record, Round
from .stage import add_step
from .steps import Summary, ToolRun
from .toolbox import Toolbox

EVIDENCE_CHARS = 1200  # the source's sentences nearest the claim kept per result for the trained verifier

if TYPE_CHECKING:
    from ..image_files import ImageFile
    from ..pipeline import Context
    from ..prompts.spec import Prompt


def execute(
    actions: list[Action], toolbox: Toolbox, call: ToolCall, ctx: Context, n: int
) -> list[tuple[ToolOutput, ToolRun]]:
    """Run the round's actions (up to four at once); each output with its ToolRun step, emitted to the trace (it
    joins the record as the output is summarized)."""

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


def summarize(
    prompt: Prompt,
    max_images: int,
    rnd: Round,
    outputs: list[tuple[ToolOutput, ToolRun]],
    record: Record,
    store: ImageStore,
    toolbox: Toolbox,
    ctx: Context,
    failures: list[str],
    *,
    by_model: bool = True,
) -> None:
    """Each output's run, then a Summary of each of its results, joins the record (`prompt`: the summarize prompt;
    `max_images`: the most images the fact-check keeps; `by_model` False: each result enters as the source's
    sentences nearest the claim, with no model call (defame.summarize = excerpt))."""
    for out, run in outputs:
        record.add(run)  # an error, or no results, is a failure line of the round (ToolRun.failure)
        action = out.action.render()
        if out.error or not out.results:
            continue
        replies = _summaries(prompt, out.results, record, ctx, failures) if by_model else [None] * len(out.results)
        for ev, gen in zip(out.results, replies):
            if gen is not None and gen.ok:
                summary, written_by = gen.value.text, "model"
            else:  # an excerpt was asked for (no model call), or the model wrote something not drawn from the
                # source (often the claim again): quote the source instead, and say so (a failure is recorded)
                if gen is not None and gen.spec.problem:
                    gen.fail()  # recorded here, in the results' order, however the calls ran
                summary, written_by = excerpt(ev.text, record.claim.text, SUMMARY_CHARS) or None, "excerpt"
            refs = _evidence_images(ev, store, toolbox, ctx, max_images) if summary else []
            shown = f'Excerpt: "{summary}"' if summary and written_by == "excerpt" else summary
            # a summary is a finding of the record, quoted as data (record.Finding), an excerpt marked as such
            add_step(
                record,
                ctx,
                Summary(
                    round=rnd.number,
                    action=action,
                    source=ev.source,
                    url=ev.url,
                    date=ev.date,
                    summary=shown,
                    written_by=written_by,
                    evidence=excerpt(ev.text, record.claim.text, EVIDENCE_CHARS) or None,
                    images=evidence_image_refs(ev.images[:4], toolbox.local_image_roots),
                    image_refs=refs,
                ),
            )


def _summaries(prompt: Prompt, results: list, record: Record, ctx: Context, failures: list[str]) -> list:
    """One summarize reply per result of one action, each against the record as it stands before any of them
    is added (so they do not depend on each other). Over a server with parallel slots up to `concurrency` calls
    are in flight together; their model calls are traced in the results' order either way."""

    def ask(ev: Evidence, model: Any, _tracer: Any) -> Any:  # a parse failure goes to ctx.tracer when recorded
        return prompt.ask(
            model,
            failures=failures,
            tracer=ctx.tracer,
            defer=True,
            RECORD=record,
            RESULT=ev,
            parse_args=dict(source=ev.text, claim=record.claim.text),
        )

    return ctx.model.map_in_order(ask, results, workers=ctx.config.concurrency, tracer=ctx.tracer)


def _evidence_images(ev: Evidence, store: ImageStore, toolbox: Toolbox, ctx: Context, max_images: int) -> list[str]:
    """The first image of a relevant result joins the fact-check (for reverse search and the report)."""
    from ..image_files import load_image

    useful = ctx.model.accepts_images or "reverse_search" in toolbox.offered(has_images=True)
    if not useful or not ev.images or len(store) >= max_images:
        return []
    try:
        # the reference came from a search result or a page: local files only from the image collection
        image: ImageFile = load_image(ev.images[0], fetch=toolbox.fetch_image, local_roots=toolbox.local_image_roots)
    except Exception:  # a broken or unreachable evidence image is skipped, not fatal
        return []
    return [store.add(image)]


def evidence_image_refs(refs: list[str], local_roots: tuple) -> list[str]:
    """The image references of a result that the trace (and so the report, which may embed them) carries:
    http(s) URLs, and local files only inside the image collection. A local path named by a search result, a
    page or a document is untrusted and dropped."""
    from ..image_files import ImageError, allowed_local

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
