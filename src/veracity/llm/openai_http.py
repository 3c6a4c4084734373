"""OpenAI-compatible HTTP backend: OpenAI, vLLM, Ollama, llama.cpp server, LM Studio, ...

Uses the official `openai` client, whose retries (exponential backoff on connection errors, 408,
409, 429 and 5xx) are bounded by `max_retries`. Errors become one-line `BackendError`s.

Fast and decisive where the server allows it (`http_caps` finds out once what it offers):
- decisions (`choose`) take one call with `max_tokens=1` scored by the options' log-probabilities, or one
  call the server constrains to the options (grammar, guided choice, JSON schema); only a server offering
  neither gets the generate-match-retry of `Backend.choose`;
- few-shot documents (`continuation`) go to `/v1/completions` as raw text, as the papers' completion
  models read them, instead of being wrapped in a chat template;
- llama.cpp's `cache_prompt` is sent to servers that take it (with `repeat_penalty` 1.0: llama-cpp-python's
  server penalises repeats by default, so its greedy text drifted from the embedded backend's on the same
  prompt and ran on to `max_tokens`), and the server's count of prompt tokens it
  did not evaluate again (llama.cpp's `timings.cache_n`, OpenAI's and vLLM's `cached_tokens`) is kept as
  `Completion.reused_prompt_tokens`.
"""

from __future__ import annotations

import base64
import mimetypes
import threading
import time
from pathlib import Path
from typing import Any

