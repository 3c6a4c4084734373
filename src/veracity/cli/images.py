"""The `veracity images` command: build and search a local image collection.

    veracity images build FOLDER --out DIR                  hash and caption the images under FOLDER
    veracity images search DIR --query TEXT | --image PATH  caption search, or reverse image search

`register(subparsers)` adds the command to the main argparse CLI; the handlers return an
exit code and let a `UserError` propagate to the main CLI, which prints it as one line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..image_files import load_image
from ..images.collection import MAX_DISTANCE, ImageCollection, ImageMatch
from .options import non_negative_int, positive_int  # the same checks as `veracity index`

SHOWN_WARNINGS = 5


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `images build|search` to the main CLI's subparsers."""
    parser = subparsers.add_parser(
        "images",
        help="build and search a local image collection",
        description="A local image collection: offline image search over captions "
        "and reverse image search by perceptual hash.",
    )
    commands = parser.add_subparsers(dest="images_command", metavar="{build,search}", required=True)

    build = commands.add_parser(
        "build",
        help="hash and caption a folder of images",
        description="Index the images under FOLDER (jpg, png, gif, webp, bmp; recursive) "
        "with their captions from NAME.txt / NAME.json sidecars or a captions.jsonl "
        'manifest ({"image", "caption", "page_url", "page_title", "date"}).',
    )
    build.add_argument("folder", help="the folder of images")
    build.add_argument("--out", required=True, metavar="DIR", help="folder to write the collection to")
    build.set_defaults(func=cmd_images_build)

    search = commands.add_parser("search", help="search a collection by caption or by image")
    search.add_argument("dir", help="the collection folder")
    what = search.add_mutually_exclusive_group(required=True)
    what.add_argument("--query", metavar="TEXT", help="search the captions")
    what.add_argument("--image", metavar="PATH", help="find this image (resized, re-encoded or recoloured copies too)")
    search.add_argument("-k", type=positive_int, default=3, metavar="N", help="number of results (default: 3)")
    search.add_argument(
        "--max-distance",
        type=non_negative_int,
        default=MAX_DISTANCE,
        metavar="BITS",
        help=f"reverse search: largest pHash distance that counts as a match (default: {MAX_DISTANCE})",
    )
    search.add_argument("--json", action="store_true", help="print the results as JSON")
    search.set_defaults(func=cmd_images_search)


def cmd_images_build(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    collection = ImageCollection.build(args.folder, args.out)
    m = collection.manifest
    print(
        f"Indexed {m['images']} images ({m['captioned']} with captions) in {time.perf_counter() - start:.1f} s "
        f"-> {collection.path}"
    )
    if collection.warnings:
        print(f"{len(collection.warnings)} warnings ({m['skipped']} images skipped):", file=sys.stderr)
        for w in collection.warnings[:SHOWN_WARNINGS]:
            print(f"  {w}", file=sys.stderr)
        if len(collection.warnings) > SHOWN_WARNINGS:
            print(f"  ... and {len(collection.warnings) - SHOWN_WARNINGS} more", file=sys.stderr)
    return 0


def cmd_images_search(args: argparse.Namespace) -> int:
    collection = ImageCollection.load(args.dir)
    if args.query is not None:
        matches = collection.search_captions(args.query, k=args.k)
    else:
        matches = collection.reverse(load_image(args.image), k=args.k, max_distance=args.max_distance)
    if args.json:
        print(
            json.dumps([_match_dict(rank, m) for rank, m in enumerate(matches, start=1)], ensure_ascii=False, indent=2)
        )
        return 0
    if not matches:
        print("No matching images.")
    for rank, m in enumerate(matches, start=1):
        how = ("exact copy" if m.exact else f"distance {m.distance}") if m.distance is not None else f"{m.score:.4f}"
        print(f"{rank:>2}. {m.path}  ({how})")
        for label, value in (("caption", m.caption), ("page", m.page_title), ("url", m.page_url), ("date", m.date)):
            if value:
                print(f"    {label}: {value}")
    return 0


def _match_dict(rank: int, m: ImageMatch) -> dict:
    return {
        "rank": rank,
        "path": m.path,
        "file": str(m.file),
        "caption": m.caption,
        "page_url": m.page_url,
        "page_title": m.page_title,
        "date": m.date,
        "distance": m.distance,
        "exact": m.exact,
        "score": m.score,
    }
