"""Figures for `veracity check-text` (issue 14), printed as one table.

    .venv/bin/python benchmarks/check_text.py [--n-rules 183] [--n-model 10] [--n-score 20] [--threads 1]

Data: FActScore's human-annotated biographies (../shared/benchmarks/longfact/factscore_labeled/, read in place,
never copied). Rows:
1. extraction against the human atomic facts (ChatGPT.jsonl, the first N biographies, relevant sentences only):
   an extracted claim and a human fact MATCH when their token F1 (lower-cased word tokens) is >= 0.5;
   precision = extracted claims that match some human fact, recall = human facts matched by some claim; claims per
   sentence; seconds per 100 words -- for the rules, and for the embedded SmolLM2-135M (--extract model, 1 thread,
   no cache) on a small N.
2. the factuality score (supported / checked, `--pipeline verifier`) per biography against the human FActScore
   (share of human facts labelled S): mean absolute error and Pearson correlation. The folder has no Wikipedia
   pages, so there is no real evidence index: as an oracle-like stand-in, each topic's index document is the
   S-labelled human facts of the OTHER two systems' biographies (InstructGPT, PerplexityAI) of the same person.
   This is optimistic (annotators' verified facts, not Wikipedia) and says nothing about retrieval from a real
   corpus; read it as how well claim-level checks aggregate, not as FActScore's setting.
3. seconds and model calls per 1,000 words for `--pipeline verifier` (on those biographies, rules extraction).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "benchmarks" / "longfact" / "factscore_labeled"
MATCH_F1 = 0.5


def tokens(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def token_f1(a: str, b: str) -> float:
    ta, tb = tokens(a), tokens(b)
    common = sum(min(ta.count(w), tb.count(w)) for w in set(ta))
    if not common:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def bio_items(rows: list[dict], n: int) -> list[dict]:
    """The first n biographies with annotations: the text (relevant sentences joined) and the human facts."""
    out = []
    for row in rows:
        anns = row.get("annotations") or []
        sents = [a for a in anns if a.get("is-relevant") and a.get("human-atomic-facts")]
        if not sents:
            continue
        facts = [f for a in sents for f in a["human-atomic-facts"]]
        out.append(
            {"topic": row["topic"], "text": " ".join(a["text"] for a in sents), "facts": facts, "sentences": len(sents)}
        )
        if len(out) == n:
            break
    return out


def extraction_row(items: list[dict], extract) -> dict:
    matched_claims = n_claims = matched_facts = n_facts = sentences = words = 0
    seconds = 0.0
    for it in items:
        t0 = time.perf_counter()
        ex = extract(it["text"])
        seconds += time.perf_counter() - t0
        claims = [c.text for c in ex.claims if c.status != "not_checkable"]
        facts = [f["text"] for f in it["facts"]]
        matched_claims += sum(any(token_f1(c, f) >= MATCH_F1 for f in facts) for c in claims)
        matched_facts += sum(any(token_f1(c, f) >= MATCH_F1 for c in claims) for f in facts)
        n_claims += len(claims)
        n_facts += len(facts)
        sentences += ex.sentences
        words += len(it["text"].split())
    return {
        "precision": matched_claims / max(n_claims, 1),
        "recall": matched_facts / max(n_facts, 1),
        "claims_per_sentence": n_claims / max(sentences, 1),
        "s_per_100_words": 100 * seconds / max(words, 1),
        "n": len(items),
    }


def pearson(x: list[float], y: list[float]) -> float:
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sx = sum((a - mx) ** 2 for a in x) ** 0.5
    sy = sum((b - my) ** 2 for b in y) ** 0.5
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / (sx * sy) if sx and sy else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-rules", type=int, default=183)
    ap.add_argument("--n-model", type=int, default=10)
    ap.add_argument("--n-score", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if not DATA.is_dir():
        print(f"no benchmark data at {DATA}", file=sys.stderr)
        return 1
    from veracity.claims import extract_claims
    from veracity.claims.sources import Source
    from veracity.config import load_config
    from veracity.llm import UsageMeter, make_model
    from veracity.registry import get_pipeline
    from veracity.retrieval.documents import Document
    from veracity.retrieval.index import Index
    from veracity.textcheck.run import check_text

    chatgpt = load("ChatGPT.jsonl")
    rows = [("rules", extraction_row(bio_items(chatgpt, args.n_rules), lambda t: extract_claims(t)))]
    calls = {"model": 0}
    if args.n_model:
        config = load_config(overrides={"model": "embedded", "n_threads": args.threads, "cache": False})
        model = make_model(config)
        meter = UsageMeter()
        run = model.bind(meter)
        usable = []

        def by_model(text):
            usable.append(extract_claims(text, method="model", model=run))
            return usable[-1]

        row = extraction_row(bio_items(chatgpt, args.n_model), by_model)
        calls["model"] = meter.total.calls
        # how far the model gets: sentences whose reply gave a grounded fact
        row["model_share"] = sum(e.model_sentences for e in usable) / max(sum(e.sentences for e in usable), 1)
        rows.append(("embedded SmolLM2-135M (model, rules fallback)", row))

    print(f"Extraction vs FActScore human atomic facts (ChatGPT bios; match: token F1 >= {MATCH_F1})")
    print("| extractor | bios | precision | recall | claims/sentence | s/100 words | sentences the model split |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        share = f"{100 * r['model_share']:.0f}%" if "model_share" in r else "-"
        print(
            f"| {name} | {r['n']} | {r['precision']:.2f} | {r['recall']:.2f} | {r['claims_per_sentence']:.2f} | "
            f"{r['s_per_100_words']:.3f} | {share} |"
        )

    # factuality score vs human FActScore, verifier pipeline over the oracle-like stand-in index
    others = {}
    for name in ("InstructGPT.jsonl", "PerplexityAI.jsonl"):
        for row in load(name):
            facts = [
                f["text"]
                for a in row.get("annotations") or []
                for f in a.get("human-atomic-facts") or []
                if f.get("label") == "S"
            ]
            others.setdefault(row["topic"], []).extend(facts)
    items = [it for it in bio_items(chatgpt, 10_000) if others.get(it["topic"])][: args.n_score]
    docs = [Document(id=str(i), title=t, text=" ".join(f)) for i, (t, f) in enumerate(others.items()) if f]
    config = load_config(overrides={"model": "embedded", "n_threads": args.threads, "cache": False})
    index = Index.from_documents(docs).retriever("bm25")
    pipeline = get_pipeline("verifier", config)
    model = make_model(config)
    est, gold = [], []
    seconds = words = model_calls = 0.0
    for it in items:
        check = check_text(
            Source(it["text"], it["topic"], "text"), pipeline, model, config, retriever=index, extract="rules"
        )
        human = [f["label"] for f in it["facts"] if f["label"] in ("S", "NS")]
        if check.factuality is None or not human:
            continue
        est.append(check.factuality)
        gold.append(sum(lbl == "S" for lbl in human) / len(human))
        seconds += check.seconds
        words += len(it["text"].split())
        model_calls += check.usage["total"]["calls"]
    mae = statistics.fmean(abs(a - b) for a, b in zip(est, gold))
    print()
    print(
        f"Factuality (verifier, stand-in index of other systems' S facts, {len(est)} ChatGPT bios): "
        f"MAE {mae:.3f}, Pearson r {pearson(est, gold):.2f}, mean estimate {statistics.fmean(est):.2f} vs human "
        f"{statistics.fmean(gold):.2f}"
    )
    print(
        f"--pipeline verifier: {1000 * seconds / words:.1f} s and {1000 * model_calls / words:.1f} model calls per "
        f"1,000 words (rules extraction; evidence-only verifier)"
    )
    if args.n_model:
        print(f"embedded extraction: {calls['model']} model calls for {args.n_model} bios")
    return 0


if __name__ == "__main__":
    sys.exit(main())
