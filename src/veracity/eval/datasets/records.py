"""The one shape every dataset is loaded into (`Dataset`, its `EvalItem`s), and the settings an evaluation runs in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from veracity.retrieval.documents import Document
from veracity.types import Claim

SETTINGS = ("gold-evidence", "pooled", "open-domain", "closed-book", "multiple-choice", "user")
#: settings whose evidence is the benchmark's own (or none at all): an evaluation in them reads no default knowledge
#: base, only an index given with --index; "open-domain" and "user" read the Wikipedia knowledge base by default
OWN_EVIDENCE_SETTINGS = ("gold-evidence", "pooled", "closed-book", "multiple-choice")
#: an item's metadata key: the titles of the Wikipedia articles its gold evidence comes from (FEVEROUS-S)
EVIDENCE_TITLES = "evidence_titles"


@dataclass
class EvalItem:
    id: str
    claim: Claim  # text, date (ISO) when the set has one, images (URLs/paths) when it has them
    gold: str  # gold label in the dataset's label set
    evidence: list[Document] = field(default_factory=list)  # the item's own documents (gold-evidence)
    metadata: dict[str, Any] = field(default_factory=dict)  # for reports, never for pipelines


@dataclass
class Dataset:
    name: str  # "feverous-s", "hover-3", "averitec", "verite", "mirage", "mirage:pubmedqa", "jsonl", "csv"
    setting: str  # one of SETTINGS
    labels: tuple[str, ...]  # the dataset's label set, in a fixed order
    metric: str  # "macro_f1" or "accuracy": the metric the paper reports
    items: list[EvalItem]
    knowledge_base: list[Document] | None = None  # one pooled corpus for all items (pooled settings)
    reference: dict[str, float] = field(default_factory=dict)  # paper numbers, by pipeline name
    reference_note: str = ""  # which paper/model those numbers come from
    label_map: dict[str, str] = field(default_factory=dict)  # pipeline label -> dataset label
    #: what the labels mean and the benchmark's rules, for pipelines that judge among `labels` (DEFAME's
    #: extra rules; the direct and CoT baselines on sets with more than Supported/Refuted)
    label_rules: str = ""
