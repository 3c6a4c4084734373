"""HoVer: `hover`, `hover-2`, `hover-3`, `hover-4` (hover/{two,three,four}_hop_100.json), HoVer dev claims.

The hop count comes from the items' `num_hops` (or the file name); the dataset is named `hover-N`. `closed-book`
only: the files hold no evidence text, only `supporting_facts` (Wikipedia title, sentence index), kept in metadata.
SUPPORTED/NOT_SUPPORTED -> Supported/Refuted; macro-F1; QACheck Table 1 per hop count.
"""

from __future__ import annotations

import re
from pathlib import Path

from veracity.errors import UserError
from veracity.types import BINARY_LABELS, REFUTED, SUPPORTED, Claim

from .files import check_setting, json_list, map_label, required
from .records import Dataset, EvalItem

HOVER_GOLD = {"SUPPORTED": SUPPORTED, "NOT_SUPPORTED": REFUTED}
_HOP_WORDS = {"two": 2, "three": 3, "four": 4, "2": 2, "3": 3, "4": 4}
# QACheck Table 1 (InstructGPT), macro-F1 by hop count
HOVER_REFERENCE = {
    2: {"qacheck": 55.67, "direct": 56.51, "cot": 57.20},
    3: {"qacheck": 54.67, "direct": 51.75, "cot": 53.66},
    4: {"qacheck": 52.35, "direct": 49.68, "cot": 51.83},
}


def load_hover(path: Path, setting: str | None, hops: int | None) -> Dataset:
    setting = check_setting("hover", setting, ("closed-book",))
    records = json_list(path)
    items = []
    found: set[int] = set()
    m = re.search(r"(two|three|four|[234])[_-]?hop", path.name.lower())
    file_hops = _HOP_WORDS[m.group(1)] if m else None
    for n, r in enumerate(records, start=1):
        where = f"{path}: item {n}"
        item_id = str(r.get("uid", r.get("id", n)))
        item_hops = r.get("num_hops", file_hops)
        if item_hops is not None:
            found.add(int(item_hops))
        items.append(
            EvalItem(
                id=item_id,
                claim=Claim(str(required(r, "claim", where)), id=item_id),
                gold=map_label(required(r, "label", where), HOVER_GOLD, where),
                metadata={
                    "num_hops": item_hops,
                    "supporting_facts": r.get("supporting_facts", []),
                    "hpqa_id": r.get("hpqa_id"),
                    "label": r["label"],
                },
            )
        )
    if hops is not None and found and found != {hops}:
        raise UserError(f"{path} holds {'/'.join(map(str, sorted(found)))}-hop claims, not {hops}-hop")
    single = hops if hops is not None else (next(iter(found)) if len(found) == 1 else None)
    return Dataset(
        name=f"hover-{single}" if single else "hover",
        setting=setting,
        labels=BINARY_LABELS,
        metric="macro_f1",
        items=items,
        reference=dict(HOVER_REFERENCE.get(single, {})),
        reference_note=(
            f"QACheck (Pan et al. 2023) Table 1, HOVER {single}-hop macro-F1, InstructGPT "
            "(the paper's systems had Wikipedia; here closed-book)"
            if single in HOVER_REFERENCE
            else ""
        ),
        label_map={SUPPORTED: SUPPORTED, REFUTED: REFUTED},
    )
