"""Calibrating trained weights (the end of `veracity verifier train`, and `veracity verifier calibrate`): the
lexical baseline fitted on the training pairs; on the calibration part the temperature, the stacker, the rules for
two-label sets and the uncertain threshold (fits.py); every held-apart set measured (metrics.py); verifier.json and
MODEL_CARD.md rewritten (card.py)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from ..lexical import features
from ..model import CrossEncoderVerifier
from ..result import LABELS
from .card import model_card
from .data import Pair, TrainingData, build
from .draw import count_draws, cut_by_source, draw_counts, fitted_draw, trained_pool
from .fits import (
    choose_rest_rule,
    choose_two_label_rule,
    fit_aggregate_temperature,
    fit_lexical,
    fit_stack,
    fit_temperature,
    uncertain_threshold,
)
from .metrics import decisions, figures, held_apart_sets, logits_of, passage_sets, several_passages, softmax
from .settings import TrainSettings

LEXICAL_SOURCES = ("fm2", "fm2+distractors", "fm2-nei", "cad_snli", "synthetic")
UNCERTAIN_TARGET = 0.9  # the stated accuracy of decided (not uncertain) verdicts on held-apart calibration data


def calibrate(out: Path, training_dir: Path, s: TrainSettings, *, data: TrainingData | None = None) -> dict:
    """Fit the lexical baseline (training pairs), then on the calibration part the temperature, the stacker
    (a logistic regression over the cross-encoder's log-probabilities and the lexical features), the rule
    for two-label sets and the uncertain threshold; measure all of them on every held-apart set; rewrite
    verifier.json and MODEL_CARD.md."""
    retraining = data is not None  # called by `run` with its training data, else a calibration of trained weights
    data = data or build(training_dir, seed=s.seed)
    if s.eval_limit:
        data.calibration = data.calibration[: s.eval_limit]
        data.heldout_fm2 = data.heldout_fm2[: s.eval_limit]
        data.cad_test = data.cad_test[: s.eval_limit]
        data.heldout_synthetic = data.heldout_synthetic[: s.eval_limit]
        data.heldout_compound = data.heldout_compound[: s.eval_limit]
        data.heldout_joined = data.heldout_joined[: s.eval_limit]
        data.heldout_offtopic = data.heldout_offtopic[: s.eval_limit]
        data.heldout_other_subject = data.heldout_other_subject[: s.eval_limit]
        data.heldout_partial = data.heldout_partial[: s.eval_limit]
        data.heldout_same_subject = data.heldout_same_subject[: s.eval_limit]
        data.heldout_retrieved = data.heldout_retrieved[: s.eval_limit // 10 or 1]
        data.calibration_retrieved = data.calibration_retrieved[: s.eval_limit // 10 or 1]
        data.heldout_sources = {k: v[: s.eval_limit] for k, v in data.heldout_sources.items()}
    settings = json.loads((out / "verifier.json").read_text(encoding="utf-8"))
    settings["temperature"] = 1.0
    settings.pop("stack", None)
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    raw = CrossEncoderVerifier(out, threads=s.threads, cached=False)
    model, tok, max_length = raw.model, raw.tokenizer, raw.max_length

    cal_logits = logits_of(model, tok, data.calibration, max_length)
    temperature = fit_temperature(cal_logits, [p.label for p in data.calibration])
    # the word-overlap baseline stays what it was: fitted on FM2, CAD-SNLI and the synthetic edits (pooled with the
    # contrastive sources, overlap stops meaning support and the baseline no longer shows what overlap alone solves)
    overlap = [p for p in data.train if p.source in LEXICAL_SOURCES]
    lexical = fit_lexical([(p.claim, p.evidence) for p in overlap], [p.label for p in overlap], LABELS, seed=s.seed)
    (out / "lexical.json").write_text(json.dumps(lexical.to_json(), indent=1) + "\n", encoding="utf-8")
    cal_probs = [softmax(r, temperature) for r in cal_logits]
    stack = fit_stack(
        cal_probs,
        [features(p.claim, p.evidence) for p in data.calibration],
        [p.label for p in data.calibration],
        seed=s.seed,
        groups=[p.source.removesuffix("-nei") for p in data.calibration],
    )

    def stacked(probs: list[list[float]], pairs: list[Pair]) -> list[list[float]]:
        return [stack.apply(pr, features(p.claim, p.evidence)) for pr, p in zip(probs, pairs)]

    cal_stacked = stacked(cal_probs, data.calibration)
    # the two-label rule of each output (the cross-encoder's, the stacker's), fitted on its calibration readings
    # and its rule for supported against the rest (sets whose other label is "not supported")
    rule_of, rules, rest_of, rests = {}, {}, {}, {}
    for model_name, chosen_probs in (("cross_encoder", cal_probs), ("stacked", cal_stacked)):
        rule_of[model_name], rules[model_name] = choose_two_label_rule(chosen_probs, data.calibration, seed=s.seed)
        rest_of[model_name], rests[model_name] = choose_rest_rule(chosen_probs, data.calibration, seed=s.seed)

    results: dict[str, dict] = {}
    for name, pairs in held_apart_sets(data):
        if not pairs:
            continue
        probs = [softmax(r, temperature) for r in logits_of(model, tok, pairs, max_length)]
        results.setdefault("cross_encoder", {})[name] = figures(
            probs, pairs, rule_of["cross_encoder"], rest_of["cross_encoder"]
        )
        results.setdefault("stacked", {})[name] = figures(
            stacked(probs, pairs), pairs, rule_of["stacked"], rest_of["stacked"]
        )
        lex = [[lexical.probabilities(p.claim, p.evidence)[lab] for lab in LABELS] for p in pairs]
        results.setdefault("lexical", {})[name] = figures(lex, pairs, "supported_vs_refuted")

    sample = data.heldout_fm2[:256]  # speed: milliseconds per claim-evidence pair, batched 32, as pipelines call it
    t1 = time.time()
    logits_of(model, tok, sample, max_length, batch_size=32)
    ms_per_pair = round(1000 * (time.time() - t1) / max(1, len(sample)), 1)

    # the deployed path with several passages (passage_sets), through the verifier's own verify_many; its
    # several-passages temperature fitted the same way on calibration claims (FM2 retrieved, joined claims)
    raw.temperature, raw.aggregate_temperature = temperature, 1.0
    several = data.calibration_retrieved + several_passages([p for p in data.calibration if p.source == "joined"])
    aggregate_temperature = fit_aggregate_temperature(raw, several, rule_of["cross_encoder"])
    raw.aggregate_temperature = aggregate_temperature
    for name, claims in passage_sets(data):
        gold_pairs = [Pair(c, "", lab, name) for c, _, lab in claims]
        for model_name, chosen_stack in (("cross_encoder", None), ("stacked", stack)):
            raw.stack = chosen_stack
            verdicts = raw.verify_many([(c, ps) for c, ps, _ in claims])
            results[model_name][name] = figures(
                [[v.probabilities[x] for x in LABELS] for v in verdicts],
                gold_pairs,
                rule_of[model_name],
                rest_of[model_name],
            )
    raw.stack = None

    # the shipped decision: the stacker or the cross-encoder alone, whichever has the higher mean macro-F1 over
    # the held-apart sets (never the benchmarks)
    mean = {
        m: round(sum(f["macro_f1"] for f in results[m].values()) / len(results[m]), 2)
        for m in ("cross_encoder", "stacked")
    }
    use_stack = mean["stacked"] > mean["cross_encoder"]
    shipped = "stacked" if use_stack else "cross_encoder"
    rule, rest_rule = rule_of[shipped], rest_of[shipped]

    # the uncertain threshold: on the calibration part, the lowest confidence at which decided verdicts are right
    # UNCERTAIN_TARGET of the time (each pair decided the way its label set asks)
    chosen = cal_stacked if use_stack else cal_probs
    conf, correct = [], []
    for source in dict.fromkeys(p.source.removesuffix("-nei") for p in data.calibration):
        idx = [i for i, p in enumerate(data.calibration) if p.source.removesuffix("-nei") == source]
        gold = [data.calibration[i].label for i in idx]  # each source decided the way its own label set asks
        pred, c, _ = decisions([chosen[i] for i in idx], gold, rule, rest_rule)
        conf += c
        correct += [g == x for g, x in zip(gold, pred)]
    threshold, kept_accuracy, kept_share = uncertain_threshold(conf, correct, UNCERTAIN_TARGET)
    # what the weights were trained on: counted here when called by the training, else kept from verifier.json (a
    # later calibration builds the mix with its own seed and today's sources, which the weights may never have seen;
    # a calibration of weights whose training was stopped before its own calibration draws the training's mix
    # again, with the training's seed, limit and cap per source)
    trained_with = settings.get("settings", {})
    if retraining or "train_pairs" not in settings.get("data", {}):
        made = {
            **trained_with,
            "limit": s.limit or trained_with.get("limit"),  # (retraining: asdict(s) itself)
            "per_source": s.per_source or trained_with.get("per_source"),
        }
        trained_length = made.get("max_length", max_length)  # (what the training read: the reading may be longer)
        seen, fitted = fitted_draw(
            data.train if retraining else trained_pool(training_dir, trained_with, s, data), made, tok, trained_length
        )
        trained = {
            **draw_counts(seen),
            "cut_at_max_length": cut_by_source(seen, tok, trained_length),
            **({"fitted_to_windows": fitted} if fitted else {}),
        }
    else:
        trained = {
            k: settings["data"][k]
            for k in ("train_pairs", "train_by_source", "cut_at_max_length", "fitted_to_windows")
            if k in settings["data"]
        }
    count_draws(settings.get("averaged_from") or [], training_dir, s, data, tok)
    settings.update(
        {
            "temperature": temperature,
            "aggregate_temperature": aggregate_temperature,
            "binary_rule": rule,
            "stack": stack.to_json() if use_stack else None,
            "chosen": shipped,
            "mean_macro_f1_heldout": mean,
            "uncertain_below": threshold,
            "uncertain_rule": {
                "target_accuracy": UNCERTAIN_TARGET,
                "calibration_accuracy_decided": round(kept_accuracy, 4),
                "calibration_share_decided": round(kept_share, 4),
                "calibration_pairs": len(conf),
            },
            "data": {
                **trained,
                "calibration_pairs": len(data.calibration),
                "heldout_fm2_claims": len(data.heldout_fm2),
                "cad_test_pairs": len(data.cad_test),
            },
            "figures": results,
            "binary_rule_on_calibration": rules[shipped],
            "not_supported_rule": rest_rule,
            "not_supported_rule_on_calibration": rests[shipped],
            "ms_per_pair": ms_per_pair,
            "calibrated_with": asdict(s),
        }
    )
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    (out / "MODEL_CARD.md").write_text(model_card(settings), encoding="utf-8")
    return settings
