"""Claim extraction: text -> atomic, self-contained claims with their source spans.

    extraction = extract_claims(text)                                  # the rules (no model call)
    extraction = extract_claims(text, method="model", model=run_model)  # the model, sentence by sentence

Per sentence (`sentences.py`, spans into the text): a sentence that is not checkable as a whole (a question,
a greeting, advice, an opinion) is kept as one NOT_CHECKABLE item; otherwise it is split into pieces -- by the
model (`prompts.py`, facts kept only when grounded in the sentence, `model.py`) or by the rules (`rules.py`),
which also stand in for each sentence where the model's reply is unusable. Each piece is then checked for
checkability (`checkable.py`), decontextualised (`decontext.py`: a pronoun resolved to the name it refers to,
or the claim flagged AMBIGUOUS with the reason), and near-identical claims are merged (`dedupe.py`).

`method="auto"` uses the model where it can decompose text: a model behind an HTTP server. The in-process
models (the embedded SmolLM2-135M, gguf:/hf: files) and the scripted backend get the rules: on the 135M model
the decomposition is mostly unusable (see benchmarks/check_text.py), and a wrong decomposition would be
checked as if the text had said it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..prompts.spec import record_parse_failure
from .checkable import not_checkable
from .decontext import Resolver
from .dedupe import deduplicate
from .model import grounded
from .rules import finish, split_pieces
from .sentences import Segment, sentence_spans
from .types import AMBIGUOUS, CHECKABLE, MODEL, NOT_CHECKABLE, RULES, ExtractedClaim, Extraction, Span

if TYPE_CHECKING:
    from ..llm.model import RunModel

METHODS = ("auto", "rules", "model")
IN_PROCESS = ("gguf:", "hf:", "scripted")  # model ids that "auto" gives the rules (see the module doc)


def resolve_method(method: str, model_id: str | None) -> str:
    """The method `auto` stands for with this model ("rules" without one)."""
    if method not in METHODS:
        raise ValueError(f"claim extraction method must be one of {', '.join(METHODS)}, not {method!r}")
    if method != "auto":
        return method
    return "rules" if not model_id or model_id.startswith(IN_PROCESS) else "model"


def extract_claims(
    text: str, *, method: str = "rules", model: RunModel | None = None, prompts_dir: str | None = None
) -> Extraction:
    """The claims of `text`. `method`: rules | model | auto (see the module doc); model and auto need `model`
    for the model's decomposition."""
    used = resolve_method(method, model.model_id if model is not None else None)
    if used == MODEL and model is None:
        raise ValueError("claim extraction by model needs a model")
    segments = sentence_spans(text)
    resolver = Resolver(text)
    prompt = None
    if used == MODEL:
        from .prompts import EXTRACT

        prompt = EXTRACT.load(prompts_dir)
    result = Extraction(text=text, claims=[], sentences=len(segments), method=used)
    for i, seg in enumerate(segments):
        resolver.sentence(seg.start, seg.end)
        reason = not_checkable(seg.text)
        if reason:
            result.claims.append(
                ExtractedClaim(finish(seg.text), [(seg.start, seg.end)], i, RULES, NOT_CHECKABLE, reason)
            )
            continue
        candidates = None
        if prompt is not None:
            candidates = _model_pieces(prompt, model, segments, i, result)
        if candidates is None:
            candidates = [(p.text(text), p.spans, RULES) for p in split_pieces(text, seg)]
        for claim_text, spans, how in candidates:
            result.claims.append(_claim(claim_text, spans, i, how, resolver))
    if prompt is not None and result.fallback_sentences:
        result.method = "model+rules"
    result.claims = deduplicate([c for c in result.claims if c.text])
    for n, claim in enumerate(result.claims, 1):
        claim.id = n
    return result


def _claim(text: str, spans: list[Span], sentence: int, how: str, resolver: Resolver) -> ExtractedClaim:
    reason = not_checkable(text)
    if reason:
        return ExtractedClaim(text, spans, sentence, how, NOT_CHECKABLE, reason)
    res = resolver.resolve(text)
    status = AMBIGUOUS if res.reason else CHECKABLE
    return ExtractedClaim(
        finish(res.text),
        sorted(set(spans)),
        sentence,
        how,
        status,
        res.reason,
        context=sorted(set(res.borrowed) - set(spans)),
    )


def _model_pieces(
    prompt, model: RunModel, segments: list[Segment], i: int, result: Extraction
) -> list[tuple[str, list[Span], str]] | None:
    """The model's grounded facts for sentence i, or None (recorded) when the rules must split it."""
    seg = segments[i]
    context = segments[i - 1].text if i else ""
    reply = prompt.ask(model, failures=result.parse_failures, defer=True, CONTEXT=context, SENTENCE=seg.text)
    facts = [f for f in (reply.value or []) if grounded(f, seg.text, context)]
    if facts:
        result.model_sentences += 1
        return [(f, [(seg.start, seg.end)], MODEL) for f in facts]
    result.fallback_sentences += 1
    if reply.value == []:
        return None  # the model found no fact: the rules decide what the sentence states
    problem = "no facts" if not reply.ok else "no fact grounded in the sentence"
    record_parse_failure(
        model.tracer,
        "claim_extraction",
        reply.raw,
        "the sentence was split by the rules instead",
        problem=problem,
        where=f"sentence {i + 1}",
        failures=result.parse_failures,
    )
    return None


__all__ = ["AMBIGUOUS", "CHECKABLE", "METHODS", "NOT_CHECKABLE", "extract_claims", "resolve_method"]
