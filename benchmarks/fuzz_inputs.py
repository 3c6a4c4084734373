"""The inputs of fuzz_surfaces.py: the scripted model's rules (`RULES`), the tool calls of `veracity mcp`
(`tool_inputs`: lone UTF-16 surrogate escapes in every string argument, deep nesting, huge strings, wrong types),
the foreign Origins its HTTP transport is to refuse (`FOREIGN`), and the chat requests of `veracity proxy`
(`chat_bodies`).
"""

from __future__ import annotations

import json
import random

RULES = {
    "rules": [  # QACheck's prompts, answered as the tests' scripted model answers them
        {"match": "first ask a simple question:\\nQuestion =$", "reply": " Where is the Orrin Bridge?"},
        {"match": "Relevant passage =$", "reply": " The Orrin Bridge is a stone bridge in Tallinn, Estonia."},
        {"match": "Answer =$", "reply": " Tallinn"},
        {"match": "The answer:$", "reply": " Yes"},
        {"match": "Prediction =$", "reply": " Yes, we can know."},
        {"match": "true or false\\?\\nAnswer:$", "reply": "\nThe Orrin Bridge is in Tallinn.\n"},
        {"match": "final answer is:$", "reply": " True"},
    ]
}
SURROGATES = ["\\ud800", "\\udc00", "a\\udbffb", "\\udfff\\ud800", "x\\ud83d"]  # as JSON text: lone halves
TOOLS = {
    "check_claim": {"claim": "The Orrin Bridge stands in Tallinn."},
    "check_text": {"text": "The Orrin Bridge stands in Tallinn."},
    "check_answer": {"question": "Where is the Orrin Bridge?", "answer": "It is in Tallinn."},
    "search_evidence": {"query": "Orrin Bridge"},
    "get_run": {"run_id": "0123456789abcdef"},
}
STRING_FIELDS = {
    "check_claim": ["claim", "pipeline", "date", "image_base64", "evidence.0"],
    "check_text": ["text", "pipeline", "evidence.0"],
    "check_answer": ["question", "answer"],
    "search_evidence": ["query"],
    "get_run": ["run_id"],
}
FOREIGN = [
    "http://evil.example",
    "null",
    "http://127.0.0.1.evil.example",
    "https://evil.example:443",
    "http://localhost.evil.example:{port}",
    "file://",
    "http://[::1].evil.example",
]


# -- veracity mcp ------------------------------------------------------------------------------------------------------


def put(args: dict, field: str, value: str) -> str:
    """The tool arguments as JSON text with `field` (dotted: evidence.0) set to the raw JSON string `value`."""
    d = json.loads(json.dumps(args))
    name, _, index = field.partition(".")
    d[name] = ["MARK"] if index else "MARK"
    return json.dumps(d).replace('"MARK"', f'"{value}"')


def tool_inputs(rng: random.Random) -> list[tuple[str, str]]:
    """(what, params JSON text) of tools/call requests."""
    out = []
    for tool, fields in STRING_FIELDS.items():
        for field in fields:
            for s in SURROGATES:
                out.append(
                    (
                        f"surrogate {tool}.{field}",
                        json.dumps({"name": tool}).replace("}", ', "arguments": ' + put(TOOLS[tool], field, s) + "}"),
                    )
                )
    for tool, args in TOOLS.items():
        for depth in (80, 300, 5000):
            deep = "[" * depth + "]" * depth
            field = next(iter(args))
            out.append(
                (
                    f"deep {depth} {tool}",
                    json.dumps({"name": tool}).replace(
                        "}", ', "arguments": ' + json.dumps(args).replace(json.dumps(args[field]), deep, 1) + "}"
                    ),
                )
            )
        for bad in (42, None, [], {}, True, 1e308, -1, "", " " * 5000):
            field = next(iter(args))
            out.append(
                (
                    f"type {tool}.{field}={str(bad)[:10]!r}",
                    json.dumps({"name": tool, "arguments": {**args, field: bad}}),
                )
            )
        # 1 MB of text; for check_text 100 kB in one sentence (claims/sentences.py's segmenter takes quadratic
        # time in the number of sentences: 3,000 short ones take ~20 s, which is no answer within the bound)
        huge = "word " * 20_000 if tool == "check_text" else "x " * rng.choice((500_000, 600_000))
        out.append((f"huge {tool}", json.dumps({"name": tool, "arguments": {**args, next(iter(args)): huge}})))
    for extra in (
        {"k": "five"},
        {"k": -3},
        {"k": 10**9},
        {"max_claims": 0},
        {"max_claims": "x"},
        {"evidence": "not a list"},
        {"evidence": [1, 2]},
        {"evidence": ["x"] * 50},
        {"date": "2999-01-01"},
        {"image_base64": "!!!"},
        {"image_path": "/etc/passwd"},
    ):
        tool = "search_evidence" if "k" in extra else "check_text" if "max_claims" in extra else "check_claim"
        out.append((f"wrong {tool} {extra!s:.30}", json.dumps({"name": tool, "arguments": {**TOOLS[tool], **extra}})))
    out.append(("unknown tool", json.dumps({"name": "rm_rf", "arguments": {}})))
    out.append(("no arguments", json.dumps({"name": "check_claim"})))
    return out


# -- veracity proxy ----------------------------------------------------------------------------------------------------


def chat_bodies(rng: random.Random) -> list[bytes]:
    ok = {"model": "m", "messages": [{"role": "user", "content": "Where is Paris?"}]}
    out = []
    for s in SURROGATES:
        for where in ("content", "role", "model", "extra"):
            d = json.loads(json.dumps(ok))
            if where == "content":
                d["messages"][0]["content"] = "MARK"
            elif where == "role":
                d["messages"][0]["role"] = "MARK"
            elif where == "model":
                d["model"] = "MARK"
            else:
                d["user"] = "MARK"
            out.append(json.dumps(d).replace('"MARK"', f'"{s}"').encode())
    for depth in (50, 500, 5000, 100000):
        out.append((json.dumps(ok)[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}").encode())
        out.append(
            ('{"model": "m", "messages": [{"role": "user", "content": ' + "[" * depth + "]" * depth + "}]}").encode()
        )
    for messages in (
        "x",
        5,
        None,
        [1],
        [{"role": 5}],
        [{"role": "user", "content": {"a": 1}}],
        [{"role": "user", "content": [{"type": "text", "text": 5}]}],
        [{"role": "user"}],
        [],
    ):
        out.append(json.dumps({"model": "m", "messages": messages}).encode())
    for extra in ({"stream": "yes"}, {"stream": 1}, {"temperature": "hot"}, {"n": -1}):
        out.append(json.dumps({**ok, **extra}).encode())
    out += [
        b"{",
        b"",
        b"\xff\xfe\x00",
        b"[]",
        b'"x"',
        (json.dumps(ok)[:-1] + ', "t": NaN}').encode(),
        (json.dumps(ok)[:-1] + ', "t": 1e999}').encode(),
        json.dumps({**ok, "messages": [{"role": "user", "content": "Paris. " * 200000}]}).encode(),
    ]
    rng.shuffle(out)
    return out
