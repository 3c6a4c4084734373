"""Fit and measure DEFAME's judge (defame/judgement.py) on held-apart claim sets; write its calibration.

    nice -n 19 python benchmarks/defame_judge_calibration.py --out runs/defame_judge_cal          # fit + measure
    python benchmarks/defame_judge_calibration.py --out runs/defame_judge_cal --model-sets 0      # verifier only
    python benchmarks/defame_judge_calibration.py --out runs/defame_judge_cal --write   # ship the fit (judge_calibration.json)

Data, never the benchmarks: the *held-apart* part (verify/training/sources.py; the verifier never trained or calibrated on
it) of three claim/evidence sources of ../shared/training: Factcheck-GPT (several retrieved web passages per claim),
Check-COVID (test split) and FEVER-Symmetric. Per claim, one set like a DEFAME record: the claim's passages plus
two passages of other claims of the same source (the search results that are about something else), with the gold
label of the set: conflicting when its passages include a supporting and a refuting one, else supported / refuted,
else not enough evidence; and for a third of the claims (seeded) a second set of the claim against passages of
other claims only (not enough evidence). The sets are split by claim (a stable hash) into a fit half and a
measure half.

On the fit half, for each combination (defame/judgement.py COMBINATIONS) and threshold, the labels are scored;
the most accurate (weighted by the stated label prior, see PRIOR) is kept, and the confidence's logistic function
is fitted (weighted the same way). The measure half reports accuracy, ECE and accuracy at 20% coverage, weighted
and not. The model's pick (for the `verifier+model` and `model` combinations) is the embedded model's judge
(key findings, then the label scored over the four AVeriTeC labels with the benchmark's rules) on the record of
the set, for the first --model-sets sets of each half; those combinations are compared on those sets only.
Resumable: readings and picks are kept in --out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from veracity.defame.judgement import CALIBRATION_FILE, COMBINATIONS, JudgeCalibration, Reading, combine, describe

SOURCES = ("factcheck_gpt", "check_covid", "fever_symmetric")
LABELS = ("Supported", "Refuted", "Not Enough Evidence", "Conflicting Evidence/Cherrypicking")
KIND = dict(zip(LABELS, ("supported", "refuted", "nei", "conflicting")))
#: the stated label prior: a stream of claims that reach fact-checkers is mostly false. These are the label shares
#: of the AVeriTeC dev set as the DEFAME paper reports them (305 Refuted, 122 Supported, 35 NEI, 38 C/CP of 500):
#: the base rate of the benchmark measured later, stated here, never read from its claims.
PRIOR = {"refuted": 305 / 500, "supported": 122 / 500, "nei": 35 / 500, "conflicting": 38 / 500}
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)


def half(claim: str) -> str:
    return "fit" if int(hashlib.sha1(claim.encode("utf-8")).hexdigest()[:8], 16) % 2 == 0 else "measure"


def build_sets(seed: int = 61) -> list[dict]:
    from veracity.verify.training.data import default_training_dir
    from veracity.verify.training.sources import read_sources

    pairs = [p for p in read_sources(default_training_dir(), SOURCES) if p.part == "heldout"]
    rng = random.Random(seed)
    sets = []
    for src in SOURCES:
        by_claim: dict[str, list] = defaultdict(list)
        for p in pairs:
            if p.source == src:
                by_claim[p.claim].append(p)
        claims = sorted(by_claim)
        for claim in claims:
            own = by_claim[claim]
            others = [c for c in claims if c != claim]
            distract = [rng.choice(by_claim[c]).evidence for c in rng.sample(others, min(2, len(others)))]
            labels = {p.label for p in own}
            gold = (
                "conflicting"
                if {"supported", "refuted"} <= labels
                else "supported"
                if "supported" in labels
                else "refuted"
                if "refuted" in labels
                else "nei"
            )
            passages = [p.evidence for p in own] + distract
            rng.shuffle(passages)
            sets.append({"source": src, "claim": claim, "passages": passages, "gold": gold, "half": half(claim)})
            if rng.random() < 1 / 3:
                more = [rng.choice(by_claim[c]).evidence for c in rng.sample(others, min(3, len(others)))]
                sets.append(
                    {
                        "source": src + "/other-claims",
                        "claim": claim,
                        "passages": more,
                        "gold": "nei",
                        "half": half(claim),
                    }
                )
    return sets


def read_all(sets: list[dict], out: Path) -> None:
    """The verifier's reading of each passage of each set (kept in out/readings.json)."""
    file = out / "readings.json"
    if file.exists():
        kept = json.loads(file.read_text())
        if len(kept) == len(sets):
            for s, r in zip(sets, kept):
                s["readings"] = r
            return
    from veracity.config import load_config
    from veracity.verify import evidence_text, get_verifier

    verifier = get_verifier(load_config(env={}).verifier)
    t0 = time.perf_counter()
    for i in range(0, len(sets), 64):
        chunk = sets[i : i + 64]
        vs = verifier.verify_many([(s["claim"], [evidence_text(p) for p in s["passages"]]) for s in chunk])
        for s, v in zip(chunk, vs):
            s["readings"] = [{k: round(p[k], 5) for k in ("supported", "refuted", "nei")} for p in v.per_passage]
        print(f"read {i + len(chunk)}/{len(sets)} sets, {time.perf_counter() - t0:.0f} s", flush=True)
    file.write_text(json.dumps([s["readings"] for s in sets]))


