"""Decisions over an OpenAI-compatible server: scoring options from top log-probabilities, and the payloads
that make a server constrain its reply to the options.

A server returns the log-probabilities of the k most likely next tokens, not of our options, and we do not
know its tokenizer. So an option is scored by the tokens whose text starts it (" Yes" and "Yes" both start
"Yes"): its log-probability is that of its first token, like the embedded backend's score, whose later
tokens are near-certain once the first is written. Options that share a first token ("image_search",
"image_metadata"; "No", "Not Enough Information") cannot be told apart by it: on the completions endpoint
one more call continues the prompt with their common prefix and scores what follows (`score_options`);
on the chat endpoint, which cannot continue a reply, such a group stays unresolved and the caller falls
back to a constraint or to parsing when it could decide the outcome.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable

NEG_INF = float("-inf")

#: next_tokens(extension) -> {token text: log-probability} for the prompt continued by `extension`
NextTokens = Callable[[str], dict[str, float]]


def _logaddexp(a: float, b: float) -> float:
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def _starts(text: str, token: str) -> bool:
    return text.lower().startswith(token.lower())


def score_options(
    next_tokens: NextTokens, options: list[str], *, can_extend: bool, max_extensions: int = 2
) -> tuple[dict[str, float], float]:
    """Log-probability of each option as the start of the reply: ({option: logprob}, unresolved).

    Options no top token starts are missing from the result. `unresolved` is the largest log-probability
    of a group of options sharing a first token that could not be told apart (-inf when none): when it
    exceeds every score, the top tokens cannot decide. `can_extend`: whether `next_tokens` accepts a
    non-empty extension (the completions endpoint), for at most `max_extensions` further calls.
    """
    budget = [max_extensions if can_extend else 0]
    return _score(next_tokens, [(o, o) for o in options], "", first=True, budget=budget)


def _score(
    next_tokens: NextTokens, cands: list[tuple[str, str]], prefix: str, *, first: bool, budget: list[int]
) -> tuple[dict[str, float], float]:
    """Score candidates (option, the text of it still to come) after `prefix`."""
    top = next_tokens(prefix)
    scores: dict[str, float] = {}
    groups: dict[tuple[str, ...], list] = {}  # options sharing a token -> [log mass, best token lp, its lead]
    hit_mass = NEG_INF
    for token, lp in top.items():
        text = token.lstrip() if first else token  # the reply's first token may carry a leading space
        if not text.strip() and first:
            continue
        hits = tuple(o for o, rest in cands if rest and _starts(rest, text))
        if not hits:
            continue
        hit_mass = _logaddexp(hit_mass, lp)
        if len(hits) == 1:
            scores[hits[0]] = _logaddexp(scores.get(hits[0], NEG_INF), lp)
            continue
        g = groups.setdefault(hits, [NEG_INF, NEG_INF, ""])
        g[0] = _logaddexp(g[0], lp)
        if lp > g[1]:
            g[1], g[2] = lp, token[: len(token) - len(text)]
    # an option already written in full ends here unless a longer one continues: everything else is its mass
    done = [o for o, rest in cands if not rest]
    left = 1.0 - math.exp(hit_mass)
    if done and left > 0:
        for o in done:
            scores[o] = _logaddexp(scores.get(o, NEG_INF), math.log(left / len(done)))
    unresolved = NEG_INF
    for hits, (mass, _, lead) in groups.items():
        if budget[0] <= 0:
            unresolved = max(unresolved, mass)
            continue
        budget[0] -= 1
        rests = [rest for o, rest in cands if o in hits]
        common = os.path.commonprefix(rests)
        sub, sub_unresolved = _score(
            next_tokens,
            [(o, rest[len(common) :]) for o, rest in cands if o in hits],
            prefix + lead + common,
            first=False,
            budget=budget,
        )
        for o, lp in sub.items():
            scores[o] = _logaddexp(scores.get(o, NEG_INF), mass + lp)
        unresolved = max(unresolved, mass + sub_unresolved)
    return scores, unresolved


def softmax(scores: dict[str, float]) -> dict[str, float]:
    m = max(scores.values())
    z = sum(math.exp(v - m) for v in scores.values())
    return {k: math.exp(v - m) / z for k, v in scores.items()}


# -- constraints: what makes a server's reply one of the options (kinds: config.HTTP_CONSTRAINTS) ----------------


def constraint_body(kind: str, options: list[str]) -> dict:
    """The request fields that constrain the reply to `options` on a server taking `kind`.

    grammar: llama.cpp's and llama-cpp-python's GBNF (a leading space allowed, as after "Answer:");
    guided_choice: vLLM; json_schema: OpenAI structured outputs (also Ollama, LM Studio, vLLM, llama.cpp).
    """
    if kind == "grammar":
        alts = " | ".join(json.dumps(o, ensure_ascii=False) for o in options)
        return {"grammar": f'root ::= " "? ({alts})'}
    if kind == "guided_choice":
        return {"guided_choice": list(options)}
    if kind == "json_schema":
        schema = {
            "type": "object",
            "properties": {"answer": {"type": "string", "enum": list(options)}},
            "required": ["answer"],
            "additionalProperties": False,
        }
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "decision", "strict": True, "schema": schema},
            }
        }
    raise ValueError(f"unknown constraint {kind!r}")


def constrained_reply(kind: str, text: str) -> str:
    """The option a constrained reply names (the JSON object's answer for json_schema)."""
    if kind == "json_schema":
        try:
            value = json.loads(text)
        except ValueError:
            return text.strip()
        return str(value.get("answer", "")) if isinstance(value, dict) else text.strip()
    return text.strip()
