"""Command-line options shared by the `veracity` commands, and the configuration they make.

    model_options()          parent parser: --config, --model, --base-url, ... (every command that runs a model)
    pipeline_options()       parent parser: --qa, --index, --mode, --search, ... (check, eval, serve)
    leaf_options()           parent parser: --index, --retrieval, --rater-model, ... (leaf score|answer,
                             selftrain sample|evaluate)
    batch_options()          parent parser: --workers, --max-tokens, --max-cost, --ray [ADDRESS], --ray-actors,
                             --ray-cpus, --no-progress (eval, check-batch)
    dispatch_from(args)      where a batch's items are checked: None (threads of this process) or a RayDispatch
    config_from(args)        the Config: defaults < file < environment < the flags above
    leaf_config(args)        config_from(args) with the LEAF flags applied
    positive_int, non_negative_int   argparse types with one-line errors

The main CLI (veracity.cli) imports the commands' `register` functions; the commands import their shared
options from here, never from veracity.cli. Choice lists come from the constants in veracity.config.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..config import DECISION_MODES, ENDPOINT_MODES, QA_MODES, RETRIEVAL_MODES, SEARCH_PROVIDERS, load_config

INDEX_HELP = (
    "index directory to retrieve from (see `veracity index build`), or kb:wikipedia[-fr|-es]; default: "
    "the Wikipedia knowledge base when installed (pip install 'veracity[wiki]')"
)
NO_KB_HELP = (
    "do not read the Wikipedia knowledge base when no --index, evidence or search is given (config: kb = false)"
)


def model_options() -> argparse.ArgumentParser:
    """Parent parser of the model and configuration flags."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("model and configuration")
    g.add_argument("--config", help="TOML configuration file (default: ./veracity.toml or $VERACITY_CONFIG)")
    g.add_argument("--model", help="embedded | gguf:PATH | openai:NAME | scripted:FILE | NAME with --base-url")
    g.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    g.add_argument("--timeout", type=float, help="seconds per HTTP request")
    g.add_argument(
        "--decisions",
        choices=DECISION_MODES,
        help="how an OpenAI-compatible server decides among options (default auto: asked once)",
    )
    g.add_argument(
        "--endpoint",
        choices=ENDPOINT_MODES,
        help="where few-shot prompts go on an OpenAI-compatible server (default auto: completions "
        "where the server has it)",
    )
    g.add_argument(
        "--concurrency", type=positive_int, help="model calls of one check in flight together over a server (default 4)"
    )
    g.add_argument("--n-ctx", type=int, help="context window of the embedded model")
    g.add_argument("--threads", type=int, dest="n_threads", help="CPU threads for the embedded model")
    g.add_argument("--cache-path", help="SQLite response cache file")
    g.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    return p


def pipeline_options() -> argparse.ArgumentParser:
    """Parent parser of the pipeline (QACheck, retrieval) and DEFAME tool flags."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("pipeline")
    g.add_argument("--qa", choices=QA_MODES, help="QACheck question-answering module (of the plain `qacheck` pipeline)")
    g.add_argument("--index", help=INDEX_HELP)
    g.add_argument("--no-kb", action="store_true", help=NO_KB_HELP)
    g.add_argument("--mode", choices=RETRIEVAL_MODES, help="retrieval mode for --index")
    g.add_argument("--top-k", type=int, help="passages the retriever-reader reads per question")
    g.add_argument("--max-iterations", type=int, help="QACheck question rounds (default 5)")
    g.add_argument("--no-validator", action="store_true", help="keep every QA pair (ablation)")
    g = p.add_argument_group("DEFAME tools")
    g.add_argument(
        "--search",
        choices=SEARCH_PROVIDERS,
        help="web search provider (serper needs SERPER_API_KEY; local searches --index; wikipedia: "
        "MediaWiki's API, no key; default: local with --index, else none)",
    )
    g.add_argument(
        "--wikipedia-language",
        metavar="CODE",
        help="Wikipedia edition of --search wikipedia: en (default), de, fr, simple, zh-min-nan, ...",
    )
    g.add_argument("--searxng-url", help="SearXNG instance with JSON output enabled, e.g. http://127.0.0.1:8888")
    g.add_argument("--image-collection", help="folder from `veracity images build`: local image and reverse search")
    g.add_argument("--geoclip-weights", help="local GeoCLIP/CLIP weights for the geolocation tool")
    g.add_argument(
        "--allow-private-addresses",
        action="store_true",
        help="let the page scraper fetch private and loopback addresses (off: SSRF guard)",
    )
    return p


def leaf_options() -> argparse.ArgumentParser:
    """Parent parser of the LEAF fact-checking flags (index, retrieval mode, rater)."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("fact-checking")
    g.add_argument("--index", help=INDEX_HELP)
    g.add_argument("--no-kb", action="store_true", help=NO_KB_HELP)
    g.add_argument(
        "--retrieval",
        dest="mode",
        choices=RETRIEVAL_MODES,
        help="retrieval mode (default: hybrid when the index has embeddings, else bm25)",
    )
    g.add_argument("--rater-model", help="model that fact-checks (default: the answering model), same specs as --model")
    g.add_argument("--rater-base-url", help="OpenAI-compatible server of the rater")
    g.add_argument("--top-k", dest="leaf_top_k", type=int, help="passages retrieved per sentence (default 3)")
    g.add_argument("--max-sentences", type=int, help="check at most N sentences of an answer (default 30)")
    g.add_argument("--no-reasoning", action="store_true", help="the rater decides without writing a reasoning")
    return p


