"""The decision taken again: the trained verifier's label per claim or sentence of a run on its evidence as stored
and as it stands now (changed items with what they read now; gone ones left out; the others as stored)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..trace import Tracer
from ..types import BINARY_LABELS, Evidence
from ..web.filters import plural
from .steps import CHANGED, GONE, REFUSED, UNREACHABLE, RecheckDecision, RecheckItem
from .stored import Found, StoredRun

if TYPE_CHECKING:
    from ..config import Config

LEAF_LABELS = ("Supported", "Not Supported")


def _claim_labels(run: StoredRun, config: Config) -> tuple[str, ...]:
    try:
        from ..registry import get_pipeline

        labels = tuple(get_pipeline(run.pipeline, config).labels)
    except Exception:  # a pipeline this version lacks (or that cannot be built here): the two labels
        labels = BINARY_LABELS
    return labels if len(labels) >= 2 else BINARY_LABELS


def decide(
    run: StoredRun, found: list[Found], items: list[RecheckItem], config: Config, tracer: Tracer
) -> list[RecheckDecision]:
    """The verifier's label per claim or sentence on the evidence as stored and as it stands now."""
    from ..verify.decide import check_evidence

    kind = "lexical" if run.pipeline == "lexical" else "verifier"
    groups: dict[str, list[tuple[Found, RecheckItem]]] = {}
    for f, item in zip(found, items):
        groups.setdefault(f.group, []).append((f, item))
    claim_labels = _claim_labels(run, config)
    out = []
    for group, pairs in groups.items():
        first = pairs[0][0]
        labels = LEAF_LABELS if first.labels == "leaf" else claim_labels
        if first.stored and first.stored not in labels:
            labels = (*labels, first.stored)
        before = [Evidence.from_dict(f.evidence) for f, _ in pairs]
        now = [e for e in (_as_now(f.evidence, item) for f, item in pairs) if e is not None]
        unread = sum(item.status in (UNREACHABLE, REFUSED) for _, item in pairs)
        claim = first.read_as or group  # read as the run read it
        try:
            is_ = check_evidence(config.verifier, tracer, claim, now, labels, kind=kind)
            # nothing changed or gone: the evidence now is the evidence as stored, and so is the decision
            same = all(item.status not in (CHANGED, GONE) for _, item in pairs)
            was = is_ if same else check_evidence(config.verifier, Tracer(), claim, before, labels, kind=kind)
            out.append(
                RecheckDecision(
                    group=group,
                    verifier=kind,
                    stored=first.stored,
                    before=was.label,
                    now=is_.label,
                    confidence=round(is_.confidence, 4),
                    holds=was.label == is_.label,
                    items=len(now),
                    note=_note(was.label, is_.label, first.stored, len(now), unread),
                )
            )
        except Exception as e:  # noqa: BLE001 - the items are reported whatever the verifier does
            out.append(
                RecheckDecision(
                    group=group,
                    verifier=kind,
                    stored=first.stored,
                    items=len(now),
                    note=f"the decision could not be taken again ({type(e).__name__}: {e})",
                )
            )
    return out


def _as_now(e: Mapping[str, Any], item: RecheckItem) -> Evidence | None:
    """The item as it stands now: None when its source is gone; as stored when it could not be read again (what it
    says now is not known: that is said by the item and the exit status, not guessed)."""
    if item.status == GONE:
        return None
    ev = Evidence.from_dict(dict(e))
    if item.status == CHANGED:
        ev.text = item.now or ""
        return ev if ev.text.strip() else None
    return ev


def _note(before: str, now: str, stored: str | None, n: int, unread: int) -> str:
    said = f"; the run said {stored}" if stored and stored != before else ""
    said += f" ({unread} of them could not be read again and count as stored)" if unread else ""
    if before == now:
        return (
            f"the evidence as it stands now ({plural(n, 'item')}) leads to {now}, as the evidence as stored did{said}"
        )
    return f"the evidence as stored led to {before}, as it stands now ({plural(n, 'item')}) to {now}{said}"
