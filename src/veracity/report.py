"""Rendering a check as Markdown and HTML (for `--report` and downloads) and as terminal text.

Everything is rendered from the check's trace, the one record of what happened, folded once into view items
(`veracity.steps.view_items`): the terminal printer (`TerminalPrinter`, as the steps arrive) and the report
render those items; DEFAME's part of the report renders its record (`defame.record.Record`, read from the same
steps).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping
from urllib.parse import quote, unquote, urlsplit

from .check import CheckResult
from .steps import MEMORY_SOURCE, Fold, Step, ViewItem, as_step, evidence_license, evidence_when
from .verdict_words import words_of

if TYPE_CHECKING:
    from .defame.record import Record

# Markdown safety. Every piece of text a model, a web page, an index document or a user wrote (claim, question,
# answer, evidence, titles, summaries, reasoning, notes, errors) enters the Markdown through `md_text` (or
# `_md_code`), which escapes it so that it renders as literal text: no link, image, HTML, heading, list, code
# or emphasis can come from it. Links and images come only from veracity's own structure: links through
# `md_link` (http(s) URLs only), images through `_image_md`, and the HTML page embeds only the local images in
# the allow-list built from the result's own image fields (`own_images`); `markdown_to_html` renders no raw
# HTML and drops any other link or image target.

_MD_ESCAPE = re.compile(r"([\\`*_\[\]<>&#|~])")  # everywhere: inline markup, entities, table cells
_MD_BLOCK_START = re.compile(r"^(?:([-+=])|(\d{1,9})([.)]))")  # at the start of a line: list items, setext
_HTTP = re.compile(r"https?://", re.I)
_NOT_A_PATH = re.compile(r"(?i)\s*(data|javascript|vbscript|mailto|about|blob):")
_URL_SAFE = "!#$%&'*+,/:;=?@[]~"  # kept as they are in a link's URL (with letters, digits and -._)


def md_text(text: Any) -> str:
    """Untrusted text placed in Markdown: one line that renders as exactly its words (markup escaped)."""
    text = " ".join(str(text).split())
    text = _MD_ESCAPE.sub(r"\\\1", text)
    return _MD_BLOCK_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else f"{m.group(2)}\\{m.group(3)}", text)


def md_piece(text: str) -> str:
    """A stretch of one line placed in Markdown (`md_text`), a space kept at either end where it had one: for text
    put together from pieces (a link between two, a passage marked in a line)."""
    core = md_text(text)
    if not core:
        return " " if text else ""
    return (" " if text[:1].isspace() else "") + core + (" " if text[-1:].isspace() else "")


# a model's Markdown link to an http(s) URL, [label](https://...), its URL allowed one level of parentheses
_MD_HTTP_LINK = re.compile(r"\[([^\[\]]{1,300})\]\(\s*<?(https?://[^\s<>()]*(?:\([^\s<>()]*\)[^\s<>()]*)*)>?\s*\)",
                           re.I)


def md_text_links(text: Any) -> str:
    """Untrusted text with the model's Markdown links in it (a justification citing its sources): as `md_text`,
    each link to an http(s) URL kept a link (`md_link`); any other link stays as its escaped text."""
    text = " ".join(str(text).split())
    out, pos = [], 0
    for m in _MD_HTTP_LINK.finditer(text):
        out += [md_piece(text[pos:m.start()]), md_link(m[1], m[2])]
        pos = m.end()
    out.append(md_piece(text[pos:]))
    return "".join(out).strip()


def _md_strong(text: Any) -> str:
    """Untrusted text in bold (a label); an empty one as *(none)* (`****` would be a horizontal rule)."""
    text = md_text(text)
    return f"**{text}**" if text else "*(none)*"


def _md_code(text: Any) -> str:
    """Untrusted text as an inline code span (one line), fenced so that no backtick in it can end the span."""
    text = " ".join(str(text).split())
    if not text:
        return "*(empty)*"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_url(url: Any) -> str | None:
    """An http(s) URL as a Markdown link destination (percent-encoded where Markdown would read it); None for any
    other kind of target (javascript:, file:, data:, a path)."""
    url = str(url or "").strip()
    if not _HTTP.match(url):
        return None
    return quote(url, safe=_URL_SAFE, errors="replace").replace("&", "\\&")  # `&`: no entity decoded


def md_link(text: Any, url: Any) -> str:
    """A link to a source: escaped text, linked when `url` is http(s)."""
    dest = _md_url(url)
    label = md_text(text) or md_text(url) or "source"
    return f"[{label}]({dest})" if dest else label


def evidence_lines(evidence: list[dict[str, Any]], width: int | None = None, markdown: bool = False) -> list[str]:
    """Evidence as lines: for the terminal (`width` cuts long text), or `markdown` (escaped, linked). When all of it
    is the model's memory the caller says so once (`evidence_word`), and the lines are the text alone."""
    out = []
    said = evidence_word(evidence) == MEMORY_SOURCE
    for e in evidence:
        text = " ".join(str(e.get("text", "")).split())
        if width and len(text) > width:
            text = text[: width - 1] + "…"
        if said:
            out.append(md_text(text) if markdown else text)
            continue
        src = e.get("source") or "evidence"
        when = "" if e.get("memory") else evidence_when(e)
        doc_id = e.get("doc_id") if e.get("doc_id") != src else None  # a given text's name is its id: once
        if markdown:
            text = md_text(text)
            if e.get("url"):
                src = md_link(src, e["url"])
            else:
                src = md_text(src) + (f" ({md_text(doc_id)})" if doc_id else "")
            src += f", {md_text(when)}" if when else ""
        elif e.get("url"):
            src = f"{src} <{e['url']}>"
        elif doc_id:
            src = f"{src} ({doc_id})"
        if when and not markdown:
            src += f", {when}"
        if license_ := evidence_license(e):
            src += f" ({license_})"
        out.append(f"{text} — *{src}*" if markdown else f"{text} — {src}")  # a terminal shows no Markdown
    return out


