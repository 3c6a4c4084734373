"""A check as terminal text: each view item's lines (`item_lines`), printed as the steps arrive (`TerminalPrinter`),
control characters shown as U+FFFD (`terminal_text`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..steps import Fold, Step, ViewItem
from .evidence import evidence_lines, evidence_word, snippet

_TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """Text for the terminal: control characters (escape sequences from a model or a page) as U+FFFD."""
    return _TERMINAL_CONTROL.sub("\ufffd", text)


def _where(d: Mapping[str, Any]) -> str:
    """Which round or sample of an answering pipeline a LEAF item belongs to ("" for neither)."""
    if "round" in d:
        return f"round {d['round']} "
    if "sample" in d:
        return f"sample {d['sample']} "
    return ""


_HOW = {"constrained": " (tool scored, query written)", "fallback": " (fallback: the claim itself)"}
_ANSWER_HEADS = {
    "plain": "Answer",
    "rag": "Answer with retrieved passages",
    "fc-rag": "Answer with fact-check knowledge",
}


def item_lines(item: ViewItem) -> list[str]:
    """A view item as terminal text: its chunks (each one or more lines) in order. An item that fills in as the
    check goes on (a question card, a tool call) only grows at the end, so a printer shows the new chunks."""
    k = item["kind"]
    if k == "qa":
        dup = " (already asked; skipped)" if item.get("duplicate") else ""
        out = [f"\n[{item['depth']}] Q: {item['question']}{dup}"]
        if item.get("answer") is not None:
            evidence = item.get("evidence") or []
            out.append(
                "\n".join(
                    [f"    A: {item['answer']}"]
                    + [f"    {evidence_word(evidence)}: {e}" for e in evidence_lines(evidence, width=200)]
                )
            )
        if item.get("useful") is not None:
            out.append("    validator: " + ("useful, kept" if item["useful"] else "not useful, discarded"))
        return out
    if k == "verifier":
        return [f"    verifier: {'enough to decide' if item['enough'] else 'not enough yet'}"]
    if k == "parse_failure":
        return [
            f"    ! {item['for_stage']}: unusable model output {str(item.get('raw', ''))[:80]!r}; {item['fallback']}"
        ]
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
        return [
            f"  {_where(item)}LEAF score {item['score']:.2f} ({item['supported']} of {item['checked']} "
            "sentences supported)"
        ]
    if k == "leaf_note":
        return [f"  note: {item['note']}"]
    if k == "published_factchecks":  # before the check's own steps: what fact-checkers already published
        from ..factchecks.steps import match_line

        return [f"Published fact-checks: {item['summary']}"] + [f"    {match_line(m)}" for m in item["matches"]]
    if k == "mc_answer":
        d = item["data"]
        where = _where(d)
        head = _ANSWER_HEADS.get(d.get("kind", ""), "Answer")
        return [
            f"\n{where.capitalize()}{head[0].lower() if where else head[0]}{head[1:]}: option "
            f"{d.get('letter') or 'none'}\n    {snippet(d.get('text', ''))}"
        ]
    if k == "retrieval":  # each passage with its source and address (a Wikipedia article's title and URL)
        n = len(item["results"])
        return [f"Retrieved {n} passage{'' if n == 1 else 's'} for: {snippet(item['query'])}"] + [
            f"    [{i}] {line}" for i, line in enumerate(evidence_lines(item["results"], width=200), start=1)
        ]
    if k == "fc_rag_round":
        d = item["data"]
        failed = ", ".join(str(i) for i in d.get("failed_sentences", []))
        return [
            f"\nFact-Check-Then-RAG round {d['round']}: score {d['score_before']:.2f}; "
            f"{len(d.get('knowledge', []))} passages from failed sentence(s) {failed} go in the prompt"
        ]
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
        lines.append(f"      evidence: {snippet(e.get('text', ''))} — {src}")
    if not item.get("evidence"):
        lines.append("      evidence: none found")
    if item.get("reasoning"):
        lines.append(f"      reasoning: {snippet(item['reasoning'])}")
    return "\n".join(lines)


class TerminalPrinter:
    """A tracer listener that prints a check as it happens: each step folded into the view items (the one
    fold), and what the step added to them printed (`item_lines`), control characters shown as U+FFFD.
    `skip`: item kinds not printed (the caller prints them at the end)."""

    def __init__(self, write: Callable[[str], None] | None = None, *, skip: Iterable[str] = ()) -> None:
        from ..registry import load_step_types

        load_step_types()  # steps given as stored dicts read back as their types
        self.fold = Fold()
        self.write = write or (lambda text: print(text, flush=True))
        self.skip = set(skip)
        self._shown: dict[int, int] = {}  # item index -> chunks printed

    def __call__(self, step: Step | Mapping[str, Any]) -> None:
        for i in self.fold.add(step):
            item = self.fold.items[i]
            if item["kind"] in self.skip:
                continue
            chunks = item_lines(item)
            for chunk in chunks[self._shown.get(i, 0) :]:
                self.write(terminal_text(chunk))
            self._shown[i] = len(chunks)

    @property
    def items(self) -> list[ViewItem]:
        return self.fold.items