def model_picks(sets: list[dict], out: Path, n: int) -> None:
    """The embedded model's judge pick for the first `n` sets of each half (out/picks.jsonl, resumable)."""
    if n <= 0:
        return
    from veracity.config import load_config
    from veracity.defame.prompts import JUDGE, JUDGE_LABEL
    from veracity.defame.record import Record
    from veracity.defame.steps import Plan, Summary
    from veracity.eval.datasets.averitec import AVERITEC_RULES
    from veracity.llm import make_model
    from veracity.llm.usage import UsageMeter
    from veracity.types import Claim
    from veracity.verdicts import label_block

    file = out / "picks.jsonl"
    done = {}
    if file.exists():
        for line in file.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[(r["claim"], r["source"])] = r["pick"]
    chosen = [s for h in ("fit", "measure") for s in [x for x in sets if x["half"] == h][:n]]
    config = load_config(overrides={"model": "embedded", "n_threads": 2}, env={})
    model = make_model(config).bind(UsageMeter())
    judge, label = JUDGE.load(), JUDGE_LABEL.load()
    t0 = time.perf_counter()
    with file.open("a") as f:
        for i, s in enumerate(chosen):
            key = (s["claim"], s["source"])
            if key in done:
                s["pick"] = done[key]
                continue
            record = Record(claim=Claim(s["claim"]))
            record.add(Plan(round=1, actions=[f'web_search("{s["claim"][:80]}")']))
            for j, p in enumerate(s["passages"]):
                record.add(
                    Summary(
                        round=1,
                        action=record.rounds[0].actions[0],
                        source=f"source {j + 1}",
                        summary=f'Excerpt: "{p[:400]}"',
                        written_by="excerpt",
                        evidence=p,
                    )
                )
            scores = [{"source": f"source {j + 1}", **r} for j, r in enumerate(s["readings"])]
            slots = dict(LABELS=label_block(list(LABELS), AVERITEC_RULES), RECORD=record, SCORES=scores)
            findings = judge.ask(model, **slots).value
            reply = label.ask(model, options=list(LABELS), FINDINGS=findings, **slots)
            s["pick"] = reply.value
            f.write(json.dumps({"claim": s["claim"], "source": s["source"], "pick": reply.value}) + "\n")
            f.flush()
            print(f"picked {i + 1}/{len(chosen)}: {reply.value} ({time.perf_counter() - t0:.0f} s)", flush=True)


def weights(items: list[dict], prior: dict | None) -> list[float]:
    if not prior:
        return [1.0] * len(items)
    freq = Counter(s["gold"] for s in items)
    w = [prior[s["gold"]] / (freq[s["gold"]] / len(items)) for s in items]
    return [x / (sum(w) / len(w)) for x in w]


def outcomes(items: list[dict], cal: JudgeCalibration) -> list:
    name = {v: k for k, v in KIND.items()}
    return [
        combine(
            [Reading.of(r) for r in s["readings"]],
            LABELS,
            name.get(s.get("pick") or "", s.get("pick")),
            cal,
            final=True,
        )
        for s in items
    ]  # a set is judged as the last round judges


