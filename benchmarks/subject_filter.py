"""How well the knowledge base's subject filter finds the articles a claim is about (retrieval/subjects.py).

    python benchmarks/subject_filter.py

For claims whose subject is known, each searched in the Wikipedia knowledge base as every check searches it
(`SubjectRetriever`, k = verifier.top_k): recall (the claim's subject article is among the articles found),
precision (the articles found that are one of the claim's subjects; an article that the claim names beside its
subject counts against it, so this is a lower bound), and how many claims with no article of their own found one.

- benchmarks/data/open_world_claims.jsonl: real-world claims written for the project, each with the title of the
  article it is about ("" when the knowledge base has none);
- benchmarks/data/kb_realworld_claims.jsonl: claims about vital-article subjects, each naming its subject;
- FEVEROUS-S dev (../shared/benchmarks, when there): the claims one of whose gold evidence articles is in the
  knowledge base; their subjects are those articles.
Prints a table; run it on two commits to compare.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FEVEROUS = ROOT.parent / "shared" / "benchmarks" / "feverous_s" / "dev_600.json"
DATA = ROOT / "benchmarks" / "data"


def claim_sets(titles: set[str]) -> list[tuple[str, list[tuple[str, set[str]]]]]:
    sets = []
    rows = [json.loads(x) for x in (DATA / "open_world_claims.jsonl").read_text().splitlines() if x.strip()]
    sets.append(("written real-world claims (193)", [(r["claim"], {r["subject"]} - {""}) for r in rows]))
    rows = [json.loads(x) for x in (DATA / "kb_realworld_claims.jsonl").read_text().splitlines() if x.strip()]
    kb_rows = []
    for r in rows:
        s = r["subject"]
        title = s if s in titles else next((t for t in titles if t.endswith(" " + s)), s)
        kb_rows.append((r["claim"], {title}))
    sets.append(("kb_realworld_claims (60)", kb_rows))
    if FEVEROUS.is_file():
        from veracity.eval.datasets import load_dataset
        from veracity.eval.datasets.records import EVIDENCE_TITLES

        items = load_dataset("feverous-s", FEVEROUS).items
        covered = [(it.claim.text, set(it.metadata[EVIDENCE_TITLES]) & titles) for it in items]
        sets.append(("FEVEROUS-S dev, covered by the KB", [(c, s) for c, s in covered if s]))
    return sets


def main() -> None:
    from veracity.config import VerifierConfig
    from veracity.retrieval import knowledge_base as kb

    index = kb.load_knowledge_base("kb:wikipedia")
    retriever = index.retriever()
    titles = {d.title for d in kb.documents(kb.installed("en"))}
    k = VerifierConfig().top_k
    print("| claims | n | with a subject | recall | precision (lower bound) | no subject article, found one |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rows in claim_sets(titles):
        with_subject = [(c, s) for c, s in rows if s]
        found_all = {c: {e.source for e in retriever.search(c, k=k)} for c, _ in rows}
        hit = sum(bool(found_all[c] & s) for c, s in with_subject)
        found_n = sum(len(found_all[c]) for c, _ in with_subject)
        right = sum(len(found_all[c] & s) for c, s in with_subject)
        none = [c for c, s in rows if not s]
        stray = sum(bool(found_all[c]) for c in none)
        print(
            f"| {name} | {len(rows)} | {len(with_subject)} | {100 * hit / len(with_subject):.1f} | "
            f"{100 * right / max(found_n, 1):.1f} | {f'{stray} of {len(none)}' if none else '-'} |"
        )


if __name__ == "__main__":
    main()
