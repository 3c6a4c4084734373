"""DEFAME's plan stage: the actions of a round, each a scored choice of tool and argument (or, in the static-actions
ablation, every offered tool once on the claim)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..prompts import load_prompt
from ..tools.base import Action, ImageStore
from .record import Record, Round
from .stage import add_step, images_for_model
from .steps import Plan
from .toolbox import Toolbox

STOP = "stop"  # the planner's option to end the round's plan (after its first action)

if TYPE_CHECKING:
    from ..config import DefameConfig
    from ..pipeline import Context
    from ..prompts.spec import Prompt


def _example_blocks(text: str) -> list[tuple[set[str], str]]:
    blocks = []
    for chunk in re.split(r"^## uses:", text, flags=re.MULTILINE)[1:]:
        head, _, body = chunk.partition("\n")
        blocks.append((set(head.split()), body.strip()))
    return blocks


class Planner:
    """Plans a round's actions with the pipeline's plan prompts (`plan.tool`, `plan.image`, `plan.query`)."""

    def __init__(self, dc: DefameConfig, prompts: dict[str, Prompt], prompts_dir: str | None, *, static: bool) -> None:
        self.dc = dc
        self.prompts = prompts
        self.static = static
        self.examples = _example_blocks(load_prompt("defame_plan_examples", prompts_dir).body)

    def plan(
        self,
        rnd: Round,
        record: Record,
        toolbox: Toolbox,
        store: ImageStore,
        executed: set[tuple[str, str]],
        ctx: Context,
        failures: list[str],
    ) -> list[Action]:
        """The round's actions, one at a time: the tool (or, after the round's first action, stopping) is a
        scored choice among the offered tools (`choose`), its argument a scored choice among the images or the one
        text the model writes, a search query. Nothing is parsed, so a plan cannot fail to parse; an action already
        executed (or planned) is never planned again."""
        has_images = len(store) > 0
        offered = toolbox.offered(has_images=has_images)
        unavailable = {n: t.unavailable() for n, t in toolbox.tools.items() if t.unavailable()}
        if self.static:
            actions = [] if executed else self._static_plan(record, offered)
            add_step(
                record,
                ctx,
                Plan(round=rnd.number, actions=[a.render() for a in actions], static=True, unavailable=unavailable),
            )
            return actions
        if not offered:
            add_step(
                record,
                ctx,
                Plan(
                    round=rnd.number,
                    actions=[],
                    unavailable=unavailable,
                    note="no tool is available (search needs --index DIR or --search "
                    "serper|searxng): the verdict rests on the claim alone",
                ),
            )
            return []
        examples = "\n\n".join(body for uses, body in self.examples if uses <= set(offered))
        slots = dict(
            TOOLS=toolbox.describe(has_images=has_images),
            RULES=self._rules_line(),
            EXAMPLES=f"\nExamples:\n\n{examples}\n" if examples else "",
            RECORD=record,
        )
        actions: list[Action] = []
        planned = set(executed)
        hows: list[str] = []
        notes: list[str] = []
        raws: list[str] = []
        blocked: set[str] = set()  # tools with nothing new to run this round
        images = images_for_model(store, ctx)
        while len(actions) < self.dc.max_actions:
            fresh = [
                n
                for n, t in offered.items()
                if n not in blocked
                and (not t.takes_image or any(Action(n, r).key() not in planned for r in store.refs()))
            ]
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
                reply = self.prompts["plan.tool"].ask(
                    ctx.model, options=options, failures=failures, defer=True, images=images, **slots
                )
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
        add_step(
            record,
            ctx,
            Plan(
                round=rnd.number,
                actions=[a.render() for a in actions],
                raw="\n".join(raws),
                how=", ".join(dict.fromkeys(hows)) or None,
                fallback="fallback" in hows,
                unavailable=unavailable,
                note="; ".join(notes) or None,
            ),
        )
        return actions

    def _argument(
        self,
        tool,
        slots: dict,
        planned: set[tuple[str, str]],
        store: ImageStore,
        record: Record,
        ctx: Context,
        raws: list[str],
        images: tuple[str, ...],
    ) -> tuple[Action | None, str]:
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
