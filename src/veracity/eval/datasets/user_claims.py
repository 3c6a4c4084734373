"""The user's own claims: `jsonl` (one JSON object per line; blank lines are skipped) or `csv` (a header row, then
one claim per row). Fields:

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
import json
from pathlib import Path
from typing import Any

from veracity.errors import UserError
from veracity.retrieval.documents import Document
from veracity.types import BINARY_LABELS, REFUTED, SUPPORTED, Claim

from .files import check_setting, read_text
from .records import Dataset, EvalItem

USER_LABELS = {
    "supported": SUPPORTED,
    "supports": SUPPORTED,
    "true": SUPPORTED,
    "refuted": REFUTED,
    "refutes": REFUTED,
    "false": REFUTED,
    "not_supported": REFUTED,
    "not supported": REFUTED,
}
_USER_FIELDS = ("id", "claim", "label", "date", "image", "images", "evidence")


def normalize_label(raw: Any) -> str:
    """A user's label: the spellings of supported/refuted -> Supported/Refuted, others as written."""
    s = str(raw).strip()
    return USER_LABELS.get(s.lower(), s)


def load_user_claims(path: Path, setting: str | None, *, fmt: str) -> Dataset:
    setting = check_setting(fmt, setting, ("user",))
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
        items.append(
            EvalItem(
                id=item_id,
                claim=Claim(
                    claim_text.strip(), images=images, date=None if date in (None, "") else str(date), id=item_id
                ),
                gold=gold,
                evidence=_user_evidence(record.get("evidence"), item_id, where),
                metadata={k: v for k, v in record.items() if k not in _USER_FIELDS and k is not None}
                | ({"label": label} if gold and str(label) != gold else {}),
            )
        )
    if labelled and unlabelled:
        raise UserError(f"{unlabelled[0]} has no 'label' but {labelled[0]} has one: label every claim or none")
    found = list(dict.fromkeys(item.gold for item in items if item.gold))
    # claims all labelled Supported (or all Refuted) are still a two-label task: the pipelines choose between both
    if found and set(found) <= set(BINARY_LABELS):
        labels = BINARY_LABELS
    else:
        labels = tuple(x for x in BINARY_LABELS if x in found) + tuple(x for x in found if x not in BINARY_LABELS)
        if len(labels) == 1:
            raise UserError(
                f"every labelled claim is {labels[0]!r}: a pipeline needs two labels or more to choose "
                f"between (label them {SUPPORTED} / {REFUTED}, or add claims of another label)"
            )
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
    lines = read_text(path).splitlines()
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
                        raise UserError(
                            f"{path}: line {start}: the header has no 'claim' column (columns: {', '.join(header)})"
                        )
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
