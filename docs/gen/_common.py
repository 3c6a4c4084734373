"""Helpers shared by the reference generators (run by mkdocs-gen-files at build time; nothing here is checked in
as output)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def importable() -> None:
    """Make `import veracity` work when the docs are built outside the project's virtualenv (the installed package
    wins when there is one)."""
    try:
        import veracity  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(SRC))


def cell(text: object) -> str:
    """Text for one Markdown table cell: one line, pipes escaped, angle brackets as entities (a help text's
    `<image:1>` must not read as HTML)."""
    s = " ".join(str(text).split())
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def code(text: object) -> str:
    """Inline code for a table cell (backticks inside are doubled around; a pipe inside a code span does not split
    a Python-Markdown table cell, so it stays as it is)."""
    s = " ".join(str(text).split())
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"
