"""The evidence verifier's figures in one table (issue 13): FM2 held-out pages, FEVEROUS-S gold evidence,
AVeriTeC, with the lexical and majority-class baselines beside it, and the verifier's speed and memory.

    python benchmarks/verifier_eval.py --out runs/verifier_eval [--llm PIPELINE ...] [--llm-limit N]

- FM2 held-out: the FM2 claims of pages held apart from training (verify/training/data.py), against their gold
  evidence; the verifier and the lexical baseline called directly.
- FEVEROUS-S `dev_600.json` (gold evidence, all 600) and AVeriTeC `dev_200.json` (4 labels, its annotators'
  answers pooled as the knowledge base): `veracity eval` runs of the `verifier` and `lexical` pipelines, plus
  any `--llm` pipelines (e.g. qacheck-retriever-reader, direct, cot, defame) on the first `--llm-limit` items
  drawn with seed 0 (the embedded model is slow). Runs go to OUT/<dataset>/ and resume when re-run.
- Speed: milliseconds per claim-evidence pair (batched 32, and one at a time), peak resident memory.
Never trains or tunes on these sets.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from veracity.config import load_config
from veracity.eval.datasets import load_dataset
from veracity.eval.report import accuracy_at_coverage, build_report, confident_rows, load_rows
from veracity.eval.runner import run_eval
from veracity.llm import make_model
from veracity.metrics import accuracy, expected_calibration_error, macro_f1
from veracity.verify import load_lexical, load_verifier
from veracity.verify.result import binary_label
from veracity.verify.training.data import build, default_training_dir

BENCH = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
SETS = {
    "feverous-s": (BENCH / "feverous_s" / "dev_600.json", "gold-evidence"),
    "averitec": (BENCH / "averitec" / "dev_200.json", None),
}


VERIFIER = "default"  # --verifier: the verifier folder measured (default: the shipped one)


def fm2_rows(table: list[tuple], rule_of) -> None:
    data = build(default_training_dir(), sources=())
    pairs = data.heldout_fm2
    gold = [p.label for p in pairs]
    for name, verifier in (("verifier", load_verifier(VERIFIER)), ("lexical", load_lexical())):
        vs = verifier.verify_many([(p.claim, [p.evidence]) for p in pairs])
        probs = [[v.probabilities[k] for k in ("supported", "refuted", "nei")] for v in vs]
        pred = [binary_label(s, r, verifier.binary_rule)[0] for s, r, _ in probs]
        conf = [v.binary(verifier.binary_rule)[1] for v in vs]
        ece = expected_calibration_error(conf, [g == p for g, p in zip(gold, pred)])
        table.append(
            (
                "fm2 held-out pages",
                name,
                len(gold),
                100 * macro_f1(gold, pred, ["supported", "refuted"]),
                100 * accuracy(gold, pred),
                f"ECE {ece:.3f}",
            )
        )
    top = max(sorted(set(gold)), key=gold.count)
    table.append(
        (
            "fm2 held-out pages",
            f"majority ({top})",
            len(gold),
            100 * macro_f1(gold, [top] * len(gold), ["supported", "refuted"]),
            100 * accuracy(gold, [top] * len(gold)),
            "",
        )
    )


def eval_rows(table: list[tuple], out: Path, name: str, llm: list[str], llm_limit: int) -> None:
    path, setting = SETS[name]
    if not path.exists():
        table.append((name, "skipped: data absent", 0, float("nan"), float("nan"), str(path)))
        return
    config = load_config(overrides={"cache": False, "verifier.model": VERIFIER})
    dataset = load_dataset(name, path, setting=setting)
    run_dir = out / name
    scripted = run_dir / "no-model.json"
    run_dir.mkdir(parents=True, exist_ok=True)
    scripted.write_text(json.dumps({"rules": []}))
    no_model = make_model(
        load_config(overrides={"model": f"scripted:{scripted}", "cache": False, "verifier.model": VERIFIER})
    )
    run_eval(dataset, ["verifier", "lexical"], no_model, config, run_dir / "evidence", progress=False)
    dirs = [run_dir / "evidence"]
    if llm:
        model = make_model(config)
        run_eval(dataset, llm, model, config, run_dir / "llm", limit=llm_limit, seed=0, progress=True)
        dirs.append(run_dir / "llm")
    labels = list(dataset.labels)
    gold_all: dict[str, str] = {}
    for d in dirs:
        build_report(d, plots=False)
        rows = [r for r in load_rows(d) if r["dataset"] == name]
        for pipe in sorted({r["pipeline"] for r in rows}):
            rs = [r for r in rows if r["pipeline"] == pipe]
            gold, pred = [r["gold"] for r in rs], [r["pred"] for r in rs]
            gold_all.update({r["id"]: r["gold"] for r in rs})
            s = sum(r["seconds"] for r in rs) / len(rs)
            curve = accuracy_at_coverage(rs)
            conf, right = confident_rows(rs)
            decided = [r for r in rs if not r["verdict"].get("uncertain")]
            note = f"{s:.2f} s/claim"
            if curve:
                note += (
                    f"; accuracy of the most confident 20%: {100 * curve[-1][2]:.1f}; ECE "
                    f"{expected_calibration_error(conf, right):.3f}; not uncertain: {len(decided)} "
                    f"({100 * sum(r['gold'] == r['pred'] for r in decided) / max(1, len(decided)):.1f}% right)"
                )
            table.append((name, pipe, len(rs), 100 * macro_f1(gold, pred, labels), 100 * accuracy(gold, pred), note))
    gold = list(gold_all.values())
    for fixed in sorted(set(gold)):
        if fixed == "Refuted" or fixed == max(sorted(set(gold)), key=gold.count):
            table.append(
                (
                    name,
                    f"always {fixed}",
                    len(gold),
                    100 * macro_f1(gold, [fixed] * len(gold), labels),
                    100 * accuracy(gold, [fixed] * len(gold)),
                    "",
                )
            )


def speed_rows(table: list[tuple]) -> None:
    v = load_verifier(VERIFIER)
    claim = "The Brooklyn Bridge was opened in 1883 and spans the East River."
    ev = (
        "The Brooklyn Bridge is a hybrid cable-stayed suspension bridge in New York City, spanning the East River "
        "between Manhattan and Brooklyn. Opened on May 24, 1883, it was the first fixed crossing of the river."
    )
    v.score_pairs([(claim, ev)] * 4)  # warm
    n = 128
    t = time.perf_counter()
    v.score_pairs([(claim, ev)] * n)
    batched = 1000 * (time.perf_counter() - t) / n
    t = time.perf_counter()
    for _ in range(16):
        v.score_pairs([(claim, ev)])
    single = 1000 * (time.perf_counter() - t) / 16
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    table.append(
        (
            "speed",
            "verifier",
            n,
            float("nan"),
            float("nan"),
            f"{batched:.1f} ms/pair batched, {single:.1f} ms/pair alone, peak RSS {rss:.0f} MiB, {v.threads} thread(s)",
        )
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/verifier_eval")
    ap.add_argument("--llm", action="append", default=[], help="LLM pipeline to run beside (repeatable)")
    ap.add_argument("--llm-limit", type=int, default=30)
    ap.add_argument("--sets", default="fm2,feverous-s,averitec,speed")
    ap.add_argument("--verifier", default="default", help="verifier folder to measure (default: the shipped one)")
    args = ap.parse_args()
    global VERIFIER
    VERIFIER = args.verifier
    out = Path(args.out)
    table: list[tuple] = []
    sets = args.sets.split(",")
    if "fm2" in sets:
        fm2_rows(table, None)
    for name in ("feverous-s", "averitec"):
        if name in sets:
            eval_rows(
                table,
                out,
                name,
                [p for p in args.llm if name == "feverous-s" or p.startswith("defame") or p in ("direct", "cot")],
                args.llm_limit,
            )
    if "speed" in sets:
        speed_rows(table)
    print("| set | system | n | macro-F1 | accuracy | notes |")
    print("|---|---|---:|---:|---:|---|")
    for s, sysname, n, f1, acc, note in table:
        fmt = lambda x: "" if x != x else f"{x:.1f}"  # noqa: E731  (nan: not applicable)
        print(f"| {s} | {sysname} | {n} | {fmt(f1)} | {fmt(acc)} | {note} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