def accuracy(items: list[dict], outs: list, w: list[float]) -> float:
    return sum(wi for s, o, wi in zip(items, outs, w) if o.kind == s["gold"]) / sum(w)


def fit_confidence(items: list[dict], outs: list, w: list[float]) -> tuple[dict, float]:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from veracity.defame.judgement import _logit

    kinds = ("supported", "refuted", "nei", "conflicting")
    # the prior's label for an undecided claim takes the prior's share (judgement.py), not a fit
    kept = [i for i, o in enumerate(outs) if o.decided_by != "prior"]
    items, outs, w = [items[i] for i in kept], [outs[i] for i in kept], [w[i] for i in kept]
    x = np.array([[float(o.kind == k) for k in kinds] + [_logit(o.score)] for o in outs])
    y = np.array([int(o.kind == s["gold"]) for s, o in zip(items, outs)])
    if len(set(y)) < 2:
        return {k: (4.0 if y[0] else -4.0) for k in kinds}, 0.0
    lr = LogisticRegression(C=10.0, fit_intercept=False, max_iter=2000)
    lr.fit(x, y, sample_weight=np.array(w))
    coef = lr.coef_[0]
    return {k: float(coef[i]) for i, k in enumerate(kinds)}, float(coef[len(kinds)])


def ece(conf: list[float], right: list[bool], w: list[float], bins: int = 10) -> float:
    total = sum(w)
    err = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, c in enumerate(conf) if lo <= c < hi or (b == bins - 1 and c == 1.0)]
        if idx:
            ws = sum(w[i] for i in idx)
            acc = sum(w[i] for i in idx if right[i]) / ws
            mean = sum(w[i] * conf[i] for i in idx) / ws
            err += ws / total * abs(acc - mean)
    return err


def at_coverage(conf: list[float], right: list[bool], share: float) -> float:
    ranked = sorted(range(len(conf)), key=lambda i: -conf[i])[: max(1, round(share * len(conf)))]
    return sum(right[i] for i in ranked) / len(ranked)


def measure(items: list[dict], cal: JudgeCalibration, prior: dict | None) -> dict:
    outs = outcomes(items, cal)
    w = weights(items, prior)
    conf = [o.confidence if o.confidence is not None else o.score for o in outs]
    right = [o.kind == s["gold"] for s, o in zip(items, outs)]
    return {
        "n": len(items),
        "accuracy": round(accuracy(items, outs, w), 4),
        "accuracy_unweighted": round(sum(right) / len(right), 4),
        "ece": round(ece(conf, right, w), 4),
        "ece_unweighted": round(ece(conf, right, [1.0] * len(right)), 4),
        "accuracy_at_20pct": round(at_coverage(conf, right, 0.2), 4),
        "predicted": dict(Counter(o.kind for o in outs)),
        "gold": dict(Counter(s["gold"] for s in items)),
    }


