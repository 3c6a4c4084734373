"""Rendering a finished check as Markdown and HTML (for `--report` and downloads) and as terminal text.

Everything is rendered from the check's trace, the one record of what happened.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from .check import CheckResult


def _evidence_lines(evidence: list[dict[str, Any]], width: int | None = None) -> list[str]:
    out = []
    for e in evidence:
        text = " ".join(str(e.get("text", "")).split())
        if width and len(text) > width:
            text = text[: width - 1] + "…"
        src = e.get("source") or "evidence"
        if e.get("url"):
            src = f"[{src}]({e['url']})"
        elif e.get("doc_id"):
            src = f"{src} ({e['doc_id']})"
        out.append(f"{text} — *{src}*")
    return out


def usage_line(result: CheckResult) -> str:
    t = result.usage.get("total", {})
    return (f"{t.get('calls', 0)} model calls ({t.get('cached_calls', 0)} cached), "
            f"{t.get('prompt_tokens', 0)} prompt + {t.get('completion_tokens', 0)} completion tokens, "
            f"{result.seconds:.1f} s")


def _md_text(text: str) -> str:
    """Model or source text placed in Markdown: one line, no raw HTML, no heading or image markup."""
    text = " ".join(str(text).split())
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("![", "!\\[")


def _image_md(src: str, alt: str) -> str:
    """An image in Markdown: a remote one by its URL, a local one by its absolute path."""
    if src.startswith(("http://", "https://")):
        return f"![{alt}]({src.replace(' ', '%20').replace(')', '%29')})"
    if src.startswith("data:"):
        return f"*{alt}: inline image*"
    return f"![{alt}](<{Path(src).resolve()}>)"


def _defame_sections(result: CheckResult) -> list[str]:
    """The DEFAME report: the claim and its images, then per round the plan, evidence, reasoning, judgement."""
    trace = result.trace
    lines: list[str] = ["## Claim", "", f"> {_md_text(result.claim.text)}", ""]
    if result.claim.date:
        lines += [f"Claim date: {result.claim.date}", ""]
    for step in trace:
        if step["stage"] == "images":
            for ref, src in zip(step["refs"], step["sources"]):
                lines += [_image_md(src, ref), ""]
            if not step.get("model_sees_images"):
                lines += ["*The model reads text only: it did not see the images; the tools' textual findings "
                          "(reverse search, metadata, geolocation) stand in for them.*", ""]
    rounds = sorted({s["round"] for s in trace if s["stage"] in ("plan", "judge") and "round" in s})
    for n in rounds:
        lines += [f"## Round {n}", ""]
        for s in trace:
            if s.get("round") != n:
                continue
            st = s["stage"]
            if st == "plan":
                lines += ["### Plan", ""]
                lines += [f"- `{a}`" for a in s["actions"]] or ["- no new action"]
                if s.get("how") == "constrained":
                    lines.append("- *(the model's plan named no usable action: the tool was chosen by scoring the "
                                 "tools, then the model wrote the query)*")
                elif s.get("fallback"):
                    lines.append("- *(the model named no usable action; veracity searched the claim itself)*")
                if s.get("static"):
                    lines.append("- *(static actions: every tool once, no planning)*")
                if s.get("note"):
                    lines.append(f"- *{_md_text(s['note'])}*")
                if n == rounds[0]:  # the same every round: said once
                    for name, why in (s.get("unavailable") or {}).items():
                        lines.append(f"- *{name} unavailable: {why}*")
                lines += [""]
            elif st == "action":
                lines += [f"### Evidence from `{s['action']}`", ""]
                if s.get("error"):
                    lines += [f"- **failed:** {_md_text(s['error'])}"]
                lines += [f"- *{_md_text(note)}*" for note in s.get("notes", [])]
                if not s.get("results") and not s.get("error"):
                    lines.append("- no results")
                for sm in trace:
                    if sm["stage"] == "summary" and sm.get("round") == n and sm["action"] == s["action"]:
                        src = _md_text(sm.get("source") or sm.get("url") or "source")
                        where = f"[{src}]({sm['url']})" if sm.get("url") else src
                        when = f" ({sm['date']})" if sm.get("date") else ""
                        if sm.get("summary"):
                            lines.append(f"- {where}{when}: {_md_text(sm['summary'])}")
                            lines += [f"  {_image_md(img, 'evidence image')}" for img in sm.get("images", [])[:2]]
                        else:
                            lines.append(f"- {where}{when}: *not relevant (summarizer said NONE)*")
                lines += [""]
            elif st == "develop":
                lines += ["### Reasoning", "", _md_text(s["text"]) or "*(empty)*", ""]
            elif st == "judge":
                conf = f" (confidence {s['confidence']:.2f})" if s.get("confidence") is not None else ""
                lines += ["### Judgement", "", f"**{s['label']}**{conf}"]
                if s.get("findings"):
                    lines += ["", f"Key findings: {_md_text(s['findings'])}"]
                lines += [""]
    for s in trace:
        if s["stage"] == "justify":
            lines += ["## Justification", "", _md_text(s["text"]) or "*(empty)*", ""]
            if s.get("sources"):
                lines += ["Sources: " + ", ".join(dict.fromkeys(s["sources"])), ""]
    return lines


def to_markdown(result: CheckResult) -> str:
    v = result.verdict
    lines = [f"# Fact-check: {_md_text(result.claim.text)}", "",
             f"- **Verdict:** {v.label}" + (f" (confidence {v.confidence:.2f})" if v.confidence is not None else ""),
             f"- **Pipeline:** {result.pipeline}", f"- **Model:** {result.model}",
             f"- **Usage:** {usage_line(result)}", ""]
    defame = any(s["stage"] == "plan" for s in result.trace)
    if defame:
        lines += _defame_sections(result)
    answers = [s for s in result.trace if s["stage"] == "answer"]
    if answers:
        lines += ["## Reasoning steps", ""]
        kept = {s["question"]: s.get("useful", True) for s in result.trace if s["stage"] == "validator"}
        for s in answers:
            note = "" if kept.get(s["question"], True) else " *(discarded by the validator)*"
            lines += [f"### Step {s['depth']}: {s['question']}{note}", "", f"**Answer:** {s['answer']}", ""]
            ev = _evidence_lines(s.get("evidence", []))
            if ev:
                lines += ["**Evidence:**", ""] + [f"> {e}" for e in ev] + [""]
    lines += ["## Prediction with rationale", "", f"**{v.label}**", ""]
    if v.rationale and not defame:  # DEFAME's rationale is the justification, shown above
        lines += [_md_text(v.rationale), ""]
    if v.parse_failures:
        lines += ["## What the model got wrong", ""] + [f"- {p}" for p in v.parse_failures] + [""]
    by_stage = result.usage.get("by_stage", {})
    if by_stage:
        lines += ["## Usage by stage", "", "| stage | calls | prompt tokens | completion tokens | seconds |",
                  "|---|---:|---:|---:|---:|"]
        for stage, u in by_stage.items():
            lines.append(f"| {stage} | {u['calls']} | {u['prompt_tokens']} | {u['completion_tokens']} | "
                         f"{u['seconds']:.2f} |")
        lines.append("")
    return "\n".join(lines)


def format_step(step: dict[str, Any]) -> str | None:
    """One trace step as a line (or a few) of terminal output; None for steps not shown."""
    st = step["stage"]
    if st == "question":
        dup = " (already asked; skipped)" if step.get("duplicate") else ""
        return f"\n[{step['depth']}] Q: {step['question']}{dup}"
    if st == "answer":
        lines = [f"    A: {step['answer']}"]
        lines += [f"    evidence: {e}" for e in _evidence_lines(step.get("evidence", []), width=200)]
        return "\n".join(lines)
    if st == "validator":
        return "    validator: " + ("useful, kept" if step["useful"] else "not useful, discarded")
    if st == "verifier":
        return f"    verifier: {'enough to decide' if step['enough'] else 'not enough yet'}"
    if st == "plan":
        acts = ", ".join(step["actions"]) or "no new action"
        how = {"constrained": " (tool scored, query written)", "fallback": " (fallback: the claim itself)"}
        line = f"\n[round {step['round']}] plan: {acts}{how.get(step.get('how', ''), '')}"
        return line + (f"\n    {step['note']}" if step.get("note") else "")
    if st == "action":
        if step.get("error"):
            return f"    {step['action']}: failed: {step['error']}"
        notes = "".join(f"; {n}" for n in step.get("notes", []))
        return f"    {step['action']}: {len(step.get('results', []))} results{notes}"
    if st == "summary":
        src = step.get("url") or step.get("source") or "source"
        return f"      {src}: " + (str(step["summary"])[:200] if step.get("summary") else "not relevant")
    if st == "develop":
        return f"    reasoning: {step['text'][:300]}"
    if st == "judge":
        conf = f" ({step['confidence']:.2f})" if step.get("confidence") is not None else ""
        return f"    judgement: {step['label']}{conf}"
    if st == "parse_failure":
        return f"    ! {step['for_stage']}: unusable model output {str(step.get('raw', ''))[:80]!r}; {step['fallback']}"
    return None


_CSS = """
body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:48rem;margin:2rem auto;
padding:0 1rem;color:#1d232b;background:#fff}
h1{font-size:1.5rem;line-height:1.3}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d5dbe3}
h3{font-size:1.05rem}blockquote{margin:.5rem 0;padding:.4rem .8rem;border-left:4px solid #9fb3c8;
background:#f4f7fa}table{border-collapse:collapse}td,th{border:1px solid #d5dbe3;padding:.25rem .5rem}
td{text-align:right}td:first-child{text-align:left}a{color:#0b5cad}img{max-width:100%;max-height:24rem}
"""
_LOCAL_IMG = re.compile(r'<img src="(/[^"]+)"')
EMBED_LIMIT = 20_000_000  # local images larger than this stay links (the most `load_image` accepts)


def _embed_local(match: re.Match[str]) -> str:
    """A local image (the claim's, or one from a local image collection) inlined when it decodes as one."""
    from urllib.parse import unquote

    from .errors import UserError
    from .images.files import load_image

    try:
        image = load_image(unquote(html.unescape(match.group(1))), max_bytes=EMBED_LIMIT)
    except UserError:
        return match.group(0)  # missing, too large or not an image: stays a path
    return f'<img src="{image.data_url()}"'



def markdown_to_html(markdown: str, title: str) -> str:
    """A Markdown report as one self-contained HTML page: local images embedded, remote ones linked.

    Raw HTML in the Markdown (from claims, sources or the model) is escaped, never rendered.
    """
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    body = _LOCAL_IMG.sub(_embed_local, body)
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}</body></html>\n")


def to_html(result: CheckResult) -> str:
    return markdown_to_html(to_markdown(result), f"Fact-check: {result.claim.text}")


def write_report(result: CheckResult, path: str) -> None:
    """Write the report as HTML (.html/.htm) or Markdown (anything else)."""
    from .errors import UserError

    text = to_html(result) if Path(path).suffix.lower() in (".html", ".htm") else to_markdown(result)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot write the report to {path}: {e.strerror}") from None
