"""The `veracity factchecks` command: a store of published fact-checks, and matching claims against it.

veracity factchecks import FILE|FOLDER ...   ClaimReview JSON-LD (pages, feeds), claims:search JSON, CSV, vclaims
veracity factchecks match "TEXT"             the published fact-checks of a claim or post (--online: ask Google)
veracity factchecks info                     what the store holds
veracity factchecks train-reranker ...       fit the matcher's re-ranker on claim-matching data (train split)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from veracity.cli.options import positive_int, read_user_file
from veracity.errors import UserError

SHOWN_PROBLEMS = 5


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "factchecks",
        help="import published fact-checks and find those of a claim",
        description="A store of published fact-checks (ClaimReview, the Google Fact Check Tools API, CSV, "
        "CheckThat! vclaims), and matching a claim or post against it. Checks show the matches first.",
    )
    commands = parser.add_subparsers(
        dest="factchecks_command", metavar="{import,match,info,train-reranker}", required=True
    )
    store_help = (
        "the store: a folder (default: $VERACITY_FACTCHECKS, else ~/.local/share/veracity/factchecks), or a database "
        "shared by a team: postgresql://..., embedded:DIR or sqlite:FILE"
    )

    imp = commands.add_parser(
        "import",
        help="add fact-checks from files (a record already stored is updated)",
        description="Read fact-checks from files or folders and add them to the store. A record that cannot be "
        "read stops the import before anything changes (name the problem, fix it or pass --skip-bad); a record "
        "already stored (same id, or same address and claim) is replaced by the newer one.",
    )
    imp.add_argument("paths", nargs="+", metavar="FILE", help="files or folders (.json, .jsonl, .csv, .html)")
    imp.add_argument("--store", metavar="DIR", help=store_help)
    imp.add_argument(
        "--format",
        default="auto",
        choices=("auto", "claimreview", "google", "csv", "checkthat", "veracity"),
        help="the files' format (default: told from each file)",
    )
    imp.add_argument("--publisher", default="", help="the publisher of records whose format names none (vclaims)")
    imp.add_argument("--skip-bad", action="store_true", help="import the records that can be read; list the others")
    imp.set_defaults(func=cmd_import)

    match = commands.add_parser(
        "match",
        help="the published fact-checks of a claim, a sentence or a post",
        description="Match a claim, a sentence or a social-media post (links, handles and emoji are ignored) "
        "against the store. Prints the fact-checks whose probability of checking the same claim reaches the "
        "re-ranker's threshold, or says plainly that none was found.",
    )
    match.add_argument("text", nargs="?", help="the claim or post (or --file)")
    match.add_argument("--file", help="read the text from a file ('-': standard input)")
    match.add_argument("--store", metavar="DIR", help=store_help)
    match.add_argument("-k", type=positive_int, default=5, help="at most this many matches (default 5)")
    match.add_argument("--all", action="store_true", help="show the best candidates below the threshold too")
    match.add_argument(
        "--online",
        action="store_true",
        help="also ask the Google Fact Check Tools API (key in VERACITY_FACTCHECK_API_KEY); what it finds is "
        "kept in the store",
    )
    match.add_argument("--language", help="with --online: the API's languageCode (e.g. en)")
    match.add_argument("--json", action="store_true", help="print JSON")
    match.set_defaults(func=cmd_match)

    info = commands.add_parser("info", help="what the store holds")
    info.add_argument("--store", metavar="DIR", help=store_help)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)

    train = commands.add_parser(
        "train-reranker",
        help="fit the matcher's re-ranker on claim-matching data",
        description="Import the collection into a store, fit the re-ranker on the queries of --train-split and "
        "measure it on --dev-split (CheckThat! shape: queries {id,text,split}, qrels {query_id,vclaim_id}).",
    )
    train.add_argument("--collection", required=True, help="the fact-checks (vclaims.jsonl or any import format)")
    train.add_argument("--queries", required=True)
    train.add_argument("--qrels", required=True)
    train.add_argument("--store", metavar="DIR", required=True, help="the store to import the collection into")
    train.add_argument("--train-split", default="train")
    train.add_argument("--dev-split", default="dev")
    train.add_argument("--out", required=True, help="where to write the re-ranker (reranker.json)")
    train.set_defaults(func=cmd_train)


def cmd_import(args: argparse.Namespace) -> int:
    from veracity.factchecks.formats import read_files
    from veracity.factchecks.stores import open_store

    records, problems = read_files(args.paths, args.format, publisher=args.publisher)
    if problems and not args.skip_bad:
        shown = "\n  ".join(problems[:SHOWN_PROBLEMS])
        more = f"\n  ... and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
        raise UserError(
            f"{len(problems)} record(s) could not be read; nothing was imported (fix them, or pass --skip-bad):"
            f"\n  {shown}{more}"
        )
    if not records:
        raise UserError("no fact-check found in the files given")
    store = open_store(args.store, create=True)
    summary = store.import_records(records, progress=sys.stderr.isatty())
    for line in problems[:SHOWN_PROBLEMS]:
        print(f"skipped: {line}", file=sys.stderr)
    if len(problems) > SHOWN_PROBLEMS:
        print(f"skipped {len(problems) - SHOWN_PROBLEMS} more", file=sys.stderr)
    print(f"{summary.line()}\nstore: {store.where}")
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    from veracity.factchecks import lookup

    text = _text(args)
    found = lookup.find(text, store=args.store, k=args.k, online=args.online, language=args.language, related=args.all)
    if args.json:
        print(json.dumps(found.to_dict(), indent=2, ensure_ascii=False))
        return 0
    from veracity.report.terminal import terminal_text

    print(terminal_text(found.lines()))
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from collections import Counter

    from veracity.factchecks.stores import open_store

    store = open_store(args.store)
    publishers = Counter(r.publisher or "(not given)" for r in store.records)
    info = {
        "store": store.where,
        "factchecks": len(store),
        "publishers": dict(publishers.most_common(10)),
        "updated_at": store.manifest.get("updated_at"),
        "encoder": store.encoder_name,
    }
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return 0
    print(f"{info['factchecks']} fact-checks in {info['store']} (updated {info['updated_at']})")
    for name, n in publishers.most_common(10):
        print(f"  {n:6d}  {name}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from veracity.factchecks.formats import read_files
    from veracity.factchecks.matcher import Matcher
    from veracity.factchecks.stores import open_store
    from veracity.factchecks.training import read_queries, train_reranker

    records, problems = read_files([args.collection])
    if problems:
        raise UserError(f"the collection has unreadable records: {problems[0]}")
    store = open_store(args.store, create=True)
    print(store.import_records(records, progress=sys.stderr.isatty()).line(), file=sys.stderr)
    train = read_queries(args.queries, args.qrels, args.train_split)
    dev = read_queries(args.queries, args.qrels, args.dev_split) if args.dev_split else []
    fitted_on = (
        f"{len(train)} queries of split {args.train_split!r} of {Path(args.queries).name} against "
        f"{len(store)} fact-checks of {Path(args.collection).name}"
    )
    reranker = train_reranker(Matcher(store, reranker=None), train, dev, fitted_on=fitted_on)
    Path(args.out).write_text(json.dumps(reranker.to_json(), indent=1) + "\n", encoding="utf-8")
    print(json.dumps(reranker.measured, indent=1))
    return 0


def _text(args: argparse.Namespace) -> str:
    if args.file:
        from veracity.reading import MAX_TEXT_FILE_BYTES

        return read_user_file(args.file, MAX_TEXT_FILE_BYTES, "the text file").decode("utf-8", errors="replace")
    if not args.text or not args.text.strip():
        raise UserError('give the claim or post to match: veracity factchecks match "TEXT" (or --file FILE)')
    return args.text
