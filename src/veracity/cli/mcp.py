"""The `veracity mcp` command: veracity's checks as MCP tools for agents.

    veracity mcp                                    stdio (what desktop agents start), the embedded model
    veracity mcp --index DIR                        also check_answer and search_evidence, over the index
    veracity mcp --http --port 8765                 streamable HTTP at http://127.0.0.1:8765/mcp
    veracity mcp --http --allow-origin http://localhost:6274    also answer that browser origin (the MCP Inspector)
    VERACITY_API_TOKEN=... veracity mcp --http --host 0.0.0.0   (any non-loopback host needs the token)

Every check is a stored run in the same SQLite file as `veracity serve` (--db; default the same), so the web
page's history shows it; the limits are the server's (--max-concurrent, --rate-limit, ...).
"""

from __future__ import annotations

import argparse
import sys

from .options import config_from, listen_url, model_options, pipeline_options, server_options


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "mcp",
        parents=[model_options(), pipeline_options()],
        help="serve veracity's checks as MCP tools (stdio, or streamable HTTP)",
        description="An MCP server (Model Context Protocol) with the tools check_claim, "
        "check_text, check_answer, search_evidence and get_run. Over stdio by "
        "default (an agent starts it); --http serves streamable HTTP at /mcp.",
    )
    g = p.add_argument_group("MCP server")
    g.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    g.add_argument(
        "--pipeline",
        help="the claim pipeline check_claim and check_text use when the call names none (default: "
        "qacheck for a claim; for a text, verifier with --index, else qacheck)",
    )
    g.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="--http: also answer browser requests from this origin (e.g. http://localhost:6274, the "
        "MCP Inspector; repeatable). Without it, a request with an Origin header is answered only "
        "from the server's own origin (403 otherwise); requests without one (not a browser) are "
        "not concerned",
    )
    server_options(g, port=8765, rate_limit=0, log_level="warning")
    p.set_defaults(func=cmd_mcp)


def allowed_origins(values: list[str]) -> tuple[str, ...]:
    """The --allow-origin values, each written one way (`auth.normal_origin`), or a UserError naming a bad one."""
    from ..errors import UserError
    from ..server.auth import normal_origin

    out = []
    for value in values:
        origin = normal_origin(value)
        if origin is None:
            raise UserError(
                f"--allow-origin {value[:100]!r} is not an origin: write it as scheme://host[:port] "
                "(e.g. http://localhost:6274)"
            )
        out.append(origin)
    return tuple(out)


def cmd_mcp(args: argparse.Namespace) -> int:
    import logging

    from ..errors import UserError
    from ..mcp_server.server import build_server, http_app
    from ..server.app import create_state
    from ..server.errors import ApiError
    from ..server.settings import ServerSettings, database_of

    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    origins = allowed_origins(args.allow_origin)
    config = config_from(args)
    settings = ServerSettings(
        host=args.host if args.http else "127.0.0.1",
        port=args.port,
        max_concurrent=args.max_concurrent,
        max_queue=args.max_queue,
        rate_limit=args.rate_limit,
    )
    settings.db_path = database_of(args.db, config)
    state = create_state(config, settings)
    state.catalog.preload()  # a bad model spec fails here, as one line, not on the first call
    if args.pipeline:
        try:  # an unknown pipeline fails here, with the names known, not on the first call
            state.catalog.resolve(args.pipeline, None, None)
        except ApiError as e:
            raise UserError(e.detail) from None
    mcp = build_server(state, local_files=not args.http, pipeline=args.pipeline)
    try:
        if not args.http:
            print(
                f"veracity mcp: stdio; runs in {settings.db_shown}; models: {', '.join(state.catalog.models)}",
                file=sys.stderr,
                flush=True,
            )
            import anyio

            from ..mcp_server.stdio import serve_stdio

            anyio.run(serve_stdio, mcp)  # as mcp.run("stdio"), every unreadable request answered
            return 0
        import uvicorn

        print(
            f"veracity mcp: {listen_url(args.host, args.port, '/mcp')}  (runs in {settings.db_shown}; models: "
            f"{', '.join(state.catalog.models)})",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.run(
            http_app(mcp, state.auth, origins),
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            timeout_graceful_shutdown=5,
            proxy_headers=False,
        )
        return 0
    finally:
        state.manager.shutdown()
