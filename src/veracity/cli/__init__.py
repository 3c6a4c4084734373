"""The `veracity` command line: the top layer. `main.py` builds the parser and runs a command; each command's
argparse wiring and handler sits in a module of its own here (check_text, index, leaf, serve, mcp, proxy, recheck,
db, images, selftrain, verifier, doctor), and `options.py` holds the options they share. Nothing below imports this
package."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
