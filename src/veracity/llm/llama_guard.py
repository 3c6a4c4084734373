"""llama.cpp on this CPU: load models with settings that cannot take the process down.

llama.cpp's CPU backend uses "extra buffer types" for weight repacking; on CPUs that report AMX
(Intel Xeon Sapphire Rapids and later) one of them runs the weights through AMX tile instructions.
On some of those machines (virtual machines among them) the first real prompt dies of SIGILL
inside `ggml_backend_amx_mul_mat` (upstream: llama.cpp PR 26954, issue 28756), and a crash in
native code cannot be caught: it ends the whole process.

So before the first model load in a process, `decide` chooses whether the extra buffer types are used:
- where the CPU reports no AMX, or the llama.cpp build has no AMX kernels: they are used (nothing to
  fear, and repacking speeds up prompts);
- where both are present: a child process loads the model with them and evaluates a real prompt (the
  probe). If the child survives, they are used; if it dies (or hangs), they are turned off and the
  reason is kept. The result is remembered on disk per (llama.cpp build, CPU, model, threads), so the
  probe runs once per machine, not per process.

The setting `llama_extra_buffers` (config key, or VERACITY_LLAMA_EXTRA_BUFFERS) is `auto` (the
above), `on` or `off`. `veracity doctor` shows the decision and runs the model in a child process.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SETTINGS = ("auto", "on", "off")
PROBE_TIMEOUT_S = 180.0
PROBE_VERSION = 1  # bump to invalidate remembered probe results
# A real prompt: several hundred tokens in one batch reach the matrix-multiplication kernels that crash.
_PROBE_TEXT = (
    "Claim: The Eiffel Tower was completed in 1889 and stands on the Champ de Mars in Paris. "
    "Question: When was the Eiffel Tower completed? Answer: 1889. "
) * 12


@functools.cache
def cpu_info() -> dict:
    """The CPU's model name and feature flags as the operating system reports them (Linux: /proc/cpuinfo)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and value.strip():
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {"model": model, "machine": platform.machine(), "cores": os.cpu_count() or 1, "flags": sorted(flags)}


def cpu_has_amx(flags: set[str] | list[str] | None = None) -> bool:
    flags = set(cpu_info()["flags"] if flags is None else flags)
    return "amx_tile" in flags and bool({"amx_int8", "amx_bf16"} & flags)


def interesting_flags(flags) -> list[str]:
    """The flags that decide which llama.cpp and torch kernels run."""
    keep = ("avx", "avx2", "fma", "f16c", "avx_vnni", "amx", "avx512", "sse4_2", "neon", "asimd", "sve")
    return sorted(f for f in flags if f.startswith(keep))


