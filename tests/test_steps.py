"""Typed steps and the one fold of a check's steps into view items (veracity.steps).

Real steps of every system (scripted model, real prompts, parsers and retrieval) go in; the view items, the
terminal lines and the reports come out. Stored traces (dicts, as every run so far was stored) read back as
their types, old and damaged ones included, and still render.
"""

from __future__ import annotations

import json
import re

import pytest

from veracity.check import CheckResult, run_check
from veracity.config import load_config
from veracity.defame.record import Record
from veracity.llm import Model, UsageMeter
from veracity.llm.scripted import ScriptedBackend
from veracity.registry import get_pipeline, load_step_types
from veracity.report.check import to_html, to_markdown
from veracity.report.terminal import TerminalPrinter, item_lines
from veracity.retrieval import Document, Index
from veracity.server.answers import leaf_summary
from veracity.server.views import LiveView, run_view
from veracity.steps import STEP_TYPES, Fold, ParseFailure, Step, UnknownStep, evidence_view, step_from_dict, view_items
from veracity.trace import Tracer
from veracity.types import Claim, Verdict

load_step_types()

# -- the world ------------------------------------------------------------------------------------------------

DOCS = [
    Document("kb", "Kestrel Bay", "Kestrel Bay is a 1998 novel written by Mara Lind."),
    Document(
        "ob",
        "Orrin Bridge",
        "The Orrin Bridge is a stone bridge in Tallinn, Estonia, finished in 1884.",
        url="https://example.org/orrin",
        date="2020-03-01",
    ),
    Document(
        "ob-2023",
        "Orrin Bridge repairs",
        "In 2023 the Orrin Bridge in Tallinn was closed for repairs.",
        url="https://example.org/orrin-2023",
    ),
    Document(
        "riga",
        "Riga bridges",
        "Riga has several bridges over the Daugava; none of them was moved from Tallinn.",
        url="https://example.net/riga",
    ),
    Document(
        "cts",
        "Carpal tunnel syndrome",
        "Carpal tunnel syndrome is an entrapment neuropathy: the median "
        "nerve is compressed as it passes through the carpal tunnel at the wrist.",
    ),
]
REMINDER = r"Reply with that word only\.\n$"


@pytest.fixture(scope="module")
def index():
    return Index.from_documents(DOCS)


def run(pipeline, rules, claim, index=None, **over):
    config = load_config(overrides={"cache": False, **over}, env={})
    backend = ScriptedBackend(rules)
    return run_check(
        claim if isinstance(claim, Claim) else Claim(claim),
        get_pipeline(pipeline, config),
        Model(backend),
        config,
        retriever=index.retriever() if index else None,
    ), backend


QACHECK_RULES = [
    (REMINDER, "Unsure"),
    (r"Yes or no\?\nPrediction =$", ["Perhaps.", "No, we cannot know.", "Yes, we can know."]),
    (r"first ask a simple question:\nQuestion =$", " Who wrote the novel Kestrel Bay?"),
    (r"Question (\d+) =$", [" Who wrote the novel Kestrel Bay?", " Where was Mara Lind born?"]),
    (r"Relevant passage =$", [" Kestrel Bay is a 1998 novel by Mara Lind.", " Mara Lind was born in Tallinn."]),
    (r"Passages:\n(?:(?!-{8}).)*Answer =$", [" Mara Lind", " Tallinn"]),
    (r"useful for verifying the claim\?\nThe answer:$", [" Yes", " No"]),
    (r"Is this claim true or false\?\nAnswer:$", "\nMara Lind wrote it.\n"),
    (r"final answer is:$", " True."),
]
QACHECK_CLAIM = "The author of Kestrel Bay was born where the Orrin Bridge stands."