def evidence_word(evidence: list[dict[str, Any]] | None) -> str:
    """What a question's evidence is called: the model's memory (MEMORY_SOURCE) when the model recited it all (it
    is not a source), else "evidence"."""
    return MEMORY_SOURCE if evidence and all(e.get("memory") for e in evidence) else "evidence"


def usage_line(result: CheckResult) -> str:
    t = result.usage.get("total", {})
    return (f"{t.get('calls', 0)} model calls ({t.get('cached_calls', 0)} cached), "
            f"{t.get('prompt_tokens', 0)} prompt + {t.get('completion_tokens', 0)} completion tokens, "
            f"{result.seconds:.1f} s")


def _local_path(src: Any) -> str | None:
    """The absolute local path an image reference names (a path or a file:// URL); None for URLs and the rest."""
    if not isinstance(src, str) or not src.strip():
        return None
    src = src.strip()
    if src[:7].lower() == "file://":
        src = unquote(urlsplit(src).path)
    elif "://" in src or _NOT_A_PATH.match(src):  # as `load_image` reads it: a URL, else a path
        return None
    try:
        return str(Path(src).expanduser().resolve())
    except (OSError, RuntimeError, ValueError):
        return None


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
    return {p for p in map(_local_path, refs) if p}


def check_steps(trace: Iterable["Step | Mapping[str, Any]"]) -> list[Step]:
    """A check's trace (typed steps, or steps as stored) as typed steps, every system's step types known."""
    from .registry import load_step_types

    load_step_types()
    return [as_step(s) for s in trace]


def check_items(result: CheckResult) -> list[ViewItem]:
    """The view items of a check (`veracity.steps.view_items`)."""
    return Fold().add_all(check_steps(result.trace)).items


def defame_record(result: CheckResult) -> "Record | None":
    """DEFAME's record of the check, read from its steps; None when the check kept none."""
    from .defame.record import Record

    return Record.from_steps(result.claim, check_steps(result.trace))


ImageLink = Callable[[str], "str | None"]


