"""`veracity recheck`: a stored run's evidence read again from a real index on disk and from pages on a local web
server, per item unchanged / changed / gone / refused / not re-checkable, the decision taken again, the exit
status, and the recheck stored as a run linked to the old one."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import pytest
from conftest import veracity_cmd
from web_stub import Reply, WebStub

from veracity.check import run_check
from veracity.cli import main
from veracity.config import load_config
from veracity.llm.model import Model
from veracity.llm.scripted import ScriptedBackend
from veracity.registry import get_pipeline
from veracity.retrieval import Document, Index
from veracity.server.store import RunStore
from veracity.tools.base import ToolCall
from veracity.tools.web_search import WebSearch
from veracity.types import Claim
from veracity.web.base import SearchHit
from veracity.web.scrape import Scraper

CLAIM = "Mount Everest is 8,849 metres high."
EVEREST = (
    "Mount Everest is Earth's highest mountain above sea level, in the Himalayas. Its summit is 8,849 metres "
    "high.\n\nIt was first climbed in 1953 by Tenzing Norgay and Edmund Hillary, who reached the top on "
    "the 29th of May after a long expedition from the south."
)
NILE = "The Nile is a major river in northeastern Africa. It flows into the Mediterranean Sea near Alexandria."


def docs(everest: str | None = EVEREST, nile: str = NILE) -> list[Document]:
    found = [Document("nile", "Nile", nile)]
    if everest is not None:
        found.insert(
            0, Document("everest", "Mount Everest", everest, url="https://example.org/everest", date="2020-05-01")
        )
    return found


def build(path, documents) -> Index:
    return Index.build(documents, path, max_words=24, overlap_words=0)  # the Everest article in two passages


def check_report(tmp_path, index: Index, claim: str = CLAIM) -> str:
    """What `veracity check --pipeline verifier --index DIR --json` writes."""
    config = load_config(overrides={"cache": False}, env={})
    result = run_check(
        Claim(claim), get_pipeline("verifier", config), Model(ScriptedBackend([])), config, retriever=index.retriever()
    )
    path = tmp_path / "report.json"
    path.write_text(json.dumps(result.to_dict()))
    return str(path)


def recheck_json(capsys, *args) -> tuple[int, dict]:
    code = main(["recheck", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def by_doc(doc: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in doc["items"]:
        out.setdefault(item["evidence"]["doc_id"], []).append(item["status"])
    return out


def test_index_documents_unchanged_changed_elsewhere_changed_and_gone(tmp_path, capsys):
    build(tmp_path / "idx", docs())
    report = check_report(tmp_path, Index.load(tmp_path / "idx"))
    stored = json.loads(open(report).read())
    assert stored["verdict"]["label"] == "Supported"

    code, doc = recheck_json(capsys, report)
    assert code == 0 and doc["headline"] == "Evidence unchanged" and doc["holds"] is True
    assert doc["counts"]["unchanged"] == len(doc["items"]) >= 2
    assert all(i["reason"] == "the source reads the same (same SHA-256)" for i in doc["items"])

    # the second paragraph changes: the passage quoting the first still stands word for word
    build(tmp_path / "idx", docs(EVEREST.replace("29th of May", "30th of May")))
    code, doc = recheck_json(capsys, report)
    first = next(i for i in doc["items"] if "8,849" in i["evidence"]["text"])
    assert first["status"] == "unchanged" and first["reason"].startswith("the source changed elsewhere")
    changed = [i for i in doc["items"] if i["status"] == "changed"]
    assert [("29th" in i["evidence"]["text"]) for i in changed] == [True] * len(changed)
    assert code == (1 if changed else 0)

    # the height changes: that quote is found changed, with a short diff, and the decision is taken again
    build(tmp_path / "idx", docs(EVEREST.replace("8,849", "8,848")))
    code, doc = recheck_json(capsys, report)
    assert code == 1 and doc["changed"] is True
    first = next(i for i in doc["items"] if "8,849" in i["evidence"]["text"])
    assert first["status"] == "changed" and "[-8,849-] {+8,848+}" in first["diff"] and "8,848" in first["now"]
    assert len(doc["items"]) >= 2 and all(i["status"] == "unchanged" for i in doc["items"] if i is not first)
    [decision] = doc["decisions"]
    assert decision["before"] == "Supported" and decision["stored"] == "Supported"
    assert decision["holds"] == (decision["now"] == "Supported")

    main(["recheck", report])  # the same as text: each item with its status, reason and diff
    out = capsys.readouterr().out
    assert "changed: Mount Everest (everest)" in out and "diff: " in out and "[-8,849-] {+8,848+}" in out
    assert "Exit status 1: something changed." in out

    # the document is removed from the index, then the index itself
    build(tmp_path / "idx", docs(None))
    code, doc = recheck_json(capsys, report)
    assert code == 1 and set(by_doc(doc)["everest"]) == {"gone"}
    assert "document 'everest' is no longer in the index" in doc["items"][0]["reason"]
    shutil.rmtree(tmp_path / "idx")
    code, doc = recheck_json(capsys, report)
    assert code == 1 and {i["status"] for i in doc["items"]} == {"gone"}
    assert doc["items"][0]["reason"] == f"the index {(tmp_path / 'idx').resolve()} is gone"


PAGE = "<html><head><title>{title}</title></head><body><article><p>{body}</p></article></body></html>"


@pytest.fixture
def web():
    stub = WebStub()
    stub.routes.update(
        {
            "/height": Reply(
                body=PAGE.format(title="Height", body="Its summit is 8,849 metres high, the survey says.")
            ),
            "/history": Reply(body=PAGE.format(title="History", body="It was first climbed in 1953 by Norgay.")),
            "/moved": Reply(body=PAGE.format(title="Moved", body="The Himalayas hold Everest and many peaks.")),
        }
    )
    yield stub
    stub.close()


class Provider:
    name = "fake"

    def __init__(self, urls):
        self.urls = urls

    def web(self, query, k, *, before=None):
        return [SearchHit(title=u.rsplit("/", 1)[-1], url=u) for u in self.urls]


def defame_report(tmp_path, web) -> str:
    """A DEFAME run's report whose evidence came from pages (read as the web_search tool reads them)."""
    urls = [web.url(p) for p in ("/height", "/history", "/moved")]
    out = WebSearch(Provider(urls), Scraper(allow_private=True, timeout=5), k=3).run("everest", ToolCall())
    assert len(out.results) == 3
    trace = [
        {"stage": "claim", "t": 0, "text": CLAIM, "pipeline": "defame", "model": "m"},
        {"stage": "action", "t": 0.1, "round": 1, **out.to_dict()},
        {"stage": "verdict", "t": 0.2, "label": "Supported", "rationale": "", "confidence": 0.9},
    ]
    path = tmp_path / "defame.json"
    path.write_text(
        json.dumps(
            {
                "claim": {"text": CLAIM},
                "pipeline": "defame",
                "model": "m",
                "verdict": {"label": "Supported", "confidence": 0.9},
                "trace": trace,
            }
        )
    )
    return str(path)


