"""The `veracity` command line.

    veracity check "claim"                 check a claim (default: QACheck on the embedded model)
    veracity check-text FILE|URL|-         extract the claims of a text and check each (textcheck/)
    veracity ground ANSWER --document DOC  which sentences of an answer the documents support (grounding/)
    veracity check-batch CLAIMS.jsonl --out DIR   check a file of claims (resumable; --ray: on a Ray cluster)
    veracity eval --dataset D --path P --out DIR  evaluate pipelines on a benchmark (--ray: on a Ray cluster)
    veracity index build|search|info ...   build and query retrieval indexes
    veracity factchecks import|match|info  published fact-checks: import them, find those of a claim or post
    veracity pipelines                     list the pipelines and ablations by name
    veracity recheck RUN_ID|REPORT.json    read a stored run's evidence again: what changed, does the verdict hold
    veracity doctor                        check this installation and whether the model runs on this CPU

User errors print one line and exit 2; backend failures exit 3.

This module is the top of the command line: it imports each command's `register` function. The options
the commands share (model_options, pipeline_options, config_from, ...) live in veracity.cli.options.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import __version__
from ..errors import BackendError, UserError, is_search_error
from .options import batch_options, config_from, dispatch_from, model_options, pipeline_options, read_user_file

EXAMPLE_CLAIM = "Lars Onsager won the Nobel prize when he was 30 years old."


def cmd_check(args: argparse.Namespace) -> int:
    from ..check import open_retriever, run_check
    from ..inputs import clean_claim_text, clean_image_refs
    from ..llm import make_model
    from ..pipeline import qa_for
    from ..registry import get_pipeline
    from ..report.check import usage_line, write_report
    from ..report.terminal import TerminalPrinter, terminal_text
    from ..retrieval.index import given_evidence
    from ..types import Claim

    args.qa = qa_for(args.qa, bool(args.given))  # questions answered from what is given
    config = config_from(args)
    if args.claim_file:
        raw: str | bytes = read_user_file(args.claim_file, _claim_file_limit(config.max_claim_chars), "the claim file")
    elif args.claim is not None:
        raw = args.claim
    else:
        raise UserError('give a claim: veracity check "CLAIM" (or --claim-file FILE)')
    text = clean_claim_text(raw, config.max_claim_chars)
    pipeline = get_pipeline(args.pipeline, config)
    if args.image and not pipeline.accepts_images:
        raise UserError(f"pipeline {args.pipeline!r} does not look at images; use --pipeline defame")
    claim = Claim(text=text, images=clean_image_refs(args.image), date=_claim_date(args.date))
    given = _given_evidence(args.given)
    if given and args.index:
        raise UserError(
            "give the evidence to read (--evidence, --evidence-file) or an index to search (--index), not both"
        )
    retriever = given_evidence(given) if given else open_retriever(config)
    model = make_model(config, lazy=True)  # loaded when first called: the verifier and lexical pipelines call none
    listeners = []
    if not args.json:
        shown = pipeline.model_shown(model.model_id)
        print(terminal_text(f"Claim: {text}\nPipeline: {args.pipeline}   Model: {shown}"), flush=True)
        listeners.append(TerminalPrinter())  # each step as it happens
    result = run_check(claim, pipeline, model, config, retriever=retriever, listeners=listeners)
    if args.report:
        write_report(result, args.report)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        from ..check import for_low_confidence
        from ..verdict_words import words_of
        from ..verify import uncertain_meaning

        v = result.verdict
        print(terminal_text(f"\nVerdict: {words_of(v).line}"))  # "Uncertain, leaning Supported (confidence 0.50)"
        if v.uncertain:
            meaning = f" ({uncertain_meaning(config.verifier)})" if for_low_confidence(v) else ""
            print(terminal_text(f"Uncertain because {v.uncertain_reason}.{meaning}"))
        if v.confidence_note:
            print(f"No confidence: {v.confidence_note}.")
        for note in v.notes:
            print(terminal_text(f"Note: {note}."))
        read = [s.get("rationale") for s in result.trace if s.get("stage") == "evidence_verifier"]
        if v.rationale and v.rationale != (read[-1] if read else None):  # not again when the step gave it
            print(terminal_text("Rationale: " + v.rationale.replace("\n", " ")))
        print("Usage: " + usage_line(result))
        if args.report:
            print(f"Report written to {args.report}")
    return 0


class _GivenInOrder(argparse.Action):
    """--evidence (const "text") / --evidence-file (const "file"): (kind, value) appended to one list, `given`, so
    that texts and files are read in the order the flags came."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), (self.const, values)])


