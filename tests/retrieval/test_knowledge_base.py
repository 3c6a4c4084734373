"""The Wikipedia knowledge base read by default: built from the installed package on first use, searched like any
index, and every check that is given no other evidence reads it (or says plainly that it found no source)."""

import json
import subprocess

import pytest
from conftest import veracity_cmd

from veracity.config import load_config
from veracity.retrieval import knowledge_base as kb
from veracity.retrieval.index import Index


def veracity(*args, env, timeout=180):
    return subprocess.run(veracity_cmd() + list(args), capture_output=True, env=env, timeout=timeout)


@pytest.fixture
def kb_env(cli_env, knowledge_base):
    env = {**cli_env, **knowledge_base}
    env.pop("VERACITY_KB", None)  # as a user has it: on by default
    return env


def test_documents_are_the_lead_sections_with_their_wikipedia_urls(knowledge_base):
    found = kb.installed("en")
    docs = {d.title: d for d in kb.documents(found)}
    assert len(docs) > 9000  # the Level 4 vital articles
    tower = docs["Eiffel Tower"]
    assert tower.url == "https://en.wikipedia.org/wiki/Eiffel_Tower"
    assert "Paris" in tower.text and tower.text == tower.text.strip()
    assert docs["2001: A Space Odyssey"].url == "https://en.wikipedia.org/wiki/2001:_A_Space_Odyssey"
    assert (
        kb.installed("fr") is not None
        and kb.article_url("Tour Eiffel", "fr") == "https://fr.wikipedia.org/wiki/Tour_Eiffel"
    )


def test_built_once_then_read_and_an_older_version_is_replaced(knowledge_base, kb_dir):
    found = kb.installed("en")
    stale = kb_dir / "wikipedia-en-0.0.1-b1"  # a build of an older package version
    stale.mkdir(exist_ok=True)
    folder = kb.index_folder(found)
    assert folder.name == found.folder_name and folder.parent == kb_dir
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["knowledge_base"] == "kb:wikipedia-en" and manifest["documents"] > 9000
    built = (folder / "manifest.json").stat().st_mtime_ns
    assert kb.index_folder(found) == folder and (folder / "manifest.json").stat().st_mtime_ns == built  # not again
    if not stale.exists():  # removed by the build above, or by an earlier test's build of the same session
        return
    raise AssertionError("an older build of the knowledge base was left behind")


def test_search_quotes_an_exact_slice_of_the_article_with_its_url(knowledge_base):
    retriever = kb.load_knowledge_base("kb:wikipedia").retriever()
    hits = retriever.search("Where is the Eiffel Tower?", k=3)
    assert hits[0].source == "Eiffel Tower"
    top = hits[0]
    assert top.url == "https://en.wikipedia.org/wiki/Eiffel_Tower"
    assert top.found_by["knowledge_base"] == "kb:wikipedia-en" and top.found_by["rank"] == 1
    text, digest = retriever.index.document(top.doc_id)
    assert text[top.quote_start : top.quote_end] == top.text and digest == top.source_sha256


def test_config_reads_the_knowledge_base_unless_told_otherwise(knowledge_base, monkeypatch):
    assert load_config().index == "kb:wikipedia-en"
    assert load_config(overrides={"kb": False}).index is None
    assert load_config(overrides={"defame.search": "searxng", "defame.searxng_url": "http://127.0.0.1:1"}).index is None
    assert load_config(overrides={"index": "my-index"}).index == "my-index"
    assert load_config(overrides={"kb_language": "fr"}).index == "kb:wikipedia-fr"
    monkeypatch.setenv("VERACITY_KB", "off")
    assert load_config().index is None


def test_unknown_knowledge_base_is_a_one_line_error(knowledge_base):
    from veracity.errors import UserError

    with pytest.raises(UserError, match="unknown knowledge base 'kb:wikipedia-de': there are kb:wikipedia-en"):
        kb.load_knowledge_base("kb:wikipedia-de")


