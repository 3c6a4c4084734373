"""The `veracity selftrain` command: self-training from LEAF fact-checks.

    veracity selftrain sample --dataset mirage:pubmedqa [--path FILE] --index DIR --out RUN
                              [--questions N] [--samples K] [--temperature T] [--eval N] [--seed S]
    veracity selftrain build --out RUN
    veracity selftrain train --out RUN [--method sft|simpo] [--epochs E] [--lr LR] [--max-steps N]
    veracity selftrain evaluate --dataset mirage:pubmedqa [--path FILE] --index DIR --out RUN

`register(subparsers)` adds the command to the main CLI. A UserError propagates to the main CLI,
which prints it as one line (exit 2). sample and evaluate take the same model and fact-checking flags
as `veracity leaf` (veracity.cli.options: model_options, leaf_options, leaf_config; leaf.factcheck.index_retriever).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from ..errors import UserError
from ..leaf.factcheck import index_retriever
from .options import leaf_config, leaf_options, model_options


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `selftrain sample|build|train|evaluate` to the main CLI's subparsers."""
    parser = subparsers.add_parser(
        "selftrain",
        help="self-training from LEAF fact-checks (sample, build, train, evaluate)",
        description="Sample answers, score them with LEAF, build SFT and "
        "SimPO sets, train with TRL, and compare accuracy before and after.",
    )
    commands = parser.add_subparsers(dest="selftrain_command", metavar="{sample,build,train,evaluate}", required=True)

    def data_options() -> argparse.ArgumentParser:
        p = argparse.ArgumentParser(add_help=False)
        g = p.add_argument_group("data")
        g.add_argument("--dataset", default="mirage:pubmedqa", help="dataset (default mirage:pubmedqa)")
        g.add_argument("--path", help="dataset file or folder (default ../shared/benchmarks/...)")
        g.add_argument(
            "--eval",
            dest="n_eval",
            type=int,
            default=20,
            help="questions held apart for evaluation (default 20; seeded, written to OUT/split.json)",
        )
        g.add_argument("--seed", type=int, default=0, help="seed of the split (default 0)")
        return p

    out_opt = argparse.ArgumentParser(add_help=False)
    out_opt.add_argument("--out", required=True, help="the self-training run folder")

    s = commands.add_parser(
        "sample",
        parents=[model_options(), leaf_options(), data_options(), out_opt],
        help="sample K answers per question and LEAF-score each (resumable)",
    )
    s.add_argument("--questions", type=int, default=20, help="training questions to sample (default 20)")
    s.add_argument("--samples", type=int, default=4, help="answers per question (default 4)")
    s.add_argument("--temperature", type=float, help="sampling temperature (default leaf.temperature, 0.8)")
    s.set_defaults(func=cmd_sample)

    b = commands.add_parser("build", parents=[out_opt], help="build sft.jsonl and pairs.jsonl from the samples")
    b.set_defaults(func=cmd_build)

    t = commands.add_parser(
        "train",
        parents=[out_opt],
        help="train with TRL (SFT or SimPO) on the CPU",
        description="Train on OUT/sft.jsonl (SFT) or OUT/pairs.jsonl (SimPO, TRL's CPO "
        "trainer). Saves a Hugging Face folder OUT/model: use it as --model hf:OUT/model.",
    )
    t.add_argument("--base", default="embedded", help="base model: embedded, gguf:PATH or hf:FOLDER")
    t.add_argument("--method", choices=["sft", "simpo"], default="sft")
    t.add_argument("--epochs", type=float, default=5.0, help="epochs (default 5)")
    t.add_argument("--lr", type=float, default=1e-6, help="learning rate (default 1e-6)")
    t.add_argument("--beta", type=float, default=2.5, help="SimPO beta (default 2.5)")
    t.add_argument("--gamma", type=float, default=1.4, help="SimPO target margin gamma (default 1.4)")
    t.add_argument("--warmup-ratio", type=float, default=0.1)
    t.add_argument("--scheduler", default="cosine", help="learning-rate schedule (default cosine)")
    t.add_argument("--batch-size", type=int, default=2)
    t.add_argument("--max-steps", type=int, default=-1, help="stop after N steps (smoke runs)")
    t.add_argument("--limit", type=int, help="train on the first N examples only")
    t.add_argument("--threads", type=int, help="CPU threads for torch")
    t.set_defaults(func=cmd_train)

    e = commands.add_parser(
        "evaluate",
        parents=[model_options(), leaf_options(), data_options(), out_opt],
        help="accuracy before and after on the held-apart questions (answer:plain)",
    )
    e.add_argument("--base", default=None, help="the base model (default: --model, else embedded)")
    e.add_argument("--trained", help="the trained model (default hf:OUT/model)")
    e.add_argument("--limit", type=int, help="evaluate on N of the held-apart questions only (seeded draw)")
    e.add_argument(
        "--native-base",
        action="store_true",
        help="evaluate a GGUF base in llama.cpp as it is (default: its float32 transformers copy, the "
        "runtime the trained model runs in)",
    )
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_evaluate)