DEFAME_RULES = [
    (REMINDER, "Refuted"),
    (r"Next action:\s*$", "stop"),  # the tool is a choice (web search, the one tool offered, needs none); then stop
    (
        r'Next action:\s*web_search\("$',
        ["Orrin Bridge Tallinn", "Kestrel Bay novel"],
    ),  # the query: the text written (round 2 finds a source round 1 did not)
    (r"<result>[^<]*none of them was moved[^<]*</result>\nSummary:$", "NONE"),
    (
        r"<result>[^<]*stone bridge in Tallinn[^<]*</result>\nSummary:$",
        "The Orrin Bridge is a stone bridge in Tallinn.",
    ),
    (r"Summary:$", "The claim says the bridge went to Riga."),  # not drawn from the source: an excerpt instead
    (r"Elaboration:$", "Nothing says the bridge moved."),
    (r"Key findings:$", "The bridge is in Tallinn."),
    (r"Verdict:$", ["Not Enough Information", "Refuted"]),
    (r"Justification:$", "It stands in Tallinn ([Orrin Bridge](https://example.org/orrin))."),
]
DEFAME_CLAIM = "The Orrin Bridge was moved from Tallinn to Riga."

LEAF_RULES = [
    (r"Search query:$", " carpal tunnel median nerve entrapment"),
    (r"Reasoning:$", " The passage addresses this statement."),
    (r"It is a tendon disorder\.\nReasoning:[^\n]*\nFinal answer:$", " Not Supported"),
    (r"Final answer:$", " Supported"),
    (r"ANSWER:$", "Carpal tunnel syndrome is a nerve entrapment. It is a tendon disorder. So the answer is A."),
    (r"chooses is option$", " A"),
]
LEAF_QUESTION = "Is carpal tunnel syndrome a type of nerve entrapment?"


def kinds(items):
    return [it["kind"] for it in items]


# -- every system's real steps in, view items out -------------------------------------------------------------


def test_qacheck_steps_fold_into_question_cards(index):
    # a duplicate then a rejected question: two in a row, which would stop the loop by default
    result, _ = run("qacheck-retriever-reader", QACHECK_RULES, QACHECK_CLAIM, index, **{"qacheck.max_rejected": 0})
    items = view_items(result.trace)
    assert kinds(items) == ["qa", "parse_failure", "verifier", "qa", "verifier", "qa", "verifier", "stop", "reasoning"]
    first, dup, second = (it for it in items if it["kind"] == "qa")
    assert first["question"] == "Who wrote the novel Kestrel Bay?" and first["answer"] == "Mara Lind"
    assert first["useful"] is True and first["evidence"][0]["doc_id"] == "kb"  # the retrieval went into the card
    assert dup["duplicate"] and dup["answer"] is None and dup["useful"] is None
    assert second["useful"] is False  # discarded by the validator
    assert items[1]["for_stage"] == "verifier" and "Perhaps." in items[1]["raw"]
    assert items[-2]["reason"] == "the verifier judged the answers enough to decide"
    assert items[-1] == {
        "kind": "reasoning",
        "stage": "reasoner",
        "label": "Supported",
        "rationale": "Mara Lind wrote it.",
        "confidence": None,
    }
    # the model calls are counted, not shown as items
    fold = Fold().add_all(result.trace)
    assert fold.calls == result.usage["total"]["calls"] and fold.status == "Weighing the answers…"


def test_baseline_steps_fold_into_a_reasoning_item():
    direct, _ = run("direct", [(r"true or false\?\nAnswer:$", " False")], QACHECK_CLAIM)
    assert view_items(direct.trace) == [
        {"kind": "reasoning", "stage": "direct", "label": "Refuted", "rationale": "", "confidence": None}
    ]
    cot, _ = run(
        "cot", [(r"step by step\.\nAnswer:$", "\nIt is in Riga.\n"), (r"final answer is:$", " False")], QACHECK_CLAIM
    )
    assert view_items(cot.trace)[-1]["rationale"] == "It is in Riga."


