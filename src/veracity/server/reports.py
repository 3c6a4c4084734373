"""Downloads of a stored run: Markdown (report.to_markdown), HTML (that Markdown, rendered) and JSON.

An answer check's downloads add the answer and its per-sentence results (rating, confidence, query,
evidence, reasoning), read from its `leaf_sentence` and `leaf_score` steps.

The stored run is turned back into the `CheckResult` the run produced (its trace is the stored steps),
so every format says what `veracity check --report/--json` says for the same run.
"""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import unquote

from ..check import CheckResult
from ..report import _evidence_lines, markdown_to_html
from ..report import to_markdown as check_markdown
from ..types import Claim, Evidence, QAStep, Verdict
from .answers import leaf_summary

PREDICTION_H = "## Prediction with rationale"


def verdict_from_dict(d: dict[str, Any]) -> Verdict:
    steps = [QAStep(depth=s["depth"], question=s["question"], answer=s["answer"],
                    evidence=[Evidence(**e) for e in s.get("evidence", [])], useful=s.get("useful"))
             for s in d.get("steps", [])]
    return Verdict(label=d["label"], rationale=d.get("rationale", ""), confidence=d.get("confidence"),
                   steps=steps, parse_failures=list(d.get("parse_failures", [])))


def result_of(run: dict[str, Any], steps: list[dict[str, Any]]) -> CheckResult:
    r = run["result"]
    c = r.get("claim", {})
    claim = Claim(text=c.get("text", run["claim"]), images=c.get("images") or [], date=c.get("date"), id=c.get("id"))
    return CheckResult(claim=claim, pipeline=r["pipeline"], model=r["model"], verdict=verdict_from_dict(r["verdict"]),
                       trace=steps, usage=r.get("usage", {}), seconds=r.get("seconds", 0.0))


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
    """The answer check's sections: the answer, then each sentence with its rating and evidence."""
    lines = []
    if answer is not None:
        lines += ["## Answer", ""] + [f"> {line}" if line.strip() else ">" for line in answer.splitlines()] + [""]
    if "score" in leaf:
        lines += [f"**LEAF score:** {leaf['score']:.2f} ({leaf.get('supported', 0)} of {leaf.get('checked', 0)} "
                  "sentences supported)", ""]
    if leaf.get("note"):
        lines += [f"*Note: {leaf['note']}*", ""]
    lines += ["## Sentences", ""]
    for s in leaf["sentences"]:
        rating = s.get("rating") or "no decision (counted as Not Supported)"
        conf = f" (confidence {s['confidence']:.2f})" if s.get("confidence") is not None else ""
        mark = "" if s.get("supported") else " ⚠"
        lines += [f"### Sentence {s.get('index')}: {rating}{conf}{mark}", "", f"> {s.get('sentence', '')}", "",
                  f"**Query:** {s.get('query', '')}", ""]
        ev = _evidence_lines(s.get("evidence", []))
        lines += (["**Evidence:**", ""] + [f"> {e}" for e in ev] + [""]) if ev else ["**Evidence:** none found", ""]
        if s.get("reasoning"):
            lines += [f"**Reasoning:** {s['reasoning']}", ""]
    return lines


@dataclass
class StoredImage:
    """One of the claim's uploaded images: where the server keeps it, and its URL on the server."""

    path: Path
    url: str
    media_type: str


def _stored(src: str, images: dict[str, StoredImage] | None) -> StoredImage | None:
    """The uploaded image a local path in a report stands for, found by its file name (a content hash), so
    that a run still finds its images after the data folder moved."""
    if not images or src.startswith(("http://", "https://", "data:")):
        return None
    return images.get(PurePath(unquote(html.unescape(src))).name)


def _link_images(md: str, images: dict[str, StoredImage] | None) -> str:
    """The claim's images (`report.to_markdown` shows their local path on the server) by their URL."""
    def sub(m: re.Match[str]) -> str:
        im = _stored(m.group(1), images)
        return f"]({im.url})" if im else m.group(0)

    return re.sub(r"\]\(<([^<>\n]+)>\)", sub, md) if images else md


def _embed_stored(page: str, images: dict[str, StoredImage] | None) -> str:
    """In the HTML page, each of the claim's images that `report.markdown_to_html` left as a local path (over
    its size limit for embedding, or moved): embedded from the images folder, else shown from the server."""
    def sub(m: re.Match[str]) -> str:
        im = _stored(m.group(1), images)
        if im is None:
            return m.group(0)
        try:
            data = im.path.read_bytes()
        except OSError:
            return f'<img src="{html.escape(im.url)}"'
        return f'<img src="data:{im.media_type};base64,{base64.b64encode(data).decode("ascii")}"'

    return re.sub(r'<img src="(/[^"]+)"', sub, page) if images else page


def to_markdown(run: dict[str, Any], result: CheckResult, images: dict[str, StoredImage] | None = None) -> str:
    """`report.to_markdown`; for an answer check, with the answer and its sentences before the result.
    `images` (stored file name -> StoredImage): the claim's images are linked by URL, not by the server's path."""
    md = _link_images(check_markdown(result), images)
    leaf = leaf_summary(result.trace)
    if leaf is None:
        return md
    extra = "\n".join(answer_markdown((run.get("options") or {}).get("answer"), leaf)) + "\n"
    head, sep, tail = md.partition(PREDICTION_H)
    return head + extra + sep + tail if sep else md + "\n" + extra


def to_html(run: dict[str, Any], result: CheckResult, images: dict[str, StoredImage] | None = None) -> str:
    """One self-contained page, the claim's images embedded (`report.markdown_to_html`, and here the ones it
    left out)."""
    page = markdown_to_html(to_markdown(run, result), f"Fact-check: {result.claim.text}")
    return _embed_stored(page, images)
