"""DEFAME's prompt specs: one per model call of its stages, every one showing the record.

Plan (one action at a time: a scored choice of the tool or of stopping, then of its image or the query the model
writes), summarize one search result, develop, judge (key findings, then the label scored after
"Verdict:"), justify. The record (`Record.render`) and each search result (`evidence_text`) are written as
quoted data; the replies are read by `parsing.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from ..prompts.quoting import neutralise
from ..prompts.spec import PromptSpec
from ..types import Evidence
from .parsing import clean_text, grounded, parse_summary
from .record import Record, evidence_text

# the argument the tool list shows (`web_search("query")`, tools/base.py); a small model copies it
PLACEHOLDER = "query"
RESULT_CHARS = 1500  # source text a summary is written from
SUMMARY_CHARS = 400  # longest summary kept in the record


def result_text(ev: Evidence) -> str:
    """A search result as the summarizer sees it: its source line, then its text as quoted data."""
    return evidence_text(ev, RESULT_CHARS)


def written_query(text: str) -> str:
    """A query the model wrote inside `tool("...`: one line, without quotes around it; "" when it only copied the
    tool list's placeholder."""
    query = " ".join(text.split()).strip(" '\u201c\u201d")
    return "" if query.lower() == PLACEHOLDER else query


@dataclass(frozen=True)
class ResultSummary:
    text: str | None  # None: the model said the result is irrelevant (NONE) or wrote nothing
    grounded: bool = True  # drawn from the result (a small model often writes the claim again instead)


def read_summary(text: str, source: str, claim: str) -> ResultSummary:
    """The summary of one result, and whether it is drawn from the result's text at all."""
    s = parse_summary(text, SUMMARY_CHARS)
    return ResultSummary(s, s is None or grounded(s, source, claim))


def verifier_scores(scores: list[dict[str, Any]] | None) -> str:
    """The judge's view of the trained verifier's reading of each finding (verify/), or nothing when it is off."""
    if not scores:
        return ""
    lines = ["Verifier scores (a trained model's probabilities for the claim given each finding):"]
    lines += [
        f"[{i}] {neutralise(s['source'], 80)}: supported {s['supported']:.2f}, refuted {s['refuted']:.2f}, "
        f"not enough information {s['nei']:.2f}"
        for i, s in enumerate(scores, start=1)
    ]
    return "\n".join(lines) + "\n"


RECORD = {"RECORD": Record.render}  # every stage shows the record, its findings quoted as data

# the plan: one action at a time. PLAN is the prompt its calls continue (never asked itself): the tool, or "stop", by
# a scored choice; then the tool's image by a scored choice, or the search query, the only text the model writes
PLAN = PromptSpec(
    name="defame.plan",
    template="defame_plan",
    stage="plan",
    slots=("TOOLS", "RULES", "EXAMPLES", "RECORD", "EXECUTED"),
    formats=RECORD,
    max_tokens=8,
)
PLAN_TOOL = PLAN.follow(
    "defame.plan.tool", "\n", max_tokens=8, decision=True, problem="no tool chosen", fallback="the first tool offered"
)
PLAN_IMAGE = PLAN.follow("defame.plan.image", "\n[[TOOL]](", max_tokens=8, decision=True)
PLAN_QUERY = PLAN.follow(
    "defame.plan.query", '\n[[TOOL]]("', max_tokens=24, stop=('"', "\n", ")"), parser=written_query
)

SUMMARIZE = PromptSpec(
    name="defame.summarize",
    template="defame_summarize",
    stage="summarize",
    slots=("RECORD", "RESULT"),
    formats={**RECORD, "RESULT": result_text},
    max_tokens=120,
    stop=("\n\n", "Record:", "Search result:"),
    parser=read_summary,
    usable=lambda summary: summary.grounded,
    problem="no summary drawn from the result",
    fallback="quoted the source's sentences closest to the claim",
)

DEVELOP = PromptSpec(
    name="defame.develop",
    template="defame_develop",
    stage="develop",
    slots=("RECORD",),
    formats=RECORD,
    max_tokens=160,
    stop=("\n\n", "Record:", "Judgement:"),
    parser=partial(clean_text, limit=800),
)

JUDGE = PromptSpec(
    name="defame.judge",
    template="defame_judge",
    stage="judge",
    slots=("LABELS", "RECORD", "SCORES"),
    formats={**RECORD, "SCORES": verifier_scores},
    max_tokens=60,  # one or two sentences of key findings (100 ran to the cap on the embedded model: 1.4 s a call)
    stop=("\n\n", "Verdict:", "Record:"),
    parser=partial(clean_text, limit=600),
)
JUDGE_LABEL = JUDGE.follow(
    "defame.judge.label", " [[FINDINGS]]\nVerdict:", max_tokens=16, decision=True, strict=True, problem="no label"
)

JUSTIFY = PromptSpec(
    name="defame.justify",
    template="defame_justify",
    stage="justify",
    slots=("RECORD", "VERDICT"),
    formats=RECORD,
    max_tokens=160,
    stop=("\n\n", "Record:", "Justification:"),
    parser=partial(clean_text, limit=1200),
)

SPECS = (PLAN, PLAN_TOOL, PLAN_IMAGE, PLAN_QUERY, SUMMARIZE, DEVELOP, JUDGE, JUDGE_LABEL, JUSTIFY)