from ..config import DECISION_MODES, ENDPOINT_MODES
from ..errors import BackendError, BackendUnavailable, UserError
from .base import Backend, Choice, Completion, CompletionRequest, match_option
from .http_caps import (
    TOP_LOGPROBS,
    CapsStore,
    Refused,
    ServerCaps,
    first_top,
    probe,
    reply_text,
)
from .http_decisions import constrained_reply, constraint_body, score_options, softmax

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
        from ..image_files import MAX_BYTES, ImageError
        from ..reading import read_limited

        p = Path(ref)
        mime = mimetypes.guess_type(p.name)[0] or "image/jpeg"
        data = read_limited(p, MAX_BYTES, "image", error=ImageError)
        url = f"data:{mime};base64," + base64.b64encode(data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


class OpenAIBackend(Backend):
    accepts_images = True  # sent as image_url parts; a text-only server model answers with an error
    parallel = True  # calls from several threads overlap: a server with parallel slots answers them together

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        prices: dict[str, tuple[float, float]] | None = None,
        decisions: str = "auto",
        endpoint: str = "auto",
        caps_path: str | Path | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as e:  # pragma: no cover - it is a core dependency
            raise BackendUnavailable("the 'openai' package is not installed") from e
        if decisions not in DECISION_MODES or endpoint not in ENDPOINT_MODES:
            raise UserError(
                f"decisions must be one of {', '.join(DECISION_MODES)} and endpoint one of "
                f"{', '.join(ENDPOINT_MODES)}, not {decisions!r} and {endpoint!r}"
            )
        self._openai = openai
        self.model = model
        self.base_url = base_url
        self.model_id = f"openai:{model}@{base_url or 'api.openai.com'}"
        if not api_key and base_url is None:
            raise UserError(
                "OPENAI_API_KEY is not set: export it, put api_key in the config file, "
                "or use --base-url for a local server"
            )
        self.client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=max_retries
        )
        self._probe_client = self.client.with_options(max_retries=0)  # a refusal is an answer, not a fault
        self.prices = {**PRICES, **(prices or {})}
        self.decisions, self.endpoint = decisions, endpoint
        self._store = CapsStore(caps_path) if caps_path else None
        self._caps_key = f"{base_url or 'https://api.openai.com/v1'} {model}"
        self._caps: ServerCaps | None = None
        self._store_read = self._reprobed = False
        self._caps_lock = threading.Lock()

    @property
    def where(self) -> str:
        return self.base_url or "the OpenAI API"

    # -- what the server offers ------------------------------------------------------------------------

    def capabilities(self, *, probe_now: bool = True) -> ServerCaps | None:
        """What the server offers, with the configured overrides: remembered, else read from the store, else
        probed (only when `probe_now`; None then). Both overrides set: nothing is probed."""
        with self._caps_lock:
            if self._caps is None and (probe_now or not self._store_read):
                self._store_read = True
                found = self._store.get(self._caps_key) if self._store else None
                if found is None and self.decisions != "auto" and self.endpoint != "auto":
                    found = ServerCaps()
                if found is None and probe_now:
                    found = probe(self._probe_send)
                    if found is not None and self._store:
                        self._store.put(self._caps_key, found)
                    found = found or ServerCaps()  # it refuses plain requests: the real call says why
                if found is not None:
                    self._caps = found.overridden(self.decisions, self.endpoint)
            return self._caps

    def gives_confidences(self) -> bool | None:
        caps = self.capabilities(probe_now=False)
        return None if caps is None else caps.completions_logprobs or caps.chat_logprobs

    def _forget_capabilities(self) -> None:
        """The server stopped doing what it was found to do (restarted with other flags): probe again, once
        per backend (a refusal for another reason, e.g. a prompt too long, must not make every call probe)."""
        with self._caps_lock:
            if self._reprobed:
                return
            self._caps, self._store_read, self._reprobed = None, False, True
            if self._store:
                self._store.put(self._caps_key, None)

    def _probe_send(self, endpoint: str, body: dict) -> dict:
        return _as_dict(self._create(endpoint, body, refuse=ANY_STATUS, client=self._probe_client))

    # -- requests -------------------------------------------------------------------------------------

    def _messages(self, request: CompletionRequest) -> list[dict[str, Any]]:
        msgs: list[dict[str, Any]] = request.message_dicts()
        if request.images:
            last = msgs[-1]
            last["content"] = [{"type": "text", "text": last["content"]}, *(_image_part(i) for i in request.images)]
        return msgs

    def _cost(self, pt: int, ct: int) -> float:
        p = self.prices.get(self.model)
        return (pt * p[0] + ct * p[1]) / 1e6 if p else 0.0

    def _endpoint(self, request: CompletionRequest) -> str:
        """Few-shot documents go to /v1/completions where the server has it; everything else to chat."""
        if not request.continuation or request.images or self.endpoint == "chat":
            return "chat"
        caps = self.capabilities()
        return "completions" if caps is not None and caps.completions else "chat"

    def _body(self, request: CompletionRequest, endpoint: str, *, n: int = 1, **fields: Any) -> dict[str, Any]:
        """The request's fields for `endpoint`; `fields` add to or replace them (None removes one)."""
        body: dict[str, Any] = {"max_tokens": request.max_tokens, "temperature": request.temperature}
        if endpoint == "chat":
            body["messages"] = self._messages(request)
        else:
            body["prompt"] = request.document()
        if request.stop:
            body["stop"] = list(request.stop)[:4]
        if request.seed is not None:
            body["seed"] = request.seed
        if n > 1:
            body["n"] = n
        caps = self.capabilities(probe_now=False)
        if caps is not None and caps.cache_prompt:
            body["cache_prompt"] = True  # llama.cpp's server: keep the evaluated prompt for the next request
            body["repeat_penalty"] = 1.0  # as the embedded backend decodes (llama-cpp-python defaults to 1.1)
        body.update(fields)
        return {k: v for k, v in body.items() if v is not None}

    def _create(
        self,
        endpoint: str,
        body: dict[str, Any],
        *,
        stream: bool = False,
        refuse: frozenset[int] = frozenset(),
        client: Any = None,
    ) -> Any:
        """One request. HTTP statuses in `refuse` raise `Refused` (what a probe or a decision falls back
        from); other errors become one-line BackendErrors and UserErrors."""
        o = self._openai
        client = client or self.client
        fields = dict(body)
        if endpoint == "chat":
            create, main = client.chat.completions.create, {"messages": fields.pop("messages")}
        else:
            create, main = client.completions.create, {"prompt": fields.pop("prompt")}
        where = self.where
        try:
            if stream:
                return [_as_dict(chunk) for chunk in create(model=self.model, **main, stream=True, extra_body=fields)]
            return create(model=self.model, **main, extra_body=fields)
        except o.APITimeoutError:
            raise BackendError(f"{where} timed out (model {self.model})") from None
        except o.APIConnectionError as e:
            raise BackendUnavailable(f"cannot reach {where}: {e.__cause__ or e}") from None
        except o.APIStatusError as e:
            if e.status_code in refuse:
                raise Refused(f"HTTP {e.status_code}: {_msg(e)}") from None
            if isinstance(e, o.AuthenticationError):
                raise UserError(f"{where} rejected the API key (HTTP 401)") from None
            if isinstance(e, o.NotFoundError):
                raise UserError(f"{where} does not know model {self.model!r} (HTTP 404): {_msg(e)}") from None
            if isinstance(e, o.RateLimitError):
                raise BackendError(
                    f"{where} kept answering 429 (rate limit or quota) after retries: {_msg(e)}"
                ) from None
            raise BackendError(f"{where} answered HTTP {e.status_code}: {_msg(e)}") from None
        except (o.APIError, ValueError) as e:  # e.g. a stream that is not one
            if refuse:
                raise Refused(str(e)[:200]) from None
            raise BackendError(f"{where} sent a malformed reply: {str(e)[:200]}") from None

    def _complete(self, request: CompletionRequest) -> Completion:
        endpoint = self._endpoint(request)
        t0 = time.perf_counter()
        texts: list[str] = []
        usage = Completion(texts=[])
        finish = ""
        while len(texts) < request.n:
            resp = self._create(endpoint, self._body(request, endpoint, n=request.n - len(texts)))
            if not resp.choices:
                raise BackendError(f"{self.where} returned no choices")
            texts.extend(((c.message.content if endpoint == "chat" else c.text) or "") for c in resp.choices)
            finish = resp.choices[0].finish_reason or ""
            try:
                _add_usage(usage, _as_dict(resp))
            except Refused as e:  # a reply the client could not read as one
                raise BackendError(f"{self.where} sent a malformed reply: {e}") from None
        usage.texts = texts[: request.n]
        usage.latency_s, usage.model, usage.finish_reason = time.perf_counter() - t0, self.model_id, finish
        usage.cost = self._cost(usage.prompt_tokens, usage.completion_tokens)
        return usage

    # -- decisions ------------------------------------------------------------------------------------

    def choose(self, request: CompletionRequest, options: list[str]) -> Choice:
        """One call scored by log-probabilities, else one constrained call, else parse and retry."""
        caps = self.capabilities()
        assert caps is not None
        endpoint, method = caps.plan(request.continuation and not request.images)
        t0 = time.perf_counter()
        spent = Completion(texts=[], model=self.model_id)
        choice = None
        if method == "logprob":
            choice = self._logprob_choice(request, options, endpoint, spent)
            # the options were not among the likeliest tokens, or could not be told apart: constrain or parse
            method = caps.constraint or "parse"
            endpoint = "chat" if method == "json_schema" else endpoint
        if choice is None and method != "parse":
            choice = self._constrained_choice(request, options, endpoint, method, spent)
        if choice is None:
            choice = super().choose(request, options)
        for k in ("prompt_tokens", "completion_tokens", "reused_prompt_tokens", "cost"):
            setattr(choice.usage, k, getattr(choice.usage, k) + getattr(spent, k))
        choice.usage.latency_s = time.perf_counter() - t0
        choice.usage.model = self.model_id
        return choice

    def _logprob_choice(
        self, request: CompletionRequest, options: list[str], endpoint: str, spent: Completion
    ) -> Choice | None:
        """Score the options by the log-probabilities of the reply's first token (`score_options`).

        Streamed, because llama-cpp-python's server computes log-probabilities for every position of its
        context window when it answers in one piece (seconds per call), but only the new token's when it
        streams. Servers that count tokens in streams (OpenAI, vLLM) report the usage; others do not."""
        first: dict[str, float] = {}

        def next_tokens(extension: str) -> dict[str, float]:
            if endpoint == "completions":
                fields: dict[str, Any] = {"prompt": request.document() + extension, "logprobs": TOP_LOGPROBS}
            else:
                fields = {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
            body = self._body(
                request,
                endpoint,
                max_tokens=1,
                temperature=0.0,
                stop=None,
                seed=None,
                stream_options={"include_usage": True},
                **fields,
            )
            chunks = self._create(endpoint, body, stream=True, refuse=DECISION_REFUSALS)
            top: dict[str, float] = {}
            for chunk in chunks:
                top = top or first_top(chunk, endpoint)
                _add_usage(spent, chunk)
            if not top:
                raise Refused("no log-probabilities in the reply")
            if not first:
                first.update(top)
            return top

        try:
            scores, unresolved = score_options(next_tokens, options, can_extend=endpoint == "completions")
        except Refused:
            self._forget_capabilities()
            return None
        if not scores or unresolved > max(scores.values()):
            return None
        floor = min(first.values())  # an option missing from the top tokens is at most as likely as the last
        scores = {o: scores.get(o, floor) for o in options}
        best = max(options, key=lambda o: scores[o])
        return Choice(
            option=best, probabilities=softmax(scores), raw=best, method="logprob", usage=Completion(texts=[best])
        )

    def _constrained_choice(
        self, request: CompletionRequest, options: list[str], endpoint: str, kind: str, spent: Completion
    ) -> Choice | None:
        """One call the server constrains to the options (no stop strings: they could cut an option)."""
        body = self._body(
            request,
            endpoint,
            max_tokens=max(request.max_tokens, 64),
            temperature=0.0,
            stop=None,
            **constraint_body(kind, options),
        )
        try:
            reply = _as_dict(self._create(endpoint, body, refuse=DECISION_REFUSALS))
            text = reply_text(reply, endpoint)
        except Refused:
            self._forget_capabilities()
            return None
        _add_usage(spent, reply)
        said = constrained_reply(kind, text)
        option = said if said in options else match_option(said, options)
        if option is None:  # the server let something else through: read it as free text
            return None
        return Choice(option=option, raw=text, method="grammar", usage=Completion(texts=[option]))


ANY_STATUS = frozenset(range(100, 600))
#: what a decision's log-probabilities or constraint meet from a server that stopped offering them
DECISION_REFUSALS = frozenset({400, 404, 405, 415, 422, 500, 501})


def _as_dict(obj: Any) -> dict:
    if isinstance(obj, dict):
        return obj
    try:
        data = obj.model_dump(warnings=False)
    except Exception as e:  # noqa: BLE001 - whatever a lenient parse of a malformed reply left
        raise Refused(f"a malformed reply: {str(e)[:100]}") from None
    return data if isinstance(data, dict) else {}


def _add_usage(into: Completion, reply: dict) -> None:
    """Add a reply's token counts, and the prompt tokens the server says it did not evaluate again."""
    usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
    into.prompt_tokens += int(usage.get("prompt_tokens") or 0)
    into.completion_tokens += int(usage.get("completion_tokens") or 0)
    timings = reply.get("timings") if isinstance(reply.get("timings"), dict) else {}
    details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    into.reused_prompt_tokens += int(timings.get("cache_n") or details.get("cached_tokens") or 0)


def _msg(e: Exception) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(e)[:300]