def test_defame_steps_fold_into_rounds_of_cards_and_the_record_reads_back(index):
    result, backend = run("defame", DEFAME_RULES, DEFAME_CLAIM, index, **{"defame.search": "local"})
    items = view_items(result.trace)
    assert kinds(items) == [
        "plan",
        "action",
        "parse_failure",
        "develop",
        "judge",
        "plan",
        "action",
        "parse_failure",
        "develop",
        "judge",
        "justify",
    ]
    card = items[1]
    summaries = {r["url"]: (r["summarized"], r["summary"]) for r in card["results"]}
    assert summaries["https://example.org/orrin"] == (True, "The Orrin Bridge is a stone bridge in Tallinn.")
    assert summaries["https://example.net/riga"] == (True, None)  # judged irrelevant
    assert items[4]["final"] is False and items[9]["final"] is True
    assert items[-1]["sources"][0] == {"title": "Orrin Bridge", "url": "https://example.org/orrin"}
    # the record read back from the stored trace is the record every model call saw
    record = Record.from_steps(result.claim, result.trace)
    assert [r.number for r in record.rounds] == [1, 2] and record.rounds[1].judgement == "Refuted"
    last = [c.messages[-1][1] for c in backend.calls if c.messages[-1][1].endswith("Justification:")][-1]
    assert record.render() in last
    assert "Excerpt:" in record.rounds[0].summaries[1].summary and record.rounds[0].findings[-1].excerpt
    # ... and the report renders that record, once
    md = to_markdown(result)
    assert md.count("## Round 1") == 1 and md.count("## Round 2") == 1 and "## Justification" in md
    assert "not relevant (summarizer said NONE)" in md
    assert Record.from_steps(result.claim, [s for s in result.trace if s["stage"] not in STAGES_OF_DEFAME]) is None


STAGES_OF_DEFAME = {"images", "plan", "action", "summary", "develop", "judge", "justify"}


def test_leaf_steps_fold_into_sentences_and_the_score(index):
    from veracity.leaf import AnswerChecker

    config = load_config(overrides={"leaf.top_k": 1}, env={})
    tracer = Tracer()
    AnswerChecker.from_config(config).check(
        LEAF_QUESTION,
        "It is a nerve entrapment. It is a tendon disorder.",
        model=Model(ScriptedBackend(LEAF_RULES)).bind(UsageMeter(), tracer),
        retriever=index.retriever(),
        tracer=tracer,
    )
    trace = tracer.to_list()
    items = view_items(trace)
    assert kinds(items) == ["leaf", "leaf", "leaf_score"]
    assert [(it["index"], it["supported"], it["rating"]) for it in items[:2]] == [
        (1, True, "Supported"),
        (2, False, "Not Supported"),
    ]
    assert items[0]["evidence"][0]["doc_id"] == "cts"
    # the server's answer-check summary is read from the same items, every field of the steps kept (each evidence
    # passage with the line of when it was published and indexed added)
    summary = leaf_summary(trace)
    assert summary["score"] == 0.5 and summary["sentences"] == [
        {k: evidence_view(v) if k == "evidence" else v for k, v in s.items() if k not in ("stage", "t")}
        for s in trace
        if s["stage"] == "leaf_sentence"
    ]
    assert summary["sentences"][0]["evidence"][0]["when"].startswith("indexed ")


def test_answering_pipelines_steps_have_items_the_cli_prints(index):
    claim = Claim(LEAF_QUESTION, metadata={"options": {"A": "yes", "B": "no"}})
    result, _ = run("answer:rag", LEAF_RULES, claim, index, **{"leaf.top_k": 1})
    items = view_items(result.trace)
    assert kinds(items) == ["retrieval", "mc_answer", "leaf", "leaf", "leaf", "leaf_score", "leaf_final"]
    assert items[-1]["data"]["letter"] == "A" and items[1]["data"]["kind"] == "rag"
    lines = [line for it in items for line in item_lines(it)]
    assert lines[0].startswith("Retrieved 1 passage for: Is carpal tunnel")  # top_k 1: one, said so
    # the passage itself, with its source (the page's evidence blocks show the same)
    assert lines[1].startswith("    [1] Carpal tunnel syndrome is an entrapment neuropathy")
    assert "— Carpal tunnel syndrome (cts), indexed " in lines[1]
    assert lines[2].startswith("\nAnswer with retrieved passages: option A\n")


