"""The fact-check record: what DEFAME has done and found so far, as every model call sees it.

The record is made of DEFAME's steps (`steps.py`): the claim's images, then per round the plan, the tool
runs, the result summaries, the elaboration and the judgement, and at the end the justification. The
pipeline adds each step to the record (`Record.add`) and emits the same object to the trace, so the record
and the trace hold the facts once; `Record.from_steps` reads a record back from a trace (a stored run), the
same way. It is rendered as plain text for the model (`render`); the user's report renders it too
(veracity.report).

Source material never goes into a prompt bare (veracity.prompts.quoting): the raw text of a search
result only reaches the summarizer, in a <result> block that the prompt declares to be data; what
enters the record is the model's summary of it, or a verbatim excerpt when the summary was rejected,
and both are quoted data too (`<result>...</result>` in the evidence bullet), as is every prompt that
shows the record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..prompts.quoting import neutralise, quote_data, quote_inline
from ..steps import Step, as_step
from ..types import Claim, Evidence
from ..verdicts import claim_line
from .steps import Develop, Images, Judge, Justify, Plan, RoundStep, Summary, ToolRun

TEXT_ONLY_NOTE = (
    "(The model reads text only: the images are known only through the tools' findings, not seen directly.)"
)
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
    evidence: str = ""  # the source's own sentences nearest the claim (Summary.evidence), what the verifier reads

    def line(self) -> str:
        """`- <result>[source](url) (date): summary</result>`: all of it comes from (or is drawn from) the page."""
        source = neutralise(self.source, SOURCE_CHARS)
        where = f"[{source}]({self.url})" if self.url else source
        when = f" ({self.date})" if self.date else ""
        images = (" " + " ".join(self.image_refs)) if self.image_refs else ""
        kind = "verbatim excerpt: " if self.excerpt else ""
        return f"- {kind}{quote_inline(f'{where}{when}: {self.summary}')}{images}"

    @classmethod
    def of(cls, s: Summary) -> Finding:
        """The finding a summary of a result adds to the record."""
        return cls(
            action=s.action,
            source=s.source or s.url or "source",
            url=s.url,
            date=s.date,
            summary=s.text or "",
            image_refs=list(s.image_refs or []),
            excerpt=s.written_by == "excerpt",
            evidence=s.evidence or s.text or "",
        )


@dataclass
class Round:
    number: int
    steps: list[RoundStep] = field(default_factory=list)  # its plan, tool runs, summaries, develop, judge: in order

    def of(self, kind: type) -> list[Any]:
        return [s for s in self.steps if isinstance(s, kind)]

    @property
    def plan(self) -> Plan | None:
        plans = self.of(Plan)
        return plans[-1] if plans else None

    @property
    def actions(self) -> list[str]:
        return list(self.plan.actions) if self.plan else []

    @property
    def runs(self) -> list[ToolRun]:
        return self.of(ToolRun)

    @property
    def summaries(self) -> list[Summary]:
        return self.of(Summary)

    @property
    def findings(self) -> list[Finding]:
        return [Finding.of(s) for s in self.summaries if s.text]

    @property
    def failures(self) -> list[str]:
        """e.g. web_search("x"): provider unreachable; image_search(...): no results."""
        return [f for f in (r.failure() for r in self.runs) if f]

    @property
    def elaboration(self) -> str:
        developed = self.of(Develop)
        return developed[-1].text if developed else ""

    @property
    def judgements(self) -> list[Judge]:
        return self.of(Judge)

    @property
    def judgement(self) -> str:
        return self.judgements[-1].label if self.judgements else ""


@dataclass
class Record:
    claim: Claim
    images: Images | None = None
    rounds: list[Round] = field(default_factory=list)
    justification: Justify | None = None

    @classmethod
    def from_steps(cls, claim: Claim, steps: Iterable[Step | Mapping[str, Any]]) -> Record | None:
        """The record of a check, read back from its trace (typed steps, or steps as stored); None when the
        trace holds none of DEFAME's steps."""
        record = cls(claim=claim)
        found = False
        for s in steps:
            step = as_step(s)
            if isinstance(step, RoundStep) and "round" in step.absent:
                continue  # a stored step of no round: of none of them
            if isinstance(step, (Images, RoundStep, Justify)):
                record.add(step)
                found = True
        return record if found else None

    def add(self, step: Step) -> None:
        """Add one of DEFAME's steps: a round's step goes to the round of its number."""
        if isinstance(step, Images):
            self.images = step
        elif isinstance(step, Justify):
            self.justification = step
        elif isinstance(step, RoundStep):
            self.round(step.round).steps.append(step)
        else:
            raise TypeError(f"not a step of DEFAME's record: {step.stage}")

    def round(self, number: int) -> Round:
        """The round of that number, made when it does not exist yet (rounds stay in the order of their numbers;
        a stored run's damaged number is a round of its own, after them)."""
        for r in self.rounds:
            if r.number == number:
                return r
        r = Round(number=number)
        self.rounds.append(r)
        if all(isinstance(x.number, int) for x in self.rounds):
            self.rounds.sort(key=lambda x: x.number)
        return r

    def new_round(self) -> Round:
        r = Round(number=len(self.rounds) + 1)
        self.rounds.append(r)
        return r

    @property
    def claim_images(self) -> list[str]:
        """The references of the claim's images (<image:N>)."""
        return list(self.images.refs) if self.images else []

    @property
    def image_notes(self) -> list[str]:
        return [TEXT_ONLY_NOTE] if self.images and self.images.refs and not self.images.model_sees_images else []

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
            actions, findings, elaboration, judgement = r.actions, r.findings, r.elaboration, r.judgement
            if not (actions or findings or elaboration or judgement):
                continue
            lines += ["", f"Round {r.number}"]
            if actions:
                lines.append("Actions: " + ", ".join(actions))
            if actions or findings:
                lines.append("Evidence:")
                lines += [f.line() for f in findings] or ["- nothing relevant found"]
                lines += [f"- {neutralise(x, 300)}" for x in r.failures]
            if elaboration:
                lines.append("Elaboration: " + elaboration)
            if judgement:
                lines.append("Judgement: " + judgement)
        return "\n".join(lines)


def evidence_text(e: Evidence, limit: int) -> str:
    """One search result as the summarizer sees it: source line, then the text as a quoted-data block."""
    head = neutralise(e.source or e.url or "source", SOURCE_CHARS)
    if e.url:
        head += f" <{neutralise(e.url)}>"
    if e.date:
        head += f" (published {neutralise(e.date, 40)})"
    return f"{head}\n{quote_data(e.text, limit)}"