def test_a_recheck_says_when_it_read_each_document_again_not_when_the_index_was_built(tmp_path, capsys):
    build(tmp_path / "idx", docs())
    manifest = tmp_path / "idx" / "manifest.json"
    m = json.loads(manifest.read_text())
    m["created"] = "2020-01-01T00:00:00+00:00"  # an index built long ago
    manifest.write_text(json.dumps(m))
    report = check_report(tmp_path, Index.load(tmp_path / "idx"))
    code, doc = recheck_json(capsys, report)
    assert code == 0 and doc["items"]
    assert all(i["checked_at"] > "2021" for i in doc["items"]), [i["checked_at"] for i in doc["items"]]


def test_pages_changed_gone_and_unchanged_through_the_guarded_scraper(tmp_path, web, capsys):
    report = defame_report(tmp_path, web)
    stored = json.loads(open(report).read())["trace"][1]["results"]
    page = Scraper(allow_private=True).fetch(web.url("/height"))
    assert stored[0]["source_sha256"] == hashlib.sha256(page.text.encode()).hexdigest()

    web.routes["/height"] = Reply(
        body=PAGE.format(title="Height", body="Its summit is 8,848 metres high, the survey says.")
    )
    web.routes["/history"] = Reply(status=404, body="gone")
    code, doc = recheck_json(capsys, report, "--allow-private-addresses")
    status = {i["evidence"]["url"].rsplit("/", 1)[-1]: i for i in doc["items"]}
    assert code == 1
    assert status["height"]["status"] == "changed" and "[-8,849-] {+8,848+}" in status["height"]["diff"]
    assert status["history"]["status"] == "gone" and "HTTP 404" in status["history"]["reason"]
    assert status["moved"]["status"] == "unchanged"
    assert doc["items"][0]["checked_at"]  # when it was read again


