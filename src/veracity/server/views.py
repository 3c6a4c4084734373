"""What the pages show of a run, built from its stored trace steps (the same steps the SSE stream sends).

`group_steps` folds the flat step list into display items: one card per question (its answer,
evidence and the validator's decision), a line per verifier decision, parse failure or stop reason,
and the reasoning. static/app.js does the same fold as steps arrive live; the two must stay in step.
An answer check's `leaf_sentence` steps become one item per sentence (a disclosure with its query,
evidence and rating), `leaf_score` and `leaf_note` a line each. Stages the page does not know yet
(DEFAME's) show as generic items, so nothing is hidden.
"""

from __future__ import annotations

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


def group_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None  # the question card answers and validator decisions attach to
    for s in steps:
        st = s.get("stage")
        if st in SKIP:
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


def model_calls(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in steps if s.get("stage") == "model_call"]


def iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds") if ts else None


def human_time(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if ts else ""


def label_class(label: str | None) -> str:
    return {"Supported": "supported", "Refuted": "refuted"}.get(label or "", "other")


def source_of(e: dict[str, Any]) -> str:
    src = e.get("source") or "evidence"
    if e.get("doc_id") and not e.get("url"):
        src = f"{src} ({e['doc_id']})"
    return src
