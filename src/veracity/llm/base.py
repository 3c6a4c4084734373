"""One protocol for every model backend.

A backend turns a `CompletionRequest` (chat messages plus sampling parameters) into a `Completion`
(texts, token counts, latency, cost), and picks one of a fixed set of options for a decision
(`choose`). Pipelines never talk to a backend directly: they go through `Model`, which adds the
persistent cache and per-stage usage accounting.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class CompletionRequest:
    messages: tuple[tuple[str, str], ...]  # ((role, content), ...)
    max_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    n: int = 1
    seed: int | None = None
    images: tuple[str, ...] = ()
    # The prompt is a few-shot document to be continued (like the completions API): backends that can,
    # feed it as raw text instead of wrapping it in a chat template. Small local models follow
    # demonstrations far better this way; chat-only HTTP backends send it as one user message.
    continuation: bool = False

    @classmethod
    def of(
        cls, prompt: str | list[dict[str, str]] | list[tuple[str, str]], *, system: str | None = None, **kw: Any
    ) -> CompletionRequest:
        """Build a request from a prompt string (one user message) or a list of messages."""
        if isinstance(prompt, str):
            msgs: list[tuple[str, str]] = [("user", prompt)]
        else:
            msgs = [(m["role"], m["content"]) if isinstance(m, dict) else (m[0], m[1]) for m in prompt]
        if system:
            msgs.insert(0, ("system", system))
        if "stop" in kw and kw["stop"] is not None:
            kw["stop"] = tuple(kw["stop"])
        if "images" in kw:
            kw["images"] = tuple(kw["images"])
        return cls(messages=tuple(msgs), **kw)

    def with_reminder(self, reminder: str) -> CompletionRequest:
        """The same request with a format reminder appended to the last user message."""
        msgs = list(self.messages)
        role, content = msgs[-1]
        msgs[-1] = (role, content.rstrip() + "\n\n" + reminder + "\n")
        return replace(self, messages=tuple(msgs))

    def document(self) -> str:
        """A continuation request's messages as the one document to continue (what completions endpoints take)."""
        return "\n\n".join(c for _, c in self.messages)

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]

    def key_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["messages"] = [list(m) for m in self.messages]
        return d


@dataclass
class Completion:
    texts: list[str]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost: float = 0.0
    reused_prompt_tokens: int = 0  # prompt tokens not re-evaluated thanks to a kept prefix state
    model: str = ""
    cached: bool = False
    finish_reason: str = ""

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        return cls(**d)


@dataclass
class Choice:
    """The outcome of a constrained decision among `options`."""

    option: str | None  # None when the model's output matched no option even after a retry
    probabilities: dict[str, float] | None = None  # from log-probability scoring, when available
    raw: str = ""  # what the model said (for parsed decisions)
    method: str = ""  # "logprob", "grammar", "parse", "parse-retry"
    usage: Completion = field(default_factory=lambda: Completion(texts=[]))

    @property
    def parse_failed(self) -> bool:
        return self.option is None

    @property
    def confidence(self) -> float | None:
        if self.option is None or not self.probabilities:
            return None
        return self.probabilities.get(self.option)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Choice:
        d = dict(d)
        d["usage"] = Completion.from_dict(d["usage"])
        return cls(**d)


FORMAT_REMINDER = "Answer with exactly one of: {options}. Reply with that word only."


def match_option(text: str, options: list[str]) -> str | None:
    """Find which option a free-text answer names. Returns None when none (or several) match.

    The earliest whole-word occurrence wins, so "No, we cannot know yet" -> "No" and
    "The claim is supported." -> "Supported"; an answer naming two options at the same
    position (impossible) or none at all is a failure, never a guess.
    """
    best: tuple[int, str] | None = None
    for opt in options:
        m = re.search(r"(?<![A-Za-z])" + re.escape(opt) + r"(?![A-Za-z])", text, flags=re.IGNORECASE)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), opt)
    return best[1] if best else None


#: said once wherever verdicts are shown (CLI, page, reports, `veracity doctor`) when the model's server offers no
#: log-probabilities
NO_CONFIDENCES = (
    "this server gives no confidences: it returns no log-probabilities, so its verdicts carry no "
    "confidence and none can be marked uncertain for a low one"
)


class Backend(ABC):
    """A model backend. Subclasses implement `_complete`; `choose` has a parse-and-retry default."""

    #: stable identifier of the model behind this backend; part of every cache key
    model_id: str = "backend"
    #: whether requests may carry images (OpenAI-compatible image content); text-only models raise on them
    accepts_images: bool = False
    #: whether calls from several threads run together (a server with parallel slots); False: they queue on a
    #: lock, so a pipeline gains nothing by making them at once
    parallel: bool = False

    @abstractmethod
    def _complete(self, request: CompletionRequest) -> Completion: ...

    def complete(self, request: CompletionRequest) -> Completion:
        t0 = time.perf_counter()
        out = self._complete(request)
        if not out.latency_s:
            out.latency_s = time.perf_counter() - t0
        out.model = out.model or self.model_id
        return out

    def choose(self, request: CompletionRequest, options: list[str]) -> Choice:
        """Pick one of `options`: generate, match the text, retry once with a format reminder."""
        first = self.complete(replace(request, n=1, max_tokens=min(request.max_tokens, 48)))
        usage = Completion(
            texts=[],
            prompt_tokens=first.prompt_tokens,
            completion_tokens=first.completion_tokens,
            latency_s=first.latency_s,
            cost=first.cost,
            model=first.model,
        )
        opt = match_option(first.text, options)
        if opt is not None:
            return Choice(option=opt, raw=first.text, method="parse", usage=usage)
        retry = self.complete(
            replace(request.with_reminder(FORMAT_REMINDER.format(options=", ".join(options))), n=1, max_tokens=16)
        )
        usage.prompt_tokens += retry.prompt_tokens
        usage.completion_tokens += retry.completion_tokens
        usage.latency_s += retry.latency_s
        usage.cost += retry.cost
        opt = match_option(retry.text, options)
        return Choice(option=opt, raw=first.text + "\n---retry---\n" + retry.text, method="parse-retry", usage=usage)

    def gives_confidences(self) -> bool | None:
        """Whether decisions carry probabilities (the confidence beside a verdict): False where the server
        returns no log-probabilities (decisions then come from a grammar or the text), None when not known."""
        return None

    def close(self) -> None:  # noqa: B027  (optional: a backend without resources keeps this)  # pragma: no cover
        pass


def fewshot(prompt: str, **kw: Any) -> CompletionRequest:
    """A request for a few-shot template prompt: a document the model continues."""
    return CompletionRequest.of(prompt, continuation=True, **kw)
