"""Reading the planner's output: only actions of the offered tools, never one already executed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..tools.base import IMAGE_REF, Action, Tool

# name("query"), name('query'), name(“query”), name(<image:1>), name(query) — one per match
_CALL = re.compile(
    r"\b([a-z_]{3,40})\s*\(\s*(?:\"([^\"\n]{1,300})\"|'([^'\n]{1,300})'|“([^”\n]{1,300})”"
    r"|(<image:\d+>)|([^()\"'\n]{1,300}))\s*\)",
    re.IGNORECASE,
)


PLACEHOLDER = "query"  # the argument the tool list shows (`web_search("query")`); a small model copies it


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # what was written but cannot run, and why


def parse_plan(text: str, tools: dict[str, Tool], executed: set[tuple[str, str]], max_actions: int) -> Plan:
    """The actions in `text` that name an offered tool with a fitting argument, new and at most `max_actions`."""
    plan = Plan()
    seen = set(executed)
    for m in _CALL.finditer(text):
        name = m.group(1).lower()
        arg = next(g for g in m.groups()[1:] if g is not None).strip()
        written = m.group(0).strip()
        tool = tools.get(name)
        if tool is None:
            plan.rejected.append(f"{written}: no such tool")
            continue
        is_ref = bool(IMAGE_REF.fullmatch(arg))
        if tool.takes_image and not is_ref:
            plan.rejected.append(f"{written}: {name} takes an image reference like <image:1>")
            continue
        if not tool.takes_image and (is_ref or not arg):
            plan.rejected.append(f"{written}: {name} takes a text query")
            continue
        if arg.lower() == PLACEHOLDER:
            plan.rejected.append(f"{written}: the tool list's placeholder, not a query")
            continue
        action = Action(name, arg)
        if action.key() in seen:
            plan.rejected.append(f"{written}: already executed")
            continue
        if len(plan.actions) >= max_actions:
            plan.rejected.append(f"{written}: more than {max_actions} actions")
            continue
        seen.add(action.key())
        plan.actions.append(action)
    return plan
