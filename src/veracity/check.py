"""Running one check: the pipeline with a fresh tracer and meter, and the result (user input is validated in
`inputs.py` before it gets here)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import UserError
from .llm.base import NO_CONFIDENCES
from .llm.usage import UsageMeter
from .pipeline import Context, Pipeline
from .trace import Listener, Tracer
from .types import Claim, Verdict

if TYPE_CHECKING:
    from .config import Config
    from .llm.model import Model
    from .retrieval.base import Retriever


@dataclass
class CheckResult:
    claim: Claim
    pipeline: str
    model: str
    verdict: Verdict
    trace: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    #: the published fact-checks of the claim (factchecks/lookup.py `Found.to_dict`); None: no store consulted
    factchecks: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": {
                "text": self.claim.text,
                "id": self.claim.id,
                "date": self.claim.date,
                "images": self.claim.images,
            },
            "pipeline": self.pipeline,
            "model": self.model,
            **({"factchecks": self.factchecks} if self.factchecks is not None else {}),
            "verdict": self.verdict.to_dict(),
            "usage": self.usage,
            "seconds": round(self.seconds, 3),
            "trace": self.trace,
        }


def has_source(config: Config) -> bool:
    """Whether checks have something to read: an index (or the knowledge base), or the wikipedia search, which
    QACheck's retriever-reader, LEAF and the verifier read as they read an index (`open_retriever`)."""
    return bool(config.index) or config.defame.search == "wikipedia"


def open_retriever(config: Config) -> Retriever | None:
    """The retriever of config.index (a folder, or the knowledge base by name), else of the `wikipedia` search, else
    None: nothing to read."""
    if not config.index:
        if config.defame.search == "wikipedia":
            from .web.wikipedia_retriever import wikipedia_retriever

            return wikipedia_retriever(config)
        return None
    from .retrieval.sharded import open_index

    index = open_index(config.index)  # a folder, plain or sharded, or kb:wikipedia (its SubjectRetriever)
    return index.retriever(config.retrieval_mode) if config.retrieval_mode else index.retriever()


MEMORY_REASON = (
    "it rests on the model's memory only (no source was read: what the model recited is not evidence); "
    "give an index (--index), a search backend, or the Wikipedia knowledge base (pip install "
    "'veracity[wiki]'; on unless --no-kb) to check it against sources"
)


#: a verdict on memory where a source was configured: the QA module chosen did not read it (--qa closed-book or
#: reciter-reader with the trained verifier off), which installing the knowledge base would not change
SOURCE_UNREAD = (
    "it rests on the model's memory only (what the model recited is not evidence): the QA module chosen did not read "
    "the sources configured; check with --qa retriever-reader (or the default, auto) to read them"
)

LOW_CONFIDENCE = "its confidence {confidence:.2f} is below {threshold:.2f}"


def for_low_confidence(verdict: dict[str, Any] | Verdict | None) -> bool:
    """Whether the verdict is uncertain for its confidence (then what the threshold means is worth saying; a
    verdict resting on memory, or with the pipeline's own reason, says all in its reason)."""
    reason = verdict.get("uncertain_reason") if isinstance(verdict, dict) else getattr(verdict, "uncertain_reason", "")
    return (reason or "").startswith("its confidence ")


def settle_uncertainty(verdict: Verdict, config: Config, conflict: dict | None = None) -> None:
    """Mark a verdict uncertain, with the reason: the pipeline's own reason (e.g. the model against the evidence),
    a verdict that rests on the model's memory only (never lifted above the threshold, whatever the model's
    confidence), or a confidence below the threshold (verify.uncertain_threshold), and then why, when the verifier's
    last reading found its source reading both ways (`conflict`, verify/conflict.py)."""
    from .verify import uncertain_threshold

    threshold = uncertain_threshold(config.verifier)
    if verdict.uncertain_reason:
        verdict.uncertain = True
    elif verdict.basis == "memory":
        verdict.uncertain, verdict.uncertain_reason = True, MEMORY_REASON if not has_source(config) else SOURCE_UNREAD
    elif verdict.confidence is not None and verdict.confidence < threshold:
        verdict.uncertain = True
        verdict.uncertain_reason = LOW_CONFIDENCE.format(confidence=verdict.confidence, threshold=threshold)
        if conflict:
            from .verify.conflict import describe

            verdict.uncertain_reason += f": the source reads both ways ({describe(conflict)})"