def batch_options() -> argparse.ArgumentParser:
    """Parent parser of the flags of commands that check many items (eval, check-batch): concurrency, budget, Ray."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("running many claims")
    g.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="items checked concurrently (HTTP request concurrency); with --ray: per actor whose model "
        "is a server (an actor running the model itself checks one at a time)",
    )
    g.add_argument("--max-tokens", type=int, help="stop cleanly after this many model tokens")
    g.add_argument("--max-cost", type=float, help="stop cleanly after this many USD (model price table)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = p.add_argument_group("Ray cluster (pip install 'veracity[ray]')")
    g.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        type=ray_address,
        help="check the claims on Ray actors: the cluster at ADDRESS (host:port of its head), or "
        "without ADDRESS the one started on this machine with `ray start --head`, else a new one",
    )
    g.add_argument(
        "--ray-actors",
        type=positive_int,
        help="actors, each with its own model backend (default: one per CPU of the cluster, or per "
        "--ray-cpus CPUs for a model run in the actors)",
    )
    g.add_argument(
        "--ray-cpus",
        type=non_negative_float,
        help="CPUs reserved per actor; a model run in the actor (embedded, gguf:, hf:) uses as many "
        "threads (default 1; 0 for a server or scripted model)",
    )
    return p


def dispatch_from(args: argparse.Namespace):
    """A RayDispatch for --ray (veracity.cluster, imported only then), else None: threads of this process."""
    if getattr(args, "ray", None) is None:
        return None
    from ..cluster.dispatch import RayDispatch

    return RayDispatch(args.ray or None, actors=args.ray_actors, cpus=args.ray_cpus, concurrency=args.workers)


def config_from(args: argparse.Namespace):
    """The Config of a command: its --config file, the environment, then the flags it was given."""
    overrides = {
        k: getattr(args, k, None)
        for k in ("model", "base_url", "timeout", "n_ctx", "n_threads", "cache_path", "index", "max_claim_chars")
    }
    overrides["retrieval_mode"] = getattr(args, "mode", None)
    overrides["concurrency"] = getattr(args, "concurrency", None)
    overrides["http.decisions"] = getattr(args, "decisions", None)
    overrides["http.endpoint"] = getattr(args, "endpoint", None)
    overrides["qacheck.qa"] = getattr(args, "qa", None)
    overrides["qacheck.max_iterations"] = getattr(args, "max_iterations", None)
    overrides["qacheck.top_k"] = getattr(args, "top_k", None)
    if getattr(args, "no_validator", False):
        overrides["qacheck.validator"] = False
    for key in ("search", "searxng_url", "image_collection", "geoclip_weights", "wikipedia_language"):
        overrides[f"defame.{key}"] = getattr(args, key, None)
    if getattr(args, "allow_private_addresses", False):
        overrides["defame.allow_private_addresses"] = True
    if getattr(args, "no_cache", False):
        overrides["cache"] = False
    if getattr(args, "no_kb", False):
        overrides["kb"] = False
    return load_config(args.config, overrides)


def leaf_config(args: argparse.Namespace):
    """config_from(args) with the flags of leaf_options() (and --max-rounds) applied to config.leaf."""
    config = config_from(args)
    leaf = {
        "rater_model": getattr(args, "rater_model", None),
        "rater_base_url": getattr(args, "rater_base_url", None),
        "top_k": getattr(args, "leaf_top_k", None),
        "max_sentences": getattr(args, "max_sentences", None),
        "max_rounds": getattr(args, "max_rounds", None),
        "rater_reasoning": False if getattr(args, "no_reasoning", False) else None,
    }
    leaf = {k: v for k, v in leaf.items() if v is not None}
    if leaf:
        config.leaf = replace(config.leaf, **leaf)
        config.leaf.validate()
    return config


LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def server_options(
    g: argparse._ArgumentGroup,
    *,
    port: int,
    rate_limit: int = 30,
    log_level: str = "info",
    limited: str = "checks a client may start",
    queue: str = "checks that may wait beyond those (default 100)",
) -> None:
    """The flags every veracity server takes (serve, mcp --http, proxy): where it listens, the run store it shares
    with the others, how many checks run and wait, the rate limit, the log level."""
    g.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; any other needs VERACITY_API_TOKEN)",
    )
    g.add_argument("--port", type=int, default=port, help=f"port (default {port})")
    g.add_argument(
        "--db",
        metavar="URL",
        help="where runs are kept, shared by `veracity serve`, `mcp` and `proxy`: an SQLite file (default "
        "$XDG_DATA_HOME/veracity/runs.sqlite), postgresql://... (several serve workers share its "
        "queue) or embedded:DIR (a local PostgreSQL, `veracity db start DIR`); also "
        "VERACITY_DATABASE_URL",
    )
    g.add_argument("--max-concurrent", type=positive_int, default=2, metavar="N", help="checks run at once (default 2)")
    g.add_argument("--max-queue", type=non_negative_int, default=100, metavar="N", help=queue)
    g.add_argument(
        "--rate-limit",
        type=non_negative_int,
        default=rate_limit,
        metavar="N",
        help=f"{limited} per minute (default {rate_limit}; 0 = no limit)",
    )
    g.add_argument("--log-level", default=log_level, choices=LOG_LEVELS, help=f"log level (default {log_level})")


def listen_url(host: str, port: int, path: str = "") -> str:
    """http://host:port/path, an IPv6 address in brackets."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"