@functools.cache
def llama_build_info() -> dict:
    """llama-cpp-python's version, its library file and llama.cpp's compiled-in features (no model loaded)."""
    try:
        import llama_cpp
    except ImportError as e:
        return {"installed": False, "error": str(e)}
    try:
        system = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    except Exception as e:  # noqa: BLE001 - an old or broken build: report it, never fail here
        system = f"unavailable ({e})"
    lib = Path(llama_cpp.__file__).parent / "lib"
    libs = sorted(p for p in lib.glob("lib*.so*")) if lib.is_dir() else []
    stamp = [(p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in libs]
    return {
        "installed": True,
        "version": getattr(llama_cpp, "__version__", "?"),
        "system_info": system,
        "amx_kernels": "AMX_INT8 = 1" in system,
        "libraries": stamp,
    }


@dataclass
class ProbeResult:
    extra_buffers: bool
    ok: bool
    returncode: int | None
    detail: str  # "answered", "killed by SIGILL (illegal instruction)", "timed out after 180 s", ...
    seconds: float


@dataclass
class Decision:
    extra_buffers: bool
    reason: str
    probes: list[ProbeResult]

    @property
    def usable(self) -> bool:
        """False when even the safe settings crashed in the probe: loading would take the process down."""
        return not self.probes or any(p.ok and p.extra_buffers == self.extra_buffers for p in self.probes)


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "did not finish"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        what = {
            "SIGILL": "illegal instruction",
            "SIGSEGV": "segmentation fault",
            "SIGBUS": "bus error",
            "SIGABRT": "abort",
            "SIGFPE": "arithmetic fault",
            "SIGKILL": "killed, e.g. out of memory",
        }
        return f"killed by {name}" + (f" ({what[name]})" if name in what else "")
    return f"exited with status {returncode}"


def probe(
    model_path: str | os.PathLike,
    *,
    extra_buffers: bool,
    n_threads: int | None = None,
    timeout: float = PROBE_TIMEOUT_S,
) -> ProbeResult:
    """Load the model in a child process and evaluate a real prompt plus a few generated tokens."""
    cmd = [
        sys.executable,
        "-m",
        "veracity.llm.llama_guard",
        "probe",
        str(model_path),
        "on" if extra_buffers else "off",
        str(n_threads or 0),
    ]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return ProbeResult(extra_buffers, False, None, f"timed out after {timeout:.0f} s", time.perf_counter() - t0)
    seconds = time.perf_counter() - t0
    if r.returncode == 0 and "PROBE-OK" in r.stdout:
        return ProbeResult(extra_buffers, True, 0, "answered", seconds)
    tail = (r.stderr.strip().splitlines() or [""])[-1][:200]
    return ProbeResult(
        extra_buffers,
        False,
        r.returncode,
        describe_exit(r.returncode) + (f": {tail}" if tail and r.returncode > 0 else ""),
        seconds,
    )


def _probe_cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "veracity" / "llama-probe.json"


def _probe_key(model_path: Path, n_threads: int | None) -> str:
    cpu = cpu_info()
    build = llama_build_info()
    try:
        st = model_path.stat()
        model = [str(model_path.resolve()), st.st_size, int(st.st_mtime)]
    except OSError:
        model = [str(model_path)]
    raw = json.dumps(
        [
            PROBE_VERSION,
            cpu["model"],
            cpu["flags"],
            build.get("version"),
            build.get("libraries"),
            model,
            n_threads or 0,
        ],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _remembered(key: str) -> Decision | None:
    try:
        data = json.loads(_probe_cache_file().read_text(encoding="utf-8"))
        d = data[key]
        return Decision(d["extra_buffers"], d["reason"], [ProbeResult(**p) for p in d["probes"]])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remember(key: str, decision: Decision) -> None:
    path = _probe_cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        data[key] = asdict(decision)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache folder: the probe runs again next time, nothing else changes


_decided: dict[tuple, Decision] = {}
_decide_lock = threading.Lock()


def decide(
    model_path: str | os.PathLike, setting: str = "auto", *, n_threads: int | None = None, remember: bool = True
) -> Decision:
    """Whether llama.cpp may use its extra buffer types (repacking, AMX) for this model on this CPU."""
    setting = (setting or "auto").lower()
    if setting not in SETTINGS:
        raise ValueError(f"llama_extra_buffers must be one of {', '.join(SETTINGS)}, not {setting!r}")
    if setting != "auto":
        return Decision(setting == "on", f"set to {setting} (llama_extra_buffers)", [])
    if not cpu_has_amx():
        return Decision(True, "the CPU reports no AMX: llama.cpp's default kernels", [])
    if not llama_build_info().get("amx_kernels"):
        return Decision(True, "the CPU reports AMX but this llama.cpp build has no AMX kernels", [])
    path = Path(model_path)
    mem_key = (str(path), n_threads)
    with _decide_lock:
        if mem_key in _decided:
            return _decided[mem_key]
        key = _probe_key(path, n_threads)
        found = _remembered(key) if remember else None
        if found is None:
            fast = probe(path, extra_buffers=True, n_threads=n_threads)
            if fast.ok:
                found = Decision(True, "the CPU reports AMX and a probe with AMX kernels ran cleanly", [fast])
            else:
                safe = probe(path, extra_buffers=False, n_threads=n_threads)
                found = Decision(
                    False,
                    f"the CPU reports AMX and a probe with llama.cpp's extra buffer types "
                    f"(AMX kernels) was {fast.detail}: they are turned off",
                    [fast, safe],
                )
            if remember:
                _remember(key, found)
        _decided[mem_key] = found
        return found


_params_lock = threading.Lock()


def _wrapped_defaults(original, enabled: bool):
    def params():
        p = original()
        if hasattr(p, "use_extra_bufts"):  # llama.cpp builds from before the field: nothing to turn off
            p.use_extra_bufts = enabled
        return p

    params.veracity_original = original
    return params


@contextlib.contextmanager
def extra_buffers(enabled: bool):
    """While active, llama-cpp-python builds models with `use_extra_bufts = enabled` (its Llama class offers
    no argument for it: the default-parameter function it calls is wrapped for the duration)."""
    import llama_cpp.llama_cpp as lib

    with _params_lock:
        original = lib.llama_model_default_params
        lib.llama_model_default_params = _wrapped_defaults(getattr(original, "veracity_original", original), enabled)
        try:
            yield
        finally:
            lib.llama_model_default_params = original


def set_extra_buffers_for_process(enabled: bool) -> None:
    """For a process that only serves models (the llama-cpp-python server): every model loads this way."""
    import llama_cpp.llama_cpp as lib

    with _params_lock:
        original = lib.llama_model_default_params
        lib.llama_model_default_params = _wrapped_defaults(getattr(original, "veracity_original", original), enabled)


def _probe_main(model_path: str, mode: str, n_threads: str) -> int:
    from llama_cpp import Llama

    threads = int(n_threads) or max(1, os.cpu_count() or 1)
    with extra_buffers(mode == "on"):
        llm = Llama(model_path, n_ctx=1024, n_threads=threads, verbose=False)
    toks = llm.tokenize(_PROBE_TEXT.encode(), add_bos=False)[:400]
    llm.eval(toks)
    out = llm.create_completion(prompt=toks[:64], max_tokens=4, temperature=0.0)
    print("PROBE-OK", len(toks), repr(out["choices"][0]["text"]), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "probe":
        sys.exit(_probe_main(*sys.argv[2:]))
    print("usage: python -m veracity.llm.llama_guard probe MODEL.gguf on|off THREADS", file=sys.stderr)
    sys.exit(2)
