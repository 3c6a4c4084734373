"""The `veracity serve` command: the web page and HTTP API.

veracity serve                                  http://127.0.0.1:8000, the embedded model
veracity serve --model scripted:rules.json --db runs.sqlite --max-concurrent 4
veracity serve --index DIR                      also offers answer check (LEAF), which needs an index
veracity serve --max-images 2 --max-image-mb 5  DEFAME checks with at most 2 images of 5 MB each
veracity serve --max-text-claims 20             text checks (POST /api/texts) check at most 20 claims each
VERACITY_API_TOKEN=... veracity serve --host 0.0.0.0   (any non-loopback host needs the token)
"""

from __future__ import annotations

import argparse
import sys

from ..inputs import DEFAULT_MAX_ANSWER_CHARS
from .options import config_from, listen_url, model_options, non_negative_int, pipeline_options, server_options


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `serve` to the main CLI's subparsers."""
    p = subparsers.add_parser(
        "serve",
        parents=[model_options(), pipeline_options()],
        help="serve the web page and HTTP API",
        description="Serve the web page (check claims, watch each step) and the HTTP API "
        "(/openapi.json). Runs are kept in a SQLite file.",
    )
    g = p.add_argument_group("server")
    server_options(g, port=8000)
    g.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        help="a reverse proxy whose X-Forwarded-For names the client, for the rate limit and the log: an "
        "address or network (repeatable; default none: the connecting address is the client)",
    )
    g.add_argument(
        "--extra-model",
        action="append",
        default=[],
        metavar="SPEC",
        help="another model the page offers besides --model (repeatable)",
    )
    g.add_argument(
        "--max-claim-chars", type=int, help="longest claim (and answer-check question) accepted (default 2000)"
    )
    g.add_argument(
        "--max-answer-chars",
        type=int,
        default=DEFAULT_MAX_ANSWER_CHARS,
        metavar="N",
        help=f"answer check: longest answer accepted (default {DEFAULT_MAX_ANSWER_CHARS})",
    )
    g.add_argument(
        "--max-text-mb",
        type=float,
        default=10.0,
        metavar="MB",
        help="text check: the longest text or uploaded file accepted, in megabytes (default 10)",
    )
    g.add_argument(
        "--max-text-claims",
        type=int,
        default=100,
        metavar="N",
        help="text check: claims checked per text at most; the rest are listed, not checked (default 100)",
    )
    g.add_argument(
        "--max-images",
        type=non_negative_int,
        default=4,
        metavar="N",
        help="images a check may carry, for pipelines that look at images (defame; default 4, 0 = none)",
    )
    g.add_argument(
        "--max-image-mb",
        type=float,
        default=10.0,
        metavar="MB",
        help="the largest image accepted, in megabytes (default 10)",
    )
    g.add_argument(
        "--images-dir",
        metavar="DIR",
        help="where uploaded images are kept (default: beside the --db file, <db name>-images/)",
    )
    g.add_argument(
        "--rater-model",
        metavar="SPEC",
        help="answer check: the model that rates each sentence (default: leaf.rater_model of the config, "
        "else the chosen model); same specs as --model",
    )
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from dataclasses import replace

    import uvicorn

    from ..server.app import create_app
    from ..server.settings import ServerSettings, database_of

    config = config_from(args)
    if args.rater_model:
        config.leaf = replace(config.leaf, rater_model=args.rater_model)
    settings = ServerSettings(
        host=args.host,
        port=args.port,
        max_concurrent=args.max_concurrent,
        max_queue=args.max_queue,
        rate_limit=args.rate_limit,
        extra_models=args.extra_model,
        max_answer_chars=args.max_answer_chars,
        max_images=args.max_images,
        max_text_bytes=int(args.max_text_mb * 1_000_000),
        max_text_claims=args.max_text_claims,
        max_image_bytes=int(args.max_image_mb * 1_000_000),
        images_dir=args.images_dir,
        trusted_proxies=[p.strip() for p in args.trusted_proxy],
    )
    settings.db_path = database_of(args.db, config)
    app = create_app(config, settings)
    app.state.veracity.catalog.preload()  # a bad model spec fails here, as one line, not on the first check
    print(
        f"veracity: serving {listen_url(args.host, args.port)}  (runs in {settings.db_shown}, images in "
        f"{settings.images_path}; "
        f"models: {', '.join(app.state.veracity.catalog.models)})",
        file=sys.stderr,
        flush=True,
    )
    # proxy headers are the app's business (--trusted-proxy): uvicorn's own default would believe any
    # X-Forwarded-For sent from 127.0.0.1, which is every client behind a local tunnel, and every local process
    uvicorn.run(
        app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=5, proxy_headers=False
    )
    return 0
