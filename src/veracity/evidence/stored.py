"""What a recheck reads of a stored run: the run (`StoredRun`), and its evidence items (`evidence_of`), each once per
claim or sentence it served; `nothing_to_recheck` says why a run has no source to read again."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..types import RECITED

MEMORY_SOURCES = (RECITED, "model knowledge (closed-book)")


@dataclass
class StoredRun:
    """What a recheck reads of a run: its claim, pipeline, model, verdict and steps (as stored)."""

    claim: str
    pipeline: str
    model: str
    verdict: dict[str, Any]
    steps: list[dict[str, Any]]
    id: str | None = None  # its id in the run store; None for a report file
    origin: str = ""  # "run ID" or the report file's path
    date: str | None = None  # the claim's date


@dataclass
class Found:
    """An evidence item of a run: the record as stored, and the claim or sentence it is evidence for."""

    group: str
    stored: str | None  # the run's label for that claim or sentence
    labels: str  # "claim": the pipeline's labels; "leaf": Supported / Not Supported
    evidence: dict[str, Any]
    read_as: str = ""  # the sentence as the verifier read it when it differs (a LEAF sentence's pronoun resolved)


def evidence_of(run: StoredRun) -> list[Found]:
    """Every evidence item of the run's steps, each once per claim or sentence it served, in order."""
    out: list[Found] = []
    seen: set[tuple] = set()
    label = run.verdict.get("label") if isinstance(run.verdict, Mapping) else None
    for step in run.steps:
        if not isinstance(step, Mapping):
            continue
        stage = step.get("stage")
        read_as = ""
        if stage == "leaf_sentence":
            group, stored, labels = str(step.get("sentence") or ""), step.get("rating"), "leaf"
            read_as = str(step.get("read_as") or "")
        elif stage == "text_claim":
            group, stored, labels = str(step.get("text") or ""), step.get("label"), "claim"
        else:
            group, stored, labels = run.claim, label, "claim"
        for key in ("evidence", "results", "read"):  # read: the passages the trained verifier read (decide.py)
            records = step.get(key)
            if not isinstance(records, list):
                continue
            for e in records:
                if not isinstance(e, Mapping) or not isinstance(e.get("text"), str):
                    continue
                k = (group, e.get("url"), e.get("doc_id"), e.get("text"), e.get("quote_start"))
                if k not in seen:
                    seen.add(k)
                    out.append(Found(group, stored if isinstance(stored, str) else None, labels, dict(e), read_as))
    return out


NO_EVIDENCE = (
    "there is nothing to re-check: this run read no evidence (no passage, page or document), so there is "
    "no source to read again; check against sources (an index, a search backend, or the evidence given "
    "with the claim) to have something to re-check"
)
MEMORY_ONLY = (
    "there is nothing to re-check: this run read no evidence source, only the model's memory (what it "
    "recited is not a source), so there is no source to read again; check the claim against sources (an "
    "index, a search backend, or the evidence given with it) to have something to re-check"
)


def nothing_to_recheck(steps: Iterable[Any]) -> str | None:
    """Why a run with these steps has nothing to re-check (it read no evidence, or only the model's memory), or
    None when it read some source. The page offers no Re-check button for such a run and says this instead, and
    POST /api/checks/{id}/recheck answers it with a 409."""
    found = evidence_of(StoredRun(claim="", pipeline="", model="", verdict={}, steps=list(steps)))
    if not found:
        return NO_EVIDENCE
    if all(is_memory(f.evidence) for f in found):
        return MEMORY_ONLY
    return None


def is_memory(e: Mapping[str, Any]) -> bool:
    """The item is the model's memory (recited or stated), not a source it read."""
    return bool(e.get("memory")) or e.get("source") in MEMORY_SOURCES
