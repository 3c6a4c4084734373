"""`veracity check-text FILE|URL|-`: the claims of a text, each checked, with a summary and a report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from .options import config_from, model_options, pipeline_options, positive_int, read_documents

if TYPE_CHECKING:
    from ..textcheck.run import ClaimResult


def register(sub: argparse._SubParsersAction) -> None:
    from ..claims import METHODS

    p = sub.add_parser(
        "check-text",
        parents=[model_options(), pipeline_options()],
        help="extract the claims of a text and check each",
        description="Extract the atomic claims of a text (a .txt/.md/.html/.pdf file, a URL, or - for "
        "standard input), check each with a claim pipeline, and sum them up.",
    )
    p.add_argument("source", help="file, http(s) URL, or - for standard input")
    p.add_argument(
        "--pipeline",
        default=None,
        help="claim pipeline (default: verifier, evidence-only, with --index or --evidence-file; qacheck "
        "without either, whose verdicts then rest on the model's memory; see `veracity pipelines`)",
    )
    p.add_argument(
        "--evidence-file",
        action="append",
        metavar="FILE_OR_URL",
        help="check the claims against this document (a file, an http(s) URL; repeatable) instead of an "
        "index: a summary against its source, an answer against the page it cites",
    )
    p.add_argument(
        "--extract",
        choices=METHODS,
        default="auto",
        help="how claims are extracted: rules, model, or auto (the model behind a server, else the rules; default)",
    )
    p.add_argument("--workers", type=positive_int, default=1, help="claims checked at once (default 1)")
    p.add_argument("--max-claims", type=positive_int, help="check at most N claims (the rest: not checked)")
    p.add_argument("--max-tokens", type=positive_int, help="stop checking once this many model tokens are used")
    p.add_argument("--json", action="store_true", help="print the whole result as one JSON document")
    p.add_argument("--report", help="write the report: HTML for .html/.htm (the text, coloured), else Markdown")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_check_text)


MEMORY_ONLY = (
    "No evidence source was given, so each claim is checked against the model's memory (pipeline qacheck): "
    "those verdicts are marked uncertain. Give --index DIR (built with `veracity index build`), or the "
    "source itself with --evidence-file, to check the claims against documents."
)


def cmd_check_text(args: argparse.Namespace) -> int:
    from ..check import has_source, open_retriever
    from ..claims.sources import read_source
    from ..llm import make_model
    from ..pipeline import qa_for
    from ..registry import get_pipeline, pipeline_specs
    from ..report.terminal import terminal_text
    from ..retrieval.index import given_evidence
    from ..textcheck.outcomes import outcome_words, summary_rows
    from ..textcheck.report import write_report
    from ..textcheck.run import check_text

    args.qa = qa_for(args.qa, bool(args.evidence_file))  # a QACheck's questions answered from the documents given
    config = config_from(args)
    if args.evidence_file and args.index:
        raise UserError(
            "give the documents to check against (--evidence-file) or an index to search (--index), not both"
        )
    given = read_documents(args.evidence_file or [], config, "the claims")
    has_documents = bool(given) or has_source(config)
    memory_only = args.pipeline is None and not has_documents
    if args.pipeline is None:  # with documents the evidence-only verifier; without them, the model's memory
        args.pipeline = "verifier" if has_documents else "qacheck"
    spec = pipeline_specs().get(args.pipeline)
    if spec is None:
        get_pipeline(args.pipeline, config)  # the one "unknown pipeline" message
    if spec.input_kind != "claim":
        raise UserError(
            f"pipeline {args.pipeline!r} checks {spec.input_kind.replace('_', '-')} questions, not "
            "claims: pick a claim pipeline (verifier, qacheck, defame, cot, ...)"
        )
    if spec.needs_index(config) and not has_documents:
        raise UserError(
            f"pipeline {args.pipeline!r} needs documents to read: pass --evidence-file FILE, or an "
            "index with --index DIR (build one with `veracity index build`)"
        )
    source = read_source(args.source, allow_private=config.defame.allow_private_addresses, timeout=config.timeout)
    pipeline = get_pipeline(args.pipeline, config)
    retriever = (
        given_evidence([(doc.title or Path(doc.origin).name, doc.text) for doc in given])
        if given
        else open_retriever(config)
    )
    model = make_model(config, lazy=True)  # loaded when first called: the verifier and the rules call no model
    bar = None

    def progress(result: ClaimResult) -> None:
        if bar is not None and result.outcome not in ("ambiguous", "not_checkable"):
            bar.update(1)

    if not args.no_progress and not args.json:
        from tqdm import tqdm

        # no total is known before the claims are found: a count, not "0claim [00:00, ?claim/s]"
        bar = tqdm(desc="checking claims", bar_format="{desc}: {n} checked [{elapsed}]", file=sys.stderr)
    try:
        check = check_text(
            source,
            pipeline,
            model,
            config,
            retriever=retriever,
            extract=args.extract,
            workers=args.workers,
            max_claims=args.max_claims,
            max_tokens=args.max_tokens,
            on_claim=progress,
        )
    finally:
        if bar is not None:
            bar.close()
    if args.report:
        write_report(check, args.report)
    failed = 1 if check.counts["failed"] else 0  # some claims' checks failed: the exit status says so
    if args.json:
        print(json.dumps(check.to_dict(), indent=2, ensure_ascii=False))
        return failed
    print(
        terminal_text(
            f"Text: {source.title or source.origin} ({len(source.text):,} characters, "
            f"{check.extraction.sentences} sentences; claims by {check.extraction.method})"
        )
    )
    print(f"Pipeline: {check.pipeline}   Model: {check.model}\n")
    from ..factchecks.steps import match_line

    if memory_only:
        print(MEMORY_ONLY + "\n")
    for r in check.results:
        conf = f" {r.confidence:.2f}" if r.confidence is not None else ""
        note = f"  ({r.note})" if r.note else ""
        for m in r.factchecks:  # what fact-checkers already published on the claim, before veracity's own verdict
            print(terminal_text(f"[{r.claim.id}] published fact-check: {match_line(m)}"))
        print(terminal_text(f"[{r.claim.id}] {outcome_words(r.outcome, r.label)}{conf}: {r.claim.text}{note}"))
    print()
    if check.note:
        print(terminal_text(check.note[0].upper() + check.note[1:] + "."))
    if check.stopped:
        print(f"Stopped early: {check.stopped}.")
    print("  ".join(f"{a}: {b}" for a, b in summary_rows(check.summary())))
    total = check.usage.get("total", {})
    tokens = total.get("prompt_tokens", 0) + total.get("completion_tokens", 0)
    print(f"Usage: {total.get('calls', 0)} model calls, {tokens} tokens, {check.seconds:.1f} s")
    if args.report:
        print(f"Report written to {args.report}")
    return failed
