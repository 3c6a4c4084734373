"""What an OpenAI-compatible server offers for decisions and few-shot prompts, found out once and remembered.

Servers differ: llama.cpp's and vLLM's serve `/v1/completions` and return log-probabilities on both endpoints,
llama.cpp's take a GBNF `grammar`, vLLM's a `guided_choice`, OpenAI's a `response_format` JSON schema; a
plain chat server offers none of these, and a strict one (OpenAI's) rejects fields it does not know, such as
llama.cpp's `cache_prompt`. `probe` asks a few one-token questions the first time a backend needs to know;
the answer is kept per backend instance and in a small JSON file next to the response cache (`CapsStore`),
so later runs against the same server and model ask nothing. The `http.decisions` and `http.endpoint`
settings override what the probe found (both set: no probe at all).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ..config import HTTP_CONSTRAINTS as CONSTRAINTS
from .http_decisions import constrained_reply, constraint_body

TOP_LOGPROBS = 20  # the most OpenAI's chat endpoint and vLLM (by default) return

PROBE_MESSAGES = [{"role": "user", "content": "Reply with one word: hello"}]
PROBE_PROMPT = "Reply with one word: hello\nReply:"
MARK = "zyx"  # what a probe's constraint forces: no model answers it unasked


class Refused(Exception):
    """The server answered, but not with what was asked (an HTTP error status, or a malformed reply)."""


#: send(endpoint "chat" | "completions", request fields) -> the JSON reply; raises Refused, or BackendError
#: when the server cannot be reached
Send = Callable[[str, dict], dict]


@dataclass
class ServerCaps:
    completions: bool = False  # /v1/completions answers (few-shot prompts go there)
    completions_logprobs: bool = False
    chat_logprobs: bool = False
    constraint: str | None = None  # grammar | guided_choice | json_schema
    cache_prompt: bool = False  # the server takes llama.cpp's cache_prompt field

    def logprobs(self, endpoint: str) -> bool:
        return self.completions_logprobs if endpoint == "completions" else self.chat_logprobs

    def plan(self, continuation: bool) -> tuple[str, str]:
        """(endpoint, method) of a decision: log-probabilities, else a constraint, else parsing."""
        endpoint = "completions" if continuation and self.completions else "chat"
        if self.logprobs(endpoint):
            return endpoint, "logprob"
        if self.constraint and (endpoint == "chat" or self.constraint != "json_schema"):
            return endpoint, self.constraint
        if self.chat_logprobs:
            return "chat", "logprob"
        if self.constraint:  # json_schema: chat only
            return "chat", self.constraint
        return endpoint, "parse"

    def overridden(self, decisions: str = "auto", endpoint: str = "auto") -> ServerCaps:
        """These capabilities with the configured overrides applied."""
        caps = ServerCaps(**asdict(self))
        if endpoint != "auto":
            caps.completions = endpoint == "completions"
        if decisions != "auto":
            lp = decisions == "logprob"
            caps.completions_logprobs = caps.chat_logprobs = lp
            caps.constraint = decisions if decisions in CONSTRAINTS else None
        return caps

    @classmethod
    def from_dict(cls, d: dict) -> ServerCaps:
        known = {f.name for f in fields(cls)}
        caps = cls(**{k: v for k, v in d.items() if k in known})
        if caps.constraint not in (None, *CONSTRAINTS):
            caps.constraint = None
        return caps


def first_top(reply: dict, endpoint: str = "") -> dict[str, float]:
    """The top log-probabilities of the reply's first token ({} when there are none), in whichever format the
    server wrote them, on either endpoint: the legacy completions format (OpenAI, vLLM: `top_logprobs` a list
    of {token: logprob}), the chat format (`content` a list of {token, logprob, top_logprobs: [{token,
    logprob}]}, which llama.cpp's llama-server also writes on /v1/completions), and older llama.cpp entries of
    {tok_str, prob} (a probability, not its log)."""
    try:
        lp = reply["choices"][0]["logprobs"]
        if isinstance(lp, dict) and isinstance(lp.get("content"), list):
            first = lp["content"][0]
            return _entries(first.get("top_logprobs") or first.get("top_probs") or first.get("probs") or [])
        top = lp["top_logprobs"][0]
        if isinstance(top, dict):
            return {str(k): float(v) for k, v in top.items()}
        return _entries(top)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return {}


def _entries(items: list) -> dict[str, float]:
    """[{token|tok_str, logprob|prob}] -> {token: logprob}."""
    out: dict[str, float] = {}
    for t in items:
        token = t.get("token", t.get("tok_str"))
        if token is None:
            continue
        if "logprob" in t:
            out[str(token)] = float(t["logprob"])
        elif "prob" in t and float(t["prob"]) > 0:
            out[str(token)] = math.log(float(t["prob"]))
    return out


def reply_text(reply: dict, endpoint: str, i: int = 0) -> str:
    """The text of choice `i` of a reply; Refused when the reply has none."""
    try:
        choice = reply["choices"][i]
        text = choice["text"] if endpoint == "completions" else choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise Refused("no text in the reply") from None
    if text is not None and not isinstance(text, str):
        raise Refused("no text in the reply")
    return text or ""


def probe(send: Send) -> ServerCaps | None:
    """Ask the server what it offers. None when it refuses even a plain request (the real call will say why)."""
    caps = ServerCaps(cache_prompt=True)
    extra = {"cache_prompt": True}
    chat = {"messages": PROBE_MESSAGES, "max_tokens": 1, "temperature": 0}
    try:
        send("chat", {**chat, **extra})
    except Refused:
        caps.cache_prompt, extra = False, {}
        try:
            send("chat", chat)
        except Refused:
            return None

    def ask(endpoint: str, body: dict) -> dict | None:
        try:
            return send(endpoint, {**body, **extra})
        except Refused:
            return None

    completion = {"prompt": PROBE_PROMPT, "max_tokens": 1, "temperature": 0}
    reply = ask("completions", {**completion, "logprobs": TOP_LOGPROBS}) or ask("completions", completion)
    if reply is not None:
        try:
            reply_text(reply, "completions")
            caps.completions = True
            caps.completions_logprobs = bool(first_top(reply, "completions"))
        except Refused:
            pass
    reply = ask("chat", {**chat, "logprobs": True, "top_logprobs": TOP_LOGPROBS})
    caps.chat_logprobs = reply is not None and bool(first_top(reply, "chat"))
    # a constraint also decides where log-probabilities cannot (no option among the likeliest tokens)
    for kind in CONSTRAINTS:
        reply = ask("chat", {**chat, "max_tokens": 8, **constraint_body(kind, [MARK])})
        try:
            if reply is not None and constrained_reply(kind, reply_text(reply, "chat")) == MARK:
                caps.constraint = kind
                break
        except Refused:
            continue
    return caps


class CapsStore:
    """Probed capabilities per server and model, in one small JSON file (written atomically)."""

    MAX_BYTES = 1 << 20

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def _read(self) -> dict:
        try:
            if self.path.stat().st_size > self.MAX_BYTES:
                return {}
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or damaged: probe again
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> ServerCaps | None:
        entry = self._read().get(key)
        return ServerCaps.from_dict(entry) if isinstance(entry, dict) else None

    def put(self, key: str, caps: ServerCaps | None) -> None:
        with self._lock:
            data = self._read()
            if caps is None:
                data.pop(key, None)
            else:
                data[key] = asdict(caps)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".caps-", suffix=".json")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, indent=1, sort_keys=True)
                os.replace(tmp, self.path)
            except OSError:
                pass  # a read-only cache folder: probe again next run
