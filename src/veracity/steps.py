"""The typed steps every system emits, and the one fold of a check's steps into view items.

Steps. A step is a dataclass with a `kind` (its stage name) and typed fields. The shared ones are here
(`ClaimStep`, `VerdictStep`, `ModelCall`, `ParseFailure`, `Retrieval`, `Reasoning`); each system declares
its own in its package (`qacheck/steps.py`, `baselines/steps.py`, `defame/steps.py`, `leaf/steps.py`) and
registers them with `@step_type`, so that a stored step can be read back as its type (`step_from_dict`).
`veracity.registry.load_step_types()` imports every system's step types (a recheck's and a checked text's register
with their packages, evidence/ and textcheck/).

The trace stores typed steps; serialised, a step is `{"stage": kind, "t": seconds, **fields}` (`Step.to_dict`):
the JSON shape of every run stored so far (TRACE_FORMAT 1, never versioned before: there was only one). A
field declared `optional()` is left out while it is None, as the stages always left it out. A stored step
reads back as its type whatever it holds: a field it lacks keeps its default and stays out of `data` (so the
step serialises as it was stored), a field this version does not know is kept in `extra`, and a stage no
system declares reads back as an `UnknownStep`.

The fold. `view_items(steps)` turns a check's steps (typed, or stored dicts) into view items: plain JSON-able
dicts with a "kind", in the order they first appear. Each step type folds itself (`Step.fold`), so the rules
live beside the step they concern: a question opens a card that its answer and the validator's decision fill
in; a DEFAME tool call is a card its result summaries attach to; a LEAF sentence is one item; a step nobody
shows (the claim, the verdict, a model call) makes none; a step without a view of its own is a generic item
("stage" and "data"), so nothing is hidden. `Fold` does the same one step at a time and says which items each
step changed, which is how the CLI prints a run as it happens and the server's live stream (SSE) sends items
already folded. The CLI printer and the Markdown/HTML report (report/), the page (server/views.py, its
templates and static/*.js, which only draw) and the answer-check summary (server/answers.py) all render
these items; none of them folds steps on its own.

Item kinds: qa, verifier, stop, reasoning, parse_failure (QACheck and the baselines); images, plan, action,
summary, develop, judge, justify (DEFAME); leaf, leaf_score, leaf_note, and the generic mc_answer, fc_rag_round,
fc_rag_done, leaf_samples, leaf_final (LEAF); text_source, text_mark, text_claim, text_summary (a checked text,
textcheck/steps.py); retrieval (passages retrieved outside a question card); other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from .types import RECITED

TRACE_FORMAT = 1  # the JSON shape of a stored step: {"stage", "t", **fields}

ViewItem = dict[str, Any]
S = TypeVar("S", bound="type[Step]")

#: every declared step type, by its stage name
STEP_TYPES: dict[str, type[Step]] = {}
_OMIT_NONE = {"omit_none": True}
_BASE_FIELDS = frozenset({"t", "extra", "absent"})


def optional(default: Any = None) -> Any:
    """A field left out of the step's data while it is None (the stage emits it only sometimes)."""
    return field(default=default, metadata=_OMIT_NONE)


def _key(f: Any) -> str:
    """The name a field has in the step's data (`field(metadata={"key": ...})` when it differs from the
    attribute's, e.g. a field stored as "kind", which is the step type's own name here)."""
    return f.metadata.get("key", f.name)


def step_type(cls: S) -> S:
    """Register a step type (a dataclass subclass of `Step` with its `kind`) so that stored steps of its stage
    read back as it."""
    if not cls.kind:
        raise ValueError(f"{cls.__name__} has no kind")
    known = STEP_TYPES.get(cls.kind)
    if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"two step types for stage {cls.kind!r}: {known.__qualname__} and {cls.__qualname__}")
    STEP_TYPES[cls.kind] = cls
    return cls


