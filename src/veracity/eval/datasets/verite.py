"""VERITE: `verite` (verite/VERITE.csv), 1,001 image-caption pairs, labels `true`, `miscaptioned`,
`out-of-context` as spelled in the file; accuracy; setting `closed-book` (text only).

The claim is the caption. The images are not available offline: the CSV names local files (`images/true_N.jpg`,
`images/false_N.jpg`) that are not shipped; their URLs come from VERITE_articles.csv beside it
(`true_url` / `false_url` of article N) and go in metadata (`image_url`), not in `claim.images`.
If the image file does exist beside the CSV (e.g. downloaded from the gated HF dataset), its path
goes in `claim.images`. Text only, an out-of-context item reads exactly like a true one (its
caption is the article's true caption, paired with another image), so a text-only checker cannot
tell them apart. `label_map` sends Supported -> true and Refuted -> miscaptioned.
DEFAME reports binary accuracies (true vs miscaptioned / OOC / false), not 3-class accuracy, so
`reference` is empty and those numbers are only quoted in `reference_note`.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from veracity.errors import UserError
from veracity.types import REFUTED, SUPPORTED, Claim

from .files import check_setting
from .records import Dataset, EvalItem

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


def load_verite(path: Path, setting: str | None) -> Dataset:
    setting = check_setting("verite", setting, ("closed-book",))
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
        items.append(
            EvalItem(
                id=item_id,
                claim=Claim(r["caption"].strip(), images=[str(local)] if local and local.is_file() else [], id=item_id),
                gold=label,
                metadata={
                    "image_path": image_path,
                    "image_url": image_url,
                    "article_id": article_id,
                    "snopes_url": snopes_url,
                },
            )
        )
    labels = tuple(x for x in VERITE_LABELS if x in seen_labels) + tuple(
        x for x in seen_labels if x not in VERITE_LABELS
    )
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
