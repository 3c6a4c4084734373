"""Wikipedia dumps into sharded indexes: a real pages-articles XML dump (bz2) written here, read as a user's download
is read, built shard by shard by the real `veracity index build`, killed and resumed, and searched as one index."""

from __future__ import annotations

import bz2
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from conftest import veracity_cmd

from veracity.errors import IndexError_, UserError
from veracity.quotes import sha256_text
from veracity.retrieval.index import Index
from veracity.retrieval.sharded import ShardedIndex, open_index
from veracity.retrieval.sharded_build import build_sharded, parse_size
from veracity.retrieval.wikidump import read_dump

pytest.importorskip("mwxml")
pytest.importorskip("mwparserfromhell")

SITEINFO = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">
  <siteinfo>
    <sitename>Wikipedia</sitename>
    <dbname>enwiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>MediaWiki 1.42.0-wmf.1</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="-1" case="first-letter">Special</namespace>
      <namespace key="0" case="first-letter" />
      <namespace key="1" case="first-letter">Talk</namespace>
      <namespace key="2" case="first-letter">User</namespace>
      <namespace key="6" case="first-letter">File</namespace>
      <namespace key="10" case="first-letter">Template</namespace>
      <namespace key="14" case="first-letter">Category</namespace>
    </namespaces>
  </siteinfo>
"""

ADA = """{{Short description|English mathematician (1815–1852)}}
{{Infobox person
| name = Ada Lovelace
| birth_date = {{birth date|1815|12|10|df=y}}
| occupation = Mathematician
}}
'''Augusta Ada King, Countess of Lovelace''' ({{née}} '''Byron'''; 10 December 1815 – 27 November 1852) was an \
English [[mathematician]] and [[Writer|writer]].<ref>{{cite web |url=https://example.org/ada |title=Ada \
|publisher=Refpublisher}}</ref> She is chiefly known for her work on [[Charles Babbage]]'s proposed mechanical \
general-purpose computer, the [[Analytical Engine]].<ref name="menabrea">Menabrea's memoir, refonlyword.</ref>
__NOTOC__
[[File:Ada Lovelace portrait.jpg|thumb|upright|Ada Lovelace in 1840, captiononlyword]]

== Early life ==
Her father was the poet [[Lord Byron]] &ndash; he left England when she was a month old.<ref name="menabrea" />

{| class="wikitable"
! Year !! Event
|-
| 1833 || tableonlyword meeting
|}

