"""LEAF figures from stored evaluation results (OUT/items.jsonl of `veracity eval`).

Everything here reads the `leaf_final` (and `leaf_samples`) trace steps the answer pipelines
stored; nothing is recomputed from a model.

- accuracy: share of items whose chosen option is the gold one;
- filtered accuracy: the same, over the answers whose LEAF score is 1.0 (every sentence
  supported), with how many passed;
- AUC: how well the LEAF score separates right from wrong answers (0.5 = not at all), by the rank
  (Mann-Whitney) formula with average ranks for ties;
- for `answer:rank-N`: accuracy of the highest- and lowest-scored of the N samples;
- `stated_accuracy` / `stated_auc`: the same with the option the answer's text itself names (read by
  `extract_letter`; an answer naming none counts as wrong) instead of the letter `choose` decided.
  On a small model the two can disagree, and the LEAF score judges the text.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


def auc(scores: list[float], positives: list[bool]) -> float | None:
    """Area under the ROC curve of `scores` for telling positives from negatives; None if one class is empty.

    Rank formula: AUC = (R+ - n+(n+ + 1)/2) / (n+ n-), where R+ is the sum of the positives' ranks
    (1 = lowest score; tied scores share their average rank).
    """
    if len(scores) != len(positives):
        raise ValueError("scores and labels differ in length")
    n_pos = sum(bool(p) for p in positives)
    n_neg = len(positives) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        avg = (i + j) / 2 + 1  # ranks i+1 .. j+1 averaged
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        i = j + 1
    r_pos = sum(r for r, p in zip(ranks, positives) if p)
    return (r_pos - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def read_rows(out: str | Path) -> list[dict[str, Any]]:
    """The rows of OUT/items.jsonl (a cut-off last line is skipped)."""
    from .report import load_rows

    return load_rows(out)


def _step(row: dict[str, Any], stage: str) -> dict[str, Any] | None:
    found = None
    for s in row.get("trace", []):
        if s.get("stage") == stage:
            found = s
    return found


def leaf_score(row: dict[str, Any]) -> float | None:
    """The LEAF score of the item's final answer, or None when the row is not from an answer pipeline."""
    final = _step(row, "leaf_final")
    return None if final is None else float(final["score"])


def summarize(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary per (dataset, pipeline) among rows that carry a LEAF score, in a stable order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if leaf_score(r) is not None:
            groups.setdefault((r["dataset"], r["pipeline"]), []).append(r)
    out = []
    for (dataset, pipeline), rs in sorted(groups.items()):
        scores = [leaf_score(r) for r in rs]
        correct = [bool(r["correct"]) for r in rs]
        passing = [c for s, c in zip(scores, correct) if s is not None and s >= 1.0]
        summary: dict[str, Any] = {
            "dataset": dataset,
            "pipeline": pipeline,
            "n": len(rs),
            "accuracy": sum(correct) / len(rs),
            "mean_score": sum(scores) / len(rs),
            "passing": len(passing),
            "filtered_accuracy": sum(passing) / len(passing) if passing else None,
            "auc": auc(scores, correct),
        }
        stated = [_step(r, "leaf_final").get("stated") == r["gold"] for r in rs]
        summary["stated_accuracy"] = sum(stated) / len(rs)
        summary["stated_auc"] = auc(scores, stated)
        samples = [(r, _step(r, "leaf_samples")) for r in rs]
        if all(s is not None for _, s in samples):
            hi = lo = 0
            for r, s in samples:
                drawn = s["samples"]
                top = max(drawn, key=lambda d: d["score"])
                bottom = min(drawn, key=lambda d: d["score"])
                hi += top["letter"] == r["gold"]
                lo += bottom["letter"] == r["gold"]
            summary["highest_accuracy"] = hi / len(rs)
            summary["lowest_accuracy"] = lo / len(rs)
        out.append(summary)
    return out


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def to_markdown(summaries: list[dict[str, Any]]) -> str:
    """A Markdown table of the summaries."""
    if not summaries:
        return "No results from answer pipelines (answer:plain, answer:rag, answer:fc-rag, answer:rank-N)."
    lines = [
        "| dataset | pipeline | n | accuracy | mean LEAF | passing (1.0) | filtered accuracy | AUC |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        auc_s = "–" if s["auc"] is None else f"{s['auc']:.3f}"
        lines.append(
            f"| {s['dataset']} | {s['pipeline']} | {s['n']} | {_pct(s['accuracy'])} | "
            f"{s['mean_score']:.3f} | {s['passing']} | {_pct(s['filtered_accuracy'])} | {auc_s} |"
        )
    ranked = [s for s in summaries if "highest_accuracy" in s]
    if ranked:
        lines += [
            "",
            "| dataset | pipeline | accuracy of highest-scored sample | of lowest-scored | Δ |",
            "|---|---|---:|---:|---:|",
        ]
        for s in ranked:
            lines.append(
                f"| {s['dataset']} | {s['pipeline']} | {_pct(s['highest_accuracy'])} | "
                f"{_pct(s['lowest_accuracy'])} | "
                f"{100 * (s['highest_accuracy'] - s['lowest_accuracy']):.1f} |"
            )
    return "\n".join(lines)
