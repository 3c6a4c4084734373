"""Benchmark datasets and the user's own claim files, loaded into one shape for evaluation.

    from veracity.eval.datasets import load_dataset
    ds = load_dataset("feverous-s", "../shared/benchmarks/feverous_s/dev_600.json")
    ds = load_dataset("hover-3", "../shared/benchmarks")          # a folder: the set's usual file in it
    ds = load_dataset("mirage:pubmedqa", "../shared/benchmarks/mirage/benchmark_750.json")
    ds = load_dataset("jsonl", "my_claims.jsonl")

A `Dataset` holds `EvalItem`s (a `Claim`, its gold label in the dataset's own label set, the item's
own evidence documents when the setting gives them, and metadata for reports), the label set and the
metric the paper reports, a pooled `knowledge_base` in pooled settings, the paper's numbers to print
beside ours (`reference`, by pipeline name, with `reference_note` saying whose they are), and a
`label_map` from a pipeline's labels (Supported / Refuted) onto the dataset's.

What a pipeline may see: `item.claim`, `item.evidence` and `dataset.knowledge_base`. `item.metadata`
is for reports and analysis; it can give the answer away (AVeriTeC's justification and QA pairs,
HoVer's supporting facts, VERITE's image file names) and must not be shown to a pipeline.

Benchmark sets (the data lives in ../shared/benchmarks, next to the project; never copy it here):

- `feverous-s` (feverous_s/dev_600.json): 600 FEVEROUS-S dev claims as used by ProgramFC/QACheck.
  Settings: `gold-evidence` (default; each claim's own gold Wikipedia sentences are its `evidence`,
  one Document per `Title<TAB>sentence` line, `[[target|text]]` links cleaned to `text`) and
  `pooled` (every evidence sentence of the file, deduplicated by (title, sentence), in one
  `knowledge_base`; items have no evidence of their own). supports/refutes -> Supported/Refuted;
  macro-F1; QACheck Table 1 (InstructGPT) for reference.
- `hover`, `hover-2`, `hover-3`, `hover-4` (hover/{two,three,four}_hop_100.json): HoVer dev claims.
  The hop count comes from the items' `num_hops` (or the file name); the dataset is named
  `hover-N`. `closed-book` only: the files hold no evidence text, only `supporting_facts`
  (Wikipedia title, sentence index), kept in metadata. SUPPORTED/NOT_SUPPORTED ->
  Supported/Refuted; macro-F1; QACheck Table 1 per hop count.
- `averitec` (averitec/dev_200.json): 200 AVeriTeC dev claims, 4 labels, accuracy. The claim date
  (given as D-M-YYYY) becomes ISO; speaker, reporting source and location go in the claim's
  metadata. Settings: `pooled` (default): the annotators' answers to ALL claims of the file form the
  `knowledge_base`, one Document per source URL (id and url = the URL, title = the question(s) it
  answers, text = its answers, Boolean ones with their explanation); answers without a URL
  ("Metadata") get a stable id `averitec:<hash>`; answers that say "No answer could be found..."
  (all Unanswerable ones and one Extractive one) are left out.
  This is an optimistic, oracle-like setting: every claim's own evidence is in the pool. The items'
  own QA pairs are in metadata (`questions`). `gold-evidence`: each item's own answers are its
  `evidence`, no pool. `closed-book`: no evidence (the setting of the GPT-4o CoT reference).
- `verite` (verite/VERITE.csv): 1,001 image-caption pairs, labels `true`, `miscaptioned`,
  `out-of-context` as spelled in the file; accuracy; setting `closed-book` (text only). The claim is
  the caption. The images are not available offline: the CSV names local files (`images/true_N.jpg`,
  `images/false_N.jpg`) that are not shipped; their URLs come from VERITE_articles.csv beside it
  (`true_url` / `false_url` of article N) and go in metadata (`image_url`), not in `claim.images`.
  If the image file does exist beside the CSV (e.g. downloaded from the gated HF dataset), its path
  goes in `claim.images`. Text only, an out-of-context item reads exactly like a true one (its
  caption is the article's true caption, paired with another image), so a text-only checker cannot
  tell them apart. `label_map` sends Supported -> true and Refuted -> miscaptioned.
  DEFAME reports binary accuracies (true vs miscaptioned / OOC / false), not 3-class accuracy, so
  `reference` is empty and those numbers are only quoted in `reference_note`.
- `mirage` or `mirage:TASK` (mirage/benchmark_750.json): 150 questions each of medqa (MedQA-US /
  USMLE), medmcqa, pubmedqa (PubMedQA*), bioasq (BioASQ-Y/N), mmlu (MMLU-Med); setting
  `multiple-choice`; the claim text is the question, gold is the option letter, the options
  (`{"A": ..., ...}`) are in both the item's and the claim's metadata with the task name; accuracy.
  With all five tasks (150 each) accuracy equals the task average the papers report. LEAF Table 2
  (Llama 3 70B Instruct) for reference, per task. The retrieval corpus mirage/medcorpus.jsonl is not
  loaded here; index it with `veracity index build`.

The user's own claims: `jsonl` (one JSON object per line; blank lines are skipped) or `csv` (a
header row, then one claim per row). Fields:

    claim     required: the claim text
    label     the gold label, needed for scoring. Case-insensitively, supported / supports / true /
              SUPPORTED -> Supported and refuted / refutes / false / NOT_SUPPORTED -> Refuted; any
              other label is kept as written and added to the label set. Either every claim has a
              label or none has (then the label set is empty: predictions only, no score).
    id        optional; defaults to the line number (JSONL) or row number (CSV); must be unique
    date      optional: when the claim was made, ISO (YYYY-MM-DD) preferred
    image, images
              optional: paths or URLs, a string or a list (CSV: a JSON list, or ';'-separated)
    evidence  optional: a string or a list of strings (JSONL may also give objects with `text` and
              optional `title`, `url`); each becomes one of the item's own Documents. CSV: one
              string, or a JSON list of strings. An item's own Documents are searched with BM25, then
              topped up with those that share no word with the query (`Index.given_evidence`).

Other fields are kept in the item's metadata. The label set is Supported, Refuted (those present)
then the other labels in order of first appearance; the metric is macro-F1; setting `user`.

    {"id": "c1", "claim": "Lars Onsager won the Nobel prize at 30.", "label": "refuted",
     "evidence": ["Onsager won the 1968 Nobel Prize in Chemistry.", "Onsager was born in 1903."]}
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import date as _date
from pathlib import Path
from typing import Any

from veracity.errors import UserError
from veracity.retrieval.documents import Document
from veracity.types import BINARY_LABELS, REFUTED, SUPPORTED, Claim

SHARED_HINT = "the benchmark data lives in ../shared/benchmarks (next to the project; see its README.md)"

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


# --------------------------------------------------------------------------- registry

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
        raise UserError(f"{dataset.name} does not name the Wikipedia articles its claims are about, so which claims "
                        "the knowledge base covers cannot be told (feverous-s does; a claims file can give each "
                        "claim a 'subject')")
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
        return _load_feverous(_resolve(base, path), setting)
    if base.startswith("hover"):
        hops = int(base[-1]) if base != "hover" else None
        return _load_hover(_resolve(base, path), setting, hops)
    if base == "averitec":
        return _load_averitec(_resolve(base, path), setting)
    if base == "verite":
        return _load_verite(_resolve(base, path), setting)
    if base == "mirage":
        return _load_mirage(_resolve(base, path), setting, task or None)
    return _load_user(path, setting, fmt=base)


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


def _check_setting(name: str, setting: str | None, allowed: tuple[str, ...]) -> str:
    """`setting`, or the default (the first allowed), after checking that the dataset has it."""
    if setting is None:
        return allowed[0]
    if setting not in allowed:
        raise UserError(f"dataset {name} has no setting {setting!r}; choose one of: {', '.join(allowed)}")
    return setting


def _read_dataset_text(path: Path) -> str:
    """A dataset file's text, read up to MAX_DATASET_BYTES (a one-line UserError beyond, or when unreadable)."""
    from ..reading import MAX_DATASET_BYTES, read_limited

    try:
        return read_limited(path, MAX_DATASET_BYTES, "dataset file").decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"cannot read {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_dataset_text(path))
    except json.JSONDecodeError as e:
        raise UserError(f"{path} is not valid JSON (line {e.lineno}: {e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {path}: {e}") from None


