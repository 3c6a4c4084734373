"""OpenAI-compatible HTTP backend: OpenAI, vLLM, Ollama, llama.cpp server, LM Studio, ...

Uses the official `openai` client, whose retries (exponential backoff on connection errors, 408,
409, 429 and 5xx) are bounded by `max_retries`. Errors become one-line `BackendError`s.
"""

from __future__ import annotations

import base64
import mimetypes
import time
from pathlib import Path
from typing import Any

from ..errors import BackendError, BackendUnavailable, UserError
from .base import Backend, Completion, CompletionRequest

# USD per million tokens (prompt, completion). Used for cost accounting and budgets; extend via config.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-3.5-turbo": (0.50, 1.50),
}


def _image_part(ref: str) -> dict[str, Any]:
    if ref.startswith(("http://", "https://", "data:")):
        url = ref
    else:
        from ..images.files import MAX_BYTES, ImageError
        from ..reading import read_limited

        p = Path(ref)
        mime = mimetypes.guess_type(p.name)[0] or "image/jpeg"
        url = f"data:{mime};base64," + base64.b64encode(read_limited(p, MAX_BYTES, "image", error=ImageError)).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


class OpenAIBackend(Backend):
    accepts_images = True  # sent as image_url parts; a text-only server model answers with an error
    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 3,
                 prices: dict[str, tuple[float, float]] | None = None) -> None:
        try:
            import openai
        except ImportError as e:  # pragma: no cover - it is a core dependency
            raise BackendUnavailable("the 'openai' package is not installed") from e
        self._openai = openai
        self.model = model
        self.base_url = base_url
        self.model_id = f"openai:{model}@{base_url or 'api.openai.com'}"
        if not api_key and base_url is None:
            raise UserError("OPENAI_API_KEY is not set: export it, put api_key in the config file, "
                            "or use --base-url for a local server")
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                    timeout=timeout, max_retries=max_retries)
        self.prices = {**PRICES, **(prices or {})}

    def _messages(self, request: CompletionRequest) -> list[dict[str, Any]]:
        msgs: list[dict[str, Any]] = request.message_dicts()
        if request.images:
            last = msgs[-1]
            last["content"] = [{"type": "text", "text": last["content"]},
                               *(_image_part(i) for i in request.images)]
        return msgs

    def _cost(self, pt: int, ct: int) -> float:
        p = self.prices.get(self.model)
        return (pt * p[0] + ct * p[1]) / 1e6 if p else 0.0

    def _call(self, request: CompletionRequest, n: int) -> Any:
        o = self._openai
        kw: dict[str, Any] = dict(model=self.model, messages=self._messages(request),
                                  max_tokens=request.max_tokens, temperature=request.temperature)
        if request.stop:
            kw["stop"] = list(request.stop)[:4]
        if request.seed is not None:
            kw["seed"] = request.seed
        if n > 1:
            kw["n"] = n
        where = self.base_url or "the OpenAI API"
        try:
            return self.client.chat.completions.create(**kw)
        except o.APITimeoutError:
            raise BackendError(f"{where} timed out (model {self.model})") from None
        except o.APIConnectionError as e:
            raise BackendUnavailable(f"cannot reach {where}: {e.__cause__ or e}") from None
        except o.AuthenticationError:
            raise UserError(f"{where} rejected the API key (HTTP 401)") from None
        except o.NotFoundError as e:
            raise UserError(f"{where} does not know model {self.model!r} (HTTP 404): {_msg(e)}") from None
        except o.RateLimitError as e:
            raise BackendError(f"{where} kept answering 429 (rate limit or quota) after retries: {_msg(e)}") from None
        except o.APIStatusError as e:
            raise BackendError(f"{where} answered HTTP {e.status_code}: {_msg(e)}") from None

    def _complete(self, request: CompletionRequest) -> Completion:
        t0 = time.perf_counter()
        texts: list[str] = []
        pt = ct = 0
        finish = ""
        while len(texts) < request.n:
            resp = self._call(request, request.n - len(texts))
            if not resp.choices:
                raise BackendError(f"{self.base_url or 'the OpenAI API'} returned no choices")
            texts.extend((c.message.content or "") for c in resp.choices)
            finish = resp.choices[0].finish_reason or ""
            if resp.usage:
                pt += resp.usage.prompt_tokens or 0
                ct += resp.usage.completion_tokens or 0
        texts = texts[: request.n]
        return Completion(texts=texts, prompt_tokens=pt, completion_tokens=ct,
                          latency_s=time.perf_counter() - t0, cost=self._cost(pt, ct),
                          model=self.model_id, finish_reason=finish)


def _msg(e: Exception) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(e)[:300]
