"""FEVEROUS-S: `feverous-s` (feverous_s/dev_600.json), 600 FEVEROUS-S dev claims as used by ProgramFC/QACheck.

Settings: `gold-evidence` (default; each claim's own gold Wikipedia sentences are its `evidence`, one Document per
`Title<TAB>sentence` line, `[[target|text]]` links cleaned to `text`), `pooled` (every evidence sentence of the
file, deduplicated by (title, sentence), in one `knowledge_base`; items have no evidence of their own) and
`open-domain` (no evidence: the Wikipedia knowledge base, or --index, is searched). supports/refutes ->
Supported/Refuted; macro-F1; QACheck Table 1 (InstructGPT) for reference.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from veracity.retrieval.documents import Document
from veracity.types import BINARY_LABELS, REFUTED, SUPPORTED, Claim

from .files import check_setting, json_list, map_label, required
from .records import EVIDENCE_TITLES, Dataset, EvalItem

FEVEROUS_GOLD = {"supports": SUPPORTED, "refutes": REFUTED}
_WIKI_LINK = re.compile(r"\[\[([^|\]]*)\|([^\]]*)\]\]")


def clean_wiki_links(text: str) -> str:
    """`[[target|text]]` -> `text`; any stray `[[` or `]]` is dropped."""
    return _WIKI_LINK.sub(lambda m: m.group(2), text).replace("[[", "").replace("]]", "")


def feverous_evidence_lines(evidence: str) -> list[tuple[str, str]]:
    """(title, sentence) per non-empty `Title<TAB>sentence` line, link markup cleaned.

    A line without a tab is taken as a sentence that is also its own title.
    """
    out = []
    for line in evidence.split("\n"):
        if not line.strip():
            continue
        title, _, sentence = line.partition("\t")
        out.append((clean_wiki_links(title).strip(), clean_wiki_links(sentence or title).strip()))
    return out


def feverous_evidence_docs(item: dict[str, Any]) -> list[Document]:
    """One Document per gold evidence line of a raw FEVEROUS-S item, ids `<item id>-<n>`."""
    return [
        Document(id=f"{item['id']}-{i}", title=title, text=sentence)
        for i, (title, sentence) in enumerate(feverous_evidence_lines(item.get("evidence") or ""))
    ]


def load_feverous(path: Path, setting: str | None) -> Dataset:
    setting = check_setting("feverous-s", setting, ("gold-evidence", "pooled", "open-domain"))
    records = json_list(path)
    items: list[EvalItem] = []
    seen: dict[tuple[str, str], Document] = {}
    per_title: dict[str, int] = {}
    for n, r in enumerate(records, start=1):
        where = f"{path}: item {n}"
        item_id = str(required(r, "id", where))
        gold = map_label(required(r, "label", where), FEVEROUS_GOLD, where)
        evidence = feverous_evidence_docs(r)
        if setting == "pooled":
            for doc in evidence:
                key = (doc.title, doc.text)
                if key not in seen:
                    k = per_title[doc.title] = per_title.get(doc.title, -1) + 1
                    seen[key] = Document(
                        id=f"{doc.title}:{k}", title=doc.title, text=doc.text, metadata={"claim_ids": []}
                    )
                seen[key].metadata["claim_ids"].append(item_id)
        titles = sorted({doc.title for doc in evidence})
        if setting != "gold-evidence":
            evidence = []
        items.append(
            EvalItem(
                id=item_id,
                claim=Claim(str(required(r, "claim", where)), id=item_id),
                gold=gold,
                evidence=evidence,
                metadata={"challenge": r.get("challenge"), "label": r["label"], EVIDENCE_TITLES: titles},
            )
        )
    return Dataset(
        name="feverous-s",
        setting=setting,
        labels=BINARY_LABELS,
        metric="macro_f1",
        items=items,
        knowledge_base=list(seen.values()) if setting == "pooled" else None,
        reference={"qacheck": 59.47, "direct": 60.13, "cot": 61.05},
        reference_note="QACheck (Pan et al. 2023) Table 1, FEVEROUS-S macro-F1, InstructGPT, gold evidence"
        + {
            "pooled": "; this run is the pooled setting, harder than the paper's",
            "open-domain": "; this run is open-domain (no evidence given: the index or knowledge base is searched), "
            "harder than the paper's",
        }.get(setting, ""),
        label_map={SUPPORTED: SUPPORTED, REFUTED: REFUTED},
    )