def _json_list(path: Path) -> list[dict[str, Any]]:
    data = _read_json(path)
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise UserError(f"{path} must hold a JSON list of objects")
    if not data:
        raise UserError(f"{path} holds no items")
    return data


def _field(record: dict[str, Any], key: str, where: str) -> Any:
    if key not in record:
        raise UserError(f"{where} has no {key!r} field")
    return record[key]


def _map_label(raw: Any, mapping: dict[str, str], where: str) -> str:
    label = mapping.get(str(raw))
    if label is None:
        raise UserError(f"{where}: unknown label {raw!r} (expected one of: {', '.join(mapping)})")
    return label


# --------------------------------------------------------------------------- FEVEROUS-S

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


def _load_feverous(path: Path, setting: str | None) -> Dataset:
    setting = _check_setting("feverous-s", setting, ("gold-evidence", "pooled", "open-domain"))
    records = _json_list(path)
    items: list[EvalItem] = []
    seen: dict[tuple[str, str], Document] = {}
    per_title: dict[str, int] = {}
    for n, r in enumerate(records, start=1):
        where = f"{path}: item {n}"
        item_id = str(_field(r, "id", where))
        gold = _map_label(_field(r, "label", where), FEVEROUS_GOLD, where)
        evidence = feverous_evidence_docs(r)
        if setting == "pooled":
            for doc in evidence:
                key = (doc.title, doc.text)
                if key not in seen:
                    k = per_title[doc.title] = per_title.get(doc.title, -1) + 1
                    seen[key] = Document(id=f"{doc.title}:{k}", title=doc.title, text=doc.text,
                                         metadata={"claim_ids": []})
                seen[key].metadata["claim_ids"].append(item_id)
        titles = sorted({doc.title for doc in evidence})
        if setting != "gold-evidence":
            evidence = []
        items.append(EvalItem(
            id=item_id,
            claim=Claim(str(_field(r, "claim", where)), id=item_id),
            gold=gold,
            evidence=evidence,
            metadata={"challenge": r.get("challenge"), "label": r["label"], EVIDENCE_TITLES: titles},
        ))
    return Dataset(
        name="feverous-s",
        setting=setting,
        labels=BINARY_LABELS,
        metric="macro_f1",
        items=items,
        knowledge_base=list(seen.values()) if setting == "pooled" else None,
        reference={"qacheck": 59.47, "direct": 60.13, "cot": 61.05},
        reference_note="QACheck (Pan et al. 2023) Table 1, FEVEROUS-S macro-F1, InstructGPT, gold evidence"
        + {"pooled": "; this run is the pooled setting, harder than the paper's",
           "open-domain": "; this run is open-domain (no evidence given: the index or knowledge base is searched), "
                          "harder than the paper's"}.get(setting, ""),
        label_map={SUPPORTED: SUPPORTED, REFUTED: REFUTED},
    )


