"""AVeriTeC's shared-task output format and scores, from an evaluation run's rows.

The submission (`submission`): one object per claim,

    {"claim_id": ..., "claim": ..., "pred_label": one of the four labels, "justification": ...,
     "evidence": [{"question": ..., "answer": ..., "url": ..., "from": what the pair was made of}, ...]}

as the shared task's baseline writes it ("from" and "justification" are ours; the scorer reads
`pred_label` and each pair's question and answer). The pairs come from the pipeline's record:

- DEFAME: per finding (a result's summary that entered the record), the query of the action that found
  it as the question, the summary as the answer, the result's URL.
- QACheck: per step, its question and the QA module's answer, the URL of the answer's first evidence
  with one (none when the answer came from the model's memory).
- Retrieval baselines (verifier, lexical): per retrieved passage, the claim (their only query) as the
  question and the passage as the answer.
- Closed-book baselines (direct, cot): no evidence; every evidence score is 0.

The scores (`scores`), as the official scorer (the shared task's evaluate_veracity.py) computes them:
Q-only is the Hungarian-matched METEOR (meteor.py) between the first 10 predicted questions and the gold
questions, the matched sum divided by the number of gold questions; Q+A the same between the first 10
`question + " " + answer` strings and the gold ones (one per gold answer; a Boolean answer is followed by
". " and its explanation; a question with no answer reads "<question> No answer could be found."); the
AVeriTeC score counts a claim when its label is right and its Q+A score is above 0.25 (the scorer's test is
`score > 0.25`). Each is averaged over claims.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .datasets.averitec import AVERITEC_LABELS
from .datasets.records import Dataset
from .meteor import meteor, wordnet_source

MAX_QUESTIONS = 10  # the scorer reads the first 10 predicted pairs
THRESHOLD = 0.25
NO_ANSWER = "No answer could be found."
SCORES = "averitec_scores.json"
FALLBACK_LABEL = "Not Enough Evidence"  # written for a prediction outside the four labels (scored as wrong)


# --------------------------------------------------------------------------- the scorer


def hungarian(pred: list[str], gold: list[str], metric: Callable[[str, str], float] = meteor) -> float:
    """The best one-to-one matching of `pred` to `gold` by `metric(pred, gold)`, its sum divided by len(gold)."""
    if not gold:
        return 0.0
    if not pred:
        return 0.0
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    matrix = np.array([[metric(p, g) for g in gold] for p in pred], dtype=float)
    rows, cols = linear_sum_assignment(matrix, maximize=True)
    return float(matrix[rows, cols].sum()) / len(gold)


def gold_questions(questions: Iterable[dict[str, Any]]) -> list[str]:
    return [str(q.get("question") or "") for q in questions]


def gold_qa_strings(questions: Iterable[dict[str, Any]]) -> list[str]:
    """One string per gold answer: question, space, answer (Boolean: '. ' and its explanation)."""
    out = []
    for q in questions:
        answers = q.get("answers") or []
        if isinstance(answers, dict):
            answers = [answers]
        for a in answers:
            s = f"{q.get('question') or ''} {a.get('answer') or ''}"
            if a.get("answer_type") == "Boolean":
                s += ". " + str(a.get("boolean_explanation") or "")
            out.append(s)
        if not answers:
            out.append(f"{q.get('question') or ''} {NO_ANSWER}")
    return out


def claim_scores(
    evidence: list[dict[str, Any]],
    pred_label: str,
    gold_label: str,
    gold: list[dict[str, Any]],
    metric: Callable[[str, str], float] = meteor,
) -> dict[str, float]:
    """One claim's Q-only and Q+A scores, whether its label is right, and its AVeriTeC score (0 or 1)."""
    pairs = evidence[:MAX_QUESTIONS]
    q_only = hungarian([str(e.get("question") or "") for e in pairs], gold_questions(gold), metric)
    qa = hungarian([f"{e.get('question') or ''} {e.get('answer') or ''}" for e in pairs], gold_qa_strings(gold), metric)
    correct = pred_label == gold_label
    return {"q_only": q_only, "qa": qa, "correct": float(correct), "averitec": float(correct and qa > THRESHOLD)}


def mean_scores(per_claim: list[dict[str, float]]) -> dict[str, float]:
    n = len(per_claim)
    keys = ("correct", "q_only", "qa", "averitec")
    out = {k: (sum(c[k] for c in per_claim) / n if n else 0.0) for k in keys}
    out["accuracy"] = out.pop("correct")
    return {"n": n, **out}


# --------------------------------------------------------------------------- the pipelines' evidence

_QUOTED_ARG = re.compile(r"^\s*[a-z_]+\s*\(\s*[\"'“]?(.*?)[\"'”]?\s*\)\s*$", re.I | re.S)