def test_real_runs_emit_only_declared_step_types(index):
    runs = [
        run("qacheck", QACHECK_RULES, QACHECK_CLAIM)[0],
        run("defame", DEFAME_RULES, DEFAME_CLAIM, index, **{"defame.search": "local"})[0],
        run(
            "answer:fc-rag",
            LEAF_RULES,
            Claim(LEAF_QUESTION, metadata={"options": {"A": "yes", "B": "no"}}),
            index,
            **{"leaf.top_k": 1},
        )[0],
    ]
    for result in runs:
        for d in result.trace:
            step = step_from_dict(d)
            assert not isinstance(step, UnknownStep), d["stage"]
            assert step.to_dict() == d  # the stored shape is the typed step's, field for field and in order


# -- the fold, one step at a time ------------------------------------------------------------------------------


def test_the_live_fold_sends_what_each_step_changed_and_ends_with_the_same_items(index):
    result, _ = run("defame", DEFAME_RULES, DEFAME_CLAIM, index, **{"defame.search": "local"})
    view, drawn = LiveView(), {}
    statuses = []
    for d in result.trace:
        update = view.add(json.loads(json.dumps(d)))  # as the stream sends it
        for change in update["items"]:
            drawn[change["index"]] = change["item"]
        statuses.append(update["status"])
    assert [drawn[i] for i in range(len(drawn))] == view_items(result.trace)
    assert "Round 1: reading the results" in statuses and statuses[-1] == "Finishing…"
    assert update["calls"] == result.usage["total"]["calls"]


def test_the_terminal_printer_prints_what_each_step_adds():
    printed: list[str] = []
    printer = TerminalPrinter(printed.append)
    for d in [
        {"stage": "question", "depth": 1, "question": "Who?"},
        {
            "stage": "answer",
            "depth": 1,
            "question": "Who?",
            "answer": "Mara",
            "qa": "closed-book",
            "evidence": [{"text": "Mara wrote it.", "source": "model"}],
        },
        {"stage": "validator", "depth": 1, "question": "Who?", "useful": True},
        {"stage": "model_call", "for_stage": "verifier"},
        {"stage": "verifier", "depth": 1, "enough": True},
    ]:
        printer(d)
    assert printed == [
        "\n[1] Q: Who?",
        "    A: Mara\n    evidence: Mara wrote it. — model",
        "    validator: useful, kept",
        "    verifier: enough to decide",
    ]


# -- stored traces: typed, old and damaged ---------------------------------------------------------------------