# --------------------------------------------------------------------------- HoVer

HOVER_GOLD = {"SUPPORTED": SUPPORTED, "NOT_SUPPORTED": REFUTED}
_HOP_WORDS = {"two": 2, "three": 3, "four": 4, "2": 2, "3": 3, "4": 4}
# QACheck Table 1 (InstructGPT), macro-F1 by hop count
HOVER_REFERENCE = {
    2: {"qacheck": 55.67, "direct": 56.51, "cot": 57.20},
    3: {"qacheck": 54.67, "direct": 51.75, "cot": 53.66},
    4: {"qacheck": 52.35, "direct": 49.68, "cot": 51.83},
}


def _load_hover(path: Path, setting: str | None, hops: int | None) -> Dataset:
    setting = _check_setting("hover", setting, ("closed-book",))
    records = _json_list(path)
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
        items.append(EvalItem(
            id=item_id,
            claim=Claim(str(_field(r, "claim", where)), id=item_id),
            gold=_map_label(_field(r, "label", where), HOVER_GOLD, where),
            metadata={"num_hops": item_hops, "supporting_facts": r.get("supporting_facts", []),
                      "hpqa_id": r.get("hpqa_id"), "label": r["label"]},
        ))
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
        reference_note=(f"QACheck (Pan et al. 2023) Table 1, HOVER {single}-hop macro-F1, InstructGPT "
                        "(the paper's systems had Wikipedia; here closed-book)" if single in HOVER_REFERENCE
                        else ""),
        label_map={SUPPORTED: SUPPORTED, REFUTED: REFUTED},
    )


