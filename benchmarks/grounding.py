"""Grounding: a sentence against the whole document it should rest on, on the held-apart parts of the
grounding-shaped training sources (never fitted on), as LLM-AggreFact scores it (balanced accuracy), and how fast.

    python benchmarks/grounding.py [--limit 300] [--data ../shared/training] [--speed-only]

Sets (verify/training/grounding_fit.py): BEGIN, SummEdits and Factcheck-GPT (their held-apart parts, split as the
verifier's training splits them) and Citation-Integrity (its test split; the verifier never trained on any of it).
Systems, each reading every pair whole:
- `grounding`: veracity.grounding (every part of the document read, supported when some part supports; the shipped
  verifier with its grounding rule, verifier.json `grounding_rule`), with the share of verdicts shown as decided and
  how often they were right, and ECE;
- `verifier as the pipelines read`: the shipped verifier's `verify_many` (windows, the most decisive deciding) with
  its rule for supported against the rest (the reading LEAF's rater and check-text used before);
- `lexical`: the lexical baseline through the grounding path (its fallback rule: supported from one half).
Then the speed on 2 cores: (sentence, document of about 2,000 characters) pairs a second through the grounding
path, and a 5-sentence answer against 3 such documents through `ground()` (median of 5, the model loaded), for each
runtime (verify/runtime.py: PyTorch, ONNX Runtime, ONNX Runtime with 8-bit weights).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veracity.claims.sentences import split_sentences  # noqa: E402
from veracity.config import load_config  # noqa: E402
from veracity.grounding import ground  # noqa: E402
from veracity.verify import load_lexical, load_verifier  # noqa: E402
from veracity.verify.grounding import GroundingRule  # noqa: E402
from veracity.verify.result import binary_label  # noqa: E402
from veracity.verify.training import grounding_fit as gf  # noqa: E402
from veracity.verify.training.data import default_training_dir  # noqa: E402


def cpu_line() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    name = next((x.split(":", 1)[1].strip() for x in lines if x.startswith("model name")), platform.processor())
    flags = next((x.split(":", 1)[1].split() for x in lines if x.startswith("flags")), [])
    shown = [f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile") if f in flags]
    return f"{name}, {os.cpu_count()} cores ({', '.join(shown) or 'no avx2'})"


def pipeline_rows(verifier, pairs: list[gf.GroundingPair]) -> list[dict]:
    """Each pair as the pipelines read one passage (verify_many), with the rule for supported against the rest."""
    out = []
    for p, v in zip(pairs, verifier.verify_many([(p.sentence, [p.document]) for p in pairs])):
        label, conf = binary_label(v.probabilities["supported"], v.probabilities["refuted"], verifier.rest_rule)
        out.append({"source": p.source, "grounded": p.grounded, "said": label == "supported", "conf": conf})
    return out


def balanced(rows: list[dict], said: str = "said") -> float:
    recall = []
    for want in (True, False):
        xs = [r[said] == r["grounded"] for r in rows if r["grounded"] == want]
        if xs:
            recall.append(sum(xs) / len(xs))
    return 100 * sum(recall) / len(recall)


def accuracy_table(args) -> None:
    pairs = [
        p
        for p in gf.grounding_pairs(Path(args.data) if args.data else default_training_dir(), measure_cap=args.limit)
        if p.half == "measure"
    ]
    verifier = load_verifier(None, threads=args.threads, runtime=args.runtime)
    rule = GroundingRule.of(verifier)
    t0 = time.perf_counter()
    rows = gf.read_pairs(verifier, pairs, part_tokens=rule.part_tokens)
    seconds = time.perf_counter() - t0
    lexical = load_lexical()
    lex_rule = GroundingRule.of(lexical)
    lex_rows = gf.read_pairs(lexical, pairs, part_tokens=lex_rule.part_tokens)
    piped = pipeline_rows(verifier, pairs)
    print(
        f"Rule: {'fitted on grounding pairs' if rule.fitted else 'the fallback (no grounding_rule)'} "
        f"{rule.rule}, uncertain below {rule.uncertain_below:.4f}, parts of at most {rule.part_tokens} word pieces; "
        f"{len(pairs)} pairs read in {seconds:.0f} s (runtime {verifier.runner.name})"
    )
    print()
    print(
        "| set | pairs | grounding (veracity) | shown as decided | of them right | ECE "
        "| verifier as the pipelines read | lexical baseline |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    means = {"g": [], "p": [], "l": []}
    for source in gf.SOURCES:
        mine = [r for r in rows if r["source"] == source]
        if not mine:
            continue
        f = gf.figures(mine, rule)
        lex = gf.figures([r for r in lex_rows if r["source"] == source], lex_rule)
        pipe = balanced([r for r in piped if r["source"] == source])
        means["g"].append(100 * f["balanced_accuracy"])
        means["p"].append(pipe)
        means["l"].append(100 * lex["balanced_accuracy"])
        print(
            f"| {source} | {f['n']} | {100 * f['balanced_accuracy']:.1f} | {100 * f['decided_share']:.1f}% "
            f"| {100 * f['decided_accuracy']:.1f} | {f['ece']:.3f} | {pipe:.1f} | {100 * lex['balanced_accuracy']:.1f} |"
        )
    m = {k: statistics.mean(v) for k, v in means.items() if v}
    print(f"| average | | {m['g']:.1f} | | | | {m['p']:.1f} | {m['l']:.1f} |")


def speed_table(args) -> None:
    """Pairs a second and the latency of a 5-sentence answer against 3 documents of about 2,000 characters."""
    pairs = [
        p
        for p in gf.grounding_pairs(Path(args.data) if args.data else default_training_dir(), measure_cap=200)
        if p.half == "measure" and len(p.document) >= 2000
    ]
    docs = []
    for p in pairs:  # the first 2,000 characters or so of each, cut at a sentence's end
        text, out = "", []
        for s in split_sentences(p.document):
            if len(text) + len(s) > 2000:
                break
            out.append(s)
            text = " ".join(out)
        if len(text) >= 1500:
            docs.append((p.sentence, text))
    docs = docs[: args.speed_pairs]
    from veracity.verify.grounding import ground_sentences
    from veracity.verify.runtime import onnx_available

    chars = statistics.mean(len(d) for _, d in docs)
    print()
    print(
        f"| speed: {len(docs)} (sentence, document) pairs, {chars:,.0f} characters a document | pairs a second, one call "
        "each | a 5-sentence answer against 3 such documents, `ground()` (median of 5) |"
    )
    print("|---|---:|---:|")
    for runtime in ("torch", "onnx", "onnx-int8") if onnx_available() else ("torch",):
        verifier = load_verifier(None, threads=args.threads, runtime=runtime)
        config = load_config(None)
        config.verifier = replace(config.verifier, threads=args.threads, runtime=runtime)
        rule = GroundingRule.of(verifier)
        ground_sentences(verifier, [docs[0][0]], [docs[0][1]], rule)  # warm
        t0 = time.perf_counter()
        for sentence, doc in docs:
            ground_sentences(verifier, [sentence], [doc], rule)
        one_by_one = len(docs) / (time.perf_counter() - t0)
        answer = " ".join(s for s, _ in docs[:5])
        three = [d for _, d in docs[5:8]]
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            ground(answer, three, config=config)
            times.append(time.perf_counter() - t0)
        print(f"| {runtime} | {one_by_one:.1f} | {statistics.median(times):.2f} s |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="the training data folder (default ../shared/training)")
    ap.add_argument("--limit", type=int, default=gf.MEASURE_CAP, help="pairs per set at most (default 600)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--speed-pairs", type=int, default=60)
    ap.add_argument("--speed-only", action="store_true")
    ap.add_argument(
        "--runtime", default="torch", help="what runs the verifier for the accuracy table: torch, onnx, onnx-int8"
    )
    args = ap.parse_args()
    print(f"Machine: {cpu_line()}; torch threads {args.threads}")
    if not args.speed_only:
        accuracy_table(args)
    speed_table(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