def _image_md(src: str, alt: str, image_url: ImageLink | None = None) -> str:
    """An image in Markdown: a remote one by its URL, a local one by its absolute path (or the URL `image_url`
    gives for that path), anything else as text."""
    alt_md = md_text(alt) or "image"
    src = str(src).strip()
    dest = _md_url(src)
    if dest:
        return f"![{alt_md}]({dest})"
    if src[:5].lower() == "data:":
        return f"*{alt_md}: inline image*"
    path = _local_path(src)
    if path is None:
        return f"*{alt_md}: {md_text(src)}*"
    if image_url is not None:
        dest = _md_url(image_url(path) or "")
        if dest:
            return f"![{alt_md}]({dest})"
    return f"![{alt_md}](<{_md_path(path)}>)"


def _md_path(path: str) -> str:
    """A local path as a `<...>` link destination: what Markdown would read in it escaped or percent-encoded
    (`markdown_to_html` decodes it back to match the allow-list)."""
    path = re.sub(r"[\x00-\x1f\x7f%]", lambda m: f"%{ord(m.group(0)):02X}", path)
    return re.sub(r"([<>&\\])", r"\\\1", path)


def _record_sections(record: "Record", result: CheckResult, image_url: ImageLink | None = None) -> list[str]:
    """DEFAME's report, rendered from its record: the claim and its images, then per round the plan, the
    evidence of each tool run, the reasoning and the judgement, then the justification."""
    from .defame.steps import Develop, Judge, Plan, ToolRun

    lines: list[str] = ["## Claim", "", f"> {md_text(result.claim.text)}", ""]
    if result.claim.date:
        lines += [f"Claim date: {md_text(result.claim.date)}", ""]
    if record.images is not None:
        for ref, src in zip(record.images.refs, record.images.sources):
            lines += [_image_md(src, ref, image_url), ""]
        if not record.images.model_sees_images:
            lines += ["*The model reads text only: it did not see the images; the tools' textual findings "
                      "(reverse search, metadata, geolocation) stand in for them.*", ""]
    rounds = [r for r in record.rounds if r.plan is not None or r.judgements]
    for rnd in rounds:
        lines += [f"## Round {md_text(rnd.number)}", ""]
        for s in rnd.steps:
            if isinstance(s, Plan):
                lines += ["### Plan", ""]
                lines += [f"- {_md_code(a)}" for a in s.actions] or ["- no new action"]
                if s.how == "constrained":
                    lines.append("- *(the model's plan named no usable action: the tool was chosen by scoring the "
                                 "tools, then the model wrote the query)*")
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
                lines += [f"### Evidence from {_md_code(s.action)}", ""]
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
                        lines += [f"  {_image_md(img, 'evidence image', image_url)}" for img in (sm.images or [])[:2]]
                    else:
                        lines.append(f"- {where}{when}: *not relevant (summarizer said NONE)*")
                    if r is not None and r.get("text"):
                        lines.append(f"  - quoted from the source: “{md_text(_snippet(r['text']))}”")
                lines += [""]
            elif isinstance(s, Develop):
                lines += ["### Reasoning", "", md_text_links(s.text) or "*(empty)*", ""]
            elif isinstance(s, Judge):
                conf = f" (confidence {s.confidence:.2f})" if s.confidence is not None else ""
                lines += ["### Judgement", "", f"{_md_strong(s.label)}{conf}"]
                if s.findings:
                    lines += ["", f"Key findings: {md_text_links(s.findings)}"]
                if s.verifier:
                    lines += ["", "Trained verifier, per finding (supported / refuted / not enough information):", ""]
                    lines += [f"- {md_text(str(v.get('source', '')))}: {v.get('supported', 0):.2f} / "
                              f"{v.get('refuted', 0):.2f} / {v.get('nei', 0):.2f}" for v in s.verifier]
                    if s.decided_by == "verifier":
                        lines += ["", "*The label is the verifier's: the evidence was decisive.*"]
                    elif s.decided_by == "verifier-leaning":
                        lines += ["", "*The evidence was not decisive, and the model chose the label the verifier "
                                      "gives less than one half: the label is the verifier's, uncertain.*"]
                    else:
                        lines += ["", "*The evidence was not decisive: the label is the model's, and its confidence "
                                      "the verifier's probability of that label.*"]
                lines += [""]
    if record.justification is not None:
        j = record.justification
        lines += ["## Justification", "", md_text_links(j.text) or "*(empty)*", ""]
        if j.sources:
            lines += ["Sources: " + ", ".join(md_text_links(x) if _MD_HTTP_LINK.search(x) else md_link(x, x)
                                              for x in dict.fromkeys(map(str, j.sources))), ""]
    return lines