def test_check_rests_on_a_quoted_wikipedia_passage_by_default(kb_env):
    r = veracity("check", "--pipeline", "verifier", "--json", "The Eiffel Tower is located in Rome.", env=kb_env)
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(r.stdout)
    verdict = doc["verdict"]
    assert verdict["label"] == "Refuted" and verdict["basis"] == "evidence" and not verdict["uncertain"], verdict
    assert 'decided by passage [1] (Eiffel Tower): "The Eiffel Tower is a lattice tower' in verdict["rationale"]
    read = [e for s in doc["trace"] if s["stage"] == "retrieval" for e in s["results"]]
    assert read[0]["url"] == "https://en.wikipedia.org/wiki/Eiffel_Tower", read
    # only the articles the claim names are read: the lead of Rome (or of Paris, which it does not name) at most
    assert {e["source"] for e in read} <= {"Eiffel Tower", "Rome", "Tower", "Gustave Eiffel"}, read


def test_only_articles_the_claim_names_are_read():
    from veracity.retrieval.subjects import names_subject

    assert names_subject("Where is the Eiffel Tower?", "Eiffel Tower")
    assert names_subject("Was Einstein born in Ulm?", "Albert Einstein")  # a name by its last word
    assert names_subject("Is Mercury closest to the Sun?", "Mercury (planet)")  # the qualifier left out
    assert names_subject("the eiffel tower", "Eiffel Tower")
    assert not names_subject("The Eiffel Tower is in Paris.", "Leaning Tower of Pisa")
    assert not names_subject("Is it raining in Paris?", "Paris Hilton") and not names_subject("a tower", "Eiffel Tower")
    assert not names_subject("Li won.", "Li Bai")  # a last name too short to stand alone


def test_subjects_are_matched_as_names_not_as_words():
    """The issue's cases: a surname of someone else, a common word on the way, a word inside a longer name."""
    from veracity.retrieval.subjects import names_subject

    assert not names_subject("President Hilda Heine has told reporters the islands are sinking.", "Heinrich Heine")
    assert names_subject("Heine wrote the Buch der Lieder.", "Heinrich Heine")
    assert names_subject("President Trump called it a hoax.", "Donald Trump")  # an honorific, not a given name
    assert not names_subject("Neil Armstrong walked on the Moon.", "Louis Armstrong")
    assert not names_subject("The sun has gone into 'lockdown' which could cause freezing weather.", "Freezing")
    assert not names_subject("Scientists found no correlation between cosmic rays and temperatures.", "Correlation")
    assert names_subject("Correlation does not imply causation.", "Correlation")  # where a claim's topic stands
    assert names_subject("A giraffe's neck has seven vertebrae.", "Giraffe")
    assert names_subject("Bats are blind.", "Bat")  # a plural names its article
    assert not names_subject("The Bank of England was founded in 1694.", "Bank")
    assert not names_subject("The Gotthard Base Tunnel opened in 2016.", "Tunnel")
    assert not names_subject("The annual Cooper's Hill cheese-rolling race is in Gloucestershire.", "Hill")
    assert names_subject("Climate change is a hoax invented by the Chinese.", "Climate change")
    assert names_subject("Paris is the capital of France.", "Paris")


def test_a_claim_the_knowledge_base_says_nothing_about_is_said_plainly(kb_env):
    r = veracity(
        "check",
        "--pipeline",
        "verifier",
        "--json",
        "My neighbour Ingrid Vollmer painted her garden shed green last Tuesday.",
        env=kb_env,
    )
    assert r.returncode == 0, r.stderr.decode()
    verdict = json.loads(r.stdout)["verdict"]
    assert verdict["uncertain"]
    assert verdict["uncertain_reason"].startswith("no source found in the Wikipedia knowledge base")
    # the verifier pipeline asks no model: its label is the verifier's leaning, not the model's memory
    assert verdict["uncertain_reason"].endswith("the label is the trained verifier's leaning")


def test_no_kb_turns_it_off(kb_env):
    r = veracity("check", "--pipeline", "verifier", "--no-kb", "The Eiffel Tower is in Paris.", env=kb_env)
    assert r.returncode == 2
    assert "needs" in r.stderr.decode() and "index" in r.stderr.decode()


def test_doctor_says_whether_it_is_there(kb_env):
    r = veracity("doctor", "--no-model", "--json", env=kb_env)
    assert r.returncode == 0, r.stderr.decode()
    info = json.loads(r.stdout)["knowledge_base"]
    assert info["installed"] == kb.installed().version and info["on"] is True
    assert info["checks_read"] == "kb:wikipedia-en" and "CC BY-SA" in info["licenses"]


