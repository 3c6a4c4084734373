"""The `veracity index` command: build, search and describe retrieval indexes.

`register(subparsers)` adds the command to the main argparse CLI. Each handler takes the
parsed `args` and returns an exit code; a `UserError` propagates to the main CLI, which
prints it as one line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from veracity.cli.options import non_negative_int, positive_int
from veracity.errors import UserError
from veracity.reading import human_size
from veracity.retrieval.documents import Passage
from veracity.retrieval.index import MODES, Index
from veracity.retrieval.sharded import open_index
from veracity.retrieval.sharded_build import DEFAULT_MAX_MEMORY, build_sharded, parse_size
from veracity.retrieval.wikidump import is_dump

SNIPPET_CHARS = 200


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `index build|search|info` to the main CLI's subparsers."""
    parser = subparsers.add_parser(
        "index",
        help="build, search and inspect retrieval indexes",
        description="Build, search and inspect retrieval indexes.",
    )
    commands = parser.add_subparsers(dest="index_command", metavar="{build,search,info}", required=True)

    build = commands.add_parser(
        "build",
        help="index a corpus (a Wikipedia dump, JSONL, JSON, a file, or a folder of txt/md/html/pdf files)",
        description="Index a corpus. A Wikipedia dump (*-pages-articles*.xml.bz2 or .xml) is "
        "streamed and built in shards with bounded memory (any corpus is, with --max-memory "
        "or --shard-passages); a sharded build that is killed resumes after its last "
        "complete shard when the same command is run again.",
    )
    build.add_argument(
        "path",
        help="the corpus: a Wikipedia pages-articles dump (.xml.bz2, .xml), a .jsonl/.json "
        "file, a text/HTML/PDF file, or a folder",
    )
    where = build.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", metavar="DIR", help="folder to write the index to")
    where.add_argument(
        "--to",
        metavar="URL",
        help="a PostgreSQL database to write the index to, the index named by "
        "the URL's fragment: postgresql://USER@HOST/DB#NAME (with pgvector; a killed build resumes "
        "when the same command is run again)",
    )
    build.add_argument(
        "--replace", action="store_true", help="with --to: drop an index of that name in the database first"
    )
    build.add_argument(
        "--batch-passages",
        type=positive_int,
        default=1000,
        metavar="N",
        help="with --to: passages written per transaction (default: 1000)",
    )
    build.add_argument(
        "--dense",
        action="store_true",
        help="also compute MiniLM embeddings (enables dense and hybrid search; slow on CPU)",
    )
    build.add_argument(
        "--model", metavar="DIR", help="a local sentence-transformers model folder to use instead of MiniLM"
    )
    build.add_argument(
        "--max-words", type=positive_int, default=120, metavar="N", help="maximum words per passage (default: 120)"
    )
    build.add_argument(
        "--overlap",
        type=non_negative_int,
        default=20,
        metavar="N",
        help="words shared by consecutive passages (default: 20)",
    )
    build.add_argument(
        "--max-memory",
        type=_memory_size,
        metavar="SIZE",
        help="build in shards so that the build's memory stays under SIZE, e.g. 2GB (default for a "
        f"Wikipedia dump: {DEFAULT_MAX_MEMORY // 10**9}GB; other corpora are built whole "
        "without it)",
    )
    build.add_argument(
        "--shard-passages",
        type=positive_int,
        metavar="N",
        help="build in shards of N passages each (instead of sizing them from --max-memory)",
    )
    build.add_argument(
        "--language",
        metavar="LANG",
        help="a Wikipedia dump's language for its article URLs, e.g. en (default: from the dump's "
        "dbname or file name, enwiki-...)",
    )
    build.set_defaults(func=_build)

    search = commands.add_parser("search", help="search an index")
    search.add_argument("dir", help="the index folder, or postgresql://.../DB#NAME")
    search.add_argument("query", help="what to search for")
    search.add_argument("-k", type=positive_int, default=5, metavar="N", help="number of results (default: 5)")
    search.add_argument(
        "--mode", choices=MODES, help="retrieval mode (default: hybrid when the index has dense embeddings, else bm25)"
    )
    search.add_argument("--model", metavar="DIR", help="embedding model folder (default: the one used to build)")
    search.add_argument("--json", action="store_true", help="print the results as JSON")
    search.set_defaults(func=_search)

    info = commands.add_parser("info", help="describe an index")
    info.add_argument("dir", help="the index folder, or postgresql://.../DB#NAME")
    info.add_argument("--json", action="store_true", help="print as JSON")
    info.set_defaults(func=_info)


