"""The evaluation report: a Markdown table per dataset x pipeline, confusion matrices, paper numbers."""

from __future__ import annotations

import json
import random
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..llm.base import NO_CONFIDENCES
from ..metrics import accuracy, expected_calibration_error, macro_f1, per_class, reliability_bins
from .averitec import report_lines as averitec_lines
from .runner import ITEMS, MANIFEST, read_done, read_manifest  # noqa: F401  (read_done keeps the file clean)


def bootstrap_ci(
    gold: Sequence[str], pred: Sequence[str], metric: Callable[[list, list], float], n: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile bootstrap interval of `metric` over items."""
    if not gold:
        return (0.0, 0.0)
    rng = random.Random(seed)
    idx = range(len(gold))
    vals = []
    for _ in range(n):
        s = [rng.choice(idx) for _ in idx]
        vals.append(metric([gold[i] for i in s], [pred[i] for i in s]))
    vals.sort()
    return vals[int(0.025 * n)], vals[min(n - 1, int(0.975 * n))]


def load_rows(out: str | Path) -> list[dict[str, Any]]:
    """The rows of OUT/items.jsonl (or of a results file given directly); a line cut off by a kill is skipped."""
    path = Path(out) / ITEMS if Path(out).is_dir() else Path(out)
    if not path.is_file():
        raise UserError(f"no evaluation results at {path}: run `veracity eval ... --out DIR` first")
    rows = []
    for line in path.read_bytes().split(b"\n"):
        try:
            row = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # a line cut off by a kill (maybe inside a UTF-8 character)
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def confusion_png(path: Path, gold: list[str], pred: list[str], labels: list[str], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = labels + sorted({p for p in pred if p not in labels})
    c = Counter(zip(gold, pred))
    mat = [[c[(g, p)] for p in cols] for g in labels]
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(cols), 1.4 + 0.9 * len(labels)))
    ax.imshow(mat, cmap="Blues")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    ax.set_title(title, fontsize=9)
    top = max(max(r) for r in mat) or 1
    for i, r in enumerate(mat):
        for j, v in enumerate(r):
            ax.text(j, i, str(v), ha="center", va="center", color="white" if v > top / 2 else "black")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _mean(rows: list[dict], f: Callable[[dict], float]) -> float:
    return statistics.mean(f(r) for r in rows) if rows else 0.0


def _majority_row(rows: list[dict[str, Any]], labels: list[str], metric: Callable[[list, list], float]) -> str:
    """The majority-class reference: always the commonest gold label of the items evaluated (by any pipeline)."""
    gold_by_item = {r["id"]: r["gold"] for r in rows}
    gold = list(gold_by_item.values())
    if not gold:
        return ""
    top = max(sorted(set(gold)), key=gold.count)
    pred = [top] * len(gold)
    return (
        f"| majority class ({top}) | {len(gold)} | {100 * metric(gold, pred):.2f} | "
        f"{100 * accuracy(gold, pred):.2f} | "
        f"{100 * macro_f1(gold, pred, labels):.2f} |  | 0.0 | 0.0 | 0 | 0 | $0.0000 | 0 |"
    )


def parse_failures_by_stage(rows: list[dict[str, Any]]) -> Counter:
    """How many parse failures each stage had over `rows` (the trace's `parse_failure` steps; a row stored without
    a trace counts its verdict's failure lines by their leading stage name)."""
    c: Counter = Counter()
    for r in rows:
        steps = [s for s in r.get("trace") or [] if s.get("stage") == "parse_failure"]
        if steps or r.get("trace"):
            c.update(s.get("for_stage") or "?" for s in steps)
        else:
            c.update(line.split(":", 1)[0].split(" (", 1)[0] for line in r["verdict"].get("parse_failures") or [])
    return c


def parse_failure_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Parse failures per stage and pipeline (0 everywhere is the goal: a decision made by `choose` cannot fail)."""
    out = []
    for pipe in sorted({r["pipeline"] for r in rows}):
        rs = [r for r in rows if r["pipeline"] == pipe]
        c = parse_failures_by_stage(rs)
        said = ", ".join(f"{stage} {n}" for stage, n in sorted(c.items())) or "none"
        out.append(
            f"- {pipe}: {said} ({sum(bool(r['verdict'].get('parse_failures')) for r in rs)} of {len(rs)} "
            "verdicts with any)"
        )
    return ["", "Parse failures per stage:", "", *out] if out else []


def confusion_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per pipeline: its confusion matrix beside the majority class; for DEFAME, how its verdicts were decided (by
    the sources, by the stated label prior, by the model) and the judge's calibration with that prior, in words."""
    out = []
    for pipe in sorted({r["pipeline"] for r in rows}):
        rs = [r for r in rows if r["pipeline"] == pipe]
        gold = Counter(r["gold"] for r in rs)
        top, n_top = gold.most_common(1)[0]
        labels = sorted(set(gold) | {r["pred"] for r in rs})
        c = Counter((r["gold"], r["pred"]) for r in rs)
        right = sum(r["gold"] == r["pred"] for r in rs)
        out += [
            "",
            f"{pipe}: confusion matrix (rows gold, columns predicted), n={len(rs)}; {100 * right / len(rs):.1f}% "
            f"right against {100 * n_top / len(rs):.1f}% for always {top}, the majority class:",
            "",
            "| gold \\ predicted | " + " | ".join(labels) + " | recall |",
            "|---|" + "---:|" * (len(labels) + 1),
        ]
        out += [
            f"| {g} | " + " | ".join(str(c[(g, p)]) for p in labels) + f" | {100 * c[(g, g)] / gold[g]:.0f}% |"
            for g in labels
            if gold[g]
        ]
        judged = [[s for s in r.get("trace") or [] if s.get("stage") == "judge"] for r in rs]
        by = Counter(j[-1].get("decided_by") for j in judged if j and j[-1].get("decided_by"))
        if by:
            from ..defame.judgement import describe, load_calibration

            said = {"verifier": "by the sources (the trained verifier's readings)", "prior": "by the stated prior"}
            out += [
                "",
                "Decided: " + "; ".join(f"{n} {said.get(k, 'by the ' + k)}" for k, n in by.most_common()) + ".",
                f"DEFAME's judge: {describe(load_calibration())}.",
            ]
    return ["", "Confusion matrices:", *out] if out else []


COVERAGES = (1.0, 0.8, 0.6, 0.4, 0.2)


def accuracy_at_coverage(rows: list[dict[str, Any]]) -> list[tuple[float, int, float]] | None:
    """(coverage, items kept, accuracy) when only the most confident share of the verdicts is kept; None when the
    pipeline gave no confidences. Verdicts without a confidence count as the least confident."""
    confs = [r["verdict"].get("confidence") for r in rows]
    if not rows or all(c is None for c in confs):
        return None
    ranked = sorted(
        rows, key=lambda r: -(r["verdict"].get("confidence") if r["verdict"].get("confidence") is not None else -1.0)
    )
    out = []
    for cov in COVERAGES:
        n = max(1, round(cov * len(ranked)))
        kept = ranked[:n]
        out.append((cov, n, sum(r["gold"] == r["pred"] for r in kept) / n))
    return out


def coverage_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Accuracy against coverage: how accurate each pipeline is on the verdicts it is most confident of."""
    table = []
    for pipe in sorted({r["pipeline"] for r in rows}):
        curve = accuracy_at_coverage([r for r in rows if r["pipeline"] == pipe])
        if curve:
            table.append(f"| {pipe} | " + " | ".join(f"{100 * acc:.1f}" for _, _, acc in curve) + " |")
    if not table:
        return []
    return [
        "",
        "Accuracy against coverage (only the most confident share of verdicts kept):",
        "",
        "| pipeline | " + " | ".join(f"{int(100 * c)}%" for c in COVERAGES) + " |",
        "|---|" + "---:|" * len(COVERAGES),
        *table,
    ]


def confident_rows(rows: list[dict[str, Any]]) -> tuple[list[float], list[bool]]:
    """(confidence, right?) of the verdicts that carry a confidence."""
    kept = [r for r in rows if r["verdict"].get("confidence") is not None]
    return [float(r["verdict"]["confidence"]) for r in kept], [r["gold"] == r["pred"] for r in kept]


def reliability_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Does the confidence mean what it says? Per pipeline: the expected calibration error, the accuracy of the
    verdicts not marked uncertain and their share, and accuracy per confidence bin (the reliability diagram)."""
    table, silent = [], []
    for pipe in sorted({r["pipeline"] for r in rows}):
        rs = [r for r in rows if r["pipeline"] == pipe]
        conf, correct = confident_rows(rs)
        if not conf:
            if any(r["verdict"].get("confidence_note") for r in rs):
                silent.append(pipe)
            continue
        decided = [r for r in rs if not r["verdict"].get("uncertain")]
        dec = (
            f"{100 * sum(r['gold'] == r['pred'] for r in decided) / len(decided):.1f} "
            f"({100 * len(decided) / len(rs):.0f}% of verdicts)"
            if decided
            else "- (all uncertain)"
        )
        bins = " ".join(
            f"{lo:.1f}-{hi:.1f}: {100 * acc:.0f}% of {n}" for lo, hi, n, _, acc in reliability_bins(conf, correct)
        )
        table.append(f"| {pipe} | {expected_calibration_error(conf, correct):.3f} | {dec} | {bins} |")
    said = [f"No confidences for {', '.join(silent)}: {NO_CONFIDENCES}."] if silent else []
    if not table:
        return ["", *said] if said else []
    return [
        "",
        "Reliability (is a verdict of confidence c right c of the time?):",
        "",
        "| pipeline | ECE | accuracy of decided (not uncertain) verdicts | accuracy by confidence bin |",
        "|---|---:|---:|---|",
        *table,
        *([""] + said if said else []),
    ]


def reliability_png(path: Path, rows: list[dict[str, Any]], title: str) -> bool:
    """A reliability diagram: accuracy against mean confidence per bin, the diagonal for a calibrated model,
    and how many verdicts each bin holds. False (nothing written) when the pipeline gave no confidences."""
    conf, correct = confident_rows(rows)
    if not conf:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = reliability_bins(conf, correct)
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    ax.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1, label="calibrated")
    ax.bar(
        [(lo + hi) / 2 for lo, hi, *_ in bins],
        [acc for *_, acc in bins],
        width=0.09,
        color="#4a7ab5",
        alpha=0.8,
        label="accuracy",
    )
    ax.plot([c for *_, c, _ in bins], [acc for *_, acc in bins], "o", color="#c0392b", label="mean confidence")
    for lo, hi, n, _, acc in bins:
        ax.annotate(str(n), ((lo + hi) / 2, min(acc + 0.02, 0.97)), ha="center", fontsize=7)
    ax.set(
        xlim=(0, 1),
        ylim=(0, 1),
        xlabel="confidence",
        ylabel="accuracy",
        title=f"{title}\nECE {expected_calibration_error(conf, correct):.3f}",
    )
    ax.title.set_fontsize(9)
    ax.legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def build_report(out: str | Path, *, plots: bool = True) -> str:
    out = Path(out)
    read_done(out)
    rows = load_rows(out)
    manifest = read_manifest(out)
    lines = [
        "# Evaluation report",
        "",
        f"- **Model:** {manifest.get('model', '?')} ({manifest.get('backend', '?')})",
        f"- **Results:** `{out}`",
        "",
    ]
    datasets = manifest.get("datasets", {})
    for ds in sorted({r["dataset"] for r in rows}):
        info = datasets.get(ds, {})
        labels = info.get("labels") or sorted({r["gold"] for r in rows if r["dataset"] == ds})
        metric_name = info.get("metric", "macro_f1")
        metric = (lambda g, p: macro_f1(g, p, labels)) if metric_name == "macro_f1" else accuracy  # noqa: B023
        lines += [
            f"## {ds}",
            "",
            f"Setting: {info.get('setting', '?')}; slice: {info.get('selected', '?')} of "
            f"{info.get('total_items', '?')} items (seed {info.get('seed', '?')}); metric: {metric_name}."
            + (f" **Stopped early: {info['stopped']}.**" if info.get("stopped") else ""),
            "",
        ]
        ref = info.get("reference", {})
        lines += [
            "| pipeline | n | " + metric_name + " (95% CI) | accuracy | macro-F1 | paper | s/claim | "
            "calls/claim | prompt tok/claim | compl. tok/claim | cost/claim | parse failures |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for pipe in sorted({r["pipeline"] for r in rows if r["dataset"] == ds}):
            rs = [r for r in rows if r["dataset"] == ds and r["pipeline"] == pipe]
            gold, pred = [r["gold"] for r in rs], [r["pred"] for r in rs]
            lo, hi = bootstrap_ci(gold, pred, metric)
            tot = lambda k: _mean(rs, lambda r: r["usage"]["total"].get(k, 0))  # noqa: E731, B023 (used in this pass)
            paper = ref.get(pipe, ref.get(pipe.split("-")[0]))
            lines.append(
                f"| {pipe} | {len(rs)} | {100 * metric(gold, pred):.2f} ({100 * lo:.1f}–{100 * hi:.1f}) | "
                f"{100 * accuracy(gold, pred):.2f} | {100 * macro_f1(gold, pred, labels):.2f} | "
                f"{'' if paper is None else f'{paper:.2f}'} | {_mean(rs, lambda r: r['seconds']):.1f} | "
                f"{tot('calls'):.1f} | {tot('prompt_tokens'):.0f} | {tot('completion_tokens'):.0f} | "
                f"${tot('cost'):.4f} | {sum(bool(r['verdict'].get('parse_failures')) for r in rs)} |"
            )
            if plots:
                png = out / f"confusion_{ds}_{pipe}.png".replace(":", "_").replace("/", "_")
                confusion_png(png, gold, pred, labels, f"{ds} / {pipe} (n={len(rs)})")
        lines.append(_majority_row([r for r in rows if r["dataset"] == ds], labels, metric))
        lines.append("")
        if ref:
            lines += [f"Paper numbers: {info.get('reference_note', '')} (same metric, different model).", ""]
        lines += ["Per-class precision / recall:", ""]
        for pipe in sorted({r["pipeline"] for r in rows if r["dataset"] == ds}):
            rs = [r for r in rows if r["dataset"] == ds and r["pipeline"] == pipe]
            pc = per_class([r["gold"] for r in rs], [r["pred"] for r in rs], labels)
            lines.append(
                f"- {pipe}: "
                + "; ".join(
                    f"{k} P {100 * v['precision']:.0f} R {100 * v['recall']:.0f} (n={v['support']})"
                    for k, v in pc.items()
                )
            )
        lines += confusion_lines([r for r in rows if r["dataset"] == ds])
        lines += parse_failure_lines([r for r in rows if r["dataset"] == ds])
        lines += averitec_lines(out, ds)
        lines += coverage_lines([r for r in rows if r["dataset"] == ds])
        lines += reliability_lines([r for r in rows if r["dataset"] == ds])
        if plots:
            lines += [
                "",
                *[
                    f"![{ds} {p}](confusion_{ds}_{p}.png)".replace(":", "_")
                    for p in sorted({r["pipeline"] for r in rows if r["dataset"] == ds})
                ],
            ]
            for pipe in sorted({r["pipeline"] for r in rows if r["dataset"] == ds}):
                name = f"reliability_{ds}_{pipe}.png".replace(":", "_").replace("/", "_")
                if reliability_png(
                    out / name, [r for r in rows if r["dataset"] == ds and r["pipeline"] == pipe], f"{ds} / {pipe}"
                ):
                    lines.append(f"![{ds} {pipe} reliability]({name})")
        lines.append("")
    text = "\n".join(lines)
    (out / "report.md").write_text(text, encoding="utf-8")
    return text
