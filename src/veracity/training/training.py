"""Training with TRL on the CPU: SFT (SFTTrainer) or SimPO (CPOTrainer, loss_type="simpo").

The base model is the embedded SmolLM2-135M-Instruct, loaded from its GGUF file into transformers
(dequantized to float32), or any `gguf:PATH` / `hf:FOLDER`. GGUF export needs llama.cpp's converter,
which is not available offline, so the result is saved as a Hugging Face folder (OUT/model) that
loads as a veracity backend with `--model hf:OUT/model`.

SimPO defaults are the LEAF paper's: beta 2.5, gamma 1.4 (TRL's `simpo_gamma`, the target reward
margin; TRL divides it by beta itself), lr 1e-6, cosine schedule, warmup ratio 0.1, 5 epochs; pure
SimPO, so TRL's behaviour-cloning term is off (`cpo_alpha=0`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from .building import PAIRS, SFT

MODEL_DIR = "model"
BASE_DIR = "base_fp32"  # the base model as transformers float32, for a fair before/after evaluation


@dataclass
class TrainSettings:
    method: str = "sft"  # sft | simpo
    epochs: float = 5.0
    learning_rate: float = 1e-6
    lr_scheduler_type: str = "cosine"
    warmup_ratio: float = 0.1
    beta: float = 2.5  # SimPO
    simpo_gamma: float = 1.4  # SimPO target reward margin (gamma)
    batch_size: int = 2
    max_steps: int = -1  # > 0: stop after this many optimizer steps (smoke runs)
    max_length: int = 1024
    limit: int | None = None  # train on the first N examples only
    seed: int = 0
    threads: int | None = None


def base_model_files(spec: str) -> tuple[Path, str | None]:
    """(folder, gguf file name or None) of a model spec: embedded, gguf:PATH or hf:FOLDER."""
    spec = spec.strip()
    if spec == "embedded":
        from ..llm.embedded import default_model_path

        p = default_model_path()
        return p.parent, p.name
    if spec.startswith("gguf:"):
        p = Path(spec[5:]).expanduser()
        if not p.is_file():
            raise UserError(f"GGUF model file not found: {p}")
        return p.parent, p.name
    if spec.startswith("hf:"):
        p = Path(spec[3:]).expanduser()
        if not (p / "config.json").is_file():
            raise UserError(f"{p} is not a Hugging Face model folder (no config.json)")
        return p, None
    raise UserError(f"cannot train {spec!r}: the base model must be embedded, gguf:PATH or hf:FOLDER")


def load_base(spec: str):
    """The model and tokenizer of `spec`, in transformers (a GGUF file is dequantized)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, gguf = base_model_files(spec)
    kw = {"gguf_file": gguf} if gguf else {}
    tok = AutoTokenizer.from_pretrained(folder, **kw)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kw)
    if gguf:
        # the GGUF weights are dequantized to float32 on load: a plain model, but transformers still marks it
        # quantized (and the trainer refuses quantized models); drop the mark so it trains and saves plainly
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


def export_base(spec: str, dest: Path) -> Path:
    """`spec` saved as a transformers float32 folder at `dest` (once; reused when there), so a trained
    model (which runs in transformers) is compared with its base in the same runtime, not with the
    GGUF base in llama.cpp."""
    if (dest / "config.json").is_file():
        return dest
    model, tok = load_base(spec)
    tmp = dest.with_name(dest.name + ".partial")
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    tmp.rename(dest)
    return dest


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def chat_prompt(tok, prompt: str) -> str:
    """The user prompt in the model's chat template, ready for the assistant's reply."""
    if not tok.chat_template:
        return prompt + "\n\n"
    return tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)


def training_rows(out: Path, method: str, limit: int | None) -> list[dict[str, Any]]:
    if method not in ("sft", "simpo"):
        raise UserError(f"unknown training method {method!r}: sft or simpo")
    name = SFT if method == "sft" else PAIRS
    path = out / name
    if not path.is_file():
        raise UserError(f"{path} not found: run `veracity selftrain build --out {out}` first")
    rows = read_jsonl(path)
    if not rows:
        what = (
            (
                "no sampled answer scored 1.0 (LEAF), so there is nothing to fine-tune on; try --method simpo, "
                "or sample more answers"
            )
            if method == "sft"
            else "no question had answers with different LEAF scores, so there is no preference pair"
        )
        raise UserError(f"{path} is empty: {what}")
    return rows[:limit] if limit else rows


def train(out: Path, base: str, settings: TrainSettings, *, save_to: Path | None = None) -> dict[str, Any]:
    """Train on OUT's SFT set or SimPO pairs; save the model to SAVE_TO (default OUT/model)."""
    rows = training_rows(out, settings.method, settings.limit)
    import torch
    from datasets import Dataset

    if settings.threads:
        torch.set_num_threads(settings.threads)
    t0 = time.perf_counter()
    model, tok = load_base(base)
    work = out / "trainer"
    common = dict(
        output_dir=str(work),
        num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler_type,
        warmup_steps=settings.warmup_ratio,  # transformers 5: a value < 1 is a ratio
        per_device_train_batch_size=settings.batch_size,
        max_steps=settings.max_steps,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=settings.seed,
        bf16=False,
        fp16=False,
        max_length=settings.max_length,
    )
    if settings.method == "sft":
        from trl import SFTConfig, SFTTrainer

        data = Dataset.from_list(
            [{"prompt": chat_prompt(tok, r["prompt"]), "completion": r["completion"]} for r in rows]
        )
        trainer = SFTTrainer(
            model=model, args=SFTConfig(**common, completion_only_loss=True), train_dataset=data, processing_class=tok
        )
    else:
        from trl.experimental.cpo import CPOConfig, CPOTrainer

        data = Dataset.from_list(
            [{"prompt": chat_prompt(tok, r["prompt"]), "chosen": r["chosen"], "rejected": r["rejected"]} for r in rows]
        )
        cfg = CPOConfig(
            **common,
            loss_type="simpo",
            beta=settings.beta,
            simpo_gamma=settings.simpo_gamma,
            cpo_alpha=0.0,
            max_completion_length=min(512, settings.max_length),
        )
        trainer = CPOTrainer(model=model, args=cfg, train_dataset=data, processing_class=tok)
    result = trainer.train()
    dest = save_to or out / MODEL_DIR
    trainer.save_model(str(dest))
    tok.save_pretrained(str(dest))
    info = {
        "base": base,
        "method": settings.method,
        "examples": len(rows),
        "settings": asdict(settings),
        "steps": result.global_step,
        "train_loss": result.training_loss,
        "seconds": round(time.perf_counter() - t0, 1),
        "model": str(dest),
        "backend": f"hf:{dest}",
    }
    (dest / "veracity_training.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return info
