"""Downloads of a stored run: Markdown (report.to_markdown), HTML (that Markdown, rendered) and JSON.

An answer check's downloads add the answer and its per-sentence results (rating, confidence, query,
evidence, reasoning), read from its view items (`answers.leaf_summary`).

The stored run is turned back into the `CheckResult` the run produced (its trace is the stored steps),
so every format says what `veracity check --report/--json` says for the same run.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from ..check import CheckResult
from ..report.check import own_images
from ..report.check import to_markdown as check_markdown
from ..report.evidence import evidence_lines
from ..report.markdown import md_text
from ..report.page import embed_local, markdown_to_html
from ..types import Claim, Evidence, QAStep, Verdict
from .answers import leaf_summary

PREDICTION_H = "## Prediction with rationale"


def verdict_from_dict(d: dict[str, Any]) -> Verdict:
    steps = [
        QAStep(
            depth=s["depth"],
            question=s["question"],
            answer=s["answer"],
            evidence=[Evidence.from_dict(e) for e in s.get("evidence", [])],
            useful=s.get("useful"),
        )
        for s in d.get("steps", [])
    ]
    return Verdict(
        label=d["label"],
        rationale=d.get("rationale", ""),
        confidence=d.get("confidence"),
        steps=steps,
        parse_failures=list(d.get("parse_failures", [])),
        uncertain=bool(d.get("uncertain", False)),
        uncertain_reason=d.get("uncertain_reason", ""),
        basis=d.get("basis", "evidence"),
        confidence_note=d.get("confidence_note", ""),
        notes=[str(x) for x in d.get("notes") or []],
    )


def result_of(run: dict[str, Any], steps: list[dict[str, Any]]) -> CheckResult:
    r = run["result"]
    c = r.get("claim", {})
    claim = Claim(text=c.get("text", run["claim"]), images=c.get("images") or [], date=c.get("date"), id=c.get("id"))
    return CheckResult(
        claim=claim,
        pipeline=r["pipeline"],
        model=r["model"],
        verdict=verdict_from_dict(r["verdict"]),
        trace=steps,
        usage=r.get("usage", {}),
        seconds=r.get("seconds", 0.0),
    )


def to_json(run: dict[str, Any], result: CheckResult, images: list[dict[str, Any]] | None = None) -> str:
    """`images`: the claim's images as the API describes them (with their URLs on this server)."""
    doc = {"id": run["id"], **result.to_dict()}
    if images:
        doc["images"] = images
    leaf = leaf_summary(result.trace)
    if leaf is not None:
        doc["answer"] = (run.get("options") or {}).get("answer")
        doc["leaf"] = leaf
    return json.dumps(doc, indent=2, ensure_ascii=False)


def answer_markdown(answer: str | None, leaf: dict[str, Any]) -> list[str]:
    """The answer check's sections: the answer, then each sentence with its rating and evidence. Every text
    (the answer, the sentences, the rater's queries, evidence and reasoning) is escaped (`report.md_text`)."""
    lines = []
    if answer is not None:
        lines += (
            ["## Answer", ""]
            + [f"> {md_text(line)}" if line.strip() else ">" for line in str(answer).splitlines()]
            + [""]
        )
    if "score" in leaf:
        lines += [
            f"**LEAF score:** {leaf['score']:.2f} ({leaf.get('supported', 0)} of {leaf.get('checked', 0)} "
            "sentences supported)",
            "",
        ]
    if leaf.get("note"):
        lines += [f"*Note: {md_text(leaf['note'])}*", ""]
    lines += ["## Sentences", ""]
    for s in leaf["sentences"]:
        rating = md_text(s.get("rating") or "no decision (counted as Not Supported)")
        conf = f" (confidence {s['confidence']:.2f})" if s.get("confidence") is not None else ""
        mark = "" if s.get("supported") else " ⚠"
        lines += [
            f"### Sentence {md_text(s.get('index'))}: {rating}{conf}{mark}",
            "",
            f"> {md_text(s.get('sentence', ''))}",
            "",
            f"**Query:** {md_text(s.get('query', ''))}",
            "",
        ]
        ev = evidence_lines(s.get("evidence", []), markdown=True)
        lines += (["**Evidence:**", ""] + [f"> {e}" for e in ev] + [""]) if ev else ["**Evidence:** none found", ""]
        if s.get("reasoning"):
            lines += [f"**Reasoning:** {md_text(s['reasoning'])}", ""]
    return lines


@dataclass
class StoredImage:
    """One of the claim's uploaded images: where the server keeps it, and its URL on the server."""

    path: Path
    url: str
    media_type: str


def _stored(path: str, images: dict[str, StoredImage] | None) -> StoredImage | None:
    """The uploaded image a local path in a run stands for, found by its file name (a content hash), so that a
    run still finds its images after the data folder moved."""
    return images.get(PurePath(path).name) if images else None


def _image_url(images: dict[str, StoredImage] | None):
    """For `report.to_markdown`: the URL on this server of each of the claim's uploaded images (by its path)."""

    def url(path: str) -> str | None:
        im = _stored(path, images)
        return im.url if im else None

    return url


def _embed(images: dict[str, StoredImage] | None):
    """For `report.markdown_to_html`: an allowed local image embedded from its path; one of the claim's uploads
    that is not there any more (moved, or over the size limit for embedding) embedded from the images folder,
    else shown by its URL on this server."""

    def embed(path: str) -> str | None:
        url = embed_local(path)
        if url is not None:
            return url
        im = _stored(path, images)
        if im is None:
            return None
        try:
            data = im.path.read_bytes()
        except OSError:
            return im.url
        return f"data:{im.media_type};base64,{base64.b64encode(data).decode('ascii')}"

    return embed


def to_markdown(run: dict[str, Any], result: CheckResult, images: dict[str, StoredImage] | None = None) -> str:
    """`report.to_markdown`; for an answer check, with the answer and its sentences before the result.
    `images` (stored file name -> StoredImage): the claim's images are linked by URL, not by the server's path."""
    md = check_markdown(result, image_url=_image_url(images) if images else None)
    leaf = leaf_summary(result.trace)
    if leaf is None:
        return md
    extra = "\n".join(answer_markdown((run.get("options") or {}).get("answer"), leaf)) + "\n"
    head, sep, tail = md.partition("\n" + PREDICTION_H + "\n")
    return head + "\n" + extra + sep.lstrip("\n") + tail if sep else md + "\n" + extra


def to_html(run: dict[str, Any], result: CheckResult, images: dict[str, StoredImage] | None = None) -> str:
    """One self-contained page, the claim's images embedded: only the result's own images (`report.own_images`),
    never a path from text."""
    return markdown_to_html(
        to_markdown(run, result), f"Fact-check: {result.claim.text}", images=own_images(result), embed=_embed(images)
    )