def no_source_found(verdict: Verdict, tracer: Tracer, retriever: Retriever | None, model_calls: int = 1) -> None:
    """A check over the knowledge base whose passages the trained verifier read as deciding nothing (every reading
    not decisive: an off-topic lead section, or one that lacks the fact) found no source: its verdict rests on the
    model's memory, said plainly, instead of being dressed up as resting on those passages. A check that asked no
    model (the `verifier` pipeline) rests on no memory: its label is the verifier's leaning, uncertain."""
    from .retrieval.knowledge_base import TITLE, knowledge_base_of

    readings = [s for s in tracer.steps if s.stage == "evidence_verifier"]
    if verdict.basis != "evidence" or not knowledge_base_of(retriever) or not readings:
        return
    if any(getattr(s, "decisive", True) for s in readings):
        return
    read = list(dict.fromkeys(title for s in readings for title in getattr(s, "sources", None) or []))
    shown = ", ".join(read[:4]) + (f" and {len(read) - 4} more" if len(read) > 4 else "")
    found = f"no source found in {TITLE}" + (f" (its articles read, {shown}, do not address the claim)" if read else "")
    if not model_calls:
        verdict.uncertain_reason = f"{found}; the label is the trained verifier's leaning"
        return
    verdict.basis = "memory"
    verdict.uncertain_reason = f"{found}; it rests on the model's memory"


def _last_conflict(tracer: Tracer) -> dict | None:
    """The conflict the trained verifier found in its last reading of the evidence (None: none, or no reading)."""
    read = [s for s in tracer.steps if s.stage == "evidence_verifier"]
    return getattr(read[-1], "conflict", None) if read else None


def _verifier_rated(tracer: Tracer) -> bool:
    """The trained verifier took decisions in this check (an answer check it rated): their confidences are its own,
    so a model server without log-probabilities is not why the verdict has none (a LEAF score has none itself)."""
    return any(step.stage == "evidence_verifier" for step in tracer.steps)


def run_check(
    claim: Claim,
    pipeline: Pipeline,
    model: Model,
    config: Config,
    *,
    retriever: Retriever | None = None,
    listeners: list[Listener] | None = None,
    labels: tuple[str, ...] | None = None,
    label_rules: str = "",
    published: bool = True,
) -> CheckResult:
    """Check one claim. `published`: look for published fact-checks of it first (when a store is in use,
    factchecks/lookup.py); evaluation runs pass False (benchmarks exclude fact-checking sites)."""
    if pipeline.needs_retriever(config) and retriever is None:
        raise UserError(
            f"pipeline {pipeline.name!r} needs an index: pass --index DIR (build one with `veracity index build`)"
        )
    tracer = Tracer(listeners)
    meter = UsageMeter()
    ctx = Context(
        model=model.bind(meter, tracer),
        tracer=tracer,
        meter=meter,
        config=config,
        retriever=retriever,
        labels=labels,
        label_rules=label_rules,
    )
    t0 = time.perf_counter()
    tracer.emit("claim", text=claim.text, pipeline=pipeline.name, model=model.model_id)
    found = published_factchecks(claim.text, config, tracer) if published else None
    verdict = pipeline.check(claim, ctx)
    seconds = time.perf_counter() - t0
    no_source_found(verdict, tracer, retriever, meter.total.calls)
    if found is not None and config.factchecks.inform:
        from .factchecks.verdict import inform

        inform(verdict, found, labels or pipeline.labels)
    settle_uncertainty(verdict, config, _last_conflict(tracer))
    if verdict.confidence is None and model.gives_confidences() is False and not _verifier_rated(tracer):
        verdict.confidence_note = NO_CONFIDENCES
    tracer.emit("verdict", label=verdict.label, rationale=verdict.rationale, confidence=verdict.confidence)
    return CheckResult(
        claim=claim,
        pipeline=pipeline.name,
        model=model.model_id,
        verdict=verdict,
        trace=tracer.to_list(),
        usage=meter.to_dict(),
        seconds=seconds,
        factchecks=found.to_dict() if found is not None else None,
    )


def published_factchecks(text: str, config: Config, tracer: Tracer):
    """The published fact-checks of the claim (a trace step of their own, before the pipeline's), or None when no
    store is in use. A store that cannot be read is said in the step, and the check goes on without it."""
    from .factchecks.lookup import for_check  # (it registers the step's type, factchecks/steps.py)

    try:
        found = for_check(text, config)
    except UserError as e:
        tracer.emit("published_factchecks", found=False, summary=f"the fact-check store cannot be read: {e}")
        return None
    if found is None:
        return None
    data = found.to_dict()
    tracer.emit("published_factchecks", found=data["found"], summary=data["summary"], matches=data["matches"])
    return found
