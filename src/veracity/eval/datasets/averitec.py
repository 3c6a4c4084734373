"""AVeriTeC: `averitec` (averitec/dev_200.json), 200 AVeriTeC dev claims, 4 labels, accuracy.

The claim date (given as D-M-YYYY) becomes ISO; speaker, reporting source and location go in the claim's
metadata. Settings: `pooled` (default): the annotators' answers to ALL claims of the file form the
`knowledge_base`, one Document per source URL (id and url = the URL, title = the question(s) it
answers, text = its answers, Boolean ones with their explanation); answers without a URL
("Metadata") get a stable id `averitec:<hash>`; answers that say "No answer could be found..."
(all Unanswerable ones and one Extractive one) are left out.
This is an optimistic, oracle-like setting: every claim's own evidence is in the pool. The items'
own QA pairs are in metadata (`questions`). `gold-evidence`: each item's own answers are its
`evidence`, no pool. `closed-book`: no evidence (the setting of the GPT-4o CoT reference). `open-domain`: no
evidence given: the Wikipedia knowledge base (or --index) is searched, as a check of a claim is by default.
"""

from __future__ import annotations

import hashlib
import re
from datetime import date as _date
from pathlib import Path
from typing import Any

from veracity.retrieval.documents import Document
from veracity.types import REFUTED, SUPPORTED, Claim

from .files import check_setting, json_list, map_label, required
from .records import Dataset, EvalItem

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
                        id=doc_id,
                        title="",
                        text="",
                        url=url,
                        metadata={
                            "questions": [],
                            "answers": [],
                            "claim_ids": [],
                            "source_medium": a.get("source_medium"),
                            "cached_source_url": a.get("cached_source_url"),
                        },
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


def load_averitec(path: Path, setting: str | None) -> Dataset:
    setting = check_setting("averitec", setting, ("pooled", "gold-evidence", "closed-book", "open-domain"))
    records = json_list(path)
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
        items.append(
            EvalItem(
                id=item_id,
                claim=Claim(
                    str(required(r, "claim", where)),
                    date=_iso_date(r.get("claim_date")),
                    id=item_id,
                    metadata=claim_meta,
                ),
                gold=map_label(required(r, "label", where), gold_map, where),
                evidence=_averitec_docs([(item_id, r)]) if setting == "gold-evidence" else [],
                metadata={
                    k: r.get(k)
                    for k in (
                        "claim_date",
                        "speaker",
                        "reporting_source",
                        "location_ISO_code",
                        "claim_types",
                        "fact_checking_strategies",
                        "justification",
                        "fact_checking_article",
                        "original_claim_url",
                        "cached_original_claim_url",
                        "required_reannotation",
                        "questions",
                    )
                },
            )
        )
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
