"""What the pages show of a run, built from its stored trace steps (the same steps the SSE stream sends).

`group_steps` folds the flat step list into display items: one card per question (its answer,
evidence and the validator's decision), a line per verifier decision, parse failure or stop reason,
and the reasoning. static/app.js does the same fold as steps arrive live; the two must stay in step.
An answer check's `leaf_sentence` steps become one item per sentence (a disclosure with its query,
evidence and rating), `leaf_score` and `leaf_note` a line each. DEFAME's steps: `images` a line, `plan`
a card per round (its actions, fallback, rejected and unavailable tools), `action` a card per tool call
(error, notes, and each result with its link) to which the `summary` steps of that call attach, one per
result in order (the summary, or "not relevant"), `develop`, `judge` and `justify` a line each. Stages
the page does not know show as generic items, so nothing is hidden.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

SKIP = {"claim", "verdict", "model_call", "retrieval"}
REASONING = {"reasoner", "cot", "direct"}
STOP_REASONS = {
    "verifier": "the verifier judged the answers enough to decide",
    "max_iterations": "the most questions allowed were asked",
    "no_question": "no further question came",
}
EXAMPLES = [
    "Lars Onsager won the Nobel prize when he was 30 years old.",  # the QACheck paper's demo claim
    "The Eiffel Tower was finished before the Statue of Liberty was dedicated.",
    "Marie Curie won Nobel Prizes in two different sciences.",
    "The director of Inception was born in London.",
    "The Danube flows through more countries than any other river.",
]


def http_url(url: Any) -> str | None:
    """A URL the page may link to: http(s) only."""
    return url if isinstance(url, str) and url.startswith(("http://", "https://")) else None


def result_item(r: dict[str, Any]) -> dict[str, Any]:
    """One result of a DEFAME tool call, waiting for its summary."""
    return {"title": r.get("source") or r.get("url") or "result", "url": r.get("url"), "href": http_url(r.get("url")),
            "date": r.get("date"), "text": r.get("text") or "", "summarized": False, "summary": None}


def attach_summary(card: dict[str, Any], s: dict[str, Any]) -> bool:
    """Give a `summary` step to the next result of its tool call still without one (the summarizer goes
    through a call's results in order); False when none is left."""
    for r in card["results"]:
        if not r["summarized"] and (not s.get("url") or not r["url"] or r["url"] == s.get("url")):
            r.update(summarized=True, summary=s.get("summary"))
            return True
    return False


def source_link(text: str) -> dict[str, Any]:
    """A justification source, written as a Markdown link `[title](url)`, as a title and a URL."""
    m = re.fullmatch(r"\[(.*)\]\((\S+)\)", text.strip())
    return {"title": m.group(1), "url": http_url(m.group(2))} if m else {"title": text, "url": None}


_MD_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\((https?://[^\s()<>]{1,2000})\)")


def link_parts(text: str) -> list[dict[str, Any]]:
    """Text in which the model wrote Markdown links `[title](http...)`: [{"text", "href"}], href None for plain
    text, so the page can show the links as links (and everything else as text)."""
    parts, pos = [], 0
    for m in _MD_LINK.finditer(text):
        if m.start() > pos:
            parts.append({"text": text[pos:m.start()], "href": None})
        parts.append({"text": m.group(1), "href": m.group(2)})
        pos = m.end()
    if pos < len(text):
        parts.append({"text": text[pos:], "href": None})
    return parts


def group_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None  # the question card answers and validator decisions attach to
    calls: dict[tuple[Any, str], dict[str, Any]] = {}  # DEFAME: (round, action) -> its tool-call card
    for s in steps:
        st = s.get("stage")
        if st in SKIP:
            continue
        if st in DEFAME_STAGES:
            defame_item(items, calls, s)
            continue
        if st == "question":
            current = {"kind": "qa", "depth": s.get("depth"), "question": s.get("question", ""),
                       "duplicate": bool(s.get("duplicate")), "answer": None, "evidence": [], "useful": None}
            items.append(current)
        elif st == "answer" and current is not None and current["question"] == s.get("question"):
            current.update(answer=s.get("answer", ""), evidence=s.get("evidence", []), qa=s.get("qa"))
        elif st == "validator" and current is not None and current["question"] == s.get("question"):
            current["useful"] = s.get("useful")
        elif st == "verifier":
            items.append({"kind": "verifier", "depth": s.get("depth"), "enough": s.get("enough"),
                          "confidence": s.get("confidence")})
        elif st == "parse_failure":
            items.append({"kind": "parse_failure", "for_stage": s.get("for_stage"), "raw": s.get("raw", ""),
                          "fallback": s.get("fallback", "")})
        elif st == "context_done":
            items.append({"kind": "stop", "reason": STOP_REASONS.get(s.get("reason"), s.get("reason")),
                          "depth": s.get("depth")})
        elif st == "leaf_sentence":
            items.append({"kind": "leaf", "index": s.get("index"), "sentence": s.get("sentence", ""),
                          "query": s.get("query", ""), "evidence": s.get("evidence", []), "rating": s.get("rating"),
                          "supported": bool(s.get("supported")), "confidence": s.get("confidence"),
                          "reasoning": s.get("reasoning", "")})
        elif st == "leaf_score":
            items.append({"kind": "leaf_score", "score": s.get("score", 0.0), "supported": s.get("supported", 0),
                          "checked": s.get("checked", 0)})
        elif st == "leaf_note":
            items.append({"kind": "leaf_note", "note": s.get("note", "")})
        elif st in REASONING:
            items.append({"kind": "reasoning", "stage": st, "label": s.get("label"),
                          "rationale": s.get("rationale", ""), "confidence": s.get("confidence")})
        else:
            items.append({"kind": "other", "stage": st,
                          "data": {k: v for k, v in s.items() if k not in ("stage", "t")}})
    return items


DEFAME_STAGES = {"images", "plan", "action", "summary", "develop", "judge", "justify"}


def defame_item(items: list[dict[str, Any]], calls: dict[tuple[Any, str], dict[str, Any]], s: dict[str, Any]) -> None:
    st = s["stage"]
    if st == "images":
        items.append({"kind": "images", "refs": list(s.get("refs") or []),
                      "model_sees_images": bool(s.get("model_sees_images"))})
    elif st == "plan":
        items.append({"kind": "plan", "round": s.get("round"), "actions": list(s.get("actions") or []),
                      "fallback": bool(s.get("fallback")), "static": bool(s.get("static")),
                      "rejected": list(s.get("rejected") or []), "note": s.get("note"),
                      "unavailable": dict(s.get("unavailable") or {}) if s.get("round") == 1 else {}})
    elif st == "action":
        card = {"kind": "action", "round": s.get("round"), "action": s.get("action", ""), "error": s.get("error"),
                "notes": list(s.get("notes") or []), "results": [result_item(r) for r in s.get("results") or []]}
        calls[(s.get("round"), card["action"])] = card
        items.append(card)
    elif st == "summary":
        card = calls.get((s.get("round"), s.get("action", "")))
        if card is None or not attach_summary(card, s):  # a summary of no known result: shown on its own
            items.append({"kind": "summary", "round": s.get("round"), "action": s.get("action", ""),
                          "title": s.get("source") or s.get("url") or "result", "href": http_url(s.get("url")),
                          "summary": s.get("summary")})
    elif st == "develop":
        items.append({"kind": "develop", "round": s.get("round"), "text": s.get("text") or ""})
    elif st == "judge":
        items.append({"kind": "judge", "round": s.get("round"), "label": s.get("label"),
                      "confidence": s.get("confidence"), "findings": s.get("findings") or "",
                      "final": bool(s.get("final"))})
    elif st == "justify":
        items.append({"kind": "justify", "text": s.get("text") or "", "parts": link_parts(s.get("text") or ""),
                      "sources": [source_link(x) for x in dict.fromkeys(s.get("sources") or [])]})


def model_calls(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in steps if s.get("stage") == "model_call"]


def _moment(ts: Any) -> datetime | None:
    """A stored timestamp as a time, or None (not set, or not a time: a damaged row still reads)."""
    if not ts or not isinstance(ts, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(ts, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def iso(ts: float | None) -> str | None:
    t = _moment(ts)
    return t.isoformat(timespec="seconds") if t else None


def human_time(ts: float | None) -> str:
    t = _moment(ts)
    return t.strftime("%Y-%m-%d %H:%M UTC") if t else ""


def label_class(label: str | None) -> str:
    return {"Supported": "supported", "Refuted": "refuted"}.get(label or "", "other")


def source_of(e: dict[str, Any]) -> str:
    src = e.get("source") or "evidence"
    if e.get("doc_id") and not e.get("url"):
        src = f"{src} ({e['doc_id']})"
    return src
