"""A scripted backend for deterministic tests and demos.

Replies come from rules: the first rule whose regular expression matches the request's last user
message gives the reply (a string, or a list of strings used in turn, the last one repeating).
Rules load from a JSON file (`--model scripted:rules.json`):

    {"rules": [{"match": "Can we know whether the claim", "reply": ["No", "Yes"]},
               {"match": ".*", "reply": "I do not know."}]}

A request that matches no rule is an error, so a test notices an unexpected prompt.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Callable

from ..errors import UserError
from .base import Backend, Completion, CompletionRequest

Reply = str | list[str] | Callable[[CompletionRequest], str]


def _count_tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


class ScriptedBackend(Backend):
    def __init__(self, rules: list[tuple[str, Reply]], model_id: str = "scripted", *,
                 accepts_images: bool = False) -> None:
        self.accepts_images = accepts_images
        self.rules = [(re.compile(p, re.S), r) for p, r in rules]
        self.model_id = model_id
        self.calls: list[CompletionRequest] = []
        self._turn: dict[int, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path) -> "ScriptedBackend":
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            rules = [(r["match"], r["reply"]) for r in data["rules"]]
            accepts_images = bool(data.get("accepts_images", False))
        except FileNotFoundError:
            raise UserError(f"scripted model file not found: {p}") from None
        except (ValueError, KeyError, TypeError) as e:
            raise UserError(f"scripted model file {p} is not valid: {e}") from None
        return cls(rules, model_id=f"scripted:{p.name}", accepts_images=accepts_images)

    def _reply(self, request: CompletionRequest) -> str:
        text = request.messages[-1][1]
        with self._lock:
            self.calls.append(request)
            for i, (pat, reply) in enumerate(self.rules):
                if pat.search(text):
                    if callable(reply):
                        return reply(request)
                    if isinstance(reply, str):
                        return reply
                    k = self._turn.get(i, 0)
                    self._turn[i] = k + 1
                    return reply[min(k, len(reply) - 1)]
        raise AssertionError(f"scripted backend: no rule matches prompt ending {text[-200:]!r}")

    def _complete(self, request: CompletionRequest) -> Completion:
        texts = []
        for _ in range(request.n):
            t = self._reply(request)
            for s in request.stop:
                if s and s in t:
                    t = t[: t.index(s)]
            texts.append(t)
        prompt = "".join(c for _, c in request.messages)
        return Completion(texts=texts, prompt_tokens=_count_tokens(prompt),
                          completion_tokens=sum(_count_tokens(t) for t in texts), latency_s=1e-4,
                          model=self.model_id, finish_reason="stop")
