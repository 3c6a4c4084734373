"""Open-domain checking over the Wikipedia knowledge base, beside the same claims with their gold evidence.

    python benchmarks/kb_open_domain.py [--pipeline verifier --pipeline lexical --pipeline qacheck] [--out DIR]

Two sets of claims whose subject the knowledge base covers:
- FEVEROUS-S dev (../shared/benchmarks/feverous_s/dev_600.json): the claims an article of whose gold evidence is in
  the knowledge base (`veracity eval --covered-by-kb`);
- benchmarks/data/kb_realworld_claims.jsonl: 60 claims written for this benchmark about vital-article subjects
  (half true, half false), each naming its subject article; their "gold evidence" is that article's lead section.

Each pipeline is run with `veracity eval` twice per set: open-domain (no evidence given: the knowledge base is
searched, as every check does by default) and with the gold evidence. The table gives macro-F1 and accuracy, the
majority class, accuracy of the most confident 20% against all, ECE, how often a passage of the knowledge base (and of
the claim's own subject article) was among the evidence read, and how many verdicts that are not marked uncertain go
against the verifier's own last reading of their evidence. Then the knowledge base's retrieval time per query
(p50/p95, in this process, after it is loaded) and what opening it adds to a check.

Runs are resumable (the same --out); the eval reports stay in --out for reading.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FEVEROUS = ROOT.parent / "shared" / "benchmarks" / "feverous_s" / "dev_600.json"
OWN_CLAIMS = ROOT / "benchmarks" / "data" / "kb_realworld_claims.jsonl"


def run_eval(args: list[str], out: Path) -> list[dict]:
    cmd = [sys.executable, "-m", "veracity.cli", "eval", *args, "--out", str(out), "--no-progress", "--no-plots"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines() if line.strip()]


def macro_f1(gold: list[str], pred: list[str]) -> float:
    labels = sorted(set(gold))
    f1s = []
    for lab in labels:
        tp = sum(g == p == lab for g, p in zip(gold, pred))
        fp = sum(p == lab and g != lab for g, p in zip(gold, pred))
        fn = sum(g == lab and p != lab for g, p in zip(gold, pred))
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return 100 * sum(f1s) / len(f1s)


def read_sources(row: dict) -> list[dict]:
    """Every evidence record the check read: retrieval results, QA steps' evidence, DEFAME's sources."""
    out = []
    for step in row["trace"]:
        for key in ("results", "evidence", "sources"):
            for e in step.get(key) or []:
                if isinstance(e, dict) and "text" in e:
                    out.append(e)
    return out


def figures(rows: list[dict], subjects: dict[str, list[str]]) -> dict:
    gold = [r["gold"] for r in rows]
    pred = [r["pred"] for r in rows]
    n = len(rows)
    majority = max(set(gold), key=gold.count)
    conf = [(r["verdict"].get("confidence") or 0.0, r["correct"]) for r in rows]
    conf.sort(key=lambda x: -x[0])
    top = conf[: max(1, round(n * 0.2))]
    bins: dict[int, list] = {}
    for c, ok in conf:
        bins.setdefault(min(int(c * 10), 9), []).append((c, ok))
    ece = sum(
        len(b) / n * abs(statistics.mean(c for c, _ in b) - statistics.mean(ok for _, ok in b)) for b in bins.values()
    )
    kb_read = subject_read = against = decided = 0
    for r in rows:
        readings = [s for s in r["trace"] if s["stage"] == "evidence_verifier"]
        # the titles of the knowledge base's passages the check read: evidence shown in its steps, and what the
        # verifier read (QACheck's verifier reads the claim's own passages, which no other step shows)
        read = [e.get("source") or "" for e in read_sources(r) if (e.get("found_by") or {}).get("knowledge_base")]
        if r.get("setting") == "open-domain" or r["dataset"] in ("jsonl", "csv"):
            read += [t for s in readings for t in s.get("sources") or []]
        kb_read += bool(read)
        wanted = {t.casefold() for t in subjects.get(r["id"], [])}
        subject_read += any(t.casefold() in wanted for t in read)
        if not r["verdict"].get("uncertain"):
            decided += 1
            against += bool(readings) and readings[-1]["label"] != r["pred"]
    return {
        "n": n,
        "macro_f1": macro_f1(gold, pred),
        "accuracy": 100 * sum(g == p for g, p in zip(gold, pred)) / n,
        "majority": 100 * gold.count(majority) / n,
        "top20": 100 * sum(ok for _, ok in top) / len(top),
        "ece": ece,
        "kb_read": 100 * kb_read / n,
        "subject_read": 100 * subject_read / n,
        "decided": decided,
        "against": against,
    }


def own_claims_files(tmp: Path) -> tuple[Path, Path, dict[str, list[str]]]:
    """The written claims as they are (open-domain), and with their subject's lead section as gold evidence."""
    from veracity.retrieval import knowledge_base as kb

    leads = {d.title: d.text for d in kb.documents(kb.installed("en"))}
    plain, gold, subjects = tmp / "own.jsonl", tmp / "own_gold.jsonl", {}
    with plain.open("w") as f, gold.open("w") as g:
        for line in OWN_CLAIMS.read_text().splitlines():
            item = json.loads(line)
            subject = item["subject"]
            title = subject if subject in leads else next(t for t in leads if t.endswith(" " + subject))
            subjects[item["id"]] = [title]
            f.write(json.dumps({**item, "subject": title}) + "\n")
            g.write(json.dumps({**item, "subject": title, "evidence": leads[title]}) + "\n")
    return plain, gold, subjects