def test_a_page_that_now_fails_the_address_guard_is_reported_not_fetched(tmp_path, web, capsys):
    report = defame_report(tmp_path, web)
    before = len(web.requests)
    code, doc = recheck_json(capsys, report)  # the guard on, as by default: 127.0.0.1 is a loopback address
    assert {i["status"] for i in doc["items"]} == {"refused"}
    assert all("loopback address" in i["reason"] for i in doc["items"])
    assert len(web.requests) == before  # nothing was fetched
    assert code == 4 and doc["incomplete"] and not doc["changed"]


def test_an_old_run_is_reported_item_by_item_and_loses_nothing(tmp_path, capsys):
    from test_steps import OLD_TRACE

    path = tmp_path / "old.json"
    path.write_text(
        json.dumps(
            {
                "claim": {"text": "The Orrin Bridge stands in Tallinn."},
                "pipeline": "qacheck",
                "model": "m",
                "verdict": {"label": "Supported"},
                "trace": OLD_TRACE,
            }
        )
    )
    code, doc = recheck_json(capsys, str(path))
    assert code == 4 and [i["status"] for i in doc["items"]] == ["not re-checkable", "not re-checkable"]
    memory, page = doc["items"]
    assert memory["reason"].startswith("the model's memory (recited, not a source)")
    assert "without a hash of its source text (by an older veracity" in page["reason"]
    # the stored records come back as they were
    assert memory["evidence"] == OLD_TRACE[3]["evidence"][0] and page["evidence"] == OLD_TRACE[8]["results"][0]


def test_a_stored_run_is_rechecked_into_a_new_run_linked_to_it(tmp_path, capsys):
    index = build(tmp_path / "idx", docs())
    config = load_config(overrides={"cache": False}, env={})
    db = tmp_path / "runs.sqlite"
    store = RunStore(db)
    store.create("r1", claim=CLAIM, pipeline="verifier", qa=None, model="m")
    result = run_check(
        Claim(CLAIM),
        get_pipeline("verifier", config),
        Model(ScriptedBackend([])),
        config,
        retriever=index.retriever(),
        listeners=[lambda step, seq=iter(range(1000)): store.add_step("r1", next(seq), step.to_dict())],
    )
    store.finish("r1", result.to_dict())
    build(tmp_path / "idx", docs(EVEREST.replace("8,849", "8,848")))

    code, doc = recheck_json(capsys, "r1", "--db", str(db))
    assert code == 1 and doc["rechecks"] == "r1" and doc["stored_as"]
    [linked] = store.rechecks_of("r1")
    assert linked["id"] == doc["stored_as"] and linked["options"] == {"rechecks": "r1"}
    assert linked["status"] == "done" and linked["label"] == doc["headline"]
    stages = [d["stage"] for _, d in store.steps(linked["id"])]
    assert stages.count("recheck_item") == len(doc["items"]) and "recheck_decision" in stages
    assert store.rechecks_of(linked["id"]) == []
    assert main(["recheck", linked["id"], "--db", str(db)]) == 2  # a recheck is not rechecked itself
    assert "is itself a recheck: recheck run r1 again" in capsys.readouterr().err
    assert main(["recheck", "nope", "--db", str(db)]) == 2