# --------------------------------------------------------------------------- AVeriTeC

AVERITEC_LABELS = ("Supported", "Refuted", "Not Enough Evidence", "Conflicting Evidence/Cherrypicking")
# The label definitions of the AVeriTeC annotation guidelines, in our words, and DEFAME's extra rule for
# AVeriTeC (no argument from ignorance).
AVERITEC_RULES = """- Supported: the evidence confirms the claim.
- Refuted: the evidence contradicts the claim, or shows that it is false or misleading beyond repair.
- Not Enough Evidence: the evidence neither confirms nor contradicts the claim.
- Conflicting Evidence/Cherrypicking: some evidence confirms the claim and some contradicts it, or the claim is \
technically true but cherry-picks facts and misleads by leaving out context.
- Do not argue from ignorance: finding no evidence for a claim does not refute it; that is Not Enough Evidence."""
_NO_ANSWER = "No answer could be found."  # also begins one "Extractive" answer that found nothing


def _iso_date(raw: Any) -> str | None:
    """AVeriTeC writes dates D-M-YYYY ("26-8-2020"); ISO dates pass through; None if unparseable."""
    if raw in (None, ""):
        return None
    s = str(raw).strip()
    m = re.fullmatch(r"(\d{1,2})-(\d{1,2})-(\d{4})", s)
    try:
        if m:
            return _date(int(m.group(3)), int(m.group(2)), int(m.group(1))).isoformat()
        return _date.fromisoformat(s[:10]).isoformat()
    except ValueError:
        return None


def _source_url(answer: dict[str, Any]) -> str | None:
    url = str(answer.get("source_url") or "").strip()
    if not url or url.lower() == "metadata" or any(c.isspace() for c in url):
        return None
    return url


def _answer_text(answer: dict[str, Any]) -> str:
    text = str(answer.get("answer") or "").strip()
    explanation = str(answer.get("boolean_explanation") or "").strip()
    if explanation:
        text = f"{text.rstrip('.')}. {explanation}"
    return text


def _averitec_docs(records: list[tuple[str, dict[str, Any]]]) -> list[Document]:
    """Documents from the answers of (claim id, record) pairs: one per source URL, deduplicated."""
    docs: dict[str, Document] = {}
    for claim_id, r in records:
        for q in r.get("questions") or []:
            question = str(q.get("question") or "").strip()
            for a in q.get("answers") or []:
                text = _answer_text(a)
                if not text or a.get("answer_type") == "Unanswerable" or text.startswith(_NO_ANSWER[:-1]):
                    continue
                url = _source_url(a)
                doc_id = url or "averitec:" + hashlib.sha1(f"{question}\n{text}".encode()).hexdigest()[:12]
                doc = docs.get(doc_id)
                if doc is None:
                    doc = docs[doc_id] = Document(
                        id=doc_id, title="", text="", url=url,
                        metadata={"questions": [], "answers": [], "claim_ids": [],
                                  "source_medium": a.get("source_medium"),
                                  "cached_source_url": a.get("cached_source_url")},
                    )
                meta = doc.metadata
                if question and question not in meta["questions"]:
                    meta["questions"].append(question)
                if text not in meta["answers"]:
                    meta["answers"].append(text)
                if claim_id not in meta["claim_ids"]:
                    meta["claim_ids"].append(claim_id)
    for doc in docs.values():
        doc.title = " | ".join(doc.metadata["questions"]) or doc.url or doc.id
        doc.text = "\n\n".join(doc.metadata.pop("answers"))
    return list(docs.values())


