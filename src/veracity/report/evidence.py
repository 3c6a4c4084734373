"""Evidence as lines, for the terminal and for Markdown (escaped, linked), what a question's evidence is called, and
long text cut to a snippet."""

from __future__ import annotations

from typing import Any

from ..steps import MEMORY_SOURCE, evidence_license, evidence_when
from .markdown import md_link, md_text


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


SNIPPET = 200


def snippet(text: Any) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"