# A QACheck run and a DEFAME run as they were stored before steps were typed (the JSON shape has not changed),
# and steps a stored run may hold that no code writes: fields missing or unknown, a stage no system declares,
# a row that is not a step at all.
OLD_TRACE = [
    {"stage": "claim", "t": 0.0, "text": "The Orrin Bridge stands in Tallinn.", "pipeline": "qacheck", "model": "m"},
    {"stage": "question", "t": 0.1, "depth": 1, "question": "Where is the Orrin Bridge?"},
    {
        "stage": "model_call",
        "t": 0.2,
        "for_stage": "recite",
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "reused": 0,
        "seconds": 0.1,
        "cached": False,
    },
    {
        "stage": "answer",
        "t": 0.3,
        "depth": 1,
        "question": "Where is the Orrin Bridge?",
        "answer": "Tallinn",
        "qa": "reciter-reader",
        "evidence": [
            {
                "text": "It is in Tallinn.",
                "source": "recited by the model",
                "doc_id": None,
                "url": None,
                "score": None,
                "date": None,
                "images": [],
            }
        ],
    },
    {
        "stage": "validator",
        "t": 0.4,
        "depth": 1,
        "question": "Where is the Orrin Bridge?",
        "useful": True,
        "confidence": None,
    },
    {"stage": "context_done", "t": 0.5, "depth": 1, "reason": "no_question"},
    {"stage": "reasoner", "t": 0.6, "label": "Supported", "rationale": "It is in Tallinn.", "confidence": None},
    {
        "stage": "plan",
        "t": 0.7,
        "round": 1,
        "actions": ['web_search("x")'],
        "rejected": [],
        "raw": "",
        "how": "planned",
        "fallback": False,
        "unavailable": {},
    },
    {
        "stage": "action",
        "t": 0.8,
        "round": 1,
        "action": 'web_search("x")',
        "results": [{"text": "t", "source": "S", "url": "https://s.example/a"}],
        "notes": [],
        "error": None,
    },  # no tool, argument
    {
        "stage": "summary",
        "t": 0.9,
        "round": 1,
        "action": 'web_search("x")',
        "source": "S",
        "url": "https://s.example/a",
        "summary": "It says so.",
        "images": [],
        "by": "an older field",
    },
    {"stage": "judge", "t": 1.0, "round": 1, "label": "Supported", "confidence": 0.5, "findings": ""},
    {"stage": "justify", "t": 1.1, "text": "See [S](https://s.example/a).", "sources": ["[S](https://s.example/a)"]},
    {"stage": "retired_stage", "t": 1.2, "what": "a stage no system declares now"},
    {"stage": "unreadable", "data": "this is not JSON"},
    {"stage": "verdict", "t": 1.3, "label": "Supported", "rationale": "It is in Tallinn.", "confidence": None},
]


def test_stored_steps_read_back_as_their_types_and_serialise_as_stored():
    for d in OLD_TRACE:
        step = step_from_dict(d)
        assert step.stage == d["stage"]
        assert {"stage": step.stage, **step.data} == {k: v for k, v in d.items() if k != "t"}
    assert type(step_from_dict(OLD_TRACE[1])).__name__ == "Question"
    summary = step_from_dict(OLD_TRACE[9])
    assert (
        summary.written_by == "model" and summary.extra == {"by": "an older field"} and "written_by" not in summary.data
    )  # a field the stored step lacks keeps its default and stays out of what it serialises to
    assert isinstance(step_from_dict(OLD_TRACE[12]), UnknownStep)
    assert isinstance(step_from_dict("garbage"), UnknownStep)
    assert isinstance(step_from_dict({"t": 1}), UnknownStep)


def test_an_old_stored_trace_still_renders_everywhere():
    items, calls = run_view(OLD_TRACE)
    assert kinds(items) == ["qa", "stop", "reasoning", "plan", "action", "judge", "justify", "other", "other"]
    assert items[0]["answer"] == "Tallinn" and items[0]["useful"] is True
    assert items[4]["results"][0]["summary"] == "It says so."
    assert items[-2] == {"kind": "other", "stage": "retired_stage", "data": {"what": "a stage no system declares now"}}
    assert len(calls) == 1 and calls[0]["for_stage"] == "recite"
    result = CheckResult(
        claim=Claim("The Orrin Bridge stands in Tallinn."),
        pipeline="qacheck",
        model="m",
        verdict=Verdict(label="Supported", rationale="It is in Tallinn."),
        trace=OLD_TRACE,
    )
    md = to_markdown(result)
    assert "### Step 1: Where is the Orrin Bridge?" in md and "## Round 1" in md and "## Justification" in md
    assert "- [S](https://s.example/a): It says so." in md
    assert "<h3>Step 1: Where is the Orrin Bridge?</h3>" in to_html(result)
    printed: list[str] = []
    printer = TerminalPrinter(printed.append)
    for d in OLD_TRACE:
        printer(d)
    assert printed[0] == "\n[1] Q: Where is the Orrin Bridge?" and "      https://s.example/a: It says so." in printed