def feverous_subjects() -> dict[str, list[str]]:
    from veracity.eval.datasets import load_dataset
    from veracity.eval.datasets.records import EVIDENCE_TITLES

    return {it.id: it.metadata[EVIDENCE_TITLES] for it in load_dataset("feverous-s", FEVEROUS).items}


def retrieval_times(queries: list[str]) -> tuple[float, float, float]:
    from veracity.retrieval import knowledge_base as kb

    t0 = time.perf_counter()
    retriever = kb.load_knowledge_base("kb:wikipedia").retriever()
    opened = time.perf_counter() - t0
    times = []
    for q in queries:
        t = time.perf_counter()
        retriever.search(q, k=5)
        times.append(1000 * (time.perf_counter() - t))
    times.sort()
    return opened, times[len(times) // 2], times[int(len(times) * 0.95)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipeline", action="append", help="pipelines to run (default: verifier, lexical)")
    p.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "veracity-kb-open-domain"))
    a = p.parse_args()
    pipelines = a.pipeline or ["verifier", "lexical"]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.pop("VERACITY_KB", None)
    plain, gold_file, own_subjects = own_claims_files(out)
    sets = []
    if FEVEROUS.is_file():
        base = ["--dataset", "feverous-s", "--path", str(FEVEROUS), "--covered-by-kb"]
        sets.append(
            (
                "FEVEROUS-S dev, covered",
                base + ["--setting", "open-domain"],
                base + ["--setting", "gold-evidence"],
                feverous_subjects(),
            )
        )
    else:
        print(f"(FEVEROUS-S not found at {FEVEROUS}: only the written claims)")
    sets.append(
        (
            "written real-world claims",
            ["--dataset", "jsonl", "--path", str(plain)],
            ["--dataset", "jsonl", "--path", str(gold_file)],
            own_subjects,
        )
    )
    print(
        "| claims | pipeline | evidence | n | macro-F1 | accuracy | majority class | most confident 20% | ECE "
        "| a KB passage read | its subject's article read | not uncertain | of them against their evidence |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    queries: list[str] = []
    for name, open_args, gold_args, subjects in sets:
        for pipeline in pipelines:
            for evidence, args in (("open-domain (KB)", open_args), ("gold", gold_args)):
                folder = out / f"{name.split()[0].lower()}-{pipeline}-{evidence.split()[0]}"
                rows = run_eval(args + ["--pipeline", pipeline], folder)
                queries += [r["trace"][0]["text"] for r in rows if r["trace"]]
                f = figures(rows, subjects)
                kb_cols = f"{f['kb_read']:.0f}% | {f['subject_read']:.0f}%" if evidence.startswith("open") else "- | -"
                print(
                    f"| {name} | {pipeline} | {evidence} | {f['n']} | {f['macro_f1']:.1f} | {f['accuracy']:.1f} | "
                    f"{f['majority']:.1f} | {f['top20']:.1f} | {f['ece']:.3f} | {kb_cols} | {f['decided']} | "
                    f"{f['against']} |",
                    flush=True,
                )
    opened, p50, p95 = retrieval_times(sorted(set(queries)))
    print(
        f"\nKnowledge base retrieval over {len(set(queries))} claims (k=5, BM25 then the claim's named articles): "
        f"p50 {p50:.1f} ms, p95 {p95:.1f} ms per query; opening it (index already built) {opened:.2f} s."
    )


if __name__ == "__main__":
    main()