def test_the_index_tools_read_it_by_name(kb_env):
    # the BM25 ranking, before a check keeps the articles the query names ("China's Mona Lisa" ranks first)
    r = veracity("index", "search", "kb:wikipedia", "Who painted the Mona Lisa?", "-k", "3", "--json", env=kb_env)
    assert r.returncode == 0, r.stderr.decode()
    hits = {hit["title"]: hit for hit in json.loads(r.stdout)}
    assert hits["Mona Lisa"]["url"] == "https://en.wikipedia.org/wiki/Mona_Lisa"
    r = veracity("index", "info", "kb:wikipedia", env=kb_env)
    assert r.returncode == 0 and "knowledge_base    kb:wikipedia-en" in r.stdout.decode(), r.stderr.decode()


def test_a_stored_check_over_it_is_rechecked(kb_env, tmp_path):
    report = tmp_path / "run.json"
    r = veracity("check", "--pipeline", "verifier", "--json", "The Eiffel Tower is in Paris.", env=kb_env)
    assert r.returncode == 0, r.stderr.decode()
    report.write_bytes(r.stdout)
    r = veracity("recheck", str(report), "--json", env=kb_env)
    assert r.returncode == 0, r.stderr.decode() + r.stdout.decode()
    result = json.loads(r.stdout)
    assert result["counts"]["unchanged"] >= 1 and not result["counts"].get("changed"), result


def test_index_built_in_memory_keeps_no_knowledge_base_mark():
    from veracity.retrieval.documents import Document

    index = Index.from_documents([Document(id="a", title="A", text="Alpha beta gamma.")])
    assert "knowledge_base" not in index.manifest
    assert "knowledge_base" not in index.search("alpha", k=1)[0].found_by


def test_the_server_reads_it_by_default(server_factory, knowledge_base):
    import time

    import httpx

    srv = server_factory(["--rate-limit", "0"], env_extra={"VERACITY_KB": "on", **knowledge_base}, name="kb")
    with httpx.Client(base_url=srv.url, timeout=60) as client:
        r = client.post(
            "/api/checks", json={"claim": "The Mona Lisa was painted by Vincent van Gogh.", "pipeline": "verifier"}
        )
        assert r.status_code == 202, r.text
        deadline = time.time() + 120
        while (run := client.get(f"/api/checks/{r.json()['id']}").json())["status"] in ("queued", "running"):
            assert time.time() < deadline, run["status"]
            time.sleep(0.2)
    assert run["status"] == "done" and run["verdict"]["label"] == "Refuted" and run["verdict"]["basis"] == "evidence"
    read = [e for s in run["steps"] if s["stage"] == "retrieval" for e in s["results"]]
    assert read and all(e["url"].startswith("https://en.wikipedia.org/wiki/") for e in read), read
    assert read[0]["source"] == "Mona Lisa"
    page = httpx.get(f"{srv.url}/checks/{run['id']}", timeout=30).text
    assert "https://en.wikipedia.org/wiki/Mona_Lisa" in page and "Wikipedia, CC BY-SA 4.0" in page


def test_mcp_searches_and_checks_against_it_by_default(tmp_path, knowledge_base):
    import sys

    import anyio
    from conftest import server_env
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {**server_env(tmp_path), "VERACITY_KB": "on", **knowledge_base}

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "veracity.cli", "mcp", "--db", str(tmp_path / "runs.sqlite")],
            env=env,
            cwd=str(tmp_path),
        )
        async with Client(params) as c:
            search = await c.call_tool("search_evidence", {"query": "Who painted the Mona Lisa?", "k": 2})
            check = await c.call_tool(
                "check_claim", {"claim": "The Mona Lisa was painted by Vincent van Gogh.", "pipeline": "verifier"}
            )
            return search, check

    search, check = anyio.run(main)
    assert not search.is_error, search.content
    top = search.structured_content["passages"][0]
    assert top["source"] == "Mona Lisa" and top["url"] == "https://en.wikipedia.org/wiki/Mona_Lisa"
    assert not check.is_error, check.content
    assert check.structured_content["label"] == "Refuted", check.structured_content


def test_the_proxy_checks_answers_against_it_by_default(knowledge_base):
    from veracity.proxy.evidence import evidence_source

    source = evidence_source(load_config())
    assert source.description == "the Wikipedia knowledge base (kb:wikipedia-en)"
    assert source.retriever.search("Where is the Eiffel Tower?", k=1)[0].source == "Eiffel Tower"
    assert evidence_source(load_config(overrides={"kb": False})).retriever is None