@dataclass(kw_only=True)
class Step:
    """One thing that happened during a check. Subclasses declare `kind` and their fields (all with defaults)."""

    kind: ClassVar[str] = ""
    t: float = field(default=0.0, compare=False, repr=False)  # seconds since the run started (set by the tracer)
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # stored fields not declared
    absent: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # declared fields not stored

    @property
    def stage(self) -> str:
        return self.kind

    @property
    def data(self) -> dict[str, Any]:
        """The step's fields, as stored (without stage and t)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in _BASE_FIELDS or f.name in self.absent:
                continue
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[_key(f)] = value
        out.update(self.extra)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "t": round(self.t, 4), **self.data}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Step:
        keys = {_key(f): f.name for f in fields(cls) if f.init and f.name not in _BASE_FIELDS}
        values = {name: d[key] for key, name in keys.items() if key in d}
        extra = {k: v for k, v in d.items() if k not in keys and k not in ("stage", "t")}
        return cls(
            **values,
            t=_seconds(d.get("t")),
            extra=extra,
            absent=frozenset(name for key, name in keys.items() if key not in d),
        )

    def fold(self, view: Fold) -> None:
        """Add this step to the view: by default a generic item with its stage and data."""
        view.generic(self)


def _seconds(value: Any) -> float:
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        else 0.0
    )


@dataclass(kw_only=True)
class UnknownStep(Step):
    """A stored step of a stage no system declares (or not a step at all): shown as it is."""

    name: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def stage(self) -> str:
        return self.name

    @property
    def data(self) -> dict[str, Any]:
        return dict(self.values)

    def fold(self, view: Fold) -> None:
        view.append({"kind": "other", "stage": self.name, "data": self.data})


def step_from_dict(d: Any) -> Step:
    """A stored step (a dict as `Step.to_dict` wrote it) as its type; anything else as an UnknownStep."""
    if not isinstance(d, Mapping):
        return UnknownStep(name="unreadable", values={"data": str(d)[:200]})
    stage = d.get("stage")
    cls = STEP_TYPES.get(stage) if isinstance(stage, str) else None
    if cls is None:
        return UnknownStep(
            name=str(stage or ""),
            values={k: v for k, v in d.items() if k not in ("stage", "t")},
            t=_seconds(d.get("t")),
        )
    return cls.from_dict(d)


def make_step(stage: str, data: Mapping[str, Any]) -> Step:
    """The typed step of `stage` with these fields (the tracer's `emit(stage, **fields)`); a TypeError for a field
    its type does not declare. A stage no system declares makes an UnknownStep."""
    cls = STEP_TYPES.get(stage)
    if cls is None:
        return UnknownStep(name=stage, values=dict(data))
    names = {_key(f): f.name for f in fields(cls) if f.name not in _BASE_FIELDS}
    return cls(**{names.get(k, k): v for k, v in data.items()})


def as_step(step: Step | Mapping[str, Any]) -> Step:
    return step if isinstance(step, Step) else step_from_dict(step)


# -- the shared steps ------------------------------------------------------------------------------------------


@step_type
@dataclass(kw_only=True)
class ClaimStep(Step):
    """The check starts: the claim (or question), the pipeline and the model."""

    kind: ClassVar[str] = "claim"
    text: str = ""
    pipeline: str = ""
    model: str = ""

    def fold(self, view: Fold) -> None:
        pass  # the page and the reports show the claim themselves


@step_type
@dataclass(kw_only=True)
class VerdictStep(Step):
    """The check ends with its verdict."""

    kind: ClassVar[str] = "verdict"
    label: str = ""
    rationale: str = ""
    confidence: float | None = None

    def fold(self, view: Fold) -> None:
        pass  # shown from the result


@step_type
@dataclass(kw_only=True)
class ModelCall(Step):
    """One model call, metered under the stage it served."""

    kind: ClassVar[str] = "model_call"
    for_stage: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused: int = 0
    seconds: float = 0.0
    cached: bool = False
    method: str = ""  # a decision's: logprob (it carries probabilities), grammar, parse or parse-retry

    def fold(self, view: Fold) -> None:
        view.model_calls.append(self.data)


@step_type
@dataclass(kw_only=True)
class ParseFailure(Step):
    """A model output that could not be used, and the explicit fallback taken instead."""

    kind: ClassVar[str] = "parse_failure"
    for_stage: str = ""
    raw: str = ""
    fallback: str = ""

    def fold(self, view: Fold) -> None:
        view.append({"kind": "parse_failure", "for_stage": self.for_stage, "raw": self.raw, "fallback": self.fallback})


@step_type
@dataclass(kw_only=True)
class Retrieval(Step):
    """Passages retrieved for a query (QACheck's retriever-reader, LEAF's RAG answers)."""

    kind: ClassVar[str] = "retrieval"
    query: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)

    def fold(self, view: Fold) -> None:
        card = view.question_card
        if card is not None and card.get("question") == self.query and card.get("answer") is None:
            return  # retrieved for the open question: its answer's evidence shows the passages
        view.append(
            {
                "kind": "retrieval",
                "stage": self.kind,
                "data": self.data,
                "query": self.query,
                "results": evidence_view(self.results),
            }
        )


@step_type
@dataclass(kw_only=True)
class EvidenceCheck(Step):
    """The trained evidence verifier's (or the lexical baseline's) reading of passages for a claim (verify/):
    probabilities of supported / refuted / not enough information, and the passage that decided."""

    kind: ClassVar[str] = "evidence_verifier"
    verifier: str = ""
    label: str = ""
    confidence: float | None = None
    probabilities: dict[str, float] = field(default_factory=dict)
    passage: int | None = None
    rationale: str = ""
    #: a sentence of the deciding passage that read the other label (verify/conflict.py), when one did
    conflict: dict[str, Any] | None = field(default=None, metadata=_OMIT_NONE)
    #: whether the reading settles the claim (verify/decide.py EvidenceDecision.decisive); None in older traces
    decisive: bool | None = field(default=None, metadata=_OMIT_NONE)
    #: the sources of the passages read (their titles), in order
    sources: list[str] = field(default_factory=list)
    #: the evidence setting its rule and threshold were calibrated for ("given" or "retrieved"), the threshold, and
    #: why a verdict on this reading is uncertain ("" when decided); None in older traces
    setting: str | None = field(default=None, metadata=_OMIT_NONE)
    threshold: float | None = field(default=None, metadata=_OMIT_NONE)
    uncertain_reason: str | None = field(default=None, metadata=_OMIT_NONE)
    #: the passages read, as evidence records (quote, source, address, license); empty in older traces
    read: list[dict[str, Any]] = field(default_factory=list)

    def fold(self, view: Fold) -> None:
        view.append(
            {
                "kind": "reasoning",
                "stage": self.kind,
                "label": self.label,
                "rationale": self.rationale,
                "confidence": self.confidence,
                "decisive": self.decisive,
                "evidence": evidence_view(self.read),
            }
        )


@dataclass(kw_only=True)
class Reasoning(Step):
    """A label decided with its rationale (QACheck's reasoner, the chain-of-thought baseline); the systems
    declare its stages."""

    label: str = ""
    rationale: str = ""
    confidence: float | None = None

    def fold(self, view: Fold) -> None:
        view.append(
            {
                "kind": "reasoning",
                "stage": self.kind,
                "label": self.label,
                "rationale": self.rationale,
                "confidence": self.confidence,
            }
        )


# -- the fold --------------------------------------------------------------------------------------------------


class Fold:
    """A check's steps folded into view items, one step at a time.

    `add(step)` folds one more step and returns the indexes of the items it added or changed (in order);
    `items` are the view items so far, `model_calls` the model calls (their data), `status` a line saying
    what the check is doing now (the live page shows it; None until a step says). Step types fold themselves
    through `append`, `changed` and the state they keep here (`question_card`, and `state` for a system's own
    bookkeeping).
    """

    def __init__(self) -> None:
        self.items: list[ViewItem] = []
        self.model_calls: list[dict[str, Any]] = []
        self.status: str | None = None
        self.question_card: ViewItem | None = None  # the card an answer and the validator's decision attach to
        self.state: dict[str, Any] = {}
        self._where: dict[int, int] = {}  # id(item) -> its index
        self._changed: list[int] = []

    def add(self, step: Step | Mapping[str, Any]) -> list[int]:
        self._changed = []
        as_step(step).fold(self)
        return sorted(set(self._changed))

    def add_all(self, steps: Iterable[Step | Mapping[str, Any]]) -> Fold:
        for s in steps:
            self.add(s)
        return self

    def append(self, item: ViewItem) -> ViewItem:
        self._where[id(item)] = len(self.items)
        self._changed.append(len(self.items))
        self.items.append(item)
        return item

    def changed(self, item: ViewItem) -> None:
        """Say that `item` (one of `items`) was updated in place."""
        self._changed.append(self._where[id(item)])

    def generic(self, step: Step) -> None:
        """A step without a view of its own: its stage and data, shown as they are."""
        self.append({"kind": step.stage, "stage": step.stage, "data": step.data})

    @property
    def calls(self) -> int:
        return len(self.model_calls)


def view_items(steps: Iterable[Step | Mapping[str, Any]]) -> list[ViewItem]:
    """The view items of a check's steps (typed steps, or steps as stored): what every front end renders."""
    return Fold().add_all(steps).items


# -- helpers for view items -----------------------------------------------------------------------------------


def http_url(url: Any) -> str | None:
    """A URL a page may link to: http(s) only."""
    return url if isinstance(url, str) and url.startswith(("http://", "https://")) else None


_MD_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\((https?://[^\s()<>]{1,2000})\)")


def link_parts(text: str) -> list[dict[str, Any]]:
    """Text in which the model wrote Markdown links `[title](http...)`: [{"text", "href"}], href None for plain
    text, so that a page can show the links as links (and everything else as text)."""
    parts, pos = [], 0
    for m in _MD_LINK.finditer(text):
        if m.start() > pos:
            parts.append({"text": text[pos : m.start()], "href": None})
        parts.append({"text": m.group(1), "href": m.group(2)})
        pos = m.end()
    if pos < len(text):
        parts.append({"text": text[pos:], "href": None})
    return parts


#: what every front end calls a passage the model recited (the CLI, the reports, the page)
MEMORY_SOURCE = "the model's memory (recited, not a source)"


def evidence_view(evidence: Iterable[Any]) -> list[Any]:
    """Evidence as view items hold it: a passage the model recited or stated is marked `"memory": True`, so that
    front ends show it as the model's memory (MEMORY_SOURCE) rather than as a source that was read; a source's
    `when` says when it was published and when it was fetched (or indexed), as every front end prints it, and
    `license` the license of its text where its source states one (Wikipedia's)."""
    out = []
    for e in evidence:
        if isinstance(e, Mapping):
            memory = bool(e.get("memory")) or e.get("source") == RECITED
            if memory:
                e = {**e, "memory": True}
            else:
                license_ = evidence_license(e)
                e = {**e, "when": evidence_when(e), **({"license": license_} if license_ else {})}
        out.append(e)
    return out


def evidence_when(e: Mapping[str, Any]) -> str:
    """ "published 2019-01-02 · fetched 2024-05-01 10:00 UTC" (or "indexed ..." for an index document), the parts
    known; "" when neither is."""
    parts = [f"published {e['date']}"] if e.get("date") else []
    if e.get("retrieved_at"):
        how = e.get("found_by") if isinstance(e.get("found_by"), Mapping) else {}
        indexed = how.get("index") or (how.get("retriever") and how.get("tool") != "wikipedia")  # the API: fetched
        verb = "indexed" if indexed else "fetched"
        parts.append(f"{verb} {utc_time(e['retrieved_at'])}")
    return " · ".join(parts)


WIKIPEDIA_LICENSE = "Wikipedia, CC BY-SA 4.0"


def evidence_license(e: Mapping[str, Any]) -> str:
    """The license a passage's text is shown under, where its source states one: Wikipedia's text (the knowledge
    base, the wikipedia search) is CC BY-SA 4.0, shown beside the article's title and URL; "" for the rest."""
    how = e.get("found_by") if isinstance(e.get("found_by"), Mapping) else {}
    return WIKIPEDIA_LICENSE if how.get("knowledge_base") or how.get("tool") == "wikipedia" else ""


def utc_time(iso: Any) -> str:
    """An ISO-8601 time as "2024-05-01 10:00 UTC" (a string that is not one, as it is)."""
    try:
        t = datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    if t.tzinfo is not None:
        t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%d %H:%M UTC")


def source_link(text: str) -> dict[str, Any]:
    """A source written as a Markdown link `[title](url)`, as a title and a URL (http(s) only)."""
    m = re.fullmatch(r"\[(.*)\]\((\S+)\)", text.strip())
    return {"title": m.group(1), "url": http_url(m.group(2))} if m else {"title": text, "url": None}


Listener = Callable[[Step], None]
