"""Verifiers side by side on every held-apart set of the training data (never the benchmarks): per set the
macro-F1, accuracy, the accuracy of the 20% most confident verdicts and the expected calibration error, with the
lexical baseline beside them. Use it to decide whether new weights beat the shipped ones.

    python benchmarks/verifier_heldout.py --model default --model /tmp/new_verifier [--limit 500]
    python benchmarks/verifier_heldout.py --model DIR --sets summedits,check_covid,fm2_heldout   # some sets only

Each verifier folder is used as shipped: its own temperature, stacker and two-label rule (verifier.json). By default
each pair is read as the pipelines read it (`verify_many`: a passage too long for the model is read in windows,
verify/windows.py); `--read cut` scores each pair once, cut at the model's maximum length, as calibration does.
The last rows (verify/training/metrics.py `passage_sets`) read claims against several passages, one by one and
together, the most decisive deciding, the path the pipelines take: fm2_heldout_retrieved (each held-out FM2 claim
against its page's ten retrieved sentences), joined_heldout_passages (joined held-apart claims against their evidence
sentences one by one, as a multi-hop claim's gold evidence comes) and offtopic_heldout_passages (held-apart claims
against their evidence among two unrelated passages, and against three unrelated passages only: nei).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from veracity.verify import load_lexical, load_verifier
from veracity.verify.result import LABELS
from veracity.verify.training.data import Pair, build, default_training_dir
from veracity.verify.training.metrics import figures, held_apart_sets, passage_sets


def progress(system: str, set_name: str, f: dict, t0: float) -> None:
    """One line per set as it is read (a verifier takes tens of minutes on 2 cores), before the table."""
    print(
        f"{system} {set_name}: macro-F1 {f['macro_f1']:.1f}, accuracy {f['accuracy']:.1f}, top-20% "
        f"{f['top20_accuracy']:.1f}, ECE {f['ece']:.3f} ({time.time() - t0:.0f} s)",
        file=sys.stderr,
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", default=[], help="verifier folder or 'default' (repeatable)")
    ap.add_argument("--lexical", action="store_true", help="add the shipped lexical baseline")
    ap.add_argument("--limit", type=int, default=None, help="at most this many pairs per set")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default=None)
    ap.add_argument("--sets", default=None, help="comma-separated set names (default: every held-apart set)")
    ap.add_argument(
        "--read",
        choices=("whole", "cut"),
        default="whole",
        help="whole: as the pipelines read (long passages in windows); cut: one pair cut at max length",
    )
    args = ap.parse_args()
    data = build(Path(args.data) if args.data else default_training_dir())
    sets = [(n, p[: args.limit] if args.limit else p) for n, p in held_apart_sets(data) if p]
    several = [(n, c[: args.limit // 10 or 1] if args.limit else c) for n, c in passage_sets(data)]
    if args.sets:
        wanted = [x.strip() for x in args.sets.split(",") if x.strip()]
        known = [n for n, _ in sets + several]
        unknown = [x for x in wanted if x not in known]
        if unknown:
            ap.error(f"unknown set(s) {', '.join(unknown)}; the sets are: {', '.join(known)}")
        sets = [(n, p) for n, p in sets if n in wanted]
        several = [(n, c) for n, c in several if n in wanted]
    systems = [(m, load_verifier(m, threads=args.threads)) for m in (args.model or ["default"])]
    if args.lexical:
        systems.append(("lexical", load_lexical()))
    table: dict[str, dict[str, dict]] = {}
    for name, v in systems:
        t0 = time.time()
        for set_name, pairs in sets:
            if args.read == "whole":
                scored = [x.probabilities for x in v.verify_many([(p.claim, [p.evidence]) for p in pairs])]
            elif hasattr(v, "score_pairs"):
                scored = v.score_pairs([(p.claim, p.evidence) for p in pairs])
            else:
                scored = [v.model.probabilities(p.claim, p.evidence) for p in pairs]
            probs = [[row[k] for k in LABELS] for row in scored]
            table.setdefault(set_name, {})[name] = figures(probs, pairs, v.binary_rule, v.rest_rule)
            progress(name, set_name, table[set_name][name], t0)
        for set_name, claims in several:
            probs = [[x.probabilities[k] for k in LABELS] for x in v.verify_many([(c, ps) for c, ps, _ in claims])]
            table.setdefault(set_name, {})[name] = figures(
                probs, [Pair(c, "", lab, set_name) for c, _, lab in claims], v.binary_rule, v.rest_rule
            )
            progress(name, set_name, table[set_name][name], t0)
        print(f"{name}: {time.time() - t0:.0f} s", flush=True)
    names = [n for n, _ in systems]
    print("\n| set | n | " + " | ".join(f"{n} macro-F1 / acc / top-20% acc / ECE" for n in names) + " |")
    print("|---|---:|" + "---|" * len(names))
    means = {n: [] for n in names}
    for set_name, row in table.items():
        cells = []
        for n in names:
            f = row[n]
            means[n].append(f["macro_f1"])
            cells.append(f"{f['macro_f1']:.1f} / {f['accuracy']:.1f} / {f['top20_accuracy']:.1f} / {f['ece']:.3f}")
        print(f"| {set_name} | {row[names[0]]['n']} | " + " | ".join(cells) + " |")
    print("| **mean macro-F1** | | " + " | ".join(f"**{sum(m) / len(m):.1f}**" for m in means.values()) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
