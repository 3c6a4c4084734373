"""The result of a recheck (`Recheck`): its items and decisions, what they add up to (changed, incomplete, does the
verdict hold), and the exit status of `veracity recheck`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..steps import MEMORY_SOURCE
from ..web.filters import plural
from .steps import CHANGED, GONE, NOT_RECHECKABLE, REFUSED, STATUSES, UNREACHABLE, RecheckDecision, RecheckItem
from .stored import StoredRun

#: exit statuses of `veracity recheck` (2: a user error, 3: a backend error, as every command)
EXIT_UNCHANGED, EXIT_CHANGED, EXIT_INCOMPLETE = 0, 1, 4


@dataclass
class Recheck:
    run: StoredRun
    items: list[RecheckItem]
    decisions: list[RecheckDecision]
    steps: list[dict[str, Any]] = field(default_factory=list)  # the trace of the recheck, as stored
    seconds: float = 0.0
    checked_at: str = ""

    def counts(self) -> dict[str, int]:
        return {s: sum(i.status == s for i in self.items) for s in STATUSES}

    @property
    def changed(self) -> bool:
        """Something changed: an item changed or is gone, or a decision no longer holds."""
        return any(i.status in (CHANGED, GONE) for i in self.items) or any(d.holds is False for d in self.decisions)

    @property
    def incomplete(self) -> bool:
        """Some source could not be read again (unreachable, refused, stored without a hash: not the memory)."""
        return any(
            i.status in (UNREACHABLE, REFUSED)
            or (i.status == NOT_RECHECKABLE and not i.reason.startswith(MEMORY_SOURCE))
            for i in self.items
        )

    @property
    def holds(self) -> bool | None:
        """Whether the verdict holds (None: no decision could be taken again)."""
        known = [d.holds for d in self.decisions if d.holds is not None]
        return all(known) if known else None

    def exit_code(self) -> int:
        return EXIT_CHANGED if self.changed else EXIT_INCOMPLETE if self.incomplete else EXIT_UNCHANGED

    def headline(self) -> str:
        if self.holds is False:
            return "Verdict may not hold"
        if self.changed:
            return "Evidence changed, verdict holds" if self.holds else "Evidence changed"
        if self.incomplete:
            return "Could not re-check everything"
        return "Evidence unchanged"

    def summary(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items() if n)
        holds = {True: "the verdict holds", False: "the verdict may not hold", None: "no decision taken again"}
        return f"{plural(len(self.items), 'evidence item')}: {counts or 'none'}; {holds[self.holds]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rechecks": self.run.id,
            "origin": self.run.origin,
            "claim": self.run.claim,
            "pipeline": self.run.pipeline,
            "verdict": self.run.verdict.get("label"),
            "checked_at": self.checked_at,
            "headline": self.headline(),
            "summary": self.summary(),
            "changed": self.changed,
            "incomplete": self.incomplete,
            "holds": self.holds,
            "exit_status": self.exit_code(),
            "counts": self.counts(),
            "items": [i.data for i in self.items],
            "decisions": [d.data for d in self.decisions],
        }
