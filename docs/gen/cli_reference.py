"""Generate reference/cli.md from the argparse parser: `veracity.cli.build_parser()`, every command and
subcommand found by walking the subparsers (no command module is imported by path), each with its usage, its
description and a table of its arguments by group."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))
from _common import cell, code, importable

importable()

OUT = "reference/cli.md"


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order they were added; aliases once."""
    found: list[tuple[str, str, argparse.ArgumentParser]] = []
    seen: set[int] = set()
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, sub in action.choices.items():
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            text = helps.get(name)
            found.append((name, "" if text in (None, argparse.SUPPRESS) else str(text), sub))
    return found


def expand(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    try:
        return parser._get_formatter()._expand_help(action)
    except (KeyError, TypeError, ValueError):
        return str(action.help)


def flags_of(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(action.option_strings)
        if action.nargs == 0:
            return names
        if action.choices is not None and action.metavar is None:
            meta = "{" + ",".join(map(str, action.choices)) + "}"
        else:
            meta = action.metavar or action.dest.upper()
            if isinstance(meta, tuple):
                meta = " ".join(meta)
        if action.nargs == "?":
            meta = f"[{meta}]"
        elif action.nargs in ("*", "+"):
            meta = f"{meta} ..."
        return f"{names} {meta}"
    meta = action.metavar or action.dest
    if action.nargs == "?":
        return f"[{meta}]"
    if action.nargs in ("*", "+"):
        return f"{meta} ..."
    return str(meta)


def default_of(action: argparse.Action) -> str:
    d = action.default
    if d in (None, argparse.SUPPRESS, False) or action.nargs == 0 or d == []:
        return ""
    return code(d)


def anchor(path: list[str]) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-") for p in path)


def document(
    path: list[str],
    parser: argparse.ArgumentParser,
    summary: str,
    lines: list[str],
    toc: list[tuple[int, list[str], str]],
) -> None:
    depth = len(path)
    heading = "#" * min(depth + 1, 6)
    title = " ".join(path)
    lines.append(f"{heading} `{title}` {{#{anchor(path)}}}\n")
    toc.append((depth, path, summary))
    if parser.description:
        lines.append(cell(parser.description).replace("\\|", "|") + "\n")
    elif summary:
        lines.append(cell(summary) + "\n")
    usage = parser.format_usage().strip()
    usage = re.sub(r"^usage:\s*", "", usage)
    lines.append("```text\n" + usage + "\n```\n")
    for group in parser._action_groups:
        rows = []
        for action in group._group_actions:
            if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)):
                continue
            if action.help == argparse.SUPPRESS:
                continue
            rows.append(f"| {code(flags_of(action))} | {default_of(action)} | {cell(expand(parser, action))} |")
        if not rows:
            continue
        lines.append(f"**{cell(group.title or 'arguments')}**\n")
        lines.append("| argument | default | what it does |")
        lines.append("|---|---|---|")
        lines.extend(rows)
        lines.append("")
    subs = subcommands(parser)
    if subs:
        lines.append("| subcommand | what it does |")
        lines.append("|---|---|")
        for name, text, _ in subs:
            lines.append(f"| [`{' '.join(path + [name])}`](#{anchor(path + [name])}) | {cell(text)} |")
        lines.append("")
    for name, text, sub in subs:
        document(path + [name], sub, text, lines, toc)


def main() -> None:
    from veracity.cli import build_parser

    parser = build_parser()
    prog = parser.prog or "veracity"
    body: list[str] = []
    toc: list[tuple[int, list[str], str]] = []
    document([prog], parser, parser.description or "", body, toc)
    head = [
        "# Command-line reference\n",
        (
            "Generated at build time from the argparse parser (`veracity.cli.build_parser()`): every command, "
            "its usage and its arguments, with the help text the command itself prints for `--help`. What the "
            "commands are for is in the [command-line guide](../guide/cli.md).\n"
        ),
        "| command | what it does |",
        "|---|---|",
    ]
    for depth, path, summary in toc[1:]:
        head.append(f"| [`{' '.join(path)}`](#{anchor(path)}) | {cell(summary)} |")
    head.append("")
    with mkdocs_gen_files.open(OUT, "w") as fh:
        fh.write("\n".join(head + body) + "\n")


main()
