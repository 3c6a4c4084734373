"""The ten JSONL sources of `../shared/training` (one schema: id, claim, evidence, label, source, split), read
and split into training, calibration and held-apart parts so that nothing crosses sides.

Splitting: pairs are grouped (union-find) by what they share -- the same claim, the same premise, or the same
source item (VitaminC's and Check-COVID's id stems) -- and a group goes whole to one part by a stable hash. The
three FEVER-derived folders (vitaminc/synthetic, docnli_fever, fever_symmetric) are grouped together, since
they share about 4,300 claims. Check-COVID keeps its own train / dev / test splits.

Labels: supported / refuted / nei, or `not_supported` for the two-way sources (docnli_*, begin, summedits),
where it means "refuted or nei": training reads it as that pair of classes (loop.py `pair_loss`), never as refuted.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from ...errors import UserError

NOT_SUPPORTED = "not_supported"

#: source name -> (files, family, group keys, training cap)
#: family: sources split together; keys: which fields group pairs ("claim", "evidence", "id")
SOURCES: dict[str, tuple[tuple[str, ...], str, tuple[str, ...], int]] = {
    "vitaminc_real": (("vitaminc/real_test.jsonl",), "vitaminc_real", ("claim", "id"), 15000),
    "vitaminc_synthetic": (("vitaminc/synthetic_test.jsonl",), "fever", ("claim", "id"), 6000),
    "docnli_fever": (("docnli_fever/dev.jsonl", "docnli_fever/test.jsonl"), "fever", ("claim",), 6000),
    "fever_symmetric": (
        (
            "fever_symmetric/symmetric_dev.jsonl",
            "fever_symmetric/symmetric_test.jsonl",
            "fever_symmetric/adversarial_test.jsonl",
        ),
        "fever",
        ("claim",),
        3000,
    ),
    "snli": (("snli/dev.jsonl", "snli/test.jsonl"), "snli", ("evidence",), 5000),
    "docnli_mnli": (("docnli_mnli/dev.jsonl", "docnli_mnli/test.jsonl"), "mnli", ("evidence", "claim"), 5000),
    "begin": (("begin/wow_dev.jsonl", "begin/wow_test.jsonl", "begin/cmu_dev.jsonl"), "begin", ("evidence",), 3000),
    "summedits": (("summedits/evaluation.jsonl", "summedits/test.jsonl"), "summedits", ("evidence",), 1500),
    "factcheck_gpt": (("factcheck_gpt/all.jsonl",), "factcheck_gpt", ("claim",), 3000),
    "breaking_nli": (("breaking_nli/test.jsonl",), "breaking_nli", ("evidence",), 2000),
    "check_covid": (
        ("check_covid/train.jsonl", "check_covid/dev.jsonl", "check_covid/test.jsonl"),
        "check_covid",
        ("id",),
        3000,
    ),
}
HELDOUT_SHARE, CALIBRATION_SHARE = 0.15, 0.10
HELDOUT_CAP, CALIBRATION_CAP = 1500, 800  # pairs per source (measuring time stays in minutes on 2 cores)
_CHECK_COVID_PART = {"train": "train", "dev": "calibration", "test": "heldout"}


@dataclass(frozen=True)
class SourcePair:
    claim: str
    evidence: str
    label: str  # supported | refuted | nei | not_supported
    source: str
    part: str  # train | calibration | heldout


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).strip()


def _id_stem(item_id: str) -> str:
    """VitaminC and Check-COVID ids end with `_N` per pair of one source item; the stem names the item."""
    return item_id.rsplit("_", 1)[0] if re.search(r"_\d+$", item_id) else item_id


class _Groups:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def part_of(key: str, heldout: float = HELDOUT_SHARE, calibration: float = CALIBRATION_SHARE) -> str:
    bucket = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % 1000 / 1000
    return "heldout" if bucket < heldout else "calibration" if bucket < heldout + calibration else "train"


def _read(path: Path) -> list[dict]:
    if not path.exists():
        raise UserError(f"training data not found: {path} (see ../shared/training/README.md)")
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("claim", "").strip() and r.get("evidence", "").strip() and r.get("label"):
                rows.append(r)
    return rows


def read_sources(root: Path, names: tuple[str, ...] | None = None) -> list[SourcePair]:
    """Every pair of the named sources (default: all), each with its part."""
    names = names or tuple(SOURCES)
    rows_of: dict[str, list[dict]] = {}
    groups: dict[str, _Groups] = {}
    for name in names:
        files, family, keys, _ = SOURCES[name]
        g = groups.setdefault(family, _Groups())
        rows = [r for f in files for r in _read(root / f)]
        rows_of[name] = rows
        for r in rows:
            nodes = [
                f"{k}:"
                + (
                    _norm(r["claim"])
                    if k == "claim"
                    else _norm(r["evidence"])[:300]
                    if k == "evidence"
                    else _id_stem(r["id"])
                )
                for k in keys
            ]
            for other in nodes[1:]:
                g.union(nodes[0], other)
            g.find(nodes[0])
    out: list[SourcePair] = []
    for name in names:
        files, family, keys, _ = SOURCES[name]
        g = groups[family]
        for r in rows_of[name]:
            if name == "check_covid":
                part = _CHECK_COVID_PART.get(r.get("split", ""), "train")
            else:
                first = keys[0]
                value = (
                    _norm(r["claim"])
                    if first == "claim"
                    else _norm(r["evidence"])[:300]
                    if first == "evidence"
                    else _id_stem(r["id"])
                )
                part = part_of(f"{family}:{g.find(f'{first}:{value}')}")
            out.append(SourcePair(r["claim"].strip(), r["evidence"].strip(), r["label"], name, part))
    return out


class _Labelled(Protocol):
    label: str


_P = TypeVar("_P", bound=_Labelled)


def capped(pairs: list[_P], cap: int, rng: random.Random) -> list[_P]:
    """At most `cap` pairs (anything with a `label`), drawn with the labels kept in their proportions (seeded)."""
    if len(pairs) <= cap:
        return list(pairs)
    by_label: dict[str, list[_P]] = {}
    for p in pairs:
        by_label.setdefault(p.label, []).append(p)
    out = []
    for label in sorted(by_label):
        group = by_label[label]
        out.extend(rng.sample(group, round(cap * len(group) / len(pairs))))
    return out