def _build(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    if args.to:
        return _build_pg(args, start)
    if args.replace:
        raise UserError("--replace is for --to (an index in PostgreSQL): a folder is replaced by a build into it")
    if is_dump(args.path) or args.max_memory or args.shard_passages:
        sharded = build_sharded(
            args.path,
            args.out,
            max_memory=args.max_memory,
            shard_passages=args.shard_passages,
            dense=args.dense,
            max_words=args.max_words,
            overlap_words=args.overlap,
            model=args.model,
            language=args.language,
            progress=sys.stderr.isatty(),
        )
        kind = "BM25 + dense" if sharded.has_dense else "BM25"
        print(
            f"Indexed {sharded.manifest['documents']} documents as {len(sharded)} passages in "
            f"{len(sharded.manifest['shards'])} shards ({kind}) in {time.perf_counter() - start:.1f} s "
            f"-> {sharded.path}"
        )
        return 0
    if args.language:
        raise UserError("--language is for Wikipedia dumps (.xml, .xml.bz2)")
    index = Index.build(
        args.path,
        args.out,
        dense=args.dense,
        max_words=args.max_words,
        overlap_words=args.overlap,
        model=args.model,
        progress=sys.stderr.isatty(),
    )
    info = index.info()
    kind = "BM25 + dense" if index.has_dense else "BM25"
    print(
        f"Indexed {info['documents']} documents as {info['passages']} passages ({kind}) "
        f"in {time.perf_counter() - start:.1f} s -> {index.path}"
    )
    return 0


def _build_pg(args: argparse.Namespace, start: float) -> int:
    from veracity.retrieval.pg_build import build_pg

    if is_dump(args.path) or args.max_memory or args.shard_passages or args.language:
        raise UserError(
            "--to builds from a corpus that `load_documents` reads (JSONL, JSON, files, a folder); "
            "--max-memory, --shard-passages and --language (Wikipedia dumps) are for --out"
        )
    index = build_pg(
        args.path,
        args.to,
        dense=args.dense,
        max_words=args.max_words,
        overlap_words=args.overlap,
        model=args.model,
        batch_passages=args.batch_passages,
        replace=args.replace,
        progress=sys.stderr.isatty(),
    )
    kind = "BM25 + dense" if index.has_dense else "BM25"
    print(
        f"Indexed {index.manifest['documents']} documents as {len(index)} passages ({kind}) "
        f"in {time.perf_counter() - start:.1f} s -> {index.path}"
    )
    index.close()
    return 0


def _search(args: argparse.Namespace) -> int:
    index = open_index(args.dir, model=args.model)
    hits = index.search_passages(args.query, k=args.k, mode=args.mode)
    if args.json:
        print(
            json.dumps(
                [_hit_dict(rank, p, s) for rank, (p, s) in enumerate(hits, start=1)], ensure_ascii=False, indent=2
            )
        )
        return 0
    if not hits:
        print("No matching passages.")
    for rank, (passage, score) in enumerate(hits, start=1):
        print(f"{rank:>2}. {score:8.4f}  {passage.title or passage.doc_id}  [{passage.id}]")
        print(f"    {_snippet(passage.text)}")
    return 0


def _info(args: argparse.Namespace) -> int:
    info = open_index(args.dir).info()
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
        return 0
    shards = info.pop("shard_list", None)
    width = max(map(len, info))
    for key, value in info.items():
        print(f"{key:<{width}}  {value if value is not None else '-'}")
    if shards:
        print(f"\n{'shard':<8} {'documents':>10} {'passages':>10} {'size':>10}")
        for shard in shards:
            print(
                f"{shard['name']:<8} {shard['documents']:>10} {shard['passages']:>10} "
                f"{human_size(shard['size_bytes'] or 0):>10}"
            )
    return 0


def _memory_size(value: str) -> int:
    """argparse type: a memory size (2GB, 512MB)."""
    try:
        return parse_size(value)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _hit_dict(rank: int, passage: Passage, score: float) -> dict[str, Any]:
    fields = passage.to_dict()
    return {"rank": rank, "score": score, "passage_id": fields.pop("id"), **fields}


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + " …"