def test_the_command_documents_its_exit_statuses_and_exits_with_them(tmp_path, cli_env):
    build(tmp_path / "idx", docs())
    report = check_report(tmp_path, Index.load(tmp_path / "idx"))
    help_text = subprocess.run(
        veracity_cmd() + ["recheck", "--help"], capture_output=True, text=True, env=cli_env, timeout=60
    ).stdout
    for line in ("0  nothing changed", "1  something changed", "2  a usage error", "4  nothing found changed"):
        assert line in help_text
    build(tmp_path / "idx", docs(EVEREST.replace("8,849", "8,848")))
    r = subprocess.run(veracity_cmd() + ["recheck", report], capture_output=True, text=True, env=cli_env, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "changed: Mount Everest (everest)" in r.stdout


def test_the_report_quotes_each_passage_with_its_link_date_and_index_time(tmp_path):
    from veracity.report.check import write_report

    index = build(tmp_path / "idx", docs())
    config = load_config(overrides={"cache": False}, env={})
    result = run_check(
        Claim(CLAIM), get_pipeline("verifier", config), Model(ScriptedBackend([])), config, retriever=index.retriever()
    )
    write_report(result, str(tmp_path / "r.md"))
    md = (tmp_path / "r.md").read_text()
    indexed = index.manifest["created"][:16].replace("T", " ")
    assert "## Evidence retrieved" in md
    assert (
        f"Its summit is 8,849 metres high. — *[Mount Everest](https://example.org/everest), published "
        f"2020-05-01 · indexed {indexed} UTC*"
    ) in md


def test_an_answer_sentence_is_decided_again_as_it_was_read_its_pronoun_resolved(tmp_path, capsys):
    from veracity.evidence.decision import LEAF_LABELS
    from veracity.leaf import AnswerChecker
    from veracity.llm import UsageMeter
    from veracity.trace import Tracer
    from veracity.types import Evidence
    from veracity.verify.decide import check_evidence

    index = build(tmp_path / "idx", docs())
    config = load_config(overrides={"cache": False, "verifier.use": "on", "leaf.top_k": 1}, env={})
    tracer = Tracer()
    answer = "The Nile is a river in Africa. It flows into the Red Sea."
    AnswerChecker.from_config(config, write_queries=False).check(
        "Tell me about the Nile.",
        answer,
        model=Model(ScriptedBackend([])).bind(UsageMeter(), tracer),
        retriever=index.retriever(),
        tracer=tracer,
    )
    trace = tracer.to_list()
    [read] = [s for s in trace if s["stage"] == "leaf_sentence" and "read_as" in s]
    assert read["sentence"] == "It flows into the Red Sea." and read["read_as"] == "The Nile flows into the Red Sea."
    path = tmp_path / "answer.json"
    path.write_text(
        json.dumps(
            {
                "claim": {"text": "Tell me about the Nile."},
                "pipeline": "answer-check",
                "model": "m",
                "verdict": {"label": "LEAF 0.50"},
                "trace": trace,
            }
        )
    )
    code, doc = recheck_json(capsys, str(path))
    assert code == 0
    [d] = [d for d in doc["decisions"] if d["group"] == "It flows into the Red Sea."]
    assert d["holds"] and d["stored"] == d["now"] == read["rating"]
    # taken again on the text the verifier read then, not on the sentence as written
    evidence = [Evidence.from_dict(e) for e in read["evidence"]]
    as_read, as_written = (
        check_evidence(config.verifier, Tracer(), text, evidence, LEAF_LABELS)
        for text in (read["read_as"], read["sentence"])
    )
    assert d["confidence"] == round(as_read.confidence, 4) != round(as_written.confidence, 4)


@pytest.mark.parametrize(
    "case", ["long run id", "store not a database", "store a folder", "control character in run id"]
)
def test_input_no_run_store_holds_is_one_line_and_exit_2(tmp_path, cli_env, case):
    """A run id no file or run can have (1 kB long, a control character) and a run store that is not one get the
    one-line error and exit status 2 of every bad input, never a traceback."""
    db = tmp_path / "runs.sqlite"
    RunStore(db)  # a real, empty run store
    args = {
        "long run id": ["a" * 1024, "--db", str(db)],
        "control character in run id": ["ab\x01cd", "--db", str(db)],
        "store not a database": ["0123456789abcdef", "--db", str(tmp_path / "notes.txt")],
        "store a folder": ["0123456789abcdef", "--db", str(tmp_path)],
    }[case]
    (tmp_path / "notes.txt").write_text("these are my notes, not a database\n" * 50)
    r = subprocess.run(veracity_cmd() + ["recheck", *args], capture_output=True, text=True, env=cli_env, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith("veracity: error:") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr) < 600
    said = {
        "long run id": "no run 'aaaa",
        "control character in run id": "no run",
        "store not a database": "is not a run store",
        "store a folder": "no run store at",
    }[case]
    assert said in r.stderr, r.stderr
