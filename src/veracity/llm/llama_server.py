"""llama-cpp-python's OpenAI-compatible server, with veracity's guard against native crashes.

    python -m veracity.llm.llama_server --model any.gguf --port 8080 [any llama_cpp.server option]

The same as `python -m llama_cpp.server`, except that the model loads with the settings that
`llama_guard.decide` found safe on this CPU (on CPUs with AMX, llama.cpp's AMX kernels can kill
the server at its first request). VERACITY_LLAMA_EXTRA_BUFFERS=on|off overrides the decision.
`start_server` runs it on a free loopback port for benchmarks and tests.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from typing import IO

from .llama_guard import decide, set_extra_buffers_for_process


def start_server(
    model: str, args: list[str], *, stderr: IO | int | None = subprocess.DEVNULL, timeout: float = 180.0
) -> tuple[subprocess.Popen, str]:
    """This server for `model` on a free port of 127.0.0.1 with llama_cpp.server's `args` (e.g. --n_threads 2),
    once it answers: (the process, its /v1 URL). A server that does not answer within `timeout` seconds is
    killed and raises RuntimeError."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "veracity.llm.llama_server",
            "--model",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    url = f"http://127.0.0.1:{port}/v1"
    wait_ready(proc, url + "/models", timeout, f"the llama-cpp-python server for {model}")
    return proc, url


def free_port() -> int:
    """A port of 127.0.0.1 free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc: subprocess.Popen, ready_url: str, timeout: float, what: str) -> None:
    """Return once GET `ready_url` answers 200; if `proc` exits first or `timeout` seconds pass, kill it and raise
    RuntimeError saying so (`what` names the server)."""
    import httpx

    from .llama_guard import describe_exit

    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        try:
            if httpx.get(ready_url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    code = proc.poll()
    proc.kill()
    proc.wait()
    why = f"it {describe_exit(code)}" if code is not None else f"it did not answer within {timeout:.0f} s"
    raise RuntimeError(f"{what} did not start: {why}")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--model")
    pre.add_argument("--n_threads", type=int)
    known, _ = pre.parse_known_args(argv)
    setting = os.environ.get("VERACITY_LLAMA_EXTRA_BUFFERS", "auto")
    if known.model:
        decision = decide(known.model, setting, n_threads=known.n_threads)
        print(
            f"veracity: llama.cpp extra buffer types {'on' if decision.extra_buffers else 'off'}: {decision.reason}",
            file=sys.stderr,
            flush=True,
        )
        if not decision.usable:
            sys.exit(
                "veracity: llama.cpp crashes on this CPU even with its extra buffer types off; run `veracity doctor`"
            )
        set_extra_buffers_for_process(decision.extra_buffers)
    from llama_cpp.server.__main__ import main as server_main

    sys.argv = [sys.argv[0], *argv]
    server_main()


if __name__ == "__main__":
    main()
