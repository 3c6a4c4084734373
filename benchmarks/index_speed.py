"""Index build and query speed on a synthetic corpus.

Generates a deterministic corpus of N one-passage documents (about 100 words each, in sentences)
from a seeded vocabulary of pseudo-English words with a Zipfian frequency distribution, mixed with
real English function words so that stopword removal and stemming have work to do. Nothing is
downloaded. Then it builds an index with `Index.build`, reloads it, runs 200 queries and prints:
passages, build seconds, peak RSS, index size on disk, and query latency p50/p95.

    python benchmarks/index_speed.py                 # 100,000 passages, BM25
    python benchmarks/index_speed.py --n 1000000
    python benchmarks/index_speed.py --dense         # BM25 + MiniLM; N defaults to 2,000 because
                                                     # MiniLM on CPU encodes only ~25-100 passages/s
                                                     # (2 cores: ~25/s), so 100k would take ~1 hour
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

from veracity.retrieval import Document, Index  # noqa: E402

SEED = 1234
VOCABULARY = 50_000
WORDS_PER_PASSAGE = 100
QUERIES = 200
FUNCTION_WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there one all we can has been if more when "
    "will would who so no"
).split()
SUFFIXES = ("", "", "", "s", "ed", "ing", "er", "ly", "ation", "ment")


def make_vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """`size` distinct pseudo-words built from syllables, some with English suffixes."""
    onsets = "b c d f g h j k l m n p r s t v w z br ch cr dr fl gr pl pr sh st th tr".split()
    vowels = "a e i o u ai ea ee oo ou".split()
    codas = ["", "", "n", "r", "s", "t", "l", "nd", "st", "m"]
    words: dict[str, None] = {}
    while len(words) < size:
        o, v, c = rng.integers(len(onsets), size=3), rng.integers(len(vowels), size=3), rng.integers(len(codas), size=3)
        stem = "".join(onsets[o[i]] + vowels[v[i]] + codas[c[i]] for i in range(rng.integers(1, 4)))
        words[stem + SUFFIXES[rng.integers(len(SUFFIXES))]] = None
    return list(words)


def zipf_probabilities(size: int, exponent: float = 1.07) -> np.ndarray:
    p = 1.0 / np.arange(1, size + 1) ** exponent
    return p / p.sum()


def synthetic_documents(n: int, words: list[str], rng: np.random.Generator) -> Iterator[Document]:
    """N documents of ~WORDS_PER_PASSAGE words in sentences of 6-20 words, generated lazily."""
    probabilities = zipf_probabilities(len(words))
    ids = rng.choice(len(words), size=(n, WORDS_PER_PASSAGE), p=probabilities)
    breaks = rng.integers(6, 21, size=(n, WORDS_PER_PASSAGE // 6))
    for i in range(n):
        tokens = [words[j] for j in ids[i]]
        sentences, start = [], 0
        for length in breaks[i]:
            if start >= len(tokens):
                break
            sentence = tokens[start : start + length]
            sentences.append(sentence[0].capitalize() + " " + " ".join(sentence[1:]) + ".")
            start += length
        title = f"{tokens[-1].capitalize()} {tokens[-2]}"
        yield Document(id=f"doc{i}", title=title, text=" ".join(sentences))


def make_queries(words: list[str], rng: np.random.Generator) -> list[str]:
    """Queries of 3-8 words drawn from the content vocabulary (skipping the function words)."""
    content = len(FUNCTION_WORDS)
    probabilities = zipf_probabilities(len(words) - content)
    return [
        " ".join(words[content + j] for j in rng.choice(len(words) - content, size=rng.integers(3, 9), p=probabilities))
        for _ in range(QUERIES)
    ]


def rss_mib() -> float:
    """Current resident set size."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def folder_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def latency_ms(index: Index, queries: list[str], mode: str) -> tuple[float, float]:
    index.search(queries[0], k=10, mode=mode)  # warm up (loads the embedding model for dense modes)
    times = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, k=10, mode=mode)
        times.append((time.perf_counter() - start) * 1000)
    p50, p95 = np.percentile(times, [50, 95])
    return float(p50), float(p95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, help="number of passages (default: 100000; 2000 with --dense)")
    parser.add_argument("--dense", action="store_true", help="also build and query MiniLM embeddings")
    parser.add_argument("--out", type=Path, help="index folder (default: a temporary folder, deleted after)")
    args = parser.parse_args()
    n = args.n or (2_000 if args.dense else 100_000)

    rng = np.random.default_rng(SEED)
    words = FUNCTION_WORDS + make_vocabulary(rng, VOCABULARY)
    queries = make_queries(words, rng)

    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "index"
        documents = list(synthetic_documents(n, words, rng))  # generated before timing starts
        rss_before = rss_mib()
        start = time.perf_counter()
        index = Index.build(documents, out, dense=args.dense)
        build_s = time.perf_counter() - start
        peak = peak_rss_mib()
        del index, documents

        start = time.perf_counter()
        index = Index.load(out)
        load_s = time.perf_counter() - start
        rows = [
            ("passages", f"{len(index):,}"),
            ("build (chunk + index + save)", f"{build_s:.1f} s"),
            ("peak RSS", f"{peak:,.0f} MiB (RSS before build, corpus in memory: {rss_before:,.0f} MiB)"),
            ("index size on disk", f"{folder_mib(out):,.1f} MiB"),
            ("load", f"{load_s:.2f} s"),
        ]
        for mode in ("bm25", "dense", "hybrid") if args.dense else ("bm25",):
            p50, p95 = latency_ms(index, queries, mode)
            rows.append((f"{mode} query latency, k=10 ({QUERIES} queries)", f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"))

    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
