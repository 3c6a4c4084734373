"""Two trained verifiers side by side on their held-apart figures (`veracity verifier compare A B`).

New weights ship only when they beat the shipped ones on the held-apart table (the model card's figures, written
by the calibration into verifier.json). This reads both folders' figures for the decision each ships (the
cross-encoder alone or the stacker: its `chosen`), or for one named model, over the sets both were measured on,
and says per set and in all which is better: the mean macro-F1, the sets better and worse, and the sets whose
expected calibration error is within the goal.

The held-apart sets a calibration measures depend on its seed where they are drawn (a source with more held-apart
pairs than the cap, the made pairs: two-part, joined, off-topic, other subject): a training run calibrates with the
training's seed, so two folders calibrated with different seeds are measured partly on different pairs. The
comparison says so, and how to measure both alike (`veracity verifier calibrate --seed`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ...errors import UserError

ECE_GOAL = 0.05  # a set's confidence is called calibrated at or below this expected calibration error


@dataclass
class Comparison:
    model_a: str
    model_b: str
    rows: list[tuple[str, dict, dict]]  # (set, A's figures, B's figures), sets both were measured on, by name
    only_a: list[str]
    only_b: list[str]
    seeds: tuple[int | None, int | None]  # each side's calibration seed

    def mean(self, side: int) -> float:
        return sum(r[1 + side]["macro_f1"] for r in self.rows) / len(self.rows)

    def counts(self) -> tuple[int, int]:
        """Sets where B's macro-F1 is higher, and lower, than A's."""
        return (
            sum(b["macro_f1"] > a["macro_f1"] for _, a, b in self.rows),
            sum(b["macro_f1"] < a["macro_f1"] for _, a, b in self.rows),
        )

    def calibrated(self, side: int) -> int:
        return sum(r[1 + side]["ece"] <= ECE_GOAL for r in self.rows)


def calibration_seed(settings: dict) -> int | None:
    """The seed of the calibration that measured a folder's figures (a training run's own: the training's)."""
    return settings.get("calibrated_with", settings.get("settings", {})).get("seed")


def read_settings(folder: Path) -> dict:
    f = folder / "verifier.json"
    if not f.is_file():
        raise UserError(
            f"{folder}: no verifier.json (a folder written by `veracity verifier train`, `calibrate` or `average`)"
        )
    settings = json.loads(f.read_text(encoding="utf-8"))
    if not settings.get("figures"):
        raise UserError(
            f"{folder}: verifier.json has no held-apart figures; calibrate it first "
            f"(`veracity verifier calibrate --out {folder}`)"
        )
    return settings


def _figures(settings: dict, model: str | None, folder: Path) -> tuple[str, dict]:
    name = model or settings.get("chosen") or "cross_encoder"
    figures = settings["figures"].get(name)
    if not figures:
        raise UserError(f"{folder}: no figures for '{name}' (it has {', '.join(settings['figures'])})")
    return name, figures


def compare(a: Path, b: Path, model: str | None = None) -> Comparison:
    """A (the verifier to beat) against B, for the decision each ships or for `model` in both."""
    settings_a, settings_b = read_settings(a), read_settings(b)
    name_a, fig_a = _figures(settings_a, model, a)
    name_b, fig_b = _figures(settings_b, model, b)
    common = sorted(set(fig_a) & set(fig_b))
    if not common:
        raise UserError(f"{a} and {b} were measured on no set in common")
    return Comparison(
        name_a,
        name_b,
        [(s, fig_a[s], fig_b[s]) for s in common],
        sorted(set(fig_a) - set(fig_b)),
        sorted(set(fig_b) - set(fig_a)),
        (calibration_seed(settings_a), calibration_seed(settings_b)),
    )


def render(c: Comparison, label_a: str, label_b: str) -> str:
    """A Markdown table per set and the summary lines."""
    lines = [
        f"A: {label_a} ({c.model_a})",
        f"B: {label_b} ({c.model_b})",
        "",
        "| set | n | macro-F1 A | macro-F1 B | B - A | top-20% A | top-20% B | ECE A | ECE B |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, a, b in c.rows:
        n = str(a["n"]) if a["n"] == b["n"] else f"{a['n']} / {b['n']}"
        lines.append(
            f"| {name} | {n} | {a['macro_f1']:.1f} | {b['macro_f1']:.1f} | "
            f"{b['macro_f1'] - a['macro_f1']:+.1f} | {a['top20_accuracy']:.1f} | {b['top20_accuracy']:.1f} | "
            f"{a['ece']:.3f} | {b['ece']:.3f} |"
        )
    return "\n".join(lines + [""] + summary(c))


def summary(c: Comparison) -> list[str]:
    """The mean macro-F1, the sets better and worse, the sets calibrated, and the sets not compared."""
    better, worse = c.counts()
    lines = [
        f"mean macro-F1 over {len(c.rows)} sets: A {c.mean(0):.2f}, B {c.mean(1):.2f} "
        f"({c.mean(1) - c.mean(0):+.2f}); B better on {better}, worse on {worse}",
        f"ECE at most {ECE_GOAL}: A on {c.calibrated(0)}, B on {c.calibrated(1)} of {len(c.rows)} sets",
    ]
    if c.only_a or c.only_b:
        lines.append(
            f"not compared (measured on one side only): A {', '.join(c.only_a) or 'none'}; "
            f"B {', '.join(c.only_b) or 'none'}"
        )
    if c.seeds[0] != c.seeds[1]:
        lines.append(
            f"calibrated with different seeds (A {c.seeds[0]}, B {c.seeds[1]}): the sets drawn by seed "
            f"(capped sources, made pairs) hold different pairs; for a like-for-like table calibrate a copy "
            f"of B with `veracity verifier calibrate --out COPY --seed {c.seeds[0]}`"
        )
    return lines
