"""Benchmark datasets and the user's own claim files, loaded into one shape for evaluation.

    from veracity.eval.datasets import load_dataset
    ds = load_dataset("feverous-s", "../shared/benchmarks/feverous_s/dev_600.json")
    ds = load_dataset("hover-3", "../shared/benchmarks")          # a folder: the set's usual file in it
    ds = load_dataset("mirage:pubmedqa", "../shared/benchmarks/mirage/benchmark_750.json")
    ds = load_dataset("jsonl", "my_claims.jsonl")

A `Dataset` (records.py) holds `EvalItem`s (a `Claim`, its gold label in the dataset's own label set, the item's
own evidence documents when the setting gives them, and metadata for reports), the label set and the
metric the paper reports, a pooled `knowledge_base` in pooled settings, the paper's numbers to print
beside ours (`reference`, by pipeline name, with `reference_note` saying whose they are), and a
`label_map` from a pipeline's labels (Supported / Refuted) onto the dataset's.

What a pipeline may see: `item.claim`, `item.evidence` and `dataset.knowledge_base`. `item.metadata`
is for reports and analysis; it can give the answer away (AVeriTeC's justification and QA pairs,
HoVer's supporting facts, VERITE's image file names) and must not be shown to a pipeline.

Benchmark sets (the data lives in ../shared/benchmarks, next to the project; never copy it here), each read by
its own module, whose docstring says how: feverous.py (`feverous-s`), hover.py (`hover`, `hover-2`, `hover-3`,
`hover-4`), averitec.py (`averitec`), verite.py (`verite`), mirage.py (`mirage`, `mirage:TASK`). The user's own
claims, `jsonl` and `csv`: user_claims.py (their fields). files.py reads the files for all of them.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from veracity.errors import UserError

from .averitec import load_averitec
from .feverous import load_feverous
from .files import SHARED_HINT
from .hover import load_hover
from .mirage import load_mirage
from .records import EVIDENCE_TITLES, Dataset, EvalItem
from .user_claims import load_user_claims
from .verite import load_verite

DATASETS: dict[str, str] = {
    "feverous-s": "FEVEROUS-S dev, 600 claims, Supported/Refuted, macro-F1; settings gold-evidence "
    "(default: each claim's gold Wikipedia sentences), pooled (all sentences in one corpus) or open-domain (no "
    "evidence: the Wikipedia knowledge base, or --index, is searched)",
    "hover": "HoVer dev, 100 claims per file (hover-2, hover-3, hover-4 pick the file), "
    "Supported/Refuted, macro-F1; closed-book (no evidence text offline)",
    "averitec": "AVeriTeC dev, 200 claims, 4 labels, accuracy; settings pooled (default: all "
    "annotators' answers in one corpus), gold-evidence, closed-book",
    "verite": "VERITE, 1,001 image captions, true/miscaptioned/out-of-context, accuracy; text only "
    "(image URLs in metadata)",
    "mirage": "MIRAGE, 750 medical multiple-choice questions (mirage:medqa, :medmcqa, :pubmedqa, "
    ":bioasq, :mmlu for one task of 150), option letters, accuracy",
    "jsonl": "your claims, one JSON object per line: claim, label, optional id, date, images, evidence",
    "csv": "your claims, a CSV file with a header: claim, label, optional id, date, images, evidence",
}

# where each benchmark sits under ../shared/benchmarks
DEFAULT_FILES: dict[str, str] = {
    "feverous-s": "feverous_s/dev_600.json",
    "hover-2": "hover/two_hop_100.json",
    "hover-3": "hover/three_hop_100.json",
    "hover-4": "hover/four_hop_100.json",
    "averitec": "averitec/dev_200.json",
    "verite": "verite/VERITE.csv",
    "mirage": "mirage/benchmark_750.json",
}


def covered_subset(dataset: Dataset, titles: set[str]) -> Dataset:
    """The items whose subject `titles` cover: one of the Wikipedia articles of their gold evidence (FEVEROUS-S), or
    the article a claim of your own names in its `subject` field, is among them (compared without regard to case).
    A UserError for a dataset whose items name no article."""

    def named(item: EvalItem) -> list[str]:
        subject = item.metadata.get("subject")
        return list(item.metadata.get(EVIDENCE_TITLES, ())) + ([subject] if isinstance(subject, str) else [])

    if not any(named(it) for it in dataset.items):
        raise UserError(
            f"{dataset.name} does not name the Wikipedia articles its claims are about, so which claims "
            "the knowledge base covers cannot be told (feverous-s does; a claims file can give each "
            "claim a 'subject')"
        )
    folded = {t.casefold() for t in titles}
    items = [it for it in dataset.items if any(t.casefold() in folded for t in named(it))]
    if not items:
        raise UserError(f"the knowledge base covers none of the {len(dataset.items)} claims of {dataset.name}")
    return dataclasses.replace(dataset, items=items)


def load_dataset(name: str, path: str | Path, *, setting: str | None = None) -> Dataset:
    """Load dataset `name` from `path` (a file, or a folder holding the set's usual file).

    `setting` picks among the dataset's settings (None: its default). Raises UserError for an
    unknown name or setting, a missing file, or malformed data.
    """
    key = name.strip().lower()
    base, _, task = key.partition(":")
    if base == "feverous":
        base = "feverous-s"
    if base not in DATASETS and not re.fullmatch(r"hover-[234]", base):
        raise UserError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    if task and base != "mirage":
        raise UserError(f"dataset {name!r}: only mirage takes a task (mirage:TASK)")
    path = Path(path)
    if base == "feverous-s":
        return load_feverous(_resolve(base, path), setting)
    if base.startswith("hover"):
        hops = int(base[-1]) if base != "hover" else None
        return load_hover(_resolve(base, path), setting, hops)
    if base == "averitec":
        return load_averitec(_resolve(base, path), setting)
    if base == "verite":
        return load_verite(_resolve(base, path), setting)
    if base == "mirage":
        return load_mirage(_resolve(base, path), setting, task or None)
    return load_user_claims(path, setting, fmt=base)


def _resolve(name: str, path: Path) -> Path:
    """The file to read: `path` itself, or the set's usual file inside the folder `path`."""
    if path.is_dir():
        if name == "hover":
            raise UserError(f"{path} is a folder: name a HoVer file, or use hover-2, hover-3 or hover-4")
        rel = Path(DEFAULT_FILES[name])
        for candidate in (path / rel, path / rel.name):
            if candidate.is_file():
                return candidate
        raise UserError(f"no {rel.name} in {path} (nor {path / rel}); {SHARED_HINT}")
    if not path.is_file():
        raise UserError(f"no such file: {path}; {SHARED_HINT}")
    return path
