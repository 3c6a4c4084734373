"""A check's report: Markdown (`to_markdown`), HTML (`to_html`) and a file of either (`write_report`), rendered from
the check's trace (its view items, and DEFAME's record: defame.py); the local images an HTML report may embed
(`own_images`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..check import CheckResult
from ..factchecks.steps import published_by
from ..steps import Fold, Step, ViewItem, as_step
from ..verdict_words import words_of
from .defame import defame_sections
from .evidence import evidence_lines, evidence_word, snippet
from .markdown import ImageLink, local_path, md_link, md_strong, md_text, md_text_links
from .page import markdown_to_html, write_report_as

if TYPE_CHECKING:
    from ..defame.record import Record


def usage_line(result: CheckResult) -> str:
    t = result.usage.get("total", {})
    return (
        f"{t.get('calls', 0)} model calls ({t.get('cached_calls', 0)} cached), "
        f"{t.get('prompt_tokens', 0)} prompt + {t.get('completion_tokens', 0)} completion tokens, "
        f"{result.seconds:.1f} s"
    )


def own_images(result: CheckResult) -> set[str]:
    """The local image files the HTML report may embed: the claim's own images (given by the user: `--image`,
    the server's uploads) and the evidence images DEFAME's tools returned, read from the result's image fields
    (never from text)."""
    refs: list[Any] = list(result.claim.images or [])
    for item in check_items(result):
        if item["kind"] == "images":
            refs += list(item.get("sources") or [])
        elif item["kind"] == "action":
            refs += [im for r in item["results"] for im in r.get("images") or []]
        elif item["kind"] == "summary":
            refs += list(item.get("images") or [])
    return {p for p in map(local_path, refs) if p}


def check_steps(trace: Iterable[Step | Mapping[str, Any]]) -> list[Step]:
    """A check's trace (typed steps, or steps as stored) as typed steps, every system's step types known."""
    from ..registry import load_step_types

    load_step_types()
    return [as_step(s) for s in trace]


def check_items(result: CheckResult) -> list[ViewItem]:
    """The view items of a check (`veracity.steps.view_items`)."""
    return Fold().add_all(check_steps(result.trace)).items


def defame_record(result: CheckResult) -> Record | None:
    """DEFAME's record of the check, read from its steps; None when the check kept none."""
    from ..defame.record import Record

    return Record.from_steps(result.claim, check_steps(result.trace))


def _recheck_sections(items: list[ViewItem]) -> list[str]:
    """A recheck's items (evidence/steps.py): each quote, its source, its status now and what changed."""
    rechecked = [it for it in items if it["kind"] == "recheck_item"]
    if not rechecked:
        return []
    lines = ["## Evidence, read again", ""]
    for it in rechecked:
        src = md_link(it["source"], it.get("url")) if it.get("href") else md_text(it["source"])
        when = f", {md_text(it['when'])}" if it.get("when") else ""
        lines += [
            f"{it['n']}. **{md_text(it['status'])}**: {src}{when}: {md_text(it['reason'])}",
            "",
            f"   > {md_text(snippet(it['text']))}",
            "",
        ]
        if it.get("diff"):
            lines += [f"   Now: {md_text(it['diff'])}", ""]
    for it in items:
        if it["kind"] == "recheck_decision":
            lines += [f"- **Decision again:** {md_text(it.get('note') or '')}", ""]
    return lines