def _dataset(args):
    from ..eval.datasets import DEFAULT_FILES, load_dataset

    path = args.path
    if path is None:
        base = args.dataset.split(":", 1)[0]
        path = Path(__file__).resolve().parents[3].parent / "shared" / "benchmarks" / DEFAULT_FILES.get(base, base)
    ds = load_dataset(args.dataset, path)
    for it in ds.items:
        if "options" not in it.metadata:
            raise UserError(
                f"{args.dataset} is not a multiple-choice dataset: self-training answers questions "
                "with options (e.g. mirage:pubmedqa)"
            )
    return ds


def cmd_sample(args: argparse.Namespace) -> int:
    from ..leaf.rater import Rater
    from ..llm import make_model
    from ..training.sampling import SAMPLES, sample_dataset
    from ..training.split import load_or_make_split

    out = Path(args.out)
    config = leaf_config(args)
    ds = _dataset(args)
    split = load_or_make_split(out, ds.name, [it.id for it in ds.items], args.n_eval, args.seed)
    by_id = {it.id: it for it in ds.items}
    items = [by_id[i] for i in split["train_ids"][: max(0, args.questions)]]
    retriever = index_retriever(config)
    model = make_model(config)
    rater = Rater(config).model() or model
    temperature = config.leaf.temperature if args.temperature is None else args.temperature
    print(
        f"Sampling {args.samples} answers at temperature {temperature} for {len(items)} questions of {ds.name} "
        f"({len(split['eval_ids'])} held apart). Model: {model.model_id}  Rater: {rater.model_id}",
        flush=True,
    )
    t0 = time.perf_counter()

    def show(row) -> None:
        scores = " ".join(f"{s['letter'] or '-'}:{s['score']:.2f}" for s in row["samples"])
        print(f"  {row['id']} (gold {row['gold']}): {scores}", flush=True)

    done, skipped = sample_dataset(
        items, out, config, model, rater, retriever, k=args.samples, temperature=temperature, progress=show
    )
    print(f"{done} questions sampled, {skipped} already in {out / SAMPLES}; {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from ..training.building import build_sets

    print(build_sets(Path(args.out)).message)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from ..training.training import TrainSettings, train

    settings = TrainSettings(
        method=args.method,
        epochs=args.epochs,
        learning_rate=args.lr,
        beta=args.beta,
        simpo_gamma=args.gamma,
        warmup_ratio=args.warmup_ratio,
        lr_scheduler_type=args.scheduler,
        batch_size=args.batch_size,
        max_steps=args.max_steps,
        limit=args.limit,
        threads=args.threads,
    )
    info = train(Path(args.out), args.base, settings)
    print(
        f"Trained {info['method']} on {info['examples']} examples: {info['steps']} steps, loss "
        f"{info['train_loss']:.4f}, {info['seconds']} s\nSaved to {info['model']}: use --model {info['backend']}"
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..training.evaluation import evaluate, to_text
    from ..training.training import BASE_DIR, MODEL_DIR, export_base

    out = Path(args.out)
    config = leaf_config(args)
    base = args.base or (args.model if args.model else "embedded")
    trained = args.trained or f"hf:{out / MODEL_DIR}"
    if trained.startswith("hf:") and not Path(trained[3:]).is_dir():
        raise UserError(f"no trained model at {trained[3:]}: run `veracity selftrain train --out {out}` first")
    if trained.startswith("hf:") and (base == "embedded" or base.startswith("gguf:")) and not args.native_base:
        # the trained model runs in transformers (float32): so must its base, or the comparison measures
        # the runtime (llama.cpp on 4-bit weights vs transformers on float32) as much as the training
        print(
            f"Base {base} as transformers float32 (in {out / BASE_DIR}) so before and after share a runtime",
            file=sys.stderr,
        )
        base = f"hf:{export_base(base, out / BASE_DIR)}"
    if not config.leaf.rater_model:  # one rater for both, so the LEAF scores compare
        config.leaf = replace(config.leaf, rater_model=base)
    ds = _dataset(args)
    table = evaluate(
        out,
        ds,
        {"before": base, "after": trained},
        config,
        index_retriever(config),
        limit=args.limit,
        progress=not args.json,
    )
    if args.json:
        print(json.dumps(table, indent=2))
    else:
        print(to_text(table))
    return 0