def _recheck_sections(items: list[ViewItem]) -> list[str]:
    """A recheck's items (evidence/steps.py): each quote, its source, its status now and what changed."""
    rechecked = [it for it in items if it["kind"] == "recheck_item"]
    if not rechecked:
        return []
    lines = ["## Evidence, read again", ""]
    for it in rechecked:
        src = md_link(it["source"], it.get("url")) if it.get("href") else md_text(it["source"])
        when = f", {md_text(it['when'])}" if it.get("when") else ""
        lines += [f"{it['n']}. **{md_text(it['status'])}**: {src}{when}: {md_text(it['reason'])}", "",
                  f"   > {md_text(_snippet(it['text']))}", ""]
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
    lines = [f"# Fact-check: {md_text(result.claim.text)}", "",
             f"- **Verdict:** {md_text(words.line)}",
             *([f"- **Uncertain because** {md_text(why)}."] if getattr(v, "uncertain", False) and why else []),
             *([f"- **No confidence:** {md_text(v.confidence_note)}."] if getattr(v, "confidence_note", "") else []),
             *[f"- **Note:** {md_text(note)}." for note in getattr(v, "notes", [])],
             f"- **Pipeline:** {md_text(result.pipeline)}", f"- **Model:** {md_text(result.model)}",
             f"- **Usage:** {md_text(usage_line(result))}", ""]
    record = defame_record(result)
    if record is not None:
        lines += _record_sections(record, result, image_url)
    answered = [it for it in check_items(result) if it["kind"] == "qa" and it["answer"] is not None]
    if answered:
        lines += ["## Reasoning steps", ""]
        for it in answered:
            note = "" if it["useful"] is not False else " *(discarded by the validator)*"
            lines += [f"### Step {md_text(it['depth'])}: {md_text(it['question'])}{note}", "",
                      f"**Answer:** {md_text(it['answer'])}", ""]
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
    lines += ["## Prediction with rationale", "", _md_strong(words.text), ""]
    if v.rationale and record is None:  # DEFAME's rationale is the justification, shown above
        lines += [md_text_links(v.rationale), ""]
    if v.parse_failures:
        lines += ["## What the model got wrong", ""] + [f"- {md_text(p)}" for p in v.parse_failures] + [""]
    by_stage = result.usage.get("by_stage", {})
    if by_stage:
        lines += ["## Usage by stage", "", "| stage | calls | prompt tokens | completion tokens | seconds |",
                  "|---|---:|---:|---:|---:|"]
        for stage, u in by_stage.items():
            lines.append(f"| {md_text(stage)} | {u['calls']} | {u['prompt_tokens']} | {u['completion_tokens']} | "
                         f"{u['seconds']:.2f} |")
        lines.append("")
    return "\n".join(lines)


_TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """Text for the terminal: control characters (escape sequences from a model or a page) as U+FFFD."""
    return _TERMINAL_CONTROL.sub("\ufffd", text)


SNIPPET = 200


def _snippet(text: Any) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


def _where(d: Mapping[str, Any]) -> str:
    """Which round or sample of an answering pipeline a LEAF item belongs to ("" for neither)."""
    if "round" in d:
        return f"round {d['round']} "
    if "sample" in d:
        return f"sample {d['sample']} "
    return ""


_HOW = {"constrained": " (tool scored, query written)", "fallback": " (fallback: the claim itself)"}
_ANSWER_HEADS = {"plain": "Answer", "rag": "Answer with retrieved passages",
                 "fc-rag": "Answer with fact-check knowledge"}


