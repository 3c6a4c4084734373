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
from collections.abc import Callable
from pathlib import Path

from ..errors import BackendError, UserError
from .base import Backend, Completion, CompletionRequest

Reply = str | list[str] | Callable[[CompletionRequest], str]


class NoRuleMatches(BackendError, AssertionError):
    """A request that no rule answers: a backend error for the CLI (one line), an AssertionError for tests."""


def _count_tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


class ScriptedBackend(Backend):
    def __init__(
        self, rules: list[tuple[str, Reply]], model_id: str = "scripted", *, accepts_images: bool = False
    ) -> None:
        self.accepts_images = accepts_images
        self.rules = [(re.compile(p, re.S), r) for p, r in rules]
        self.model_id = model_id
        self.calls: list[CompletionRequest] = []
        self._turn: dict[int, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedBackend:
        """Rules from a JSON file; a missing, oversized or malformed file is a one-line UserError."""
        from ..reading import MAX_RULES_BYTES, read_limited

        p = Path(path)
        raw = read_limited(p, MAX_RULES_BYTES, "scripted model file")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise UserError(" ".join(f"scripted model file {p} is not valid JSON: {e}".split())) from None
        rules = data.get("rules") if isinstance(data, dict) else None
        if not isinstance(rules, list):
            raise UserError(f'scripted model file {p} is not valid: it needs an object with a "rules" list')
        checked: list[tuple[str, Reply]] = []
        for n, rule in enumerate(rules, start=1):
            where = f"scripted model file {p}: rule {n}"
            if not isinstance(rule, dict) or "match" not in rule or "reply" not in rule:
                raise UserError(f'{where} needs a "match" and a "reply"')
            pattern, reply = rule["match"], rule["reply"]
            if not isinstance(pattern, str):
                raise UserError(
                    f'{where}: "match" must be a regular expression (a string), not {type(pattern).__name__}'
                )
            try:
                re.compile(pattern, re.S)
            except (re.error, RecursionError, OverflowError) as e:
                raise UserError(
                    " ".join(f'{where}: "match" {pattern[:80]!r} is not a valid regular expression ({e})'.split())
                ) from None
            if not (
                isinstance(reply, str) or (isinstance(reply, list) and reply and all(isinstance(r, str) for r in reply))
            ):
                raise UserError(f'{where}: "reply" must be a string or a non-empty list of strings')
            checked.append((pattern, reply))
        accepts_images = bool(data.get("accepts_images", False))
        return cls(checked, model_id=f"scripted:{p.name}", accepts_images=accepts_images)

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
        ending = " ".join(text[-120:].split())
        raise NoRuleMatches(
            f"{self.model_id}: no rule matches the prompt (it ends {ending!r}); add a rule for it to the rules file"
        )

    def _complete(self, request: CompletionRequest) -> Completion:
        texts = []
        for _ in range(request.n):
            t = self._reply(request)
            for s in request.stop:
                if s and s in t:
                    t = t[: t.index(s)]
            texts.append(t)
        prompt = "".join(c for _, c in request.messages)
        return Completion(
            texts=texts,
            prompt_tokens=_count_tokens(prompt),
            completion_tokens=sum(_count_tokens(t) for t in texts),
            latency_s=1e-4,
            model=self.model_id,
            finish_reason="stop",
        )