=== Education ===
She studied mathematics with [[Augustus De Morgan]]; see [https://example.org/notes her notes].<!-- commentonlyword -->

== References ==
{{Reflist}}
* referencesectiononlyword, a book.

== External links ==
* [https://example.org/external externalonlyword]

[[Category:1815 births]]
[[Category:Categoryonlyword mathematicians]]
"""

TITLES = {11: "Ada Lovelace", 14: "Saint-Étienne (city)", 15: "Mount Everest"}
SAINT_ETIENNE = "'''Saint-Étienne''' is a city in [[France]] on the [[Furan (river)|Furan]]. It is known for its arms \
manufacture and its football club, the ''Verts''."
EVEREST = "'''Mount Everest''' is [[Earth]]'s highest mountain above sea level, in the [[Himalayas]]. Its summit is \
8,849 metres high.{{efn|As surveyed in 2020.}}"


def page(page_id: int, title: str, text: str, ns: int = 0, redirect: str | None = None) -> str:
    r = f'    <redirect title="{escape(redirect)}" />\n' if redirect else ""
    return (
        f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>{page_id}</id>\n{r}"
        f"    <revision>\n      <id>{page_id + 1000}</id>\n      <timestamp>2024-01-01T00:00:00Z</timestamp>\n"
        f"      <contributor><username>Editor</username><id>7</id></contributor>\n"
        f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
        f'      <text bytes="{len(text.encode())}" xml:space="preserve">{escape(text)}</text>\n'
        f"      <sha1>abc</sha1>\n    </revision>\n  </page>\n"
    )


def filler(n: int) -> str:
    """An article of its own words (zqword{n}...), five sentences of ~30 words."""
    sentences = [
        f"Topic {n} has the marker zqword{n}x{s} and " + " ".join(f"filler{s}w{w}" for w in range(25)) + "."
        for s in range(5)
    ]
    return f"'''Topic {n}''' is a [[subject]].{{{{cn}}}} " + " ".join(sentences)


def dump_xml(fillers: int = 12) -> str:
    pages = [
        page(11, "Ada Lovelace", ADA),
        page(12, "Talk:Ada Lovelace", "== Sources ==\nIs this right? talkonlyword ~~~~", ns=1),
        page(13, "Lovelace", "#REDIRECT [[Ada Lovelace]] redirectonlyword", redirect="Ada Lovelace"),
        page(14, "Saint-Étienne (city)", SAINT_ETIENNE),
        page(16, "User:Editor", "userpageonlyword about me", ns=2),
        page(17, "Category:Mathematicians", "categorypageonlyword", ns=14),
        page(18, "Template:Cn", "templatepageonlyword", ns=10),
    ]
    pages += [page(100 + n, f"Topic {n}", filler(n)) for n in range(fillers)]
    pages.append(page(15, "Mount Everest", EVEREST))
    return SITEINFO + "".join(pages) + "</mediawiki>\n"


def write_dump(folder: Path, fillers: int = 12, name: str = "enwiki-20240101-pages-articles.xml.bz2") -> Path:
    path = folder / name
    with bz2.open(path, "wt", encoding="utf-8") as f:
        f.write(dump_xml(fillers))
    return path


def veracity(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(veracity_cmd() + list(args), capture_output=True, text=True, env=env, timeout=timeout)


def all_passages(index_dir: Path) -> list[dict]:
    rows = []
    for shard in sorted((index_dir / "shards").iterdir()):
        with (shard / "passages.jsonl").open(encoding="utf-8") as f:
            rows += [json.loads(line) for line in f]
    return rows


# --------------------------------------------------------------------------- reading


def test_only_articles_are_read_as_plain_text_with_their_urls(tmp_path):
    dump = write_dump(tmp_path, fillers=2)
    pages = list(read_dump(dump))
    assert [position for position, _, _ in pages] == list(range(1, 11))  # every page counted, in order
    docs = {d.id: d for _, _, d in pages if d is not None}
    assert set(docs) == {"11", "14", "15", "100", "101"}  # talk, redirect, user, category, template pages skipped
    ada = docs["11"]
    assert ada.title == "Ada Lovelace"
    assert ada.url == "https://en.wikipedia.org/wiki/Ada_Lovelace"
    assert docs["14"].url == "https://en.wikipedia.org/wiki/Saint-%C3%89tienne_(city)"
    assert ada.text.startswith(
        "Augusta Ada King, Countess of Lovelace (Byron; 10 December 1815 – 27 November 1852) "
        "was an English mathematician and writer. She is chiefly known"
    )
    assert "the poet Lord Byron – he left England" in ada.text  # link text kept, the entity decoded
    assert "see her notes." in ada.text  # an external link's title
    assert "\n\nEarly life\n\n" in ada.text and "\n\nEducation\n\n" in ada.text  # headings on lines of their own
    for gone in (
        "onlyword",
        "{{",
        "}}",
        "[[",
        "<ref",
        "cite web",
        "Refpublisher",
        "Infobox",
        "Category",
        "thumb",
        "NOTOC",
        "References",
        "External links",
        "wikitable",
        "'''",
    ):
        assert gone not in ada.text, gone
    assert (
        docs["15"].text == "Mount Everest is Earth's highest mountain above sea level, in the Himalayas. Its "
        "summit is 8,849 metres high."
    )


def test_language_comes_from_the_flag_else_the_dbname_else_the_file_name(tmp_path):
    plain = tmp_path / "frwiki-20240101-pages-articles.xml"
    plain.write_text(dump_xml(0).replace("<dbname>enwiki</dbname>", "<dbname>zh_yuewiki</dbname>"), encoding="utf-8")
    assert {d.url for _, _, d in read_dump(plain) if d} >= {"https://zh-yue.wikipedia.org/wiki/Ada_Lovelace"}
    assert {d.url for _, _, d in read_dump(plain, language="de") if d} >= {"https://de.wikipedia.org/wiki/Ada_Lovelace"}
    plain.write_text(dump_xml(0).replace("<dbname>enwiki</dbname>", ""), encoding="utf-8")
    assert {d.url for _, _, d in read_dump(plain) if d} >= {"https://fr.wikipedia.org/wiki/Ada_Lovelace"}
    unnamed = tmp_path / "dump.xml"
    unnamed.write_text(dump_xml(0).replace("<dbname>enwiki</dbname>", ""), encoding="utf-8")
    with pytest.raises(UserError, match="--language"):
        list(read_dump(unnamed))


# --------------------------------------------------------------------------- building and searching


def test_a_dump_builds_into_shards_of_exact_slices_that_search_as_one_index(tmp_path, cli_env):
    dump = write_dump(tmp_path)
    out = tmp_path / "index"
    done = veracity("index", "build", str(dump), "--out", str(out), "--shard-passages", "3", env=cli_env)
    assert done.returncode == 0, done.stderr

    docs = {d.id: d for _, _, d in read_dump(dump) if d is not None}
    rows = all_passages(out)
    assert {r["doc_id"] for r in rows} == set(docs)
    for r in rows:
        doc = docs[r["doc_id"]]
        assert doc.text[r["start"] : r["end"]] == r["text"]
        assert r["doc_sha256"] == sha256_text(doc.text)
        assert r["url"] == doc.url and r["title"] == doc.title
    index = open_index(out)
    assert isinstance(index, ShardedIndex)
    shards = index.manifest["shards"]
    assert len(shards) >= 4 and len(index) == len(rows) == sum(s["passages"] for s in shards)
    assert index.manifest["documents"] == len(docs) and index.manifest["pages"] == 20
    assert f"Indexed {len(docs)} documents as {len(rows)} passages in {len(shards)} shards (BM25)" in done.stdout

    # the last article is in the last shard, the first in the first: each is found, with its URL
    everest = index.search("highest mountain above sea level", k=3)
    assert everest[0].source == "Mount Everest" and everest[0].url == "https://en.wikipedia.org/wiki/Mount_Everest"
    assert everest[0].found_by["index"] == str(out.resolve())
    assert docs["15"].text[everest[0].quote_start : everest[0].quote_end] == everest[0].text
    assert index.search("Analytical Engine Babbage", k=1)[0].source == "Ada Lovelace"
    assert index.search_passages("zqword7x3", k=1)[0][0].title == "Topic 7"
    for skipped in (
        "talkonlyword",
        "redirectonlyword",
        "userpageonlyword",
        "categorypageonlyword",
        "refonlyword",
        "tableonlyword",
        "captiononlyword",
        "externalonlyword",
    ):
        assert index.search(skipped, k=5) == [], skipped
    # merged by score across shards: the same order as one index over everything would give for a rare word
    scores = [s for _, s in index.search_passages("filler2w3 zqword5x1", k=10)]
    assert scores == sorted(scores, reverse=True) and len(scores) == 10

    text, digest = index.document("11")
    assert digest == sha256_text(docs["11"].text)
    assert index.document("12") is None  # the talk page is not in it

    info = veracity("index", "info", str(out), env=cli_env)
    assert info.returncode == 0, info.stderr
    for key, value in (("shards", len(shards)), ("passages", len(rows)), ("documents", len(docs)), ("language", "en")):
        assert re.search(rf"^{key} +{value}$", info.stdout, re.MULTILINE), (key, info.stdout)
    for s in shards:  # the shard table: name, documents, passages, size
        assert re.search(rf"^{s['name']} +{s['documents']} +{s['passages']} +[\d.]+ kB$", info.stdout, re.MULTILINE)
    found = veracity("index", "search", str(out), "Saint-Étienne football club", "--json", env=cli_env)
    assert json.loads(found.stdout)[0]["url"] == "https://en.wikipedia.org/wiki/Saint-%C3%89tienne_(city)"


def test_a_killed_build_resumes_after_its_last_complete_shard(tmp_path, cli_env):
    dump = write_dump(tmp_path, fillers=400)
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    args = ["--shard-passages", "2"]
    assert veracity("index", "build", str(dump), "--out", str(whole), *args, env=cli_env).returncode == 0

    proc = subprocess.Popen(
        veracity_cmd() + ["index", "build", str(dump), "--out", str(resumed), *args],
        env=cli_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    progress = resumed / "progress.json"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if len(json.loads(progress.read_text())["shards"]) >= 2:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.005)
    assert proc.poll() is None, "the build finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (resumed / "manifest.json").exists()
    with pytest.raises(IndexError_, match="not finished: run the same `veracity index build` command again"):
        open_index(resumed)
    kept = json.loads(progress.read_text())["shards"]
    first = resumed / "shards" / kept[0]["name"]
    before = {p.name: p.stat().st_ino for p in first.iterdir()}
    stamp = (first / "manifest.json").read_text()

    again = veracity("index", "build", str(dump), "--out", str(resumed), *args, env=cli_env)
    assert again.returncode == 0, again.stderr
    assert all_passages(resumed) == all_passages(whole)  # the same passages, in the same shards' order
    assert [s["passages"] for s in open_index(resumed).manifest["shards"]] == [
        s["passages"] for s in open_index(whole).manifest["shards"]
    ]
    assert {p.name: p.stat().st_ino for p in first.iterdir()} == before  # the completed shard was not redone
    assert (first / "manifest.json").read_text() == stamp
    assert not [p for p in (resumed / "shards").iterdir() if p.name.startswith(".")]  # no half-written shard left

    other = veracity("index", "build", str(dump), "--out", str(resumed), "--shard-passages", "5", env=cli_env)
    assert other.returncode == 2 and "other settings (shard_passages=2)" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1


def test_a_resumed_build_refuses_another_dump(tmp_path):
    out = tmp_path / "index"
    build_sharded(write_dump(tmp_path, fillers=3), out, shard_passages=4)
    (tmp_path / "b").mkdir()
    with pytest.raises(UserError, match="holds the build of another corpus"):
        build_sharded(write_dump(tmp_path / "b", fillers=5), out, shard_passages=4)


def test_any_corpus_builds_sharded_with_its_own_urls_and_opens_as_either_kind(tmp_path):
    corpus = tmp_path / "enterprise.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(
                {
                    "id": str(n),
                    "title": f"Page {n}",
                    "url": f"https://example.org/{n}",
                    "text": f"Page {n} holds the word uniq{n} and little more.",
                }
            )
            + "\n"
            for n in range(7)
        ),
        encoding="utf-8",
    )
    sharded = build_sharded(corpus, tmp_path / "sharded", shard_passages=2)
    assert len(sharded.manifest["shards"]) == 4
    hit = open_index(tmp_path / "sharded").search("uniq6", k=1)[0]
    assert (hit.source, hit.url) == ("Page 6", "https://example.org/6")
    Index.build(corpus, tmp_path / "plain")
    plain = open_index(tmp_path / "plain")
    assert isinstance(plain, Index) and plain.search("uniq6", k=1)[0].url == "https://example.org/6"
    with pytest.raises(UserError, match="--language is for Wikipedia dumps"):
        build_sharded(corpus, tmp_path / "other", shard_passages=2, language="en")


def test_dense_and_hybrid_search_merge_the_shards(tmp_path):
    """Cosines compare across shards; hybrid fuses the merged BM25 and dense rankings (the paraphrase that BM25
    misses is in another shard than the passage BM25 prefers)."""
    docs = [
        ("cheetah", "Cheetah", "The cheetah reaches speeds of 110 km/h, making it the fastest mammal on land."),
        ("train", "Rail travel", "The quickest way to cross the land between the two cities is the night train."),
        ("lion", "Lion", "Lions live in prides on the African savanna and hunt zebras and antelopes."),
        ("falcon", "Peregrine falcon", "The peregrine falcon dives at more than 300 km/h when hunting birds."),
        ("bread", "Bread", "Bread is baked from flour, water and yeast in an oven."),
    ]
    corpus = tmp_path / "animals.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in docs))
    build_sharded(corpus, tmp_path / "index", shard_passages=1, dense=True)
    index = open_index(tmp_path / "index")
    assert index.has_dense and index.default_mode == "hybrid" and len(index.manifest["shards"]) == 5
    query = "Which big cat is the quickest animal on land?"
    assert index.search(query, k=3, mode="bm25")[0].doc_id == "train"
    dense = index.search_passages(query, k=4, mode="dense")
    assert dense[0][0].doc_id == "cheetah" and [s for _, s in dense] == sorted((s for _, s in dense), reverse=True)
    hybrid = index.retriever().search(query, k=3)
    assert hybrid[0].doc_id == "cheetah"
    whole = Index.build(corpus, tmp_path / "whole", dense=True)  # one index: the same cosines, the same fusion
    assert [e.doc_id for e in whole.search(query, k=3, mode="dense")] == [p.doc_id for p, _ in dense[:3]]
    assert [e.doc_id for e in whole.search(query, k=3)] == [e.doc_id for e in hybrid]


def test_recheck_and_shipping_open_a_sharded_index(tmp_path):
    from veracity.cluster.shipping import ShippedIndex, folder_digest, receive
    from veracity.evidence.sources import Sources

    dump = write_dump(tmp_path, fillers=4)
    out = tmp_path / "index"
    build_sharded(dump, out, shard_passages=3)
    docs = {d.id: d for _, _, d in read_dump(dump) if d is not None}
    read = Sources().document(str(out), "15")
    assert read.text.strip() == docs["15"].text and read.sha256 == sha256_text(docs["15"].text)
    assert Sources().document(str(out), "12").status == "gone"
    retriever = receive(ShippedIndex(folder_digest(out), str(out), "bm25", {}))
    assert retriever.search("Himalayas summit", k=1)[0].source == "Mount Everest"


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "suffix, content, message",
    [
        (".xml", b"just some text, not XML\n", "is not a MediaWiki XML dump"),
        (".xml", b"<html><body>a web page</body></html>\n", "is not a MediaWiki XML dump (its root element"),
        (".xml.bz2", bz2.compress(dump_xml(30).encode())[:3000], "ends early"),  # a download cut short
        (".xml", dump_xml(30).encode()[:5000], "ends early"),
        (".xml.bz2", b"BZh9 not really bz2 data at all", "is not a MediaWiki XML dump"),
    ],
)
def test_bad_dumps_give_one_line_errors(tmp_path, cli_env, suffix, content, message):
    path = tmp_path / f"enwiki-20240101-pages-articles{suffix}"
    path.write_bytes(content)
    done = veracity("index", "build", str(path), "--out", str(tmp_path / "index"), "--shard-passages", "2", env=cli_env)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_memory_sizes_are_read_as_people_write_them(tmp_path, cli_env):
    assert parse_size("2GB") == 2_000_000_000 and parse_size("512MiB") == 512 * 2**20
    assert parse_size("1.5g") == 1_500_000_000 and parse_size("300000000") == 300_000_000
    dump = write_dump(tmp_path, fillers=1)
    for value, message in (("lots", "not a memory size"), ("100MB", "too small")):
        done = veracity("index", "build", str(dump), "--out", str(tmp_path / "i"), "--max-memory", value, env=cli_env)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_a_page_nested_too_deeply_or_too_long_to_be_an_article_is_skipped_not_a_traceback(tmp_path, monkeypatch):
    """Found by fuzzing: a page of 1,000 nested templates ended a build with a RecursionError traceback, and a small
    dump expanding into one huge page with a MemoryError; each is now skipped with a warning, the rest read."""
    import veracity.retrieval.wikidump as wd

    nested = "{{" * 1000 + "x" + "}}" * 1000
    monkeypatch.setattr(wd, "MAX_PAGE_CHARS", 5000)
    path = tmp_path / "enwiki-20240101-pages-articles.xml.bz2"
    with bz2.open(path, "wt", encoding="utf-8") as f:
        f.write(SITEINFO + page(11, "Ada Lovelace", ADA) + page(21, "Nested", nested) + page(22, "Huge", "word " * 2000)
                + page(15, "Mount Everest", EVEREST) + "</mediawiki>\n")  # fmt: skip
    docs = {d.title for _, _, d in read_dump(path) if d is not None}
    assert docs == {"Ada Lovelace", "Mount Everest"}