def item_lines(item: ViewItem) -> list[str]:
    """A view item as terminal text: its chunks (each one or more lines) in order. An item that fills in as the
    check goes on (a question card, a tool call) only grows at the end, so a printer shows the new chunks."""
    k = item["kind"]
    if k == "qa":
        dup = " (already asked; skipped)" if item.get("duplicate") else ""
        out = [f"\n[{item['depth']}] Q: {item['question']}{dup}"]
        if item.get("answer") is not None:
            evidence = item.get("evidence") or []
            out.append("\n".join([f"    A: {item['answer']}"] + [
                f"    {evidence_word(evidence)}: {e}" for e in evidence_lines(evidence, width=200)]))
        if item.get("useful") is not None:
            out.append("    validator: " + ("useful, kept" if item["useful"] else "not useful, discarded"))
        return out
    if k == "verifier":
        return [f"    verifier: {'enough to decide' if item['enough'] else 'not enough yet'}"]
    if k == "parse_failure":
        return [f"    ! {item['for_stage']}: unusable model output {str(item.get('raw', ''))[:80]!r}; "
                f"{item['fallback']}"]
    if k == "plan":
        acts = ", ".join(item["actions"]) or "no new action"
        line = f"\n[round {item['round']}] plan: {acts}{_HOW.get(item.get('how') or '', '')}"
        return [line + (f"\n    {item['note']}" if item.get("note") else "")]
    if k == "action":
        if item.get("error"):
            head = f"    {item['action']}: failed: {item['error']}"
        else:
            head = f"    {item['action']}: {len(item['results'])} results" + "".join(f"; {n}" for n in item["notes"])
        return [head] + [_summary_line(r) for r in item["results"] if r["summarized"]]
    if k == "summary":
        return [_summary_line(item)]
    if k == "develop":
        return [f"    reasoning: {item['text'][:300]}"]
    if k == "judge":
        conf = f" ({item['confidence']:.2f})" if item.get("confidence") is not None else ""
        return [f"    judgement: {item['label']}{conf}"]
    if k == "reasoning" and item.get("stage") == "evidence_verifier":  # what the sources read say, and which decided
        return ["    evidence verifier: " + " ".join(str(item.get("rationale") or item["label"]).split())]
    if k == "leaf":
        return [_leaf_lines(item)]
    if k == "leaf_score":
        return [f"  {_where(item)}LEAF score {item['score']:.2f} ({item['supported']} of {item['checked']} "
                "sentences supported)"]
    if k == "leaf_note":
        return [f"  note: {item['note']}"]
    if k == "mc_answer":
        d = item["data"]
        where = _where(d)
        head = _ANSWER_HEADS.get(d.get("kind", ""), "Answer")
        return [f"\n{where.capitalize()}{head[0].lower() if where else head[0]}{head[1:]}: option "
                f"{d.get('letter') or 'none'}\n    {_snippet(d.get('text', ''))}"]
    if k == "retrieval":  # each passage with its source and address (a Wikipedia article's title and URL)
        n = len(item["results"])
        return [f"Retrieved {n} passage{'' if n == 1 else 's'} for: {_snippet(item['query'])}"] + \
            [f"    [{i}] {line}" for i, line in enumerate(evidence_lines(item["results"], width=200), start=1)]
    if k == "fc_rag_round":
        d = item["data"]
        failed = ", ".join(str(i) for i in d.get("failed_sentences", []))
        return [f"\nFact-Check-Then-RAG round {d['round']}: score {d['score_before']:.2f}; "
                f"{len(d.get('knowledge', []))} passages from failed sentence(s) {failed} go in the prompt"]
    return []  # shown by the verdict and the report, not while the check runs


def _summary_line(r: Mapping[str, Any]) -> str:
    """A result of a DEFAME tool call and its summary."""
    src = r.get("url") or r.get("source") or "source"
    return f"      {src}: " + (str(r["summary"])[:200] if r.get("summary") else "not relevant")


def _leaf_lines(item: ViewItem) -> str:
    rating = item.get("rating") or "no decision (counted as not supported)"
    conf = f" ({item['confidence']:.2f})" if item.get("confidence") is not None else ""
    lines = [f"  [{item['index']}] {rating}{conf}: {item['sentence']}"]
    if item.get("read_as"):
        lines.append(f"      read as: {item['read_as']}")
    lines.append(f"      query: {item['query']}")
    for e in item.get("evidence") or []:
        src = e.get("source") or e.get("doc_id") or "passage"
        lines.append(f"      evidence: {_snippet(e.get('text', ''))} — {src}")
    if not item.get("evidence"):
        lines.append("      evidence: none found")
    if item.get("reasoning"):
        lines.append(f"      reasoning: {_snippet(item['reasoning'])}")
    return "\n".join(lines)


