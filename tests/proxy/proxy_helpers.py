"""`veracity proxy` as a real subprocess in front of the project's OpenAI-compatible stub (tests/stub_server.py);
the fixtures are imported by the test modules of this folder."""

import json
import re
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import server_env, veracity_cmd
from stub_server import chat_response, message_text
from worlds import CLI_RULES, DOCS, FC_CTS, PLAIN_CTS

UPSTREAM_KEY = "sk-upstream-secret-0123456789"
PROXY_TOKEN = "proxy-token-abcdefghijklmnop"


class ProxyProcess:
    """`veracity proxy ARGS` on a port the OS chose, stopped at teardown."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.args, self.env, self.cwd = args, env, cwd
        self.log: list[str] = []
        self.url = ""

    def start(self, timeout: float = 60) -> "ProxyProcess":
        self.proc = subprocess.Popen(
            veracity_cmd() + ["proxy", "--port", "0", *self.args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
            text=True,
            start_new_session=True,
        )
        found = threading.Event()

        def drain():
            for line in self.proc.stderr:
                self.log.append(line.rstrip())
                m = re.search(r"Uvicorn running on http://[0-9.]+:(\d+)", line)
                if m:
                    self.url = f"http://127.0.0.1:{m.group(1)}/v1"
                    found.set()
            found.set()

        threading.Thread(target=drain, daemon=True).start()
        if not found.wait(timeout) or not self.url:
            self.stop()
            raise RuntimeError("veracity proxy did not start:\n" + "\n".join(self.log[-30:]))
        return self

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def chunks_of(text: str, pieces: int = 4) -> list[dict]:
    """`text` as an upstream stream: a role chunk, the text in `pieces` content deltas, a finish chunk."""
    step = max(1, len(text) // pieces)
    parts = [text[i : i + step] for i in range(0, len(text), step)]
    head = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 7,
        "model": "stub",
        "system_fingerprint": "fp-stub",
    }
    out = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    out += [{**head, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in parts]
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return out


def upstream(body: dict):
    """The stub model: the plain answer (1 of 3 sentences supported), the answer with the knowledge when a request
    carries the fact-check's KNOWLEDGE; errors and delays on request; the key it got, echoed on 'ECHO KEY'."""
    text = message_text(body)
    system = " ".join(m["content"] for m in body["messages"] if m["role"] == "system")
    if "UPSTREAM 400" in text:
        return (
            400,
            {
                "error": {
                    "message": "this model's context is 10 tokens",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            0,
        )
    if "UPSTREAM 503" in text:
        return 503, {"error": {"message": "the model is overloaded"}}, 0
    if "UPSTREAM SLOW" in text:
        return 200, chat_response(PLAIN_CTS), 4.0
    answer = FC_CTS if "KNOWLEDGE:" in system else PLAIN_CTS
    if body.get("stream"):
        return 200, chunks_of(answer), 0
    reply = chat_response(answer, prompt_tokens=31, completion_tokens=29)
    reply.update(id="chatcmpl-stub", created=7, system_fingerprint="fp-stub")
    return 200, reply, 0


@pytest.fixture(scope="module")
def stub():
    """The stub model (`upstream`) as an OpenAI-compatible server, for a module's proxies."""
    from stub_server import StubServer

    srv = StubServer(upstream)
    yield srv
    srv.close()


@pytest.fixture(scope="session")
def proxy_world(tmp_path_factory):
    """An index of the LEAF test documents and the scripted rater (worlds.CLI_RULES) as files."""
    from veracity.retrieval import Index

    base = tmp_path_factory.mktemp("proxy")
    Index.from_documents(DOCS).save(base / "index")
    (base / "rater.json").write_text(json.dumps(CLI_RULES))
    return base


@pytest.fixture(scope="module")
def start_proxy(tmp_path_factory):
    """start(args, env_extra=None) -> a started ProxyProcess; all are stopped after the module."""
    started: list[ProxyProcess] = []
    base = tmp_path_factory.mktemp("proxies")

    def start(args: list[str], env_extra: dict[str, str] | None = None) -> ProxyProcess:
        env = server_env(base)
        env.update(env_extra or {})
        p = ProxyProcess(args, env, base)
        started.append(p)
        return p.start()

    start.base = base
    yield start
    for p in started:
        p.stop()
