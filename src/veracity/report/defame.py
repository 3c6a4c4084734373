"""DEFAME's part of a check's report, rendered from its record (`defame.record.Record`, read from the check's steps)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..steps import evidence_when
from .evidence import snippet
from .markdown import MD_HTTP_LINK, ImageLink, image_md, md_code, md_link, md_strong, md_text, md_text_links

if TYPE_CHECKING:
    from ..check import CheckResult
    from ..defame.record import Record


def defame_sections(record: Record, result: CheckResult, image_url: ImageLink | None = None) -> list[str]:
    """DEFAME's report, rendered from its record: the claim and its images, then per round the plan, the
    evidence of each tool run, the reasoning and the judgement, then the justification."""
    from ..defame.steps import Develop, Judge, Plan, ToolRun

    lines: list[str] = ["## Claim", "", f"> {md_text(result.claim.text)}", ""]
    if result.claim.date:
        lines += [f"Claim date: {md_text(result.claim.date)}", ""]
    if record.images is not None:
        for ref, src in zip(record.images.refs, record.images.sources):
            lines += [image_md(src, ref, image_url), ""]
        if not record.images.model_sees_images:
            lines += [
                "*The model reads text only: it did not see the images; the tools' textual findings "
                "(reverse search, metadata, geolocation) stand in for them.*",
                "",
            ]
    rounds = [r for r in record.rounds if r.plan is not None or r.judgements]
    for rnd in rounds:
        lines += [f"## Round {md_text(rnd.number)}", ""]
        for s in rnd.steps:
            if isinstance(s, Plan):
                lines += ["### Plan", ""]
                lines += [f"- {md_code(a)}" for a in s.actions] or ["- no new action"]
                if s.how == "constrained":
                    lines.append(
                        "- *(the model's plan named no usable action: the tool was chosen by scoring the "
                        "tools, then the model wrote the query)*"
                    )
                elif s.fallback:
                    lines.append("- *(the model named no usable action; veracity searched the claim itself)*")
                if s.static:
                    lines.append("- *(static actions: every tool once, no planning)*")
                if s.note:
                    lines.append(f"- *{md_text(s.note)}*")
                if rnd is rounds[0]:  # the same every round: said once
                    for name, why in (s.unavailable or {}).items():
                        lines.append(f"- *{md_text(name)} unavailable: {md_text(why)}*")
                lines += [""]
            elif isinstance(s, ToolRun):
                lines += [f"### Evidence from {md_code(s.action)}", ""]
                if s.error:
                    lines += [f"- **failed:** {md_text(s.error)}"]
                lines += [f"- *{md_text(note)}*" for note in s.notes or []]
                if not s.results and not s.error:
                    lines.append("- no results")
                results = list(s.results or [])
                for sm in rnd.summaries:
                    if sm.action != s.action:
                        continue
                    # the result it summarizes (read in order, matched by URL when there is one)
                    r = next((r for r in results if not sm.url or r.get("url") == sm.url), None)
                    if r is not None:
                        results.remove(r)
                    where = md_link(sm.source or sm.url or "source", sm.url)
                    said = evidence_when(r) if r is not None else (f"published {sm.date}" if sm.date else "")
                    when = f" ({md_text(said)})" if said else ""
                    if sm.summary:
                        lines.append(f"- {where}{when}: {md_text(sm.summary)}")
                        lines += [f"  {image_md(img, 'evidence image', image_url)}" for img in (sm.images or [])[:2]]
                    else:
                        lines.append(f"- {where}{when}: *not relevant (summarizer said NONE)*")
                    if r is not None and r.get("text"):
                        lines.append(f"  - quoted from the source: “{md_text(snippet(r['text']))}”")
                lines += [""]
            elif isinstance(s, Develop):
                lines += ["### Reasoning", "", md_text_links(s.text) or "*(empty)*", ""]
            elif isinstance(s, Judge):
                conf = f" (confidence {s.confidence:.2f})" if s.confidence is not None else ""
                lines += ["### Judgement", "", f"{md_strong(s.label)}{conf}"]
                if s.findings:
                    lines += ["", f"Key findings: {md_text_links(s.findings)}"]
                if s.verifier:
                    lines += ["", "Trained verifier, per finding (supported / refuted / not enough information):", ""]
                    lines += [
                        f"- {md_text(str(v.get('source', '')))}: {v.get('supported', 0):.2f} / "
                        f"{v.get('refuted', 0):.2f} / {v.get('nei', 0):.2f}"
                        for v in s.verifier
                    ]
                    if s.decided_by == "verifier" and s.label.lower().startswith("not enough"):
                        # the verifier's rules found no source decisive: that is the label, not decisive evidence
                        lines += ["", "*The label is the verifier's: no source read settles the claim.*"]
                    elif s.decided_by == "verifier":
                        lines += ["", "*The label is the verifier's: the evidence was decisive.*"]
                    elif s.decided_by == "verifier-leaning":
                        lines += [
                            "",
                            "*The evidence was not decisive, and the model chose the label the verifier "
                            "gives less than one half: the label is the verifier's, uncertain.*",
                        ]
                    elif s.decided_by == "prior":
                        lines += [
                            "",
                            "*No source was decisive: the label is the one a stated label prior makes likeliest "
                            "(claims that reach fact-checkers are mostly false), uncertain, with the prior's share "
                            "as its confidence.*",
                        ]
                    else:
                        lines += [
                            "",
                            "*The evidence was not decisive: the label is the model's, uncertain, with the model's "
                            "own probability of it as its confidence.*",
                        ]
                lines += [""]
    if record.justification is not None:
        j = record.justification
        lines += ["## Justification", "", md_text_links(j.text) or "*(empty)*", ""]
        if j.sources:
            lines += [
                "Sources: "
                + ", ".join(
                    md_text_links(x) if MD_HTTP_LINK.search(x) else md_link(x, x)
                    for x in dict.fromkeys(map(str, j.sources))
                ),
                "",
            ]
    return lines