def choose(fit: list[dict], prior: dict | None, with_model: bool) -> tuple[JudgeCalibration, list[dict]]:
    """The combination and threshold most accurate on the fit half (weighted by `prior`), its confidence fitted."""
    table = []
    best = None
    for comb in COMBINATIONS:
        if comb != "verifier" and not with_model:
            continue
        items = [s for s in fit if comb == "verifier" or s.get("pick")]
        for t in THRESHOLDS:
            # where no source decides after the last round: not enough evidence, or (with a prior only: it is the
            # prior that makes one label the likelier for an undecided claim) a Bayes decision among the others
            for undecided in (None, "refuted", "supported", "conflicting") if prior else (None,):
                cal = JudgeCalibration(combination=comb, decisive_at=t, undecided=undecided)
                outs = outcomes(items, cal)
                acc = accuracy(items, outs, weights(items, prior))
                table.append(
                    {
                        "combination": comb,
                        "decisive_at": t,
                        "undecided": undecided,
                        "n": len(items),
                        "fit_accuracy": round(acc, 4),
                    }
                )
                if best is None or acc > best[0]:
                    best = (acc, comb, t, undecided)
    _, comb, t, undecided = best
    items = [s for s in fit if comb == "verifier" or s.get("pick")]
    cal = JudgeCalibration(combination=comb, decisive_at=t, undecided=undecided)
    outs = outcomes(items, cal)
    intercepts, slope = fit_confidence(items, outs, weights(items, prior))
    return JudgeCalibration(comb, t, intercepts, slope, prior, undecided=undecided), table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/defame_judge_cal")
    ap.add_argument("--model-sets", type=int, default=0, help="sets per half the embedded model judges (0: none)")
    ap.add_argument("--write", action="store_true", help=f"write the fit with the prior to {CALIBRATION_FILE.name}")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = build_sets()
    read_all(sets, out)
    model_picks(sets, out, args.model_sets)
    fit = [s for s in sets if s["half"] == "fit"]
    held = [s for s in sets if s["half"] == "measure"]
    print(
        f"sets: {len(sets)} ({dict(Counter(s['source'] for s in sets))}); fit {len(fit)}, measure {len(held)}; "
        f"gold {dict(Counter(s['gold'] for s in sets))}"
    )
    with_model = any(s.get("pick") for s in sets)
    report: dict = {"sources": SOURCES, "prior": PRIOR, "fits": {}}
    for name, prior in (("prior", PRIOR), ("no-prior", None)):
        cal, table = choose(fit, prior, with_model)
        cal = JudgeCalibration(
            cal.combination,
            cal.decisive_at,
            cal.intercepts,
            cal.slope,
            prior,
            undecided=cal.undecided,
            fitted_on=(
                f"held-apart claim sets of {', '.join(SOURCES)} (fit half, "
                f"{len(fit)} sets; benchmarks/defame_judge_calibration.py)"
            ),
        )
        # every combination on the measure half, each with the threshold it did best with on the fit half and the
        # confidence fitted for it (the model's combinations on the sets the model judged)
        compare = {}
        for comb in COMBINATIONS:
            rows = [r for r in table if r["combination"] == comb]
            if not rows:
                continue
            top = max(rows, key=lambda r: r["fit_accuracy"])
            t, und = top["decisive_at"], top["undecided"]
            fit_items = [s for s in fit if comb == "verifier" or s.get("pick")]
            c0 = JudgeCalibration(comb, t, undecided=und)
            ic, sl = fit_confidence(fit_items, outcomes(fit_items, c0), weights(fit_items, prior))
            c1 = JudgeCalibration(comb, t, ic, sl, prior, undecided=und)
            compare[comb] = {
                "decisive_at": t,
                "all_sets": measure(held, c1, prior) if comb == "verifier" else None,
                "model_judged_sets": measure([s for s in held if s.get("pick")], c1, prior) if with_model else None,
            }
        report["fits"][name] = {
            "calibration": {
                "combination": cal.combination,
                "decisive_at": cal.decisive_at,
                "undecided": cal.undecided,
                "intercepts": cal.intercepts,
                "slope": cal.slope,
            },
            "fit_table": table,
            "measure": measure(held, cal, prior),
            "compare": compare,
        }
        print(f"\n[{name}] {describe(cal)}")
        print(json.dumps(report["fits"][name]["measure"]))
        for comb, r in compare.items():
            print(
                f"  {comb} (decides at {r['decisive_at']}): all sets {json.dumps(r['all_sets'])}; "
                f"model-judged sets {json.dumps(r['model_judged_sets'])}"
            )
    (out / "calibration_report.json").write_text(json.dumps(report, indent=1))
    if args.write:
        chosen = report["fits"]["prior"]
        data = {
            **chosen["calibration"],
            "prior": PRIOR,
            "fitted_on": (
                f"held-apart claim sets of {', '.join(SOURCES)} (the verifier's held-apart part; fit "
                f"half, {len(fit)} sets), weighted to the stated label prior"
            ),
            "measured": {
                "measure_half": chosen["measure"],
                "compare": chosen["compare"],
                "without_prior": report["fits"]["no-prior"]["measure"],
            },
            "written_by": "benchmarks/defame_judge_calibration.py",
        }
        CALIBRATION_FILE.write_text(json.dumps(data, indent=1) + "\n")
        print(f"\nwrote {CALIBRATION_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
