"""The steps of a recheck (`veracity recheck`, the run page's Re-check button), and how each folds into the view.

`recheck_item`: one evidence item of the rechecked run and what its source says now (unchanged, changed with a
short diff of the quoted span, gone, unreachable, refused by the address guard, or not re-checkable and why);
`recheck_decision`: the decision taken again on the evidence as it stands now, and whether the verdict holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..steps import Fold, Step, evidence_when, http_url, step_type
from ..web.filters import plural

UNCHANGED, CHANGED, GONE, UNREACHABLE, REFUSED, NOT_RECHECKABLE = (
    "unchanged",
    "changed",
    "gone",
    "unreachable",
    "refused",
    "not re-checkable",
)
STATUSES = (UNCHANGED, CHANGED, GONE, UNREACHABLE, REFUSED, NOT_RECHECKABLE)


@step_type
@dataclass(kw_only=True)
class RecheckItem(Step):
    """One evidence item rechecked: its record as stored, its status now, why, and what its quote reads now."""

    kind: ClassVar[str] = "recheck_item"
    n: int = 0
    group: str = ""  # the claim (or the answer's sentence) it is evidence for
    status: str = ""
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)  # the record as the run stored it
    now: str | None = None  # the quoted span as the source reads now (changed: at the quote's offsets)
    diff: str = ""  # changed: a short word diff of the quote, [-removed-] {+added+}
    checked_at: str = ""  # when the source was read again, ISO-8601 UTC

    def fold(self, view: Fold) -> None:
        e = self.evidence or {}
        view.append(
            {
                "kind": "recheck_item",
                "n": self.n,
                "group": self.group,
                "status": self.status,
                "reason": self.reason,
                "diff": self.diff,
                "now": self.now,
                "text": e.get("text") or "",
                "source": e.get("source") or e.get("url") or e.get("doc_id") or "evidence",
                "url": e.get("url"),
                "href": http_url(e.get("url")),
                "doc_id": e.get("doc_id"),
                "memory": bool(e.get("memory")),
                "when": evidence_when(e),
                "checked_at": self.checked_at,
            }
        )
        view.status = f"Re-checked {plural(self.n, 'evidence item')}"


@step_type
@dataclass(kw_only=True)
class RecheckDecision(Step):
    """The decision taken again: the verifier's label on the evidence as stored and as it stands now."""

    kind: ClassVar[str] = "recheck_decision"
    group: str = ""
    verifier: str = ""
    stored: str | None = None  # the run's own label for this claim or sentence
    before: str | None = None  # the verifier's label on the evidence as the run stored it
    now: str | None = None  # ... on the evidence as it stands now
    confidence: float | None = None  # of `now`
    holds: bool | None = None  # None: the decision could not be taken again (`note` says why)
    items: int = 0  # evidence items read now
    note: str = ""

    def fold(self, view: Fold) -> None:
        view.append({"kind": "recheck_decision", **self.data})
