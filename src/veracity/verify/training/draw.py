"""What a training reads of the mix: its draw (at most so many pairs, and of each source), long pairs fitted to
windows, the mix drawn again as an earlier training drew it, and the counts verifier.json and the model card keep."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ...errors import UserError
from ..windows import token_counter
from .data import Pair, TrainingData, build
from .long_pairs import fit_long_pairs
from .settings import LONG_PAIRS_MODES, TrainSettings


def training_draw(pairs: list[Pair], limit: int | None = None, per_source: int | None = None) -> list[Pair]:
    """The pairs a training reads, in the mix's (seeded, shuffled) order: at most `per_source` of each source, so
    that the large sources (VitaminC: 15,000 of the 86,000) do not set the style and the small ones (Check-COVID,
    SummEdits, FEVER-Symmetric: 1,000-1,500) are read as often as the rest; then the first `limit`."""
    if per_source:
        taken: Counter = Counter()
        kept = []
        for p in pairs:
            if taken[p.source] < per_source:
                taken[p.source] += 1
                kept.append(p)
        pairs = kept
    return pairs[:limit] if limit else pairs


def fitted_draw(pool: list[Pair], made: Mapping, tok, max_length: int) -> tuple[list[Pair], dict | None]:
    """The pairs a training with settings `made` (limit, per_source, long_pairs) read: its draw, and with
    `long_pairs` "window" each long pair fitted to a window or dropped, with "window-or-cut" fitted or kept cut
    (long_pairs.py; what it did, per source, is the second value)."""
    if made.get("long_pairs", "cut") not in LONG_PAIRS_MODES:
        raise UserError(f"long_pairs {made['long_pairs']!r}: one of {', '.join(LONG_PAIRS_MODES)}")
    seen = training_draw(pool, made.get("limit"), made.get("per_source"))
    if made.get("long_pairs", "cut") == "cut":
        return seen, None
    seen, fitted = fit_long_pairs(
        seen, token_counter(tok), max_length, keep_unsure=made["long_pairs"] == "window-or-cut"
    )
    return seen, fitted.to_json()


def trained_pool(training_dir: Path, trained_with: dict, s: TrainSettings, data: TrainingData) -> list[Pair]:
    """The training mix as the training that made these weights shuffled it (its seed and same-subject pairs,
    recorded in verifier.json's settings): `data`'s own when the calibration's are the same, else built again with
    the training's."""
    seed, same = trained_with.get("seed", s.seed), trained_with.get("same_subject", 0)
    if (seed, same) == (s.seed, s.same_subject):
        return data.train
    return build(training_dir, seed=seed, same_subject=same).train


def count_draws(folders: list[dict], training_dir: Path, s: TrainSettings, data: TrainingData, tok) -> None:
    """The training draw of each averaged folder (and of the folders an averaged one was made of), counted from its
    training's settings where its own calibration did not count it (stopped, or never run)."""
    for folder in folders:
        if "averaged_from" in folder:
            count_draws(folder["averaged_from"], training_dir, s, data, tok)
        elif "data" not in folder:
            made = folder.get("settings", {})
            seen, _ = fitted_draw(
                trained_pool(training_dir, made, s, data), made, tok, made.get("max_length", TrainSettings.max_length)
            )
            folder["data"] = draw_counts(seen)


def draw_counts(seen: list[Pair]) -> dict:
    """How many pairs a training read, in all and by source (verifier.json's `data`, the model card's sizes)."""
    return {"train_pairs": len(seen), "train_by_source": dict(Counter(p.source for p in seen).most_common())}


def cut_by_source(pairs: list[Pair], tok, max_length: int) -> dict[str, list[int]]:
    """Per source, [its pairs longer than `max_length` word pieces, its pairs]: the ones training cut, so that their
    label may not hold for what the model read (a supported pair whose supporting sentence was cut); the sources
    most cut first. Tells whoever trains what a longer --max-length would read."""
    size: Counter = Counter(p.source for p in pairs)
    cut: Counter = Counter()
    for start in range(0, len(pairs), 1024):
        chunk = pairs[start : start + 1024]
        ids = tok([p.claim for p in chunk], [p.evidence for p in chunk], verbose=False)["input_ids"]
        cut.update(p.source for p, x in zip(chunk, ids) if len(x) > max_length)
    return {src: [cut[src], size[src]] for src in sorted(size, key=lambda x: (-cut[x] / size[x], x))}
