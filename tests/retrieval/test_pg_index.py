"""Evidence indexes in PostgreSQL (retrieval/pg_index.py, pg_build.py): built by `veracity index build --to`, read
wherever an index folder is (open_index, `index search|info`, `check --index`, recheck, Ray shipping), resumed after
a kill, and failing in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import veracity_cmd, write_rules
from test_retrieval import PARAPHRASE_DOCS, PARAPHRASE_QUERY, run_cli, write_jsonl

from veracity.errors import IndexError_, UserError
from veracity.retrieval import Index, open_index, reciprocal_rank_fusion
from veracity.retrieval.pg_index import REGISTRY, PgIndex, is_pg_spec, parse_spec

DOCS = {
    "everest.txt": "Mount Everest is Earth's highest mountain above sea level, located in the Himalayas. "
    "Its summit is 8,849 metres high.",
    "nile.md": "# Nile\n\nThe Nile is a major river in northeastern Africa. It flows into the Mediterranean Sea.",
    "orrin.txt": "The Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in 1871 over a canal.",
    "python.txt": "Python is a programming language created by Guido van Rossum. It's named after a 'comedy' "
    "group, not the snake \\ reptile.",
}


def corpus_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def veracity(*args: str, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(veracity_cmd() + list(args), capture_output=True, text=True, env=env, timeout=timeout)


# ---------------------------------------------------------------- naming (no database)


@pytest.mark.parametrize(
    "spec, url, name",
    [
        ("postgresql://me@db.example/veracity#wiki", "postgresql://me@db.example/veracity", "wiki"),
        ("postgres://me:pw@db.example:5433/veracity/wiki", "postgres://me:pw@db.example:5433/veracity", "wiki"),
        (
            "postgresql://postgres@/veracity?host=/tmp/x&port=5432#news_2",
            "postgresql://postgres@/veracity?host=/tmp/x&port=5432",
            "news_2",
        ),
        (
            "postgresql://postgres@/veracity?host=%2Ftmp%2Fx&index=kb&port=5432",
            "postgresql://postgres@/veracity?host=%2Ftmp%2Fx&port=5432",
            "kb",
        ),
    ],
)
def test_an_index_is_named_by_the_fragment_or_a_path_segment(spec, url, name):
    parsed = parse_spec(spec)
    assert (parsed.url, parsed.name) == (url, name) and is_pg_spec(spec)
    assert "pw" not in parsed.shown() and parsed.shown().endswith(f"#{name}")


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "postgresql://me:secret@db.example/veracity",
            "names no index: add its name, e.g. postgresql://me:***@db.example/veracity#wiki",
        ),
        ("postgresql://db.example/veracity#Bad-Name", "bad index name 'Bad-Name'"),
        ("postgresql://db.example/veracity/a#b", "names two indexes (a, b)"),
        ("postgresql://db.example/a/b/c", "too many path segments"),
    ],
)
def test_a_bad_spec_fails_in_one_line_without_the_password(spec, message):
    with pytest.raises(UserError) as e:
        parse_spec(spec)
    assert message in str(e.value) and "secret" not in str(e.value)


# ---------------------------------------------------------------- building and searching


def test_a_folder_built_into_postgres_is_searched_as_the_local_index_is(tmp_path, pg_url, capsys):
    folder = corpus_folder(tmp_path)
    spec = f"{pg_url}#docs"
    assert run_cli("index", "build", str(folder), "--to", spec, "--batch-passages", "2") == 0
    assert "Indexed 4 documents as 4 passages (BM25)" in capsys.readouterr().out
    index = open_index(spec)
    local = Index.build(folder, tmp_path / "local")
    assert isinstance(index, PgIndex) and len(index) == 4 and index.default_mode == "bm25"
    for query, doc in [
        ("highest mountain in the Himalayas", "everest.txt"),
        ("Which river flows into the Mediterranean?", "nile.md"),
        ("it's the 'comedy' \\ snake", "python.txt"),
    ]:
        found = index.search(query, k=2)
        assert found[0].doc_id == doc == local.search(query, k=1)[0].doc_id
    first = index.search("stone bridge Tallinn", k=1)[0]
    expected = local.search("stone bridge Tallinn", k=1)[0]
    assert (first.text, first.source, first.quote_start, first.quote_end, first.source_sha256) == (
        expected.text,
        expected.source,
        expected.quote_start,
        expected.quote_end,
        expected.source_sha256,
    )
    assert first.found_by["index"] == parse_spec(spec).shown() and first.found_by["retriever"] == "bm25"
    assert index.document("nile.md") == local.document("nile.md") and index.document("nope") is None
    assert index.search("the of and", k=3) == []  # only stopwords: nothing matches
    with pytest.raises(UserError, match="needs dense embeddings"):
        index.retriever("dense")
    assert index.retriever().search("Everest summit", k=1)[0].doc_id == "everest.txt"

    # the CLI reads it as it reads a folder
    assert run_cli("index", "search", spec, "Orrin Bridge", "--json") == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["doc_id"] == "orrin.txt" and hits[0]["rank"] == 1
    assert run_cli("index", "info", spec, "--json") == 0
    info = json.loads(capsys.readouterr().out)
    assert info["passages"] == 4 and info["documents"] == 4 and info["size_bytes"] > 0

    # the same command again: already built, nothing redone; another corpus under that name is refused
    assert run_cli("index", "build", str(folder), "--to", spec, "--batch-passages", "2") == 0
    with pytest.raises(UserError, match="with other settings"):
        run_cli("index", "build", str(folder), "--to", spec, "--max-words", "50")
    assert run_cli("index", "build", str(folder / "nile.md"), "--to", spec, "--replace") == 0
    assert len(open_index(spec)) == 1


def test_dense_and_hybrid_search_match_the_local_index(tmp_path, pg_url):
    corpus = write_jsonl(
        tmp_path / "c.jsonl", [{"id": d.id, "title": d.title, "text": d.text} for d in PARAPHRASE_DOCS]
    )
    spec = f"{pg_url}#para"
    assert run_cli("index", "build", str(corpus), "--to", spec, "--dense") == 0
    index, local = open_index(spec), Index.build(corpus, tmp_path / "local", dense=True)
    assert index.default_mode == "hybrid" and index.manifest["settings"]["dense_dim"] == 384
    dense = index.search_passages(PARAPHRASE_QUERY, k=5, mode="dense")
    assert dense[0][0].doc_id == "cheetah"
    assert [p.doc_id for p, _ in dense] == [p.doc_id for p, _ in local.search_passages(PARAPHRASE_QUERY, 5, "dense")]
    assert dense[0][1] == pytest.approx(local.search_passages(PARAPHRASE_QUERY, 1, "dense")[0][1], abs=1e-4)
    rows = [index.rank_fulltext(PARAPHRASE_QUERY, 100), index.rank_dense(PARAPHRASE_QUERY, 100)]
    fused = reciprocal_rank_fusion([[r for r, _ in ranking] for ranking in rows])[:3]
    hybrid = index.search_passages(PARAPHRASE_QUERY, k=3, mode="hybrid")
    assert [s for _, s in hybrid] == [s for _, s in fused]
    assert {p.doc_id for p, _ in hybrid} == {p.doc_id for p, _ in local.search_passages(PARAPHRASE_QUERY, 3, "hybrid")}


def test_a_killed_build_resumes_where_its_last_batch_ended(tmp_path, pg_url, cli_env, monkeypatch):
    import psycopg

    words = (
        "river mountain city bridge painter composer island museum railway harbour castle forest "
        "valley cathedral novel symphony"
    ).split()
    records = [
        {
            "id": f"d{n}",
            "title": f"{words[n % 16].title()} {n}",
            "text": f"The {words[n % 16]} number {n} stands near the {words[(n * 7) % 16]} of {n % 97}. "
            f"It was described in {1800 + n % 200}.",
        }
        for n in range(6000)
    ]
    corpus = write_jsonl(tmp_path / "big.jsonl", records)
    spec = f"{pg_url}#big"
    cmd = veracity_cmd() + ["index", "build", str(corpus), "--to", spec, "--batch-passages", "25"]
    proc = subprocess.Popen(cmd, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline, done = time.monotonic() + 60, 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                row = conn.execute(f"SELECT progress FROM {REGISTRY} WHERE name = 'big'").fetchone()
                done = row[0]["passages"] if row else 0
            except psycopg.errors.UndefinedTable:
                done = 0
            if done >= 500:
                break
            time.sleep(0.01)
        assert proc.poll() is None, f"the build finished before it could be killed: {proc.stderr.read()!r}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kept = conn.execute(f"SELECT progress FROM {REGISTRY} WHERE name = 'big'").fetchone()[0]
        assert 500 <= kept["passages"] < 6000
        assert conn.execute("SELECT count(*) FROM veracity_index_big.passages").fetchone()[0] == kept["passages"]
    with pytest.raises(IndexError_, match="not finished: run the same `veracity index build` command again"):
        open_index(spec)
    again = subprocess.run(cmd, env=cli_env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    index = open_index(spec)
    assert len(index) == 6000 and index.manifest["documents"] == 6000
    assert index.passages(list(range(6000))).keys() == set(range(6000))  # every row once, none lost or doubled
    assert index.search("castle number 4321", k=1)[0].doc_id == "d4321"

    # full-text search scores the passages of the rarest lexemes first: the same top k as scoring every match
    import veracity.retrieval.pg_index as pg

    for cap in (1, 50, 10_000):
        monkeypatch.setattr(pg, "CANDIDATES", cap)
        for query in ("castle number 4321 near the forest", "river valley described in 1850", "museum 17"):
            terms = index._query(
                "SELECT t.word, s.df FROM unnest(tsvector_to_array(to_tsvector('english', %s))) "
                "AS t(word) JOIN veracity_index_big.terms s ON s.word = t.word",
                (query,),
            )
            for k in (1, 5, 40):
                assert index.rank_fulltext(query, k) == index._score(terms, [w for w, _ in terms], k)


def test_check_reads_a_postgres_index_end_to_end_and_recheck_reads_it_again(tmp_path, pg_url, cli_env):
    from veracity.evidence.sources import Sources

    folder = corpus_folder(tmp_path)
    spec = f"{pg_url}#docs"
    built = veracity("index", "build", str(folder), "--to", spec, env=cli_env)
    assert built.returncode == 0, built.stderr
    found = veracity("index", "search", spec, "Orrin Bridge Tallinn", env=cli_env)
    assert found.returncode == 0 and "orrin.txt" in found.stdout.splitlines()[0]
    r = veracity(
        "check",
        "--model",
        write_rules(tmp_path / "rules.json"),
        "--qa",
        "retriever-reader",
        "--index",
        spec,
        "--json",
        "--no-cache",
        "The Orrin Bridge stands in Tallinn.",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    evidence = [
        e for step in doc["trace"] for e in step.get("evidence", []) + step.get("results", []) if isinstance(e, dict)
    ]
    orrin = next(e for e in evidence if e.get("doc_id") == "orrin.txt")
    assert orrin["found_by"]["index"] == parse_spec(spec).shown() and "Tallinn" in orrin["text"]
    assert doc["verdict"]["label"] == "Supported"

    read = Sources(indexes=[spec]).document(orrin["found_by"]["index"], "orrin.txt")
    assert read.status is None and read.sha256 == orrin["source_sha256"]
    gone = Sources(indexes=[spec]).document(orrin["found_by"]["index"], "nope.txt")
    assert gone.status == "gone"


def test_ray_workers_connect_to_the_database_instead_of_receiving_files(tmp_path, pg_url):
    from veracity.cluster.shipping import receive, ship

    run_cli("index", "build", str(corpus_folder(tmp_path)), "--to", f"{pg_url}#docs")
    shipped = ship(open_index(f"{pg_url}#docs").retriever("bm25"))
    assert shipped.files == {} and shipped.digest == ""
    worker = receive(shipped)
    assert worker.search("highest mountain", k=1)[0].doc_id == "everest.txt"


# ---------------------------------------------------------------- errors


def test_errors_are_one_line_and_never_show_the_password(tmp_path, pg_url, monkeypatch):
    with pytest.raises(IndexError_) as e:
        open_index("postgresql://me:s3cret@127.0.0.1:1/veracity#wiki")
    assert "cannot reach the database postgresql://me:***@127.0.0.1:1/veracity" in str(e.value)
    assert "s3cret" not in str(e.value) and "\n" not in str(e.value)

    with pytest.raises(IndexError_, match=r"no index 'wiki' in the database .* \(it has none\)"):
        open_index(f"{pg_url}#wiki")
    run_cli("index", "build", str(corpus_folder(tmp_path)), "--to", f"{pg_url}#docs")
    with pytest.raises(IndexError_, match=r"no index 'wiki' .* \(it has docs\)"):
        open_index(f"{pg_url}#wiki")
    with pytest.raises(UserError, match="names no index"):
        open_index(pg_url)
    with pytest.raises(UserError, match="no such file or folder"):
        run_cli("index", "build", str(tmp_path / "missing"), "--to", f"{pg_url}#x")

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(UserError, match=r"pip install 'veracity\[postgres\]'"):
        open_index(f"{pg_url}#docs")