def read_documents(refs: list[str], config, against: str) -> list:
    """The documents at `refs` (files, URLs, "-"), as `check-text --evidence-file` and `ground --document` read them;
    a UserError names one with no text ("... has no text to check `against` against")."""
    from ..claims.sources import read_source
    from ..errors import UserError

    docs = [
        read_source(ref, allow_private=config.defame.allow_private_addresses, timeout=config.timeout) for ref in refs
    ]
    for doc in docs:
        if not doc.text.strip():
            raise UserError(f"{doc.origin} has no text to check {against} against")
    return docs


def read_user_file(path: str, limit: int, what: str) -> bytes:
    """A user file ('-': standard input), read up to `limit` bytes, or a one-line UserError."""
    import sys

    from ..reading import read_limited

    return read_limited(sys.stdin.buffer if path == "-" else path, limit, what)


def positive_int(value: str) -> int:
    """argparse type: a whole number of at least 1."""
    return _int_at_least(value, 1)


def non_negative_int(value: str) -> int:
    """argparse type: a whole number of at least 0."""
    return _int_at_least(value, 0)


def ray_address(value: str) -> str:
    """argparse type of --ray's optional ADDRESS: host:port, ray://host:port, auto or local. Anything else is
    most likely the claims file that `--ray FILE` swallowed (ADDRESS is optional), so say how to write it."""
    if value in ("", "auto", "local") or ":" in value:  # "": --ray with no ADDRESS (argparse converts const)
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r} is not a Ray address (host:port, ray://host:port, auto); for the "
        "cluster on this machine put --ray after the claims file"
    )


def non_negative_float(value: str) -> float:
    """argparse type: a number of at least 0."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not number >= 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0, got {value}")
    return number


def _int_at_least(value: str, minimum: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {number}")
    return number