def _given_evidence(given_in_order: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The evidence given beside a claim (--evidence TEXT, --evidence-file FILE, each repeatable) as (title, text),
    in the order the flags came (a text unnamed, a file named by its file); an empty one is a UserError."""
    from ..inputs import decode_user_text
    from ..reading import MAX_TEXT_FILE_BYTES

    given: list[tuple[str, str]] = []
    for kind, value in given_in_order:
        if kind == "text":  # named as the index names it: evidence-N, N its place among all given
            given.append(("", decode_user_text(value, f"evidence-{len(given) + 1}").strip()))
            continue
        raw = read_user_file(value, MAX_TEXT_FILE_BYTES, "the evidence file")
        name = "standard input" if value == "-" else Path(value).name
        given.append((name, decode_user_text(raw, f"the evidence file {name}").strip()))
    for n, (title, text) in enumerate(given, start=1):
        if not text:
            raise UserError(f"{title or f'evidence-{n}'} is empty: give the text the claim is to be checked against")
    return given


def _claim_date(value: str | None) -> str | None:
    """The --date flag as an ISO date (YYYY-MM-DD, not in the future), or a UserError saying what is wrong.

    The rule is `inputs.check_claim_date`, the same as the HTTP API's.
    """
    if value is None:
        return None
    from ..inputs import DateError, check_claim_date

    if not value.strip():
        raise UserError("--date is empty: write it as YYYY-MM-DD (e.g. 2024-05-15)")
    try:
        return check_claim_date(value)
    except DateError as e:
        raise UserError(f"--date: {e}") from None


def _claim_file_limit(max_claim_chars: int) -> int:
    """Bytes read from a claim file at most: 1 MB, or more for a very large max_claim_chars (up to 100 MB)."""
    from ..reading import MAX_TEXT_FILE_BYTES

    return min(max(MAX_TEXT_FILE_BYTES, 8 * max_claim_chars), 100 * MAX_TEXT_FILE_BYTES)


def cmd_eval(args: argparse.Namespace) -> int:
    from ..eval.datasets import covered_subset, load_dataset
    from ..eval.datasets.records import OWN_EVIDENCE_SETTINGS
    from ..eval.report import build_report

    if args.averitec_out and args.dataset.strip().lower() != "averitec":
        raise UserError("--averitec-out needs --dataset averitec")
    dataset = load_dataset(args.dataset, args.path, setting=args.setting)
    if dataset.setting in OWN_EVIDENCE_SETTINGS:
        args.no_kb = True  # the benchmark's own evidence (or none): the knowledge base only when --index names it
    config = config_from(args)
    if args.covered_by_kb:
        from ..retrieval import knowledge_base as kb

        found = kb.installed(config.kb_language)
        if found is None:
            raise UserError(f"--covered-by-kb needs the Wikipedia knowledge base: {kb.missing_hint()}")
        dataset = covered_subset(dataset, {doc.title for doc in kb.documents(found)})
    if dataset.setting == "open-domain" and not config.index:
        raise UserError(
            "the open-domain setting searches an evidence source, and there is none: install the "
            "Wikipedia knowledge base (pip install 'veracity[wiki]'), give --index DIR, or leave out "
            "--no-kb"
        )
    summary = _run_items(
        args, config, dataset, "Evaluating", limit=args.limit, seed=args.seed, retrieval_mode=args.retrieval
    )
    if dataset.name == "averitec":
        from ..eval.averitec import write_outputs
        from ..eval.report import load_rows

        written = write_outputs(args.out, load_rows(args.out), dataset, args.averitec_out).get("written", [])
        for path in written:
            print(f"AVeriTeC submission: {path}")
    print()
    print(build_report(args.out, plots=not args.no_plots))
    return 1 if summary.errors else 0


def cmd_check_batch(args: argparse.Namespace) -> int:
    from collections import Counter

    from ..eval.datasets import load_dataset
    from ..eval.report import load_rows
    from ..pipeline import qa_for

    fmt = "csv" if args.claims.lower().endswith(".csv") else "jsonl"
    dataset = load_dataset(fmt, args.claims)
    given = sum(bool(it.evidence) for it in dataset.items)
    if given and given == len(dataset.items):  # every claim brings its evidence: QACheck's answers read it
        args.qa = qa_for(args.qa, True)
    elif given and not args.qa:
        print(
            f"{given} of {len(dataset.items)} claims give evidence: QACheck keeps the configured QA module for all "
            "(give --qa retriever-reader to answer from each claim's evidence)",
            flush=True,
        )
    config = config_from(args)
    summary = _run_items(args, config, dataset, "Checking")
    ids = {it.id for it in dataset.items}
    rows = [r for r in load_rows(args.out) if r.get("dataset") == dataset.name and r.get("id") in ids]
    verdicts = Counter(r["pred"] for r in rows)
    print(
        f"Verdicts of {len(rows)} of {len(dataset.items) * len(args.pipeline or ['qacheck'])} checks in "
        f"{args.out}/items.jsonl: " + ", ".join(f"{label} {n}" for label, n in verdicts.most_common())
    )
    labelled = [r for r in rows if r.get("gold")]
    if labelled:
        right = sum(r["pred"] == r["gold"] for r in labelled)
        print(
            f"Agreeing with your labels: {right} of {len(labelled)} ({100 * right / len(labelled):.1f}%); "
            f"`veracity eval report {args.out}` for the full report"
        )
    return 1 if summary.errors else 0


def _run_items(args: argparse.Namespace, config, dataset, verb: str, **kw):
    """Check the dataset's items with --pipeline into --out (threads, or Ray actors with --ray); print the summary."""
    from ..check import open_retriever
    from ..eval.runner import Budget, run_eval
    from ..llm import make_model

    index = open_retriever(config)
    dispatch = dispatch_from(args)
    model = make_model(config) if dispatch is None else None  # with --ray, every actor makes its own
    pipelines = args.pipeline or ["qacheck"]
    where = model.model_id if model is not None else f"{config.model} on Ray"
    limit = f", limit {kw['limit']}" if kw.get("limit") else ""
    print(
        f"{verb} {', '.join(pipelines)} on {dataset.name} ({dataset.setting}, {len(dataset.items)} items{limit}) "
        f"with {where} -> {args.out}",
        flush=True,
    )
    summary = run_eval(
        dataset,
        pipelines,
        model,
        config,
        args.out,
        workers=args.workers,
        budget=Budget(args.max_tokens, args.max_cost),
        index=index,
        progress=not args.no_progress,
        dispatch=dispatch,
        **kw,
    )
    if dispatch is not None:
        print(f"Checked on {summary.where} (started in {summary.started_in:.1f} s)")
    retried = f", {summary.retried} sent again after a worker was lost" if summary.retried else ""
    print(
        f"{summary.done} items done, {summary.skipped} already there, {summary.errors} failed "
        f"(see errors.jsonl){retried}, {summary.seconds:.0f} s"
    )
    if summary.stopped:
        print(f"Stopped early: {summary.stopped}. Run the same command again to continue.")
    return summary


def cmd_eval_report(args: argparse.Namespace) -> int:
    from ..eval.report import build_report

    print(build_report(args.out, plots=not args.no_plots))
    return 0


def cmd_pipelines(args: argparse.Namespace) -> int:
    from ..registry import available_pipelines

    for name, desc in available_pipelines().items():
        print(f"{name:28s} {desc}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="veracity", description="Evidence-grounded, explainable fact-checking.")
    parser.add_argument("--version", action="version", version=f"veracity {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "check",
        parents=[model_options(), pipeline_options()],
        help="check a claim",
        description="Check a claim and show each reasoning step.",
    )
    p.add_argument("claim", nargs="?", help="the claim to check")
    p.add_argument("--claim-file", help="read the claim from a file ('-' for standard input)")
    p.add_argument("--pipeline", default="qacheck", help="pipeline name (see `veracity pipelines`)")
    p.add_argument("--max-claim-chars", type=int, help="longest claim accepted (default 2000)")
    p.add_argument("--json", action="store_true", help="print the whole result as one JSON document")
    p.add_argument("--report", help="write the report to this file: HTML for .html/.htm, else Markdown")
    p.add_argument(
        "--image",
        action="append",
        help="an image that belongs to the claim (path or URL; repeat "
        "for several; pipelines that look at images: defame)",
    )
    p.add_argument("--date", help="when the claim was made (YYYY-MM-DD): sources published later are ignored")
    p.add_argument(
        "--evidence",
        action=_GivenInOrder,
        dest="given",
        const="text",
        default=[],
        metavar="TEXT",
        help="check the claim against this text (repeat for several, read in the order given) instead "
        "of searching an index",
    )
    p.add_argument(
        "--evidence-file",
        action=_GivenInOrder,
        dest="given",
        const="file",
        default=[],
        metavar="FILE",
        help="check the claim against this file's text (an article, a report; '-' for standard input; "
        "repeatable, with --evidence too, read in the order given)",
    )
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "eval",
        parents=[model_options(), pipeline_options(), batch_options()],
        help="evaluate pipelines on a benchmark",
        description="Evaluate pipelines on a benchmark; `veracity eval report DIR` rebuilds the report.",
    )
    p.add_argument(
        "--dataset", required=True, help="feverous-s | hover | averitec | verite | mirage[:task] | jsonl | csv"
    )
    p.add_argument("--path", required=True, help="the dataset file")
    p.add_argument(
        "--setting",
        help="e.g. gold-evidence, pooled or open-domain for feverous-s (open-domain: no "
        "evidence given, the Wikipedia knowledge base or --index is searched)",
    )
    p.add_argument(
        "--covered-by-kb",
        action="store_true",
        help="only the claims whose subject the Wikipedia knowledge base covers (an article of their gold "
        "evidence, feverous-s, or a claims file's 'subject' field, is in it)",
    )
    p.add_argument("--pipeline", action="append", help="pipeline to run (repeat for several; default qacheck)")
    p.add_argument("--limit", type=int, help="evaluate N items drawn with --seed (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed for drawing --limit items")
    p.add_argument("--out", required=True, help="results folder; re-running with it resumes")
    p.add_argument(
        "--retrieval", choices=["bm25", "hybrid"], default="bm25", help="how a pooled knowledge base is searched"
    )
    p.add_argument("--no-plots", action="store_true", help="no confusion-matrix images")
    p.add_argument(
        "--averitec-out",
        metavar="FILE",
        help="averitec: also write the shared task's submission (label, justification, question-answer "
        "pairs with URLs) to FILE; several pipelines: FILE.<pipeline>.json each",
    )
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser(
        "check-batch",
        parents=[model_options(), pipeline_options(), batch_options()],
        help="check a file of claims (JSONL, or CSV), resumably; --ray for a Ray cluster",
        description="Check every claim of a file into DIR/items.jsonl (one line per claim and "
        "pipeline, with the verdict and its trace); the same command resumes. The file "
        "is the evaluation's own-claims format: one JSON object per line with 'claim' and "
        "optional 'id', 'label', 'date', 'images', 'evidence' (or a CSV with a header).",
    )
    p.add_argument("claims", help="the claims file (.jsonl, or .csv)")
    p.add_argument("--out", required=True, help="results folder; re-running with it resumes")
    p.add_argument("--pipeline", action="append", help="pipeline to run (repeat for several; default qacheck)")
    p.set_defaults(func=cmd_check_batch)

    p = sub.add_parser("eval-report", help="rebuild an evaluation report (also: veracity eval report DIR)")
    p.add_argument("out", help="results folder of `veracity eval`")
    p.add_argument("--no-plots", action="store_true", help="no confusion-matrix images")
    p.set_defaults(func=cmd_eval_report)

    p = sub.add_parser("pipelines", help="list pipelines and ablations")
    p.set_defaults(func=cmd_pipelines)

    from .check_text import register as register_check_text
    from .db import register as register_db
    from .doctor import register as register_doctor
    from .factchecks import register as register_factchecks
    from .ground import register as register_ground
    from .images import register as register_images
    from .index import register as register_index
    from .leaf import register as register_leaf
    from .mcp import register as register_mcp
    from .proxy import register as register_proxy
    from .recheck import register as register_recheck
    from .selftrain import register as register_selftrain
    from .serve import register as register_serve
    from .verifier import register as register_verifier

    register_index(sub)
    register_doctor(sub)
    register_images(sub)
    register_leaf(sub)
    register_mcp(sub)
    register_serve(sub)
    register_proxy(sub)
    register_selftrain(sub)
    register_check_text(sub)
    register_ground(sub)
    register_verifier(sub)
    register_recheck(sub)
    register_db(sub)
    register_factchecks(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["eval", "report"]:
        argv = ["eval-report", *argv[2:]]
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"veracity: error: {e}", file=sys.stderr)
        return 2
    except BackendError as e:
        print(f"veracity: {'search' if is_search_error(e) else 'model backend'} error: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("veracity: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
