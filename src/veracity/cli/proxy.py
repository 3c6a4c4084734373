"""The `veracity proxy` command: an OpenAI-compatible server in front of a model server, checking every answer.

    veracity proxy --upstream http://127.0.0.1:8080/v1 --index DIR --pipeline verifier
    VERACITY_UPSTREAM_KEY=sk-... veracity proxy --upstream https://api.openai.com/v1 --index DIR --policy fc-rag
    VERACITY_API_TOKEN=... veracity proxy --upstream URL --host 0.0.0.0   (any non-loopback host needs the token)

The model, evidence and pipeline flags are those of `veracity check` and `veracity serve` (model_options,
pipeline_options); the run store, the limits and the token rule are the web server's (`--db` is the same
database, so every check shows in the page's history).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import UserError
from ..inputs import DEFAULT_MAX_ANSWER_CHARS
from .options import config_from, listen_url, model_options, pipeline_options, positive_int, server_options

UPSTREAM_KEY_ENV = "VERACITY_UPSTREAM_KEY"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `proxy` to the main CLI's subparsers."""
    from ..proxy.checking import PIPELINES
    from ..proxy.evidence import EVIDENCE_CHOICES
    from ..proxy.policies import POLICIES

    p = subparsers.add_parser(
        "proxy",
        parents=[model_options(), pipeline_options()],
        help="an OpenAI-compatible proxy that fact-checks every answer",
        description="Serve /v1/chat/completions and /v1/models, forwarded to --upstream; every "
        "answer is checked (LEAF) against --index or --search and the reply carries "
        "a `veracity` object. The upstream's key is read from "
        f"${UPSTREAM_KEY_ENV} (or --upstream-key-env) and never sent to clients.",
    )
    g = p.add_argument_group("proxy")
    g.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the OpenAI-compatible server answers come from, with its /v1 (e.g. http://127.0.0.1:8080/v1)",
    )
    g.add_argument(
        "--upstream-key-env",
        default=UPSTREAM_KEY_ENV,
        metavar="NAME",
        help=f"environment variable holding the upstream's API key (default {UPSTREAM_KEY_ENV})",
    )
    g.add_argument(
        "--upstream-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds the upstream may take for one reply (default 120); then 504",
    )
    g.add_argument(
        "--pipeline",
        choices=PIPELINES,
        default="leaf",
        help="leaf: LEAF's rater model writes a query per sentence and rates it (default); verifier: each "
        "sentence is its own query and the trained verifier rates it (no model call)",
    )
    g.add_argument(
        "--evidence",
        choices=EVIDENCE_CHOICES,
        default="configured",
        help="configured: check answers against --index, --search or the knowledge base (default); request: against "
        "the documents in each request (system, developer and tool messages, earlier user messages, a long last user "
        'message, and parts marked "veracity": "document"), read whole by the trained verifier, no model called',
    )
    g.add_argument(
        "--policy",
        choices=POLICIES,
        default="annotate",
        help="annotate (default), flag (mark unsupported sentences in the text) or fc-rag (regenerate once "
        "with the evidence below --threshold); a request's X-Veracity-Policy header overrides it",
    )
    g.add_argument(
        "--threshold",
        type=float,
        default=1.0,
        help="fc-rag: regenerate when the LEAF score is below this (default 1.0; header X-Veracity-Threshold)",
    )
    g.add_argument(
        "--check-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="deliver the answer unchecked (saying so) when its check takes longer (default 60)",
    )
    g.add_argument(
        "--rater-model",
        metavar="SPEC",
        help="the model that rates each sentence (default: leaf.rater_model of the config, else --model)",
    )
    server_options(
        g,
        port=8001,
        limited="requests a client may make",
        queue="checks that may wait beyond those (default 100); beyond, answers are delivered unchecked",
    )
    g.add_argument(
        "--max-answer-chars",
        type=positive_int,
        default=DEFAULT_MAX_ANSWER_CHARS,
        metavar="N",
        help=f"longest answer checked (default {DEFAULT_MAX_ANSWER_CHARS}); longer ones are delivered "
        "unchecked, saying so",
    )
    g.add_argument(
        "--max-body-mb",
        type=float,
        default=8.0,
        metavar="MB",
        help="the largest request body accepted, in megabytes (default 8)",
    )
    p.set_defaults(func=cmd_proxy)


def cmd_proxy(args: argparse.Namespace) -> int:
    from dataclasses import replace

    import uvicorn

    from ..proxy.app import ProxyState, create_proxy_app
    from ..proxy.checking import AnswerChecks
    from ..proxy.evidence import evidence_source
    from ..proxy.policies import Policy, PolicyError, parse_threshold
    from ..proxy.upstream import Upstream
    from ..server.app import create_state
    from ..server.settings import ServerSettings, database_of

    if not args.upstream.startswith(("http://", "https://")):
        raise UserError(f"--upstream must be an http(s) URL ending in /v1, not {args.upstream!r}")
    try:
        threshold = parse_threshold(str(args.threshold), "--threshold")
    except PolicyError as e:
        raise UserError(str(e)) from None
    for flag, value in (("--upstream-timeout", args.upstream_timeout), ("--check-timeout", args.check_timeout)):
        if not value > 0:
            raise UserError(f"{flag} must be a positive number of seconds, not {value:g}")
    config = config_from(args)
    if args.rater_model:
        config.leaf = replace(config.leaf, rater_model=args.rater_model)
    settings = ServerSettings(
        host=args.host,
        port=args.port,
        max_concurrent=args.max_concurrent,
        max_queue=args.max_queue,
        rate_limit=args.rate_limit,
        max_answer_chars=args.max_answer_chars,
        max_body_bytes=int(args.max_body_mb * 1_000_000),
    )
    settings.db_path = database_of(args.db, config)
    if args.evidence == "request" and (args.index or getattr(args, "search", None) not in (None, "none")):
        raise UserError("--evidence request checks against each request's documents: leave out --index and --search")
    evidence = evidence_source(config, args.evidence)
    # the web server's store, executor, limits and auth; models loaded on their first call (the trained verifier
    # calls none)
    shared = create_state(config, settings, retriever=evidence.retriever, lazy_models=True)
    checks = AnswerChecks(
        config,
        shared.manager,
        evidence,
        pipeline=args.pipeline,
        max_answer_chars=args.max_answer_chars,
        timeout=args.check_timeout,
    )
    if evidence.retriever is not None or evidence.request:
        _warm(checks, shared.catalog)
    key = (os.environ.get(args.upstream_key_env) or "").strip() or None
    state = ProxyState(
        upstream=Upstream(args.upstream, key, args.upstream_timeout),
        checks=checks,
        auth=shared.auth,
        limiter=shared.limiter,
        policy=Policy(args.policy, threshold),
        max_knowledge=config.leaf.max_knowledge,
        max_question_chars=config.max_claim_chars,
    )
    app = create_proxy_app(state, settings)
    print(
        f"veracity: proxy on {listen_url(args.host, args.port, '/v1')} -> {args.upstream} (policy {args.policy}, "
        f"checks: {checks.checker}, evidence: {evidence.description}; runs in {settings.db_shown})",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=5, proxy_headers=False
    )
    return 0


def _warm(checks, catalog) -> None:
    """Load what the first check would otherwise wait for: the trained verifier, or the rater's model."""
    if checks.pipeline_name == "verifier" or checks.evidence.request:
        from ..verify import get_verifier

        get_verifier(checks.config.verifier, "verifier")
    else:
        catalog.preload()