class TerminalPrinter:
    """A tracer listener that prints a check as it happens: each step folded into the view items (the one
    fold), and what the step added to them printed (`item_lines`), control characters shown as U+FFFD.
    `skip`: item kinds not printed (the caller prints them at the end)."""

    def __init__(self, write: Callable[[str], None] | None = None, *, skip: Iterable[str] = ()) -> None:
        from .registry import load_step_types

        load_step_types()  # steps given as stored dicts read back as their types
        self.fold = Fold()
        self.write = write or (lambda text: print(text, flush=True))
        self.skip = set(skip)
        self._shown: dict[int, int] = {}  # item index -> chunks printed

    def __call__(self, step: "Step | Mapping[str, Any]") -> None:
        for i in self.fold.add(step):
            item = self.fold.items[i]
            if item["kind"] in self.skip:
                continue
            chunks = item_lines(item)
            for chunk in chunks[self._shown.get(i, 0):]:
                self.write(terminal_text(chunk))
            self._shown[i] = len(chunks)

    @property
    def items(self) -> list[ViewItem]:
        return self.fold.items


_CSS = """
*,*::before,*::after{box-sizing:border-box}html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:48rem;margin:2rem auto;
padding:0 1rem;color:#1d232b;background:#fff;overflow-wrap:anywhere;word-wrap:break-word}
h1{font-size:1.5rem;line-height:1.3}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d5dbe3}
h3{font-size:1.05rem}blockquote{margin:.5rem 0;padding:.4rem .8rem;border-left:4px solid #9fb3c8;
background:#f4f7fa}ul,ol{padding-left:1.25rem}a,code{overflow-wrap:anywhere;word-break:break-word}
pre{max-width:100%;overflow-x:auto;white-space:pre}pre code{overflow-wrap:normal;word-break:normal}
.wide{max-width:100%;overflow-x:auto;margin:.75rem 0;background:linear-gradient(to right,#fff 30%,#fff0) left/2rem 100%
no-repeat local,linear-gradient(to left,#fff 30%,#fff0) right/2rem 100% no-repeat local,radial-gradient(farthest-side at
0 50%,#0004,#0000) left/.8rem 100% no-repeat scroll,radial-gradient(farthest-side at 100% 50%,#0004,#0000) right/.8rem
100% no-repeat scroll}.wide:focus-visible{outline:3px solid #1f6feb}table{border-collapse:collapse}
td,th{border:1px solid #d5dbe3;padding:.25rem .5rem;overflow-wrap:normal;word-break:normal}
td{text-align:right}td:first-child{text-align:left}a{color:#0b5cad}
img{max-width:100%;height:auto;max-height:24rem;object-fit:contain}
@media (max-width:30rem){body{margin:1rem auto;padding:0 .75rem}h1{font-size:1.3rem}}
"""
EMBED_LIMIT = 20_000_000  # local images larger than this stay links (the most `load_image` accepts)
_DATA_IMAGE = re.compile(r"data:image/(?:gif|png|jpeg|webp);", re.I)


def embed_local(path: str) -> str | None:
    """A local image file (one of the report's own, see `own_images`) as a data: URL; None when it is missing,
    too large or not an image."""
    from .errors import UserError
    from .images.files import load_image

    try:
        return load_image(path, max_bytes=EMBED_LIMIT).data_url()
    except (UserError, OSError, ValueError):
        return None