def _defame_pairs(claim: str, trace: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    from ..defame.record import Record
    from ..types import Claim

    record = Record.from_steps(Claim(claim), trace)
    if record is None:
        return None
    pairs = []
    for r in record.rounds:
        queries = {run.action: run.argument for run in r.runs}
        for f in r.findings:
            m = _QUOTED_ARG.match(f.action or "")
            query = queries.get(f.action) or (m.group(1) if m else f.action)
            pairs.append(
                {
                    "question": query,
                    "answer": f.summary,
                    "url": f.url or "",
                    "from": f"DEFAME round {r.number}: the query of {f.action} as the question, the "
                    f"{'excerpt' if f.excerpt else 'summary'} of {f.source} as the answer",
                }
            )
    return pairs


def _qacheck_pairs(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pairs = []
    for s in steps:
        url = next((e.get("url") for e in s.get("evidence") or [] if e.get("url")), "") or ""
        pairs.append(
            {
                "question": s.get("question") or "",
                "answer": s.get("answer") or "",
                "url": url,
                "from": f"QACheck step {s.get('depth')}: its question and the QA module's answer"
                + ("" if url else " (no source URL)"),
            }
        )
    return pairs


def _retrieval_pairs(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pairs = []
    for step in trace:
        if step.get("stage") != "retrieval":
            continue
        for n, e in enumerate(step.get("results") or [], start=1):
            pairs.append(
                {
                    "question": step.get("query") or "",
                    "answer": e.get("text") or "",
                    "url": e.get("url") or "",
                    "from": f"retrieval: the query (the claim) as the question, passage {n} "
                    f"({e.get('source') or e.get('url') or 'source'}) as the answer",
                }
            )
    return pairs


def evidence_pairs(row: dict[str, Any], claim: str) -> list[dict[str, Any]]:
    """The question-answer pairs of one items.jsonl row, each saying what it came from (see the module)."""
    trace = row.get("trace") or []
    pairs = _defame_pairs(claim, trace)
    if pairs is not None:
        return pairs
    steps = (row.get("verdict") or {}).get("steps") or []
    if steps:
        return _qacheck_pairs(steps)
    return _retrieval_pairs(trace)


def submission_entry(row: dict[str, Any], claim_id: str, claim: str) -> dict[str, Any]:
    pred = row.get("pred") or ""
    entry = {
        "claim_id": int(claim_id) if str(claim_id).isdigit() else claim_id,
        "claim": claim,
        "pred_label": pred if pred in AVERITEC_LABELS else FALLBACK_LABEL,
        "justification": (row.get("verdict") or {}).get("rationale") or "",
        "evidence": evidence_pairs(row, claim),
    }
    if pred not in AVERITEC_LABELS:
        entry["pred_label_note"] = f"the pipeline said {pred!r}, not one of the four labels"
    return entry


# --------------------------------------------------------------------------- a run's outputs


def _ordered(rows: list[dict[str, Any]], dataset: Dataset) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    """Per pipeline, its (row, item) pairs of this dataset, in the dataset's order."""
    order = {it.id: (n, it) for n, it in enumerate(dataset.items)}
    out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    for r in rows:
        if r.get("dataset") == dataset.name and r.get("id") in order:
            out.setdefault(r["pipeline"], []).append((r, order[r["id"]][1]))
    for pairs in out.values():
        pairs.sort(key=lambda p: order[p[1].id][0])
    return out


def submission(rows: list[dict[str, Any]], dataset: Dataset, pipeline: str) -> list[dict[str, Any]]:
    """The submission of one pipeline's rows, in the dataset's order."""
    return [submission_entry(r, it.id, it.claim.text) for r, it in _ordered(rows, dataset).get(pipeline, [])]


def scores(rows: list[dict[str, Any]], dataset: Dataset) -> dict[str, dict[str, float]]:
    """Per pipeline: n, accuracy, q_only, qa and averitec (means over its claims; see the module)."""
    return {
        pipe: mean_scores(
            [
                claim_scores(
                    evidence_pairs(r, it.claim.text), r.get("pred") or "", it.gold, it.metadata.get("questions") or []
                )
                for r, it in pairs
            ]
        )
        for pipe, pairs in sorted(_ordered(rows, dataset).items())
    }


def write_outputs(
    out: str | Path, rows: list[dict[str, Any]], dataset: Dataset, submission_path: str | None = None
) -> dict[str, Any]:
    """OUT/averitec_scores.json (read by the report); with `submission_path`, the submission file too (one
    pipeline: that file; several: one file per pipeline, its name before the suffix)."""
    result = {"threshold": THRESHOLD, "meteor_wordnet": wordnet_source(), "pipelines": scores(rows, dataset)}
    Path(out, SCORES).write_text(json.dumps(result, indent=2), encoding="utf-8")
    if submission_path:
        pipes = sorted(result["pipelines"])
        for pipe in pipes:
            path = Path(submission_path)
            if len(pipes) > 1:
                path = path.with_name(f"{path.stem}.{pipe.replace(':', '_').replace('/', '_')}{path.suffix}")
            path.write_text(json.dumps(submission(rows, dataset, pipe), indent=1, ensure_ascii=False), encoding="utf-8")
            result.setdefault("written", []).append(str(path))
    return result


def report_lines(out: str | Path, dataset: str) -> list[str]:
    """The report's AVeriTeC table, from OUT/averitec_scores.json; nothing when there is none."""
    path = Path(out, SCORES)
    if dataset != "averitec" or not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pipes = data["pipelines"]
    except (ValueError, KeyError, OSError):
        return []
    lines = [
        "",
        "AVeriTeC shared-task scores (Hungarian-matched METEOR against the annotators' question-answer "
        f"pairs; AVeriTeC score: label right and Q+A above {data.get('threshold', THRESHOLD)}); "
        f"METEOR's synonym stage: {data.get('meteor_wordnet', '?')}:",
        "",
        "| pipeline | n | accuracy | Q-only | Q+A | AVeriTeC score |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for pipe, s in sorted(pipes.items()):
        lines.append(
            f"| {pipe} | {s['n']} | {100 * s['accuracy']:.2f} | {s['q_only']:.4f} | {s['qa']:.4f} | "
            f"{100 * s['averitec']:.2f} |"
        )
    return lines
