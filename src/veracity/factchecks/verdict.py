"""A published fact-check deciding a verdict (`factchecks.inform = true`; off by default, always off in evaluation
runs): the best match at or above the threshold whose rating says true or false in so many words sets the label,
its confidence is the match's probability (that the fact-check checks this very claim), and the rationale names the
fact-check. The pipeline's own verdict is kept in the notes. A mixed or unclear rating ("Half true", "Misleading")
decides nothing: it is shown, and the pipeline's verdict stands."""

from __future__ import annotations

from collections.abc import Sequence

from ..types import Verdict
from .lookup import Found, rating_kind


def inform(verdict: Verdict, found: Found, labels: Sequence[str]) -> bool:
    """Let the best clear match decide `verdict` (changed in place); False when none decides."""
    from ..verify.decide import _names

    deciding = next((m for m in found.matches if rating_kind(m.factcheck.rating)), None)
    if deciding is None or not labels:
        return False
    supported, refuted, _, _ = _names(tuple(labels))
    fc = deciding.factcheck
    own = f"{verdict.label}" + (f" ({verdict.confidence:.2f})" if verdict.confidence is not None else "")
    verdict.notes.append(f"the pipeline's own verdict, before the published fact-check decided it: {own}")
    verdict.label = supported if rating_kind(fc.rating) == "supported" else refuted
    verdict.confidence = deciding.probability
    verdict.basis = "evidence"
    verdict.uncertain, verdict.uncertain_reason = False, ""
    who = fc.publisher or "a fact-checker"
    when = f" on {fc.date}" if fc.date else ""
    where = f" ({fc.url})" if fc.url else ""
    verdict.rationale = (
        f"{who} published a fact-check of this claim{when}, rating {fc.claim!r} as {fc.rating!r}{where}; "
        f"the probability that it checks this very claim is {deciding.probability:.2f}. " + verdict.rationale
    ).strip()
    return True
