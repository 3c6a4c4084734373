"""The fact-check record: what DEFAME has done and found so far, as every model call sees it.

The record grows block by block (the claim, then per round: the actions, the evidence summaries,
the elaboration and the judgement). It is rendered as plain text for the model; the user's report
is rendered from the trace (veracity.report), where every block was also emitted as a step.

Source material never goes into a prompt bare: the raw text of a search result only reaches the
summarizer, between <result> tags that the prompt declares to be data; what enters the record is
the model's own summary, with the source named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..pipelines.reasoning import claim_line
from ..types import Claim, Evidence

_TAGS = re.compile(r"</?\s*(result|record|evidence)\b[^>]*>", re.IGNORECASE)


def as_data(text: str, limit: int) -> str:
    """Source text made safe to put between <result> tags: no tag of ours inside, at most `limit` chars."""
    text = _TAGS.sub(" ", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class Finding:
    action: str  # the rendered action, e.g. web_search("...")
    source: str
    url: str | None
    date: str | None
    summary: str
    image_refs: list[str] = field(default_factory=list)

    def line(self) -> str:
        where = f"[{self.source}]({self.url})" if self.url else self.source
        when = f" ({self.date})" if self.date else ""
        images = (" " + " ".join(self.image_refs)) if self.image_refs else ""
        return f"- {where}{when}: {self.summary}{images}"


@dataclass
class Round:
    number: int
    actions: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # e.g. web_search("x"): provider unreachable
    elaboration: str = ""
    judgement: str = ""


@dataclass
class Record:
    claim: Claim
    claim_images: list[str] = field(default_factory=list)  # image references of the claim's images
    image_notes: list[str] = field(default_factory=list)  # e.g. the model reads text only
    rounds: list[Round] = field(default_factory=list)

    def new_round(self) -> Round:
        r = Round(number=len(self.rounds) + 1)
        self.rounds.append(r)
        return r

    def executed(self) -> list[str]:
        return [a for r in self.rounds for a in r.actions]

    def findings(self) -> list[Finding]:
        return [f for r in self.rounds for f in r.findings]

    def claim_line(self) -> str:
        line = claim_line(self.claim)
        if self.claim_images:
            line += " Images: " + " ".join(self.claim_images)
        return line

    def render(self) -> str:
        """The record as the model reads it."""
        lines = [self.claim_line()]
        lines += self.image_notes
        for r in self.rounds:
            if not (r.actions or r.findings or r.elaboration or r.judgement):
                continue
            lines += ["", f"Round {r.number}"]
            if r.actions:
                lines.append("Actions: " + ", ".join(r.actions))
            if r.actions or r.findings:
                lines.append("Evidence:")
                lines += [f.line() for f in r.findings] or ["- nothing relevant found"]
                lines += [f"- {x}" for x in r.failures]
            if r.elaboration:
                lines.append("Elaboration: " + r.elaboration)
            if r.judgement:
                lines.append("Judgement: " + r.judgement)
        return "\n".join(lines)


def evidence_text(e: Evidence, limit: int) -> str:
    """One search result as the summarizer sees it: source line, then the delimited text."""
    head = e.source or e.url or "source"
    if e.url:
        head += f" <{e.url}>"
    if e.date:
        head += f" (published {e.date})"
    return f"{head}\n<result>\n{as_data(e.text, limit)}\n</result>"
