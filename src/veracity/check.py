"""Running one check: validate the claim, run the pipeline with a fresh tracer and meter, collect the result."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import UserError
from .llm.usage import UsageMeter
from .pipeline import Context, Pipeline
from .trace import Listener, Tracer
from .types import Claim, Verdict

if TYPE_CHECKING:
    from .config import Config
    from .llm.model import Model
    from .retrieval.base import Retriever


class ClaimError(UserError):
    """What is wrong with a claim; `code` names it for the HTTP API (claim_empty, claim_too_long, invalid_claim)."""

    def __init__(self, code: str, message: str, length: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.length = length


def decode_user_text(value: str | bytes, what: str) -> str:
    """Text a user gave (argument, file, standard input) as str, or a UserError naming `what` is wrong."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"the {what} is not valid UTF-8 (byte {e.start}); re-encode it as UTF-8") from None
    if any("\udc80" <= ch <= "\udcff" for ch in value):  # undecodable bytes from argv (surrogateescape)
        raise UserError(f"the {what} is not valid UTF-8; re-encode it as UTF-8")
    return value


def clean_claim_text(text: str | bytes, max_chars: int) -> str:
    """The claim as the pipelines see it, or a UserError saying what is wrong with it."""
    try:
        text = decode_user_text(text, "claim")
    except UserError as e:
        raise ClaimError("invalid_claim", str(e)) from None
    if "\x00" in text:
        raise ClaimError("invalid_claim", "the claim contains NUL characters")
    text = " ".join(text.split())
    if not text:
        raise ClaimError("claim_empty", "the claim is empty: give the statement to check")
    if len(text) > max_chars:
        raise ClaimError("claim_too_long", f"the claim has {len(text)} characters; the limit is {max_chars} "
                         "(raise max_claim_chars in the config to allow more)", length=len(text))
    return text


@dataclass
class CheckResult:
    claim: Claim
    pipeline: str
    model: str
    verdict: Verdict
    trace: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": {"text": self.claim.text, "id": self.claim.id, "date": self.claim.date,
                      "images": self.claim.images},
            "pipeline": self.pipeline,
            "model": self.model,
            "verdict": self.verdict.to_dict(),
            "usage": self.usage,
            "seconds": round(self.seconds, 3),
            "trace": self.trace,
        }


def open_retriever(config: "Config") -> "Retriever | None":
    if not config.index:
        return None
    from .retrieval.index import Index

    index = Index.load(config.index)
    return index.retriever(config.retrieval_mode) if config.retrieval_mode else index.retriever()


def run_check(claim: Claim, pipeline: Pipeline, model: "Model", config: "Config", *,
              retriever: "Retriever | None" = None, listeners: list[Listener] | None = None,
              labels: tuple[str, ...] | None = None, label_rules: str = "") -> CheckResult:
    if pipeline.needs_retriever(config) and retriever is None:
        raise UserError(f"pipeline {pipeline.name!r} needs an index: pass --index DIR "
                        "(build one with `veracity index build`)")
    tracer = Tracer(listeners)
    meter = UsageMeter()
    ctx = Context(model=model.bind(meter, tracer), tracer=tracer, meter=meter, config=config, retriever=retriever,
                  labels=labels, label_rules=label_rules)
    t0 = time.perf_counter()
    tracer.emit("claim", text=claim.text, pipeline=pipeline.name, model=model.model_id)
    verdict = pipeline.check(claim, ctx)
    seconds = time.perf_counter() - t0
    tracer.emit("verdict", label=verdict.label, rationale=verdict.rationale, confidence=verdict.confidence)
    return CheckResult(claim=claim, pipeline=pipeline.name, model=model.model_id, verdict=verdict,
                       trace=tracer.to_list(), usage=meter.to_dict(), seconds=seconds)
