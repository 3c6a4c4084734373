"""A transformers backend: a causal LM saved as a Hugging Face folder, run in-process on the CPU.

`hf:PATH` loads the folder written by `veracity selftrain train` (or any `save_pretrained` folder
with its tokenizer). Completions use `generate` (greedy at temperature 0, else sampling with top-p
0.95, like the embedded backend); decisions (`choose`) are scored, not parsed: each option's
log-probability as the start of the reply, the same rule as the embedded backend.
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

from ..errors import BackendError, BackendUnavailable
from .base import Backend, Choice, Completion, CompletionRequest


def hf_model_id(path: Path) -> str:
    """The model id of a model folder, as the backend reports it (known before loading: `llm.in_process_model_id`)."""
    return f"hf:{path.resolve()}"


class TransformersBackend(Backend):
    def __init__(
        self, path: str | os.PathLike, *, n_threads: int | None = None, seed: int = 0, n_ctx: int = 8192
    ) -> None:
        path = Path(path).expanduser()
        if not (path / "config.json").is_file():
            raise BackendUnavailable(f"{path} is not a Hugging Face model folder (no config.json)")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise BackendUnavailable(
                "the hf: backend needs torch and transformers (pip install torch transformers)"
            ) from None
        if n_threads:
            torch.set_num_threads(n_threads)
        self.torch = torch
        try:
            self.tok = AutoTokenizer.from_pretrained(path)
            self.lm = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        except (OSError, ValueError) as e:
            raise BackendUnavailable(f"cannot load the model folder {path}: {e}") from None
        self.lm.eval()
        self.path = path
        self.model_id = hf_model_id(path)
        self.seed = seed
        self.n_ctx = n_ctx
        self._lock = threading.Lock()

    def prompt_ids(self, request: CompletionRequest) -> list[int]:
        if request.images:
            raise BackendError(f"{self.model_id} is a text-only model: it cannot read images")
        if request.continuation or not self.tok.chat_template:
            text = "\n\n".join(c for _, c in request.messages)
        else:
            text = self.tok.apply_chat_template(request.message_dicts(), tokenize=False, add_generation_prompt=True)
        ids = self.tok(text, add_special_tokens=False)["input_ids"]
        if len(ids) + request.max_tokens > self.n_ctx:
            raise BackendError(
                f"prompt of {len(ids)} tokens plus {request.max_tokens} to generate does not fit "
                f"the context window of {self.n_ctx} tokens"
            )
        return ids

    def _complete(self, request: CompletionRequest) -> Completion:
        torch = self.torch
        ids = self.prompt_ids(request)
        x = torch.tensor([ids])
        texts, n_out, finish = [], 0, "stop"
        t0 = time.perf_counter()
        with self._lock, torch.no_grad():
            for i in range(request.n):
                torch.manual_seed((request.seed if request.seed is not None else self.seed) + i)
                kw = (
                    dict(do_sample=True, temperature=request.temperature, top_p=0.95)
                    if request.temperature > 0
                    else dict(do_sample=False)
                )
                out = self.lm.generate(
                    x,
                    attention_mask=torch.ones_like(x),
                    max_new_tokens=request.max_tokens,
                    pad_token_id=self.tok.pad_token_id or self.tok.eos_token_id,
                    eos_token_id=self.tok.eos_token_id,
                    **kw,
                )
                new = out[0, len(ids) :].tolist()
                n_out += len(new)
                text = self.tok.decode(new, skip_special_tokens=True)
                finish = "length" if len(new) >= request.max_tokens else "stop"
                for s in request.stop:
                    if s and s in text:
                        text, finish = text[: text.index(s)], "stop"
                texts.append(text)
        return Completion(
            texts=texts,
            prompt_tokens=len(ids),
            completion_tokens=n_out,
            latency_s=time.perf_counter() - t0,
            model=self.model_id,
            finish_reason=finish,
        )

    def gives_confidences(self) -> bool:
        return True

    def choose(self, request: CompletionRequest, options: list[str]) -> Choice:
        """Score each option by its log-probability as the reply; the best one wins."""
        torch = self.torch
        ids = self.prompt_ids(request)
        lead = " " if request.continuation and not request.messages[-1][1][-1:].isspace() else ""
        t0 = time.perf_counter()
        scores: dict[str, float] = {}
        with self._lock, torch.no_grad():
            for opt in options:
                oids = self.tok(lead + opt, add_special_tokens=False)["input_ids"]
                x = torch.tensor([ids + oids])
                logp = torch.log_softmax(self.lm(x).logits[0].float(), dim=-1)
                scores[opt] = float(sum(logp[len(ids) - 1 + j, t] for j, t in enumerate(oids)))
        m = max(scores.values())
        z = sum(math.exp(v - m) for v in scores.values())
        probs = {k: math.exp(v - m) / z for k, v in scores.items()}
        best = max(options, key=lambda o: scores[o])
        usage = Completion(
            texts=[best],
            prompt_tokens=len(ids),
            completion_tokens=1,
            latency_s=time.perf_counter() - t0,
            model=self.model_id,
        )
        return Choice(option=best, probabilities=probs, raw=best, method="logprob", usage=usage)
