"""The report of a checked text: Markdown, or one self-contained HTML page. Both show the text as it was written
(its paragraphs and line breaks) with each claim's passage marked in place, then the claims in a numbered list: in
the HTML each passage is a <mark> coloured by its outcome, linking to its claims' entries (verdict, evidence) and
back; in the Markdown a passage is in bold with its claims' numbers after it. No script.

Everything in the page that came from the text, a page, an index or a model is escaped (`html.escape`); links go
only to http(s) URLs; a Content-Security-Policy meta forbids scripts, external styles and fetches, so text that
holds `<script>` stays inert. The Markdown escapes the same text with the check report's `md_text`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

from ..factchecks.steps import published_by
from ..report.evidence import evidence_word
from ..report.markdown import md_link, md_piece, md_text
from ..report.page import html_page, write_report_as
from ..steps import evidence_view, http_url
from .outcomes import Span, marks, outcome_words, summary_rows
from .run import ClaimResult, TextCheck

_CSS = """
body{font:16px/1.6 system-ui,sans-serif;max-width:50rem;margin:2rem auto;padding:0 1rem;color:#1d2733}
.text{white-space:pre-wrap;border:1px solid #d5dbe3;padding:1rem;border-radius:.4rem}
mark{color:inherit;border-radius:.2rem;padding:0 .1rem}mark a{color:inherit;text-decoration:none}
mark a:hover,mark a:focus{text-decoration:underline}mark sup a{color:#0b5cad}
ol.claims>li{margin:.6rem 0;padding:.3rem .5rem;scroll-margin-top:1rem}
ol.claims>li:target,mark:target{outline:3px solid #0b5cad}
ol.claims .src{color:#4a5562;font-size:.9rem}
.o-supported{background:#d3f2d9}.o-refuted{background:#f9d0d0}.o-uncertain{background:#fdebc2}
.o-ambiguous{background:#e5d9f6}.o-not_checkable{background:#eceff3}.o-not_checked{background:#f3f3f3}
.o-failed{background:#fde2c8;outline:1px dashed #b45309}
.b{display:inline-block;padding:0 .4rem;border-radius:.2rem;font-size:.85rem;font-weight:600}
table{border-collapse:collapse}td,th{border:1px solid #d5dbe3;padding:.2rem .5rem;text-align:left}
ul.claims li{margin:.4rem 0}a{color:#0b5cad;overflow-wrap:anywhere}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _verdict(r: ClaimResult) -> str:
    conf = f" ({r.confidence:.2f})" if r.confidence is not None else ""
    return f"{outcome_words(r.outcome, r.label)}{conf}"


# -- Markdown ------------------------------------------------------------------------------------------------


def _span_words(spans: Iterable[Span]) -> str:
    """Where a claim's passage is in the text, in words: "characters 0-31", several spans joined."""
    return "characters " + ", ".join(f"{s}-{e}" for s, e in spans)


def _marked_markdown(check: TextCheck) -> str:
    """The source text in Markdown with its line breaks (hard breaks) and paragraphs, each stretch that claims
    cover in bold followed by its claims' numbers, e.g. **She was born in Warsaw.**\\[2\\]."""
    lines: list[str] = [""]
    for part, ids, _ in _segments(check):
        for i, piece in enumerate(part.split("\n")):
            if i:
                lines.append("")
            if not lines[-1]:
                piece = piece.lstrip()
            md = md_piece(piece)
            if ids and md.strip():
                md = md.replace(md.strip(), f"**{md.strip()}**", 1)
            lines[-1] += md
        if ids:  # after the passage's last words (not on a line of its own when it ends with a line break)
            at = max((i for i, line in enumerate(lines) if line.strip()), default=len(lines) - 1)
            lines[at] = lines[at].rstrip() + "\\[" + ", ".join(map(str, ids)) + "\\]"
    lines = [line.rstrip() for line in lines]
    out = [line + ("\\" if line and i + 1 < len(lines) and lines[i + 1] else "") for i, line in enumerate(lines)]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


def to_markdown(check: TextCheck) -> str:
    src = check.source
    lines = [
        f"# Fact-check of {md_text(src.title or src.origin)}",
        "",
        f"Pipeline: {md_text(check.pipeline)} · model: {md_text(check.model)} · claims extracted by "
        f"{md_text(check.extraction.method)} · {check.extraction.sentences} sentences",
        "",
    ]
    if check.note:
        lines += [f"*{md_text(check.note)}*", ""]
    if check.stopped:
        lines += [f"*Stopped early: {md_text(check.stopped)}*", ""]
    lines += ["| outcome | claims |", "|---|---|"] + [f"| {a} | {b} |" for a, b in summary_rows(check.summary())]
    lines += [
        "",
        "## Text",
        "",
        "*Each claim's passage in bold, its claims' numbers after it.*",
        "",
        _marked_markdown(check),
        "",
        "## Claims",
        "",
    ]
    for r in check.results:
        quote = " … ".join(check.source.text[s:e] for s, e in r.claim.spans)
        lines.append(f"{r.claim.id}\\. **{_verdict(r)}** {md_text(r.claim.text)}")
        lines.append(f"   - source: “{md_text(quote)}” ({md_text(_span_words(r.claim.spans))})")
        for m in r.factchecks:
            who = published_by(m)
            rating = md_text(m.get("rating") or "no rating given")
            lines.append(
                f"   - published fact-check: **{rating}**, {md_link(who, m.get('url'))}: {md_text(m['claim'])}"
            )
        if r.note:
            lines.append(f"   - {md_text(r.note)}")
        for ev in evidence_view(r.evidence):
            source = md_link(ev.get("source") or "passage", ev.get("url"))
            when = f" ({md_text(ev['when'])})" if ev.get("when") else ""
            lines.append(f"   - {md_text(evidence_word([ev]))}: {source}{when}: {md_text(ev.get('text', ''))}")
    return "\n".join(lines) + "\n"


# -- HTML ----------------------------------------------------------------------------------------------------


def _claim_html(r: ClaimResult, passage: str | None) -> str:
    """A claim's entry in the list under the text: its verdict, its words, a link back to its passage (`passage`,
    the id of its first mark in the text), why it was not checked, and its evidence."""
    back = f' <a class="src" href="#{passage}">(in the text)</a>' if passage else ""
    parts = [f'<b class="b o-{r.outcome}">{_e(_verdict(r))}</b> {_e(r.claim.text)}{back}']
    for m in r.factchecks:
        url = http_url(m.get("url"))
        who = _e(published_by(m))
        who = f'<a href="{_e(url)}" rel="noopener noreferrer nofollow">{who}</a>' if url else who
        parts.append(
            f"<br>Published fact-check: <b>{_e(m.get('rating') or 'no rating given')}</b>, {who}: {_e(m['claim'])}"
        )
    if r.note:
        parts.append(f"<br><i>{_e(r.note)}</i>")
    if r.evidence:
        items = []
        for ev in evidence_view(r.evidence):
            name = _e(ev.get("source") or "passage")
            name = name if not ev.get("memory") else f"{_e(evidence_word([ev]))}: {name}"
            url = http_url(ev.get("url"))
            name = f'<a href="{_e(url)}" rel="noopener noreferrer nofollow">{name}</a>' if url else name
            when = f' <span class="when">({_e(ev["when"])})</span>' if ev.get("when") else ""
            items.append(f"<li>{name}{when}: {_e(ev.get('text', ''))}</li>")
        parts.append("<ul>" + "".join(items) + "</ul>")
    return "".join(parts)


def _segments(check: TextCheck) -> list[tuple[str, list[int], str]]:
    """The text in order as (text, claim ids, outcome): the stretches that claims cover (`outcomes.marks`) with
    their claims, the rest with none."""
    text, out, pos = check.source.text, [], 0
    for m in marks((r.claim.id, r.claim.spans, r.outcome) for r in check.results):
        if m["start"] > pos:
            out.append((text[pos : m["start"]], [], ""))
        out.append((text[m["start"] : m["end"]], m["claims"], m["outcome"]))
        pos = m["end"]
    if pos < len(text):
        out.append((text[pos:], [], ""))
    return out


def _marked_text(check: TextCheck) -> tuple[str, dict[int, str]]:
    """The source text as written (shown pre-wrapped), each stretch that claims cover an inline <mark> coloured by
    its outcome and linking to its first claim's entry below (the others' numbers after it); and the id of each
    claim's first mark, for the entries' links back."""
    by_id = {r.claim.id: r for r in check.results}
    out, first_mark = [], {}
    for n, (part, ids, outcome) in enumerate(_segments(check)):
        if not ids:
            out.append(_e(part))
            continue
        for c in ids:
            first_mark.setdefault(c, f"p-{n}")
        title = "; ".join(f"claim {c}: {_verdict(by_id[c])}" for c in ids)
        more = "".join(f' <a href="#claim-{c}">{c}</a>' for c in ids[1:])
        out.append(
            f'<mark class="o-{outcome}" id="p-{n}"><a href="#claim-{ids[0]}" title="{_e(title)}">'
            f"{_e(part)}</a>{f'<sup>{more}</sup>' if more else ''}</mark>"
        )
    return "".join(out), first_mark


def to_html(check: TextCheck) -> str:
    src = check.source
    title = f"Fact-check of {src.title or src.origin}"
    rows = "".join(f"<tr><th>{_e(a)}</th><td>{_e(b)}</td></tr>" for a, b in summary_rows(check.summary()))
    notes = "".join(
        f"<p><i>{_e(n)}</i></p>"
        for n in (check.note, check.stopped and f"Stopped early: {check.stopped}", src.note)
        if n
    )
    text, first_mark = _marked_text(check)
    claims = "".join(
        f'<li id="claim-{r.claim.id}" value="{r.claim.id}">{_claim_html(r, first_mark.get(r.claim.id))}</li>'
        for r in check.results
    )
    body = (
        f"<h1>{_e(title)}</h1>\n<p>Pipeline {_e(check.pipeline)} · model {_e(check.model)} · claims extracted "
        f"by {_e(check.extraction.method)} · click a highlighted passage for its verdict and evidence</p>\n"
        f'{notes}<table>{rows}</table>\n<h2>Text</h2>\n<div class="text">{text}</div>\n'
        f'<h2>Claims</h2>\n<ol class="claims">{claims}</ol>\n'
    )
    return html_page(title, _CSS, body)


def write_report(check: TextCheck, path: str) -> None:
    """Write the report as HTML (.html/.htm) or Markdown (anything else)."""
    write_report_as(check, path, to_html, to_markdown)
