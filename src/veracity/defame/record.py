"""The fact-check record: what DEFAME has done and found so far, as every model call sees it.

The record grows block by block (the claim, then per round: the actions, the evidence summaries,
the elaboration and the judgement). It is rendered as plain text for the model; the user's report
is rendered from the trace (veracity.report), where every block was also emitted as a step.

Source material never goes into a prompt bare (veracity.prompts.quoting): the raw text of a search
result only reaches the summarizer, in a <result> block that the prompt declares to be data; what
enters the record is the model's summary of it, or a verbatim excerpt when the summary was rejected,
and both are quoted data too (`<result>...</result>` in the evidence bullet), as is every prompt that
shows the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..prompts.quoting import neutralise, quote_data, quote_inline
from ..types import Claim, Evidence
from ..verdicts import claim_line

SOURCE_CHARS = 200  # longest source name (a page title) shown in the record


def as_data(text: str, limit: int) -> str:
    """Source text made safe to put between <result> tags: no tag of ours inside, at most `limit` chars."""
    return neutralise(text, limit)


@dataclass
class Finding:
    action: str  # the rendered action, e.g. web_search("...")
    source: str
    url: str | None
    date: str | None
    summary: str
    image_refs: list[str] = field(default_factory=list)
    excerpt: bool = False  # the summary is the source's own text (the model's summary was rejected)

    def line(self) -> str:
        """`- <result>[source](url) (date): summary</result>`: all of it comes from (or is drawn from) the page."""
        source = neutralise(self.source, SOURCE_CHARS)
        where = f"[{source}]({self.url})" if self.url else source
        when = f" ({self.date})" if self.date else ""
        images = (" " + " ".join(self.image_refs)) if self.image_refs else ""
        kind = "verbatim excerpt: " if self.excerpt else ""
        return f"- {kind}{quote_inline(f'{where}{when}: {self.summary}')}{images}"


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
                lines += [f"- {neutralise(x, 300)}" for x in r.failures]
            if r.elaboration:
                lines.append("Elaboration: " + r.elaboration)
            if r.judgement:
                lines.append("Judgement: " + r.judgement)
        return "\n".join(lines)


def evidence_text(e: Evidence, limit: int) -> str:
    """One search result as the summarizer sees it: source line, then the text as a quoted-data block."""
    head = neutralise(e.source or e.url or "source", SOURCE_CHARS)
    if e.url:
        head += f" <{neutralise(e.url)}>"
    if e.date:
        head += f" (published {neutralise(e.date, 40)})"
    return f"{head}\n{quote_data(e.text, limit)}"
