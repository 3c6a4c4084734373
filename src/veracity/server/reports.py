"""Downloads of a stored run: Markdown (report.to_markdown), HTML (that Markdown, rendered) and JSON.

An answer check's downloads add the answer and its per-sentence results (rating, confidence, query,
evidence, reasoning), read from its `leaf_sentence` and `leaf_score` steps.

The stored run is turned back into the `CheckResult` the run produced (its trace is the stored steps),
so every format says what `veracity check --report/--json` says for the same run.
"""

from __future__ import annotations

import html
import json
from typing import Any

from ..check import CheckResult
from ..report import _evidence_lines
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


def to_json(run: dict[str, Any], result: CheckResult) -> str:
    doc = {"id": run["id"], **result.to_dict()}
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


def to_markdown(run: dict[str, Any], result: CheckResult) -> str:
    """`report.to_markdown`; for an answer check, with the answer and its sentences before the result."""
    md = check_markdown(result)
    leaf = leaf_summary(result.trace)
    if leaf is None:
        return md
    extra = "\n".join(answer_markdown((run.get("options") or {}).get("answer"), leaf)) + "\n"
    head, sep, tail = md.partition(PREDICTION_H)
    return head + extra + sep + tail if sep else md + "\n" + extra


_CSS = """
body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:48rem;margin:2rem auto;
padding:0 1rem;color:#1d232b;background:#fff}
h1{font-size:1.5rem;line-height:1.3}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d5dbe3}
h3{font-size:1.05rem}blockquote{margin:.5rem 0;padding:.4rem .8rem;border-left:4px solid #9fb3c8;
background:#f4f7fa}table{border-collapse:collapse}td,th{border:1px solid #d5dbe3;padding:.25rem .5rem}
td{text-align:right}td:first-child{text-align:left}a{color:#0b5cad}
"""


def to_html(run: dict[str, Any], result: CheckResult) -> str:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")  # raw HTML in a claim stays text
    body = md.render(to_markdown(run, result))
    title = html.escape(f"Fact-check: {result.claim.text}")
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{title}</title><style>{_CSS}</style></head>\n<body>\n{body}</body></html>\n")
