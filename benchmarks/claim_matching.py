"""Detecting previously fact-checked claims (CLEF CheckThat! Task 2A): MAP@5 of veracity's matcher beside BM25,
dense retrieval and their fusion, all over the same store.

    python benchmarks/claim_matching.py \\
        --collection ../shared/benchmarks/claim_matching/checkthat2022_2a/vclaims.jsonl \\
        --queries ../shared/benchmarks/claim_matching/checkthat2022_2a/queries.jsonl \\
        --qrels ../shared/benchmarks/claim_matching/checkthat2022_2a/qrels.jsonl --split dev

The collection is imported into a fact-check store (a temporary one unless --store names a folder; the import is
timed), every query is matched through the code `veracity factchecks match` uses (timed per query), and the table
gives MAP@5 (as the CheckThat! scorer computes it), how often a match was shown (at or above the threshold) and how
often the shown one was right, and the ECE of the first five candidates' probabilities. The last line is
`veracity MAP@5 0.xxx`. Queries without a `split` field are all read when --split is not given.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veracity.factchecks.formats import read_files  # noqa: E402
from veracity.factchecks.matcher import Matcher, clean_post  # noqa: E402
from veracity.factchecks.stores import open_store  # noqa: E402
from veracity.factchecks.training import average_precision, read_queries  # noqa: E402
from veracity.metrics import expected_calibration_error  # noqa: E402
from veracity.retrieval.hybrid import RRF_K, reciprocal_rank_fusion  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--collection", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--qrels", required=True)
    ap.add_argument("--split", help="only the queries of this split (default: all)")
    ap.add_argument("--store", help="import into this store folder (default: a temporary one)")
    ap.add_argument("--limit", type=int, help="only the first N queries")
    args = ap.parse_args(argv)

    records, problems = read_files([args.collection])
    if problems:
        print(f"the collection has {len(problems)} unreadable record(s), e.g. {problems[0]}", file=sys.stderr)
    queries = read_queries(args.queries, args.qrels, args.split)[: args.limit or None]
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(args.store or Path(tmp) / "store", create=True)
        t0 = time.perf_counter()
        summary = store.import_records(records)
        import_seconds = time.perf_counter() - t0
        matcher = Matcher(open_store(store.where))
        matcher.rank("warm-up query", 5)
        keys = [r.key for r in matcher.store.records]
        runs: dict[str, list[float]] = {"BM25": [], "dense (MiniLM)": [], "fusion (reciprocal rank)": []}
        ours, seconds, shown, shown_right, probs, right = [], [], [], [], [], []
        for q in queries:
            t = time.perf_counter()
            matches = matcher.rank(q.text, 5)
            seconds.append(time.perf_counter() - t)
            ranked = [m.factcheck.key for m in matches]
            ours.append(average_precision(ranked, q.relevant))
            if matches and matches[0].probability >= matcher.threshold:
                shown.append(1.0)
                shown_right.append(float(ranked[0] in q.relevant))
            else:
                shown.append(0.0)
            probs += [m.probability for m in matches]
            right += [m.factcheck.key in q.relevant for m in matches]
            for name, ranking in baselines(matcher, q.text).items():
                runs[name].append(average_precision([keys[r] for r in ranking], q.relevant))

    print(
        f"\n{len(queries)} queries{f' of split {args.split}' if args.split else ''} against {len(records)} fact-checks"
    )
    print(f"import: {summary.line()}; {import_seconds:.1f} s")
    print(
        f"matching: {1000 * statistics.median(seconds):.1f} ms a query (median), "
        f"{1000 * float(np.percentile(seconds, 95)):.1f} ms (95th percentile)\n"
    )
    print("| matcher | MAP@5 |\n|---|---:|")
    for name, values in runs.items():
        print(f"| {name} | {np.mean(values):.3f} |")
    print(f"| veracity (fusion candidates, re-ranked) | {np.mean(ours):.3f} |")
    if matcher.reranker is not None:
        print(
            f"\nshown as a published fact-check (probability >= {matcher.threshold:.2f}): {np.mean(shown):.1%} of "
            f"queries, right {np.mean(shown_right) if shown_right else 0:.1%}; ECE of the top-5 probabilities "
            f"{expected_calibration_error(probs, right):.3f}"
        )
    print(f"veracity MAP@5 {np.mean(ours):.3f}")
    return 0


def baselines(matcher: Matcher, text: str) -> dict[str, list[int]]:
    """The rankings of BM25, dense retrieval and their reciprocal-rank fusion: the matcher's own first stage, over
    the same store and the same cleaned query, without its re-ranker."""
    _, _, (bm25, dense) = matcher.first_stage(clean_post(text))
    fused = [row for row, _ in reciprocal_rank_fusion([bm25, dense], RRF_K)]
    return {"BM25": bm25, "dense (MiniLM)": dense, "fusion (reciprocal rank)": fused}


if __name__ == "__main__":
    raise SystemExit(main())
