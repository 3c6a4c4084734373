"""Rendering a finished check as Markdown (for `--report` and downloads) and as terminal text."""

from __future__ import annotations

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


def to_markdown(result: CheckResult) -> str:
    v = result.verdict
    lines = [f"# Fact-check: {result.claim.text}", "",
             f"- **Verdict:** {v.label}" + (f" (confidence {v.confidence:.2f})" if v.confidence is not None else ""),
             f"- **Pipeline:** {result.pipeline}", f"- **Model:** {result.model}",
             f"- **Usage:** {usage_line(result)}", ""]
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
    if v.rationale:
        lines += [v.rationale, ""]
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
    if st == "parse_failure":
        return f"    ! {step['for_stage']}: unusable model output {str(step.get('raw', ''))[:80]!r}; {step['fallback']}"
    return None
