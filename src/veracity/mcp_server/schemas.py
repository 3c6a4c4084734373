"""What the MCP tools return: typed results (their JSON schemas are the tools' output schemas), built from a
stored run the way the HTTP API reads it (server/api_schemas.py `detail`), so a tool's answer and the page's run agree."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Passage(BaseModel):
    text: str
    source: str | None = Field(
        None,
        description="the document or page it comes from; 'recited by the model' "
        "marks the model's own memory, not a source",
    )
    url: str | None = None
    score: float | None = None
    license: str | None = Field(None, description="the license of the text where its source states one (Wikipedia's)")


class PublishedFactCheck(BaseModel):
    claim: str = Field(description="the claim as the fact-checker worded it")
    rating: str | None = Field(None, description="the fact-checker's rating in its own words")
    publisher: str | None = None
    date: str | None = Field(None, description="when the fact-check was published (YYYY-MM-DD where known)")
    url: str | None = None
    probability: float | None = Field(None, description="that it checks the same claim (the matcher's, calibrated)")


def published(matches: list[dict[str, Any]] | None) -> list[PublishedFactCheck]:
    keys = PublishedFactCheck.model_fields
    return [PublishedFactCheck(**{k: m.get(k) or None for k in keys if k in m}) for m in matches or []]


class FactCheckResult(BaseModel):
    text: str
    found: bool = Field(description="whether a published fact-check of this claim was found (at the threshold)")
    summary: str = Field(description="'no published fact-check found' when none")
    matches: list[PublishedFactCheck]
    related: list[PublishedFactCheck] = Field(
        default_factory=list, description="asked for: the best candidates below the threshold, probably other claims"
    )


class GroundedSentence(BaseModel):
    index: int
    text: str
    span: list[int] = Field(description="[start, end) in the answer")
    label: str = Field(description="supported, not_supported or contradicted")
    shown_as: str = Field(description="how to tell it: 'Supported', or 'Uncertain, leaning ...' when not decided")
    decided: bool
    probability: float = Field(description="that the documents support it (calibrated)")
    quote: dict | None = Field(description="the part of a document that decided it: document id, start, end, text")


class GroundingResult(BaseModel):
    grounded_share: float | None = Field(description="supported share of the decided sentences; null: not determined")
    summary: str
    sentences: list[GroundedSentence] = Field(description="every sentence of the answer, in order")
    documents: list[dict]


class ClaimResult(BaseModel):
    run_id: str = Field(description="the stored run (get_run; the web page's history shows it)")
    claim: str
    pipeline: str
    model: str
    published_factchecks: list[PublishedFactCheck] = Field(
        default_factory=list,
        description="published fact-checks of this claim found in the server's store, before veracity's own "
        "verdict (empty: none found, or no store)",
    )
    shown_as: str = Field(
        description="the verdict as it should be read and told: the label when decided, "
        "'Uncertain, leaning Supported' when uncertain (never present an uncertain "
        "label as a finding)"
    )
    label: str = Field(
        description="Supported, Refuted, Not Enough Information, ... (the pipeline's labels; see "
        "uncertain and shown_as before using it)"
    )
    confidence: float | None = Field(description="the probability of the label, when the model gives one")
    uncertain: bool = Field(description="true when the verdict should not be relied on: see uncertain_reason")
    uncertain_reason: str = ""
    basis: str = Field(description="evidence: passages were read; memory: only the model's own knowledge")
    rationale: str = ""
    evidence: list[Passage] = Field(default_factory=list, description="what the check read, with sources")
    confidence_note: str = ""
    seconds: float | None = None


class TextClaim(BaseModel):
    id: int
    text: str
    spans: list[list[int]] = Field(description="[start, end) character offsets of the claim in the text")
    outcome: str = Field(description="supported, refuted, uncertain, ambiguous, not_checkable, not_checked, failed")
    shown_as: str = Field(
        "", description="the outcome as it should be read: 'Uncertain, leaning Supported' for an uncertain claim"
    )
    label: str | None = None
    confidence: float | None = None
    rationale: str = ""
    note: str = ""
    evidence: list[Passage] = Field(default_factory=list)


class TextResult(BaseModel):
    run_id: str
    pipeline: str
    model: str
    factuality: float | None = Field(
        description="supported / decided claims (supported or refuted; uncertain ones "
        "decide nothing); null when no claim was decided: not determined, "
        "not 0"
    )
    factuality_text: str = Field("", description="the factuality in words, with the count of decided claims")
    counts: dict[str, int] = Field(description="claims per outcome, and checked and decided")
    note: str | None = None
    claims: list[TextClaim]


class SentenceResult(BaseModel):
    index: int | None = None
    sentence: str
    supported: bool
    rating: str | None = None
    confidence: float | None = None
    query: str = ""
    reasoning: str = ""
    evidence: list[Passage] = Field(default_factory=list)


class AnswerResult(BaseModel):
    run_id: str
    question: str
    score: float | None = Field(description="LEAF score: supported / checked sentences")
    supported: int = 0
    checked: int = 0
    note: str | None = None
    sentences: list[SentenceResult]


class SearchResult(BaseModel):
    query: str
    passages: list[Passage]


class RunResult(BaseModel):
    id: str
    status: str
    kind: str = Field(description="claim, text or answer")
    claim: str = Field(description="the claim, the text's title, or the answer's question")
    pipeline: str
    model: str
    shown_as: str | None = Field(
        None,
        description="the verdict as it should be read ('Uncertain, leaning Supported'); null until the run is done",
    )
    uncertain: bool = False
    label: str | None = None
    confidence: float | None = None
    error: str | None = None
    created_at: str | None = None
    verdict: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    leaf: dict[str, Any] | None = None


def passages(items: list[dict[str, Any]] | None) -> list[Passage]:
    return [
        Passage(
            text=str(e.get("text", "")),
            source=e.get("source"),
            url=e.get("url"),
            score=e.get("score") if isinstance(e.get("score"), (int, float)) else None,
            license=e.get("license") if isinstance(e.get("license"), str) else None,
        )
        for e in items or []
        if isinstance(e, dict)
    ]