def _safe_targets(allowed: set[str], embed: Callable[[str], "str | None"]) -> Callable[[Any], None]:
    """A markdown-it core rule: links only to http(s) URLs; images only from http(s) URLs, data:image URLs, or
    the allowed local files (embedded by `embed`, else left as their path); every other link or image target
    dropped (its text kept)."""
    from markdown_it.token import Token

    def local(src: str) -> str | None:
        path = unquote(src)
        return path if path in allowed else None

    def rule(state: Any) -> None:
        for block in state.tokens:
            if block.type != "inline" or not block.children:
                continue
            out: list[Any] = []
            dropped_link = False
            for tok in block.children:
                if tok.type == "link_open":
                    dropped_link = not _HTTP.match(str(tok.attrGet("href") or ""))
                    if dropped_link:
                        continue
                elif tok.type == "link_close" and dropped_link:
                    dropped_link = False
                    continue
                elif tok.type == "image":
                    src = str(tok.attrGet("src") or "")
                    path = local(src)
                    if path is not None:
                        tok.attrSet("src", embed(path) or src)
                    elif not (_HTTP.match(src) or _DATA_IMAGE.match(src)):
                        text = Token("text", "", 0)
                        text.content = "".join(c.content for c in tok.children or [])
                        out.append(text)
                        continue
                out.append(tok)
            block.children = out

    return rule


def _scrolling_tables(md: Any) -> None:
    """Each table in a container that scrolls sideways when the table is wider than the page (a phone), with a
    shadow at the edge that hides more columns (`.wide` in _CSS): the cue that it scrolls. Focusable, so that the
    keyboard scrolls it too."""
    def table_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        return ('<div class="wide" role="region" aria-label="Table" tabindex="0">'
                + renderer.renderToken(tokens, idx, options, env))

    def table_close(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        return renderer.renderToken(tokens, idx, options, env) + "</div>\n"

    md.add_render_rule("table_open", table_open)
    md.add_render_rule("table_close", table_close)


def report_csp(img_src: str) -> str:
    """A report's Content-Security-Policy: no script, fetch, external style or form; images only from `img_src`."""
    return f"default-src 'none'; style-src 'unsafe-inline'; img-src {img_src}; base-uri 'none'; form-action 'none'"


def html_page(title: str, css: str, body: str, *, img_src: str = "data:") -> str:
    """One self-contained HTML page (every report's): its styles inline, and `report_csp` in a meta tag, so escaped
    text stays inert even if something unescaped slipped through."""
    csp = report_csp(img_src)
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{css}</style></head>\n<body>\n{body}</body></html>\n")


def markdown_to_html(markdown: str, title: str, images: Iterable[str] = (),
                     embed: Callable[[str], "str | None"] | None = None) -> str:
    """A Markdown report as one self-contained HTML page: the allowed local images embedded, remote ones linked.

    `images`: the local image files the page may show (`own_images`: the claim's own and DEFAME's evidence
    images, never a path from text); `embed` (path -> data: URL or URL, None to leave the path) defaults to
    `embed_local`. Raw HTML in the Markdown is escaped, never rendered; links go only to http(s) URLs, and an
    image shows only from an http(s) URL, a data:image URL or an allowed file.
    """
    from markdown_it import MarkdownIt

    allowed = {p for p in (_local_path(x) for x in images) if p}
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    md.disable(["html_block", "html_inline"])

    def validate(url: str) -> bool:
        return bool(_HTTP.match(url) or _DATA_IMAGE.match(url) or unquote(url) in allowed)

    md.validateLink = validate  # type: ignore[method-assign]
    md.core.ruler.push("veracity_safe_targets", _safe_targets(allowed, embed or embed_local))
    _scrolling_tables(md)
    # remote images stay linked; an own image too large to embed stays a file path
    return html_page(title, _CSS, md.render(markdown), img_src="data: https: http: file: 'self'")


def to_html(result: CheckResult) -> str:
    return markdown_to_html(to_markdown(result), f"Fact-check: {result.claim.text}", images=own_images(result))


def write_report(result: CheckResult, path: str) -> None:
    """Write the report as HTML (.html/.htm) or Markdown (anything else)."""
    write_report_as(result, path, to_html, to_markdown)


def write_report_as(subject: Any, path: str, html_of: Callable[[Any], str], markdown_of: Callable[[Any], str]) -> None:
    """Write `subject`'s report to `path`: `html_of(subject)` for .html/.htm, else `markdown_of(subject)`; a path
    that cannot be written is a UserError naming it. Shared by a claim's report and a text's (textcheck/report)."""
    from .errors import UserError

    text = html_of(subject) if Path(path).suffix.lower() in (".html", ".htm") else markdown_of(subject)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot write the report to {path}: {e.strerror}") from None