def _load_averitec(path: Path, setting: str | None) -> Dataset:
    setting = _check_setting("averitec", setting, ("pooled", "gold-evidence", "closed-book"))
    records = _json_list(path)
    gold_map = {label: label for label in AVERITEC_LABELS}
    items = []
    keyed = []
    for n, r in enumerate(records, start=1):
        where = f"{path}: item {n}"
        item_id = str(r.get("claim_id", n - 1))
        keyed.append((item_id, r))
        claim_meta = {k: r[k] for k in ("speaker", "reporting_source") if r.get(k)}
        if r.get("location_ISO_code"):
            claim_meta["location"] = r["location_ISO_code"]
        items.append(EvalItem(
            id=item_id,
            claim=Claim(str(_field(r, "claim", where)), date=_iso_date(r.get("claim_date")), id=item_id,
                        metadata=claim_meta),
            gold=_map_label(_field(r, "label", where), gold_map, where),
            evidence=_averitec_docs([(item_id, r)]) if setting == "gold-evidence" else [],
            metadata={k: r.get(k) for k in (
                "claim_date", "speaker", "reporting_source", "location_ISO_code", "claim_types",
                "fact_checking_strategies", "justification", "fact_checking_article", "original_claim_url",
                "cached_original_claim_url", "required_reannotation", "questions")},
        ))
    return Dataset(
        name="averitec",
        setting=setting,
        labels=AVERITEC_LABELS,
        metric="accuracy",
        items=items,
        knowledge_base=_averitec_docs(keyed) if setting == "pooled" else None,
        reference={"defame": 74.0, "cot": 60.6},
        reference_note="DEFAME (Braun et al. 2025) Table 3, AVeriTeC dev (500 claims) 4-class accuracy, GPT-4o; "
        "DEFAME searched a knowledge base with ~1,000 distractor documents, CoT was closed-book",
        label_map={SUPPORTED: "Supported", REFUTED: "Refuted"},
        label_rules=AVERITEC_RULES,
    )


# --------------------------------------------------------------------------- VERITE

VERITE_LABELS = ("true", "miscaptioned", "out-of-context")
VERITE_RULES = """- true: the caption accurately describes the image (who, what, where, when).
- miscaptioned: the image is real but the caption misstates who or what it shows, or where or when it was taken.
- out-of-context: the caption is accurate for some other image; this image comes from a different event.
- Judge the pairing of this caption with this image, not only whether the caption's event happened."""
_VERITE_IMAGE = re.compile(r"(true|false)_(\d+)\.\w+$")


