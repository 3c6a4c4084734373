"""The report of a checked text: Markdown, or one self-contained HTML page showing the text with each claim's
span coloured by its outcome; clicking a span opens its claims, verdicts and evidence (HTML <details>, no script).

Everything in the page that came from the text, a page, an index or a model is escaped (`html.escape`); links go
only to http(s) URLs; a Content-Security-Policy meta forbids scripts, external styles and fetches, so text that
holds `<script>` stays inert. The Markdown escapes the same text with the check report's `md_text`.
"""

from __future__ import annotations

import html
from typing import Any

from ..report import evidence_word, html_page, md_link, md_text, write_report_as
from ..steps import http_url, memory_marked
from .outcomes import LABELS, marks, summary_rows
from .run import ClaimResult, TextCheck

_CSS = """
body{font:16px/1.6 system-ui,sans-serif;max-width:50rem;margin:2rem auto;padding:0 1rem;color:#1d2733}
.text{white-space:pre-wrap;border:1px solid #d5dbe3;padding:1rem;border-radius:.4rem}
details.c{display:inline}details.c>summary{display:inline;cursor:pointer;list-style:none;border-radius:.2rem}
details.c>summary::-webkit-details-marker{display:none}
.pop{display:block;white-space:normal;margin:.3rem 0;padding:.5rem .75rem;background:#f7f9fb;
border-left:4px solid #9fb3c8;font-size:.9rem}
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
    return f"{LABELS[r.outcome]}{conf}"


# -- Markdown ------------------------------------------------------------------------------------------------

def to_markdown(check: TextCheck) -> str:
    src = check.source
    lines = [f"# Fact-check of {md_text(src.title or src.origin)}", "",
             f"Pipeline: {md_text(check.pipeline)} · model: {md_text(check.model)} · claims extracted by "
             f"{md_text(check.extraction.method)} · {check.extraction.sentences} sentences", ""]
    if check.note:
        lines += [f"*{md_text(check.note)}*", ""]
    if check.stopped:
        lines += [f"*Stopped early: {md_text(check.stopped)}*", ""]
    lines += ["| outcome | claims |", "|---|---|"] + [f"| {a} | {b} |" for a, b in summary_rows(check.summary())]
    lines += ["", "## Claims", ""]
    for r in check.results:
        quote = " … ".join(check.source.text[s:e] for s, e in r.claim.spans)
        lines.append(f"{r.claim.id}\\. **{_verdict(r)}** {md_text(r.claim.text)}")
        lines.append(f"   - source: “{md_text(quote)}” (characters {md_text(r.claim.spans)})")
        if r.note:
            lines.append(f"   - {md_text(r.note)}")
        for ev in memory_marked(r.evidence):
            source = md_link(ev.get('source') or 'passage', ev.get('url'))
            lines.append(f"   - {md_text(evidence_word([ev]))}: {source}: "
                         f"{md_text(ev.get('text', ''))}")
    return "\n".join(lines) + "\n"


# -- HTML ----------------------------------------------------------------------------------------------------

def _claim_html(r: ClaimResult) -> str:
    parts = [f"<b class=\"b o-{r.outcome}\">{_e(_verdict(r))}</b> #{r.claim.id} {_e(r.claim.text)}"]
    if r.note:
        parts.append(f"<br><i>{_e(r.note)}</i>")
    if r.evidence:
        items = []
        for ev in memory_marked(r.evidence):
            name = _e(ev.get("source") or "passage")
            name = name if not ev.get("memory") else f"{_e(evidence_word([ev]))}: {name}"
            url = http_url(ev.get("url"))
            name = f"<a href=\"{_e(url)}\" rel=\"noopener noreferrer nofollow\">{name}</a>" if url else name
            items.append(f"<li>{name}: {_e(ev.get('text', ''))}</li>")
        parts.append("<ul>" + "".join(items) + "</ul>")
    return "".join(parts)


def _marked_text(check: TextCheck) -> str:
    """The source text, each stretch that claims cover (`outcomes.marks`) in a <details> coloured by its outcome."""
    text = check.source.text
    by_id = {r.claim.id: r for r in check.results}
    out, pos = [], 0
    for m in marks((r.claim.id, r.claim.spans, r.outcome) for r in check.results):
        out.append(_e(text[pos:m["start"]]))
        pop = "".join(f"<span class=\"pop\">{_claim_html(by_id[c])}</span>" for c in m["claims"])
        out.append(f"<details class=\"c\"><summary class=\"o-{m['outcome']}\">{_e(text[m['start']:m['end']])}"
                   f"</summary>{pop}</details>")
        pos = m["end"]
    out.append(_e(text[pos:]))
    return "".join(out)


def to_html(check: TextCheck) -> str:
    src = check.source
    title = f"Fact-check of {src.title or src.origin}"
    rows = "".join(f"<tr><th>{_e(a)}</th><td>{_e(b)}</td></tr>" for a, b in summary_rows(check.summary()))
    notes = "".join(f"<p><i>{_e(n)}</i></p>" for n in (check.note, check.stopped and f"Stopped early: "
                                                       f"{check.stopped}", src.note) if n)
    claims = "".join(f"<li><details><summary><b class=\"b o-{r.outcome}\">{_e(_verdict(r))}</b> {_e(r.claim.text)}"
                     f"</summary>{_claim_html(r)}</details></li>" for r in check.results)
    body = (f"<h1>{_e(title)}</h1>\n<p>Pipeline {_e(check.pipeline)} · model {_e(check.model)} · claims extracted "
            f"by {_e(check.extraction.method)} · click a highlighted passage for its verdict and evidence</p>\n"
            f"{notes}<table>{rows}</table>\n<h2>Text</h2>\n<div class=\"text\">{_marked_text(check)}</div>\n"
            f"<h2>Claims</h2>\n<ol class=\"claims\">{claims}</ol>\n")
    return html_page(title, _CSS, body)


def write_report(check: TextCheck, path: str) -> None:
    """Write the report as HTML (.html/.htm) or Markdown (anything else)."""
    write_report_as(check, path, to_html, to_markdown)
