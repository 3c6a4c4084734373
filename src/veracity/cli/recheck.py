"""`veracity recheck RUN_ID|report.json`: read a stored run's evidence sources again and say what changed."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from ..evidence.result import EXIT_CHANGED, EXIT_INCOMPLETE, EXIT_UNCHANGED, Recheck
from ..evidence.steps import CHANGED
from ..web.filters import plural

EXIT_HELP = f"""exit status:
  {EXIT_UNCHANGED}  nothing changed: every source that can be read again still says what was quoted, and the
     verdict holds
  {EXIT_CHANGED}  something changed: a quote changed or its source is gone, or the verdict no longer holds
  2  a usage error (no such run, not a report file, ...)
  3  a backend error
  {EXIT_INCOMPLETE}  nothing found changed, but some sources could not be read again (unreachable, refused by the
     address guard, or stored without a content hash by an older veracity); the model's memory is never counted

Each item is unchanged, changed (with a short diff of the quoted span: [-removed-] {{+added+}}), gone,
unreachable, refused (its address now fails the SSRF guard: reported, not fetched) or not re-checkable (the
model's memory; a record without a content hash)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "recheck",
        help="read a stored run's evidence sources again: what changed, and does the verdict hold?",
        description="Read each evidence source of a stored run again (pages through the guarded scraper, index "
        "documents in the index they came from), report per item what changed, take the decision "
        "again with the trained verifier on the evidence as it stands now, and store the recheck as a "
        "new run linked to the old one.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "target",
        metavar="RUN_ID|REPORT.json",
        help="a run id of the run store (`veracity serve`'s history), or a report JSON file "
        "(`veracity check --json`, a run's report.json)",
    )
    p.add_argument("--db", help="the SQLite file of runs (default $XDG_DATA_HOME/veracity/runs.sqlite)")
    p.add_argument("--json", action="store_true", help="print the recheck as one JSON document")
    p.add_argument("--no-store", action="store_true", help="do not store the recheck as a run")
    p.add_argument("--config", help="TOML configuration file (default: ./veracity.toml or $VERACITY_CONFIG)")
    p.add_argument("--timeout", type=float, help="seconds a page may take to read (default defame.timeout)")
    p.add_argument(
        "--allow-private-addresses",
        action="store_true",
        help="let the scraper fetch private and loopback addresses (off: SSRF guard)",
    )
    p.set_defaults(func=cmd_recheck)


def cmd_recheck(args: argparse.Namespace) -> int:
    from ..evidence.recheck import recheck
    from ..server.rechecks import run_from_report, run_from_store, store_recheck
    from ..server.settings import database_of
    from .options import config_from

    config = config_from(argparse.Namespace(config=args.config, allow_private_addresses=args.allow_private_addresses))
    if args.timeout:
        config.defame = replace(config.defame, timeout=args.timeout)
    db = database_of(args.db, config)
    store = None
    if _is_file(args.target) or args.target.lower().endswith(".json"):
        run = run_from_report(args.target)
    else:
        store = _open_store(db)
        run = run_from_store(store, args.target)
    if store is None and (args.db or config.database_url) and not args.no_store:
        store = _open_store(db)  # a report file's recheck goes into the store only when one is named
    result = recheck(run, config)
    stored = store_recheck(store, result) if store is not None and not args.no_store else None
    if args.json:
        print(json.dumps({**result.to_dict(), "stored_as": stored}, indent=2, ensure_ascii=False))
    else:
        print(text_report(result, stored))
    return result.exit_code()


def _is_file(target: str) -> bool:
    """Whether `target` names a file; a name no file can have (too long, a NUL byte) is none, not a traceback."""
    try:
        return Path(target).is_file()
    except (OSError, ValueError):
        return False


def _open_store(db: str):
    from ..server.rechecks import open_run_store

    return open_run_store(db)


def text_report(result: Recheck, stored: str | None) -> str:
    from ..report.terminal import terminal_text
    from ..verdict_words import words_of

    run = result.run
    label = words_of(run.verdict).text if run.verdict.get("label") else "no verdict"  # as every front end says it
    lines = [
        f"Re-checking {run.origin} ({run.pipeline or 'pipeline unknown'}, verdict {label}): "
        f"{plural(len(result.items), 'evidence item')}"
    ]
    for item in result.items:
        e = item.evidence
        where = (f"{e.get('source') or 'document'} ({e['doc_id']})" if e.get("doc_id") else e.get("url")) or e.get(
            "source"
        )
        quote = " ".join(str(e.get("text") or "").split())
        quote = quote if len(quote) <= 100 else quote[:99] + "…"
        lines.append(f"[{item.n}] {item.status}: {where or 'evidence'}: “{quote}”")
        lines.append(f"      {item.reason}")
        if item.status == CHANGED and item.diff:
            lines.append(f"      diff: {item.diff}")
    for d in result.decisions:
        if d.holds is None:
            lines.append(f"Decision: {d.note}")
        else:
            verb = "holds" if d.holds else "may not hold"
            lines.append(f"Decision ({d.verifier}) for “{d.group[:100]}”: {d.note}: the verdict {verb}.")
    lines.append(f"{result.headline()}: {result.summary()}.")
    if stored:
        lines.append(f"Stored as run {stored}" + (f" (a recheck of run {run.id})" if run.id else ""))
    meaning = {
        EXIT_UNCHANGED: "nothing changed",
        EXIT_CHANGED: "something changed",
        EXIT_INCOMPLETE: "some sources could not be read again",
    }
    lines.append(f"Exit status {result.exit_code()}: {meaning[result.exit_code()]}.")
    return terminal_text("\n".join(lines))