def _read_csv(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            return list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise UserError(f"cannot read {path} as CSV: {e}") from None


def _load_verite(path: Path, setting: str | None) -> Dataset:
    setting = _check_setting("verite", setting, ("closed-book",))
    rows = _read_csv(path)
    if not rows:
        raise UserError(f"{path} holds no rows")
    missing = [c for c in ("caption", "label") if c not in rows[0]]
    if missing:
        raise UserError(f"{path} has no {', '.join(missing)} column (columns: {', '.join(rows[0])})")
    articles: dict[str, dict[str, str]] = {}
    articles_path = path.with_name("VERITE_articles.csv")
    if articles_path.is_file():
        articles = {r.get("id") or r.get("", ""): r for r in _read_csv(articles_path)}
    items = []
    seen_labels: list[str] = []
    for n, r in enumerate(rows, start=1):
        item_id = (r.get("") or r.get("id") or str(n - 1)).strip()
        label = (r.get("label") or "").strip()
        if not label:
            raise UserError(f"{path}: row {n} has no label")
        if label not in seen_labels:
            seen_labels.append(label)
        image_path = (r.get("image_path") or "").strip()
        image_url = article_id = snopes_url = None
        m = _VERITE_IMAGE.search(image_path)
        if m and m.group(2) in articles:
            article = articles[m.group(2)]
            article_id = m.group(2)
            image_url = article.get(f"{m.group(1)}_url") or None
            snopes_url = article.get("snopes_url") or None
        local = path.parent / image_path if image_path else None
        items.append(EvalItem(
            id=item_id,
            claim=Claim(r["caption"].strip(), images=[str(local)] if local and local.is_file() else [],
                        id=item_id),
            gold=label,
            metadata={"image_path": image_path, "image_url": image_url, "article_id": article_id,
                      "snopes_url": snopes_url},
        ))
    labels = tuple(x for x in VERITE_LABELS if x in seen_labels) + tuple(
        x for x in seen_labels if x not in VERITE_LABELS)
    return Dataset(
        name="verite",
        setting=setting,
        labels=labels,
        metric="accuracy",
        items=items,
        reference={},
        reference_note="no comparable paper number: DEFAME (GPT-4o, with the images) reports binary "
        "accuracies on VERITE, true vs OOC 79.8 / vs miscaptioned 84.5 / vs false 84.5 "
        "(GPT-4o CoT 73.6 / 76.2 / 79.7); here 3-class accuracy on the captions alone",
        label_map={SUPPORTED: "true", REFUTED: "miscaptioned"},
        label_rules=VERITE_RULES,
    )


# --------------------------------------------------------------------------- MIRAGE

MIRAGE_TASKS = ("medqa", "medmcqa", "pubmedqa", "bioasq", "mmlu")
_MIRAGE_ALIASES = {"usmle": "medqa", "medqa-us": "medqa", "mmlu-med": "mmlu", "mmlu-medical": "mmlu",
                   "pubmedqa*": "pubmedqa", "bioasq-y/n": "bioasq", "bioasq-yn": "bioasq"}
# LEAF Table 2 (Llama 3 70B Instruct): plain, MedRAG, Fact-Check-Then-RAG
_MIRAGE_PAPER = {  # LEAF Table 2: the model alone, MedRAG, Fact-Check-Then-RAG
    "medqa": (73.53, 68.58, 77.52),
    "mmlu": (85.12, 82.46, 86.78),
    "pubmedqa": (60.60, 70.80, 73.60),
    "bioasq": (80.58, 87.70, 87.86),
    "medmcqa": (71.21, 68.78, 72.77),
    None: (74.21, 75.66, 79.71),
}
# keyed by our pipeline names, so the report prints them beside answer:plain / answer:rag / answer:fc-rag
MIRAGE_REFERENCE = {task: {"answer:plain": d, "answer:rag": m, "answer:fc-rag": f}
                    for task, (d, m, f) in _MIRAGE_PAPER.items()}


def _load_mirage(path: Path, setting: str | None, task: str | None) -> Dataset:
    setting = _check_setting("mirage", setting, ("multiple-choice",))
    if task is not None:
        task = _MIRAGE_ALIASES.get(task, task)
        if task not in MIRAGE_TASKS:
            raise UserError(f"MIRAGE has no task {task!r}; choose one of: {', '.join(MIRAGE_TASKS)}")
    data = _read_json(path)
    if not isinstance(data, dict) or not data:
        raise UserError(f"{path} must hold a JSON object of tasks ({', '.join(MIRAGE_TASKS)})")
    if task is not None and task not in data:
        raise UserError(f"{path} has no task {task!r} (it has: {', '.join(data)})")
    items = []
    letters: set[str] = set()
    for name in [task] if task else list(data):
        questions = data[name]
        if not isinstance(questions, dict):
            raise UserError(f"{path}: task {name!r} must map question ids to questions")
        for qid, q in questions.items():
            where = f"{path}: {name} question {qid}"
            if not isinstance(q, dict):
                raise UserError(f"{where} is not a JSON object")
            options = _field(q, "options", where)
            answer = str(_field(q, "answer", where))
            if not isinstance(options, dict) or answer not in options:
                raise UserError(f"{where}: answer {answer!r} is not one of its options")
            letters.update(options)
            item_id = f"{name}:{qid}"
            meta = {"task": name, "options": dict(options)}
            items.append(EvalItem(
                id=item_id,
                claim=Claim(str(_field(q, "question", where)), id=item_id, metadata=dict(meta)),
                gold=answer,
                metadata={**meta, "question_id": qid},
            ))
    ref = MIRAGE_REFERENCE.get(task) if task or set(data) == set(MIRAGE_TASKS) else None
    return Dataset(
        name=f"mirage:{task}" if task else "mirage",
        setting=setting,
        labels=tuple(sorted(letters)),
        metric="accuracy",
        items=items,
        reference=dict(ref or {}),
        reference_note=("LEAF (2024) Table 2, MIRAGE accuracy, Llama 3 70B Instruct: answer:plain = the model alone, "
                        "answer:rag = MedRAG retrieval, answer:fc-rag = Fact-Check-Then-RAG"
                        + ("" if task else "; the average of the five tasks") if ref else ""),
    )


# --------------------------------------------------------------------------- the user's claims

USER_LABELS = {
    "supported": SUPPORTED, "supports": SUPPORTED, "true": SUPPORTED,
    "refuted": REFUTED, "refutes": REFUTED, "false": REFUTED,
    "not_supported": REFUTED, "not supported": REFUTED,
}
_USER_FIELDS = ("id", "claim", "label", "date", "image", "images", "evidence")


def normalize_label(raw: Any) -> str:
    """A user's label: the spellings of supported/refuted -> Supported/Refuted, others as written."""
    s = str(raw).strip()
    return USER_LABELS.get(s.lower(), s)


def _load_user(path: Path, setting: str | None, *, fmt: str) -> Dataset:
    setting = _check_setting(fmt, setting, ("user",))
    if path.is_dir():
        raise UserError(f"{path} is a folder: give the {fmt.upper()} file of your claims")
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    rows = list(_jsonl_rows(path) if fmt == "jsonl" else _csv_rows(path))
    if not rows:
        raise UserError(f"{path} is empty: expected one claim per {'line' if fmt == 'jsonl' else 'row'}")
    items: list[EvalItem] = []
    ids: dict[str, str] = {}
    labelled: list[str] = []
    unlabelled: list[str] = []
    for where, default_id, record in rows:
        claim_text = record.get("claim")
        if claim_text is None:
            raise UserError(f"{where} has no 'claim'")
        if not isinstance(claim_text, str) or not claim_text.strip():
            raise UserError(f"{where}: 'claim' must be non-empty text")
        item_id = str(record["id"]).strip() if record.get("id") not in (None, "") else default_id
        if item_id in ids:
            raise UserError(f"{where}: id {item_id!r} is already used ({ids[item_id]})")
        ids[item_id] = where
        label = record.get("label")
        gold = "" if label in (None, "") else normalize_label(label)
        (labelled if gold else unlabelled).append(where)
        images = _strings(record.get("images", record.get("image")), where, "images", split=fmt == "csv")
        date = record.get("date")
        items.append(EvalItem(
            id=item_id,
            claim=Claim(claim_text.strip(), images=images, date=None if date in (None, "") else str(date),
                        id=item_id),
            gold=gold,
            evidence=_user_evidence(record.get("evidence"), item_id, where),
            metadata={k: v for k, v in record.items() if k not in _USER_FIELDS and k is not None}
            | ({"label": label} if gold and str(label) != gold else {}),
        ))
    if labelled and unlabelled:
        raise UserError(f"{unlabelled[0]} has no 'label' but {labelled[0]} has one: label every claim or none")
    found = list(dict.fromkeys(item.gold for item in items if item.gold))
    # claims all labelled Supported (or all Refuted) are still a two-label task: the pipelines choose between both
    if found and set(found) <= set(BINARY_LABELS):
        labels = BINARY_LABELS
    else:
        labels = tuple(x for x in BINARY_LABELS if x in found) + tuple(x for x in found if x not in BINARY_LABELS)
        if len(labels) == 1:
            raise UserError(f"every labelled claim is {labels[0]!r}: a pipeline needs two labels or more to choose "
                            f"between (label them {SUPPORTED} / {REFUTED}, or add claims of another label)")
    return Dataset(
        name=fmt,
        setting=setting,
        labels=labels,
        metric="macro_f1",
        items=items,
        label_map={x: x for x in BINARY_LABELS if x in labels},
    )


def _jsonl_rows(path: Path):
    """(where, default id, record) per non-blank line."""
    lines = _read_dataset_text(path).splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}: line {lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{where} is not valid JSON ({e.msg})") from None
        if not isinstance(record, dict):
            raise UserError(f"{where} is not a JSON object")
        yield where, str(lineno), record


def _csv_rows(path: Path):
    """(where, default id, record) per data row; `where` names the row's first line in the file."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f)
            header = None
            line_end = 0
            for row in reader:
                start, line_end = line_end + 1, reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if header is None:
                    header = [h.strip().lower() for h in row]
                    if "claim" not in header:
                        raise UserError(f"{path}: line {start}: the header has no 'claim' column "
                                        f"(columns: {', '.join(header)})")
                    continue
                where = f"{path}: line {start}"
                if len(row) > len(header):
                    raise UserError(f"{where} has {len(row)} fields but the header has {len(header)}")
                record = {k: v for k, v in zip(header, row) if k}
                if len(row) < len(header) and "claim" not in record:
                    raise UserError(f"{where} has {len(row)} fields but the header has {len(header)}")
                yield where, str(start), record
    except csv.Error as e:
        raise UserError(f"{path}: line {reader.line_num}: malformed CSV ({e})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {path}: {e}") from None


def _strings(value: Any, where: str, what: str, *, split: bool) -> list[str]:
    """A string or list of strings as a list; CSV cells may hold a JSON list or ';'-separated values."""
    if value in (None, ""):
        return []
    if isinstance(value, str) and split:
        s = value.strip()
        if s.startswith("["):
            try:
                value = json.loads(s)
            except json.JSONDecodeError:
                raise UserError(f"{where}: {what!r} starts with '[' but is not a JSON list") from None
        else:
            return [p.strip() for p in s.split(";") if p.strip()]
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise UserError(f"{where}: {what!r} must be a string or a list of strings")


def _user_evidence(value: Any, item_id: str, where: str) -> list[Document]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("["):  # a CSV cell holding a JSON list
            try:
                value = json.loads(s)
            except json.JSONDecodeError:
                value = [s]
        else:
            value = [s]
    if not isinstance(value, list):
        raise UserError(f"{where}: 'evidence' must be a string or a list of strings")
    docs = []
    for n, e in enumerate(value):
        if isinstance(e, str):
            title, text, url = "", e.strip(), None
        elif isinstance(e, dict) and isinstance(e.get("text"), str):
            title, text, url = str(e.get("title") or ""), e["text"].strip(), e.get("url")
        else:
            raise UserError(f"{where}: evidence {n + 1} must be a string (or an object with 'text')")
        if text:
            docs.append(Document(id=f"{item_id}-e{len(docs)}", title=title, text=text, url=url))
    return docs