def test_an_old_stored_run_renders_on_the_page(tmp_path):
    from fastapi.testclient import TestClient

    from veracity.server.app import create_app
    from veracity.server.settings import ServerSettings
    from veracity.server.store import RunStore

    db = tmp_path / "runs.sqlite"
    store = RunStore(db)
    store.create(
        "0123456789abcdef", claim="The Orrin Bridge stands in Tallinn.", pipeline="qacheck", qa=None, model="m"
    )
    for seq, d in enumerate(OLD_TRACE):
        if d["stage"] == "unreadable":
            store.db.execute(
                "INSERT INTO steps (run_id, seq, stage, data) VALUES (?,?,?,?)",
                ("0123456789abcdef", seq, "answer", "this is not JSON"),
            )
        else:
            store.add_step("0123456789abcdef", seq, d)
    store.finish(
        "0123456789abcdef",
        {
            "claim": {"text": "The Orrin Bridge stands in Tallinn."},
            "pipeline": "qacheck",
            "model": "m",
            "verdict": {"label": "Supported", "rationale": "It is in Tallinn.", "confidence": None},
            "usage": {},
            "seconds": 1.0,
            "trace": OLD_TRACE,
        },
    )
    app = create_app(
        load_config(overrides={"model": "scripted:none.json"}, env={}), ServerSettings(db_path=str(db), rate_limit=0)
    )
    with TestClient(app, base_url="http://127.0.0.1") as client:
        page = client.get("/checks/0123456789abcdef").text
        assert 'class="step qa"' in page and "Where is the Orrin Bridge?" in page
        assert 'class="step tool"' in page and "It says so." in page and "retired_stage" in page
        assert client.get("/api/checks/0123456789abcdef/report.md").status_code == 200
        with client.stream("GET", "/api/checks/0123456789abcdef/events") as r:
            events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
        views = [e for e in events if "items" in e]
        assert len(views) == len(OLD_TRACE) and views[1]["items"][0]["item"]["kind"] == "qa"


def test_emit_builds_the_declared_type_and_refuses_undeclared_fields():
    tracer = Tracer()
    step = tracer.emit("parse_failure", for_stage="x", raw="?", fallback="none")
    assert isinstance(step, ParseFailure) and step.data == {"for_stage": "x", "raw": "?", "fallback": "none"}
    with pytest.raises(TypeError):
        tracer.emit("parse_failure", for_stage="x", typo=1)
    assert isinstance(tracer.emit("not_declared", a=1), UnknownStep)
    assert tracer.to_list()[-1] == {"stage": "not_declared", "t": pytest.approx(tracer.steps[-1].t, abs=1e-3), "a": 1}


def test_every_declared_step_type_folds_without_failing_on_an_empty_step():
    for stage, cls in sorted(STEP_TYPES.items()):
        assert issubclass(cls, Step) and cls.kind == stage
        Fold().add({"stage": stage})  # a stored step with none of its fields
        Fold().add(cls())


def test_the_mc_answer_kind_field_keeps_its_name():
    d = {
        "stage": "mc_answer",
        "t": 0,
        "round": 0,
        "kind": "plain",
        "text": "A.",
        "letter": "A",
        "confidence": None,
        "method": "parse",
        "stated": "A",
        "parse_failure": None,
        "knowledge": [],
    }
    step = step_from_dict(d)
    assert step.answer_kind == "plain" and step.to_dict() == d
    assert Tracer().emit("mc_answer", kind="rag").answer_kind == "rag"
    assert re.match(r"\nRound 0 answer: option A\n", item_lines(view_items([d])[0])[0])