def to_markdown(result: CheckResult, image_url: ImageLink | None = None) -> str:
    """The report as Markdown. `image_url` (a local image's absolute path -> the URL to show it by, or None):
    the server links the claim's uploads by their URL instead of its own paths."""
    v = result.verdict
    words = words_of(v)  # an uncertain verdict reads "Uncertain, leaning Supported", never as a decided one
    why = getattr(v, "uncertain_reason", "")
    lines = [
        f"# Fact-check: {md_text(result.claim.text)}",
        "",
        f"- **Verdict:** {md_text(words.line)}",
        *([f"- **Uncertain because** {md_text(why)}."] if getattr(v, "uncertain", False) and why else []),
        *([f"- **No confidence:** {md_text(v.confidence_note)}."] if getattr(v, "confidence_note", "") else []),
        *[f"- **Note:** {md_text(note)}." for note in getattr(v, "notes", [])],
        f"- **Pipeline:** {md_text(result.pipeline)}",
        f"- **Model:** {md_text(result.model)}",
        f"- **Usage:** {md_text(usage_line(result))}",
        "",
    ]
    lines += _published_sections(check_items(result))
    record = defame_record(result)
    if record is not None:
        lines += defame_sections(record, result, image_url)
    answered = [it for it in check_items(result) if it["kind"] == "qa" and it["answer"] is not None]
    if answered:
        lines += ["## Reasoning steps", ""]
        for it in answered:
            note = "" if it["useful"] is not False else " *(discarded by the validator)*"
            lines += [
                f"### Step {md_text(it['depth'])}: {md_text(it['question'])}{note}",
                "",
                f"**Answer:** {md_text(it['answer'])}",
                "",
            ]
            ev = evidence_lines(it["evidence"] or [], markdown=True)
            if ev:
                head = md_text(evidence_word(it["evidence"]).capitalize())
                lines += [f"**{head}:**", ""] + [f"> {e}" for e in ev] + [""]
    retrieved = [it for it in check_items(result) if it["kind"] == "retrieval" and it["results"]]
    if retrieved and record is None:  # the evidence-only pipelines and the baselines with an index
        lines += ["## Evidence retrieved", ""]
        for it in retrieved:
            lines += [f"For: {md_text(it['query'])}", ""]
            lines += [f"> {e}" for e in evidence_lines(it["results"], markdown=True)] + [""]
    lines += _recheck_sections(check_items(result))
    lines += ["## Prediction with rationale", "", md_strong(words.text), ""]
    if v.rationale and record is None:  # DEFAME's rationale is the justification, shown above
        lines += [md_text_links(v.rationale), ""]
    if v.parse_failures:
        lines += ["## What the model got wrong", ""] + [f"- {md_text(p)}" for p in v.parse_failures] + [""]
    by_stage = result.usage.get("by_stage", {})
    if by_stage:
        lines += [
            "## Usage by stage",
            "",
            "| stage | calls | prompt tokens | completion tokens | seconds |",
            "|---|---:|---:|---:|---:|",
        ]
        for stage, u in by_stage.items():
            lines.append(
                f"| {md_text(stage)} | {u['calls']} | {u['prompt_tokens']} | {u['completion_tokens']} | "
                f"{u['seconds']:.2f} |"
            )
        lines.append("")
    return "\n".join(lines)


def _published_sections(items: list[ViewItem]) -> list[str]:
    """What fact-checkers already published on the claim, before the check's own reasoning."""
    lines: list[str] = []
    for it in items:
        if it["kind"] != "published_factchecks":
            continue
        lines += ["## Published fact-checks", "", md_text(it["summary"][:1].upper() + it["summary"][1:]) + ".", ""]
        for m in it["matches"]:
            who = published_by(m)
            rating = f"**{md_text(m['rating'])}**" if m.get("rating") else "(no rating given)"
            source = md_link(who, m["url"]) if m.get("url") else md_text(who)
            p = m.get("probability")
            lines.append(
                f"- {rating}: {md_text(m.get('claim', ''))} ({source})"
                + (f"; probability it is the same claim {p:.2f}" if p is not None else "")
            )
        lines.append("")
    return lines


def to_html(result: CheckResult) -> str:
    return markdown_to_html(to_markdown(result), f"Fact-check: {result.claim.text}", images=own_images(result))


def write_report(result: CheckResult, path: str) -> None:
    """Write the report as HTML (.html/.htm) or Markdown (anything else)."""
    write_report_as(result, path, to_html, to_markdown)
