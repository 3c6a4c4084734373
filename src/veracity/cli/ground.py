"""The `veracity ground` command: which sentences of an answer the given documents support (veracity.grounding).

    veracity ground ANSWER.txt --document DOC.md --document https://example.org/page [--json]
    echo "The plant opened in 1990." | veracity ground - --document report.pdf

The answer is a file, a URL or "-" (standard input); `--text` takes it as it is written. Each document is a file
(.txt .md .html .pdf), a URL or "-". No model is called: the trained verifier reads every part of every document.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ground",
        help="which sentences of an answer the given documents support (no model call)",
        description="Check each sentence of an answer against documents it was given: supported, not supported "
        "or contradicted, the calibrated probability that the documents support it, and the part of a "
        "document that decided it, at its offsets. Every part of every document is read.",
    )
    p.add_argument("answer", help='the answer: a file, a URL, or "-" (standard input); with --text, the text itself')
    p.add_argument("--text", action="store_true", help="the answer argument is the text itself")
    p.add_argument(
        "--document",
        "-d",
        action="append",
        required=True,
        metavar="FILE|URL",
        help="a document the answer should rest on (repeat for several)",
    )
    p.add_argument("--verifier", metavar="DIR", help="a verifier folder (default: verifier.model, the shipped one)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--config", help="a configuration file (TOML)")
    p.set_defaults(func=cmd_ground)


def cmd_ground(args: argparse.Namespace) -> int:
    from ..claims.sources import read_source
    from ..config import load_config
    from ..grounding import Document, ground
    from .options import read_documents

    config = load_config(args.config)
    allow, timeout = config.defame.allow_private_addresses, config.timeout
    if sum(ref == "-" for ref in [*args.document, *([] if args.text else [args.answer])]) > 1:
        raise UserError('standard input ("-") can be read once: give the answer or one document there, not both')
    answer = args.answer if args.text else read_source(args.answer, allow_private=allow, timeout=timeout).text
    docs = [
        Document(f"doc-{n}", source.text, source.title or source.origin)
        for n, source in enumerate(read_documents(args.document, config, "the answer"), 1)
    ]
    result = ground(answer, docs, config=config, verifier=args.verifier)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    names = {d.id: f"{d.id} ({d.title})" if d.title else d.id for d in docs}
    for s in result.sentences:
        print(f"[{s.index}] {s.shown_as} (grounded {s.probability:.2f}): {s.text}")
        if s.quote is not None:
            quote = " ".join(s.quote["text"].split())
            quote = quote if len(quote) <= 240 else quote[:237] + "..."
            what = (
                "contradicted by" if s.label == "contradicted" else "closest part" if s.label != "supported" else "by"
            )
            print(f'    {what} {names[s.quote["document"]]} [{s.quote["start"]}:{s.quote["end"]}]: "{quote}"')
    print(result.summary())
    print(
        f"(uncertain: probability below {result.uncertain_below:.2f}; read by {result.verifier}, "
        f"{result.seconds:.2f} s{'; ' + result.note if result.note else ''})"
    )
    return 0
