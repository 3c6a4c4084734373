"""LEAF: fact-checking answers sentence by sentence, and answering with the score.

Driven by the scripted backend over real BM25 indexes built here: the prompts, parsers, retrieval
and scoring are the real ones; only the model's replies are scripted (rules anchored at the end of
each prompt, where it asks its question).
"""

import json
import re
import subprocess

import pytest
from conftest import veracity_cmd
from worlds import (
    ANSWER,
    CLI_RULES,
    DECIDE,
    DOCS,
    FC_CTS,
    LETTER,
    OPT_CTS,
    OPT_LI,
    PLAIN_CTS,
    Q_CTS,
    Q_LI,
    QUERIES,
    QUERY,
    RAG_CTS,
    RULES,
    answer,
    config,
    letter,
    write_query,
)

from veracity.check import run_check
from veracity.config import load_config
from veracity.errors import UserError
from veracity.eval.datasets.records import Dataset, EvalItem
from veracity.eval.leaf_figures import auc, read_rows, summarize, to_markdown
from veracity.eval.runner import run_eval
from veracity.leaf import AnswerChecker, extract_letter, load_options_file, parse_options, split_sentences
from veracity.llm import Model, UsageMeter
from veracity.llm.scripted import ScriptedBackend
from veracity.registry import available_pipelines, get_pipeline
from veracity.retrieval import Document, Index
from veracity.trace import Tracer
from veracity.types import Claim
from veracity.verify import load_verifier
from veracity.verify.model import WEIGHTS_DIR

# ------------------------------------------------------------------------------------ the world


@pytest.fixture(scope="module")
def index():
    return Index.from_documents(DOCS)


def check_answer(text, rules=RULES, question=Q_CTS, index_=None, **over):
    cfg = config(**over)
    backend = ScriptedBackend(rules)
    tracer, meter = Tracer(), UsageMeter()
    retriever = (index_ or Index.from_documents(DOCS)).retriever()
    result = AnswerChecker.from_config(cfg).check(
        question, text, model=Model(backend).bind(meter, tracer), retriever=retriever, tracer=tracer
    )
    return result, backend, tracer


def run_answer(pipeline, index, question=Q_CTS, options=OPT_CTS, rules=RULES, **over):
    cfg = config(**over)
    backend = ScriptedBackend(rules)
    claim = Claim(question, metadata={"options": options})
    result = run_check(claim, get_pipeline(pipeline, cfg), Model(backend), cfg, retriever=index.retriever())
    return result, backend


def steps(result, stage):
    return [s for s in result.trace if s["stage"] == stage]


def prompts(backend, pattern):
    return [c.messages[-1][1] for c in backend.calls if re.search(pattern, c.messages[-1][1])]


# ------------------------------------------------------------------------------------ sentences


def test_medical_answers_split_into_sentences_as_a_reader_would():
    text = (
        "**(E) Surgical pinning of the femoral head**\n\n"
        "The boy is obese and 13 years old, i.e. the typical age for SCFE. Pain is often referred to the "
        "knee (e.g. in 15-20% of cases). Dr. Salter's classification does not apply here; 0.5 mg/kg vs. "
        "1 mg/kg doses are irrelevant.\n"
        "The other options are wrong:\n"
        "* (A) Casting is for fractures\n"
        "* (B) A Pavlik harness is for infants.\n\n"
        "Therefore, the answer is E."
    )
    assert split_sentences(text) == [
        "**(E) Surgical pinning of the femoral head**",
        "The boy is obese and 13 years old, i.e. the typical age for SCFE.",
        "Pain is often referred to the knee (e.g. in 15-20% of cases).",
        "Dr. Salter's classification does not apply here; 0.5 mg/kg vs. 1 mg/kg doses are irrelevant.",
        "The other options are wrong:",
        "* (A) Casting is for fractures",
        "* (B) A Pavlik harness is for infants.",
        "Therefore, the answer is E.",
    ]
    # a hard-wrapped sentence stays one sentence; text with no boundary at all is one sentence
    assert split_sentences("Lithium causes nephrogenic\ndiabetes insipidus. It is common.") == [
        "Lithium causes nephrogenic diabetes insipidus.",
        "It is common.",
    ]
    assert split_sentences("lithium causes nephrogenic diabetes insipidus") == [
        "lithium causes nephrogenic diabetes insipidus"
    ]
    assert split_sentences("  **  \n---\n") == []


# ------------------------------------------------------------------------------------ the fact-checker


def test_each_sentence_gets_a_query_with_the_question_evidence_and_a_rating(index):
    result, backend, tracer = check_answer(PLAIN_CTS, index_=index)
    assert [s.sentence for s in result.sentences] == [
        "Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger.",
        "It is a disorder of the tendons rather than of a nerve.",
        "So the answer is B.",
    ]
    assert [s.query for s in result.sentences] == [QUERIES[s.sentence] for s in result.sentences]
    assert [s.rating for s in result.sentences] == ["Supported", "Not Supported", "Not Supported"]
    assert [[e.doc_id for e in s.evidence] for s in result.sentences] == [
        ["cts-symptoms"],
        ["cts-cause"],
        ["cts-release"],
    ]
    assert result.score == pytest.approx(1 / 3) and (result.supported, result.checked) == (1, 3)
    assert [s.reasoning for s in result.sentences] == ["The passage addresses this statement."] * 3
    # every query prompt shows the question and its own sentence, as the last thing before the query
    qp = prompts(backend, QUERY)
    assert len(qp) == 3
    for p, s in zip(qp, result.sentences):
        assert p.endswith(f"QUESTION:\n{Q_CTS}\nSTATEMENT:\n{s.sentence}\nSearch query:")
    # the rater saw the passage retrieved for the sentence, the question and its reasoning before deciding
    decide = prompts(backend, DECIDE)[1]
    assert "[1] Carpal tunnel syndrome: Carpal tunnel syndrome is an entrapment neuropathy" in decide
    assert decide.endswith(
        f"QUESTION:\n{Q_CTS}\nSTATEMENT:\nIt is a disorder of the tendons rather than of a "
        "nerve.\nReasoning: The passage addresses this statement.\nFinal answer:"
    )
    trace = [s.to_dict() for s in tracer.steps]
    per_sentence = [s for s in trace if s["stage"] == "leaf_sentence"]
    assert [(s["index"], s["rating"], s["evidence"][0]["doc_id"]) for s in per_sentence] == [
        (1, "Supported", "cts-symptoms"),
        (2, "Not Supported", "cts-cause"),
        (3, "Not Supported", "cts-release"),
    ]
    assert [s for s in trace if s["stage"] == "leaf_score"][0]["score"] == pytest.approx(1 / 3)
    calls = {s["for_stage"] for s in trace if s["stage"] == "model_call"}
    assert calls == {"leaf_query", "leaf_rating"}


def test_without_reasoning_the_rater_decides_at_once_and_a_bad_query_falls_back(index):
    rules = [(QUERY, "\n\n")] + RULES[1:]
    result, backend, tracer = check_answer(
        "So the answer is B.", rules, index_=index, **{"leaf.rater_reasoning": False}
    )
    s = result.sentences[0]
    assert s.query == "So the answer is B." and s.rating == "Not Supported"  # searched for the sentence itself
    assert not prompts(backend, r"Reasoning:$")
    assert prompts(backend, DECIDE)[0].endswith("STATEMENT:\nSo the answer is B.\nFinal answer:")
    failures = [st.data for st in tracer.steps if st.stage == "parse_failure"]
    assert failures and failures[0]["for_stage"] == "leaf_query"
    assert result.parse_failures


def test_a_rating_naming_neither_label_counts_as_not_supported_and_is_recorded(index):
    rules = [(DECIDE, " Hmm, hard to say."), (r"Reply with that word only.\n$", " Still unsure.")] + RULES
    result, _, tracer = check_answer(
        "Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger.", rules, index_=index
    )
    assert result.sentences[0].rating is None and result.score == 0.0
    assert any(st.stage == "parse_failure" and st.data["for_stage"] == "leaf_rating" for st in tracer.steps)


def test_a_long_answer_is_capped_and_the_result_says_so(index):
    long = " ".join(["Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger."] * 5)
    result, backend, tracer = check_answer(long, index_=index, **{"leaf.max_sentences": 2})
    assert result.checked == 2 and result.total_sentences == 5 and result.capped
    assert "5 sentences" in result.note and "first 2" in result.note
    assert len(prompts(backend, QUERY)) == 2
    assert result.to_dict()["capped"] is True
    assert any(st.stage == "leaf_note" for st in tracer.steps)


def test_empty_answer_missing_and_empty_index_are_clear_errors(index):
    for text in ("", "   \n ", "**"):
        with pytest.raises(UserError, match="answer"):
            check_answer(text, index_=index)
    checker = AnswerChecker.from_config(config())
    model = Model(ScriptedBackend(RULES)).bind(UsageMeter(), Tracer())
    with pytest.raises(UserError, match="needs an index"):
        checker.check(Q_CTS, PLAIN_CTS, model=model, retriever=None, tracer=Tracer())
    empty = Index([], index._bm25, None, {"passages": 0})  # an index that holds no passage
    with pytest.raises(UserError, match="is empty"):
        checker.check(Q_CTS, PLAIN_CTS, model=model, retriever=empty.retriever(), tracer=Tracer())


# ------------------------------------------------------------------------------------ answering


def test_plain_answer_letter_comes_from_choose_and_the_leaf_result_is_in_the_trace(index):
    rules = [(LETTER, " A")] + RULES  # the decision says A although the answer's text says B
    result, backend = run_answer("answer:plain", index, rules=rules)
    v = result.verdict
    assert v.label == "A" and v.rationale == PLAIN_CTS
    choose_calls = [c for c in backend.calls if re.search(LETTER, c.messages[-1][1])]
    assert len(choose_calls) == 1
    assert (
        choose_calls[0]
        .messages[-1][1]
        .endswith(
            f"OPTIONS:\nA. yes\nB. no\n\nANSWER:\n{PLAIN_CTS}\n\nOf the options A or B, the one this answer chooses is option"
        )
    )
    final = steps(result, "leaf_final")[0]
    assert (final["letter"], final["option"], final["checked"], final["supported"]) == ("A", "yes", 3, 1)
    assert steps(result, "mc_answer")[0]["stated"] == "B"  # what the text says is kept for analysis only
    assert final["score"] == pytest.approx(1 / 3)
    assert len(steps(result, "leaf_sentence")) == 3
    # the answer prompt showed the question and the options, and no knowledge
    plain_prompt = prompts(backend, ANSWER)[0]
    assert f"QUESTION:\n{Q_CTS}\n\nOPTIONS:\nA. yes\nB. no\n\nANSWER:" in plain_prompt
    assert "KNOWLEDGE" not in plain_prompt
    # the fact-checker's context is the question with its options
    assert prompts(backend, QUERY)[0].endswith(
        f"QUESTION:\n{Q_CTS}\nA. yes\nB. no\nSTATEMENT:\n"
        f"{result.trace[[s['stage'] for s in result.trace].index('leaf_sentence')]['sentence']}"
        "\nSearch query:"
    )
    assert {"answer", "answer_choice", "leaf_query", "leaf_rating"} <= set(result.usage["by_stage"])


def test_a_parsed_decision_is_read_robustly_not_naively(index):
    # backends that answer in text (HTTP, scripted) go through the parse-and-retry `choose`, whose plain
    # word match would take the article "a" for option A; the letter is re-read from the reply
    rules = [(LETTER, " As a result, the answer is B.")] + RULES
    result, _ = run_answer("answer:plain", index, rules=rules)
    assert result.verdict.label == "B"
    assert steps(result, "mc_answer")[0]["method"] == "extracted from the reply"


def test_an_answer_with_no_readable_letter_is_unanswered_not_guessed(index):
    rules = [
        (ANSWER, "I am not sure about this one."),
        (LETTER, " Well, it depends."),
        (r"Reply with that word only.\n$", " It depends."),
    ] + RULES
    result, _ = run_answer("answer:plain", index, rules=rules)
    assert result.verdict.label == "(no answer)"
    assert any("answer_choice" in p for p in result.verdict.parse_failures)


@pytest.mark.parametrize(
    "text,options,expected",
    [
        ("Therefore, the correct answer is (E) Surgical pinning of the femoral head.", "ABCDE", "E"),
        ("As a result, the answer is B.", "ABCD", "B"),  # the article "a" is not option A
        ("(C)", "ABCD", "C"),
        ("B. no", "AB", "B"),
        ("**Final answer: D**", "ABCD", "D"),
        ("The answer is yes.", {"A": "yes", "B": "no", "C": "maybe"}, "A"),
        ("maybe", {"A": "yes", "B": "no", "C": "maybe"}, "C"),
        ("Therefore the answer is D. Option A is wrong.", "ABCD", "D"),
        ("Option A is wrong and option B is wrong too.", "ABCD", None),
        ("a patient with a cough", "ABCD", None),
    ],
)
def test_letters_are_read_robustly_from_free_text(text, options, expected):
    if isinstance(options, str):
        options = {k: f"option {k}" for k in options}
    assert extract_letter(text, options) == expected


def test_rag_puts_the_passages_retrieved_for_the_question_in_the_prompt(index):
    result, backend = run_answer("answer:rag", index, **{"leaf.rag_top_k": 2})
    retrieval = steps(result, "retrieval")[0]
    assert retrieval["query"] == Q_CTS and len(retrieval["results"]) == 2
    prompt = prompts(backend, "documents that may be relevant")[0]
    for r in retrieval["results"]:
        assert " ".join(r["text"].split()) in prompt
    assert result.verdict.label == "A" and result.verdict.rationale == RAG_CTS
    assert steps(result, "leaf_final")[0]["score"] == 1.0


def test_fc_rag_regenerates_with_exactly_the_failed_sentences_documents_and_stops_at_1(index):
    result, backend = run_answer("answer:fc-rag", index)
    answers = steps(result, "mc_answer")
    assert [(a["round"], a["kind"], a["letter"]) for a in answers] == [(0, "plain", "B"), (1, "fc-rag", "A")]
    # the knowledge: the passages retrieved for sentences 2 and 3 (not supported), not sentence 1's
    failed_ids = [
        s["evidence"][0]["doc_id"] for s in steps(result, "leaf_sentence") if s["round"] == 0 and not s["supported"]
    ]
    assert failed_ids == ["cts-cause", "cts-release"]
    rnd = steps(result, "fc_rag_round")[0]
    assert rnd["failed_sentences"] == [2, 3] and [e["doc_id"] for e in rnd["knowledge"]] == failed_ids
    fc_prompt = prompts(backend, r"^Pick the correct answer")[0]
    knowledge = fc_prompt.split("KNOWLEDGE:\n", 1)[1].split("\n\nQUESTION:", 1)[0]
    assert knowledge.splitlines() == [  # quoted as data (issue 11)
        "<result>",
        "[1] Carpal tunnel syndrome: " + DOCS[1].text,
        "[2] Carpal tunnel release: " + DOCS[2].text,
        "</result>",
    ]
    assert "Numbness and tingling" not in fc_prompt  # sentence 1 passed: its passage stays out
    # the new answer is checked again; it scores 1.0, so there is no second round
    assert [s["score"] for s in steps(result, "leaf_score")] == [pytest.approx(1 / 3), 1.0]
    done = steps(result, "fc_rag_done")[0]
    assert (done["rounds"], done["stop"], done["chosen_round"]) == (1, "score 1.0", 1)
    assert result.verdict.label == "A" and result.verdict.rationale == FC_CTS
    assert len(prompts(backend, ANSWER)) == 2


def test_fc_rag_stops_after_max_rounds_and_keeps_the_best_scoring_answer(index):
    round_answers = [
        "It is a disorder of the tendons rather than of a nerve. So the answer is B.",  # round 0: 0/2
        "Carpal tunnel syndrome is an entrapment neuropathy of the median nerve at the wrist. So the answer is B.",  # 1/2
        "It is a disorder of the tendons rather than of a nerve. So the answer is B.",  # round 2: 0/2
        "never used",
    ]
    rules = [(ANSWER, round_answers)] + RULES
    result, backend = run_answer("answer:fc-rag", index, rules=rules, **{"leaf.max_rounds": 2})
    assert len(prompts(backend, ANSWER)) == 3  # the first answer and two regenerations
    assert [s["score"] for s in steps(result, "leaf_score")] == [0.0, 0.5, 0.0]
    done = steps(result, "fc_rag_done")[0]
    assert (done["rounds"], done["stop"], done["chosen_round"]) == (2, "max_rounds", 1)
    assert result.verdict.rationale == round_answers[1]
    assert steps(result, "leaf_final")[0]["score"] == 0.5
    # a round whose failed sentences bring the same passages as an earlier round would repeat itself: stop
    rules = [(ANSWER, "So the answer is B.")] + RULES
    result, backend = run_answer("answer:fc-rag", index, rules=rules, **{"leaf.max_rounds": 3})
    assert len(prompts(backend, ANSWER)) == 2
    assert steps(result, "fc_rag_done")[0]["stop"] == "the failed sentences brought no new passages"
    # with no rounds allowed, FC-RAG is the plain answer
    result, backend = run_answer("answer:fc-rag", index, rules=rules, **{"leaf.max_rounds": 0})
    assert len(prompts(backend, ANSWER)) == 1 and steps(result, "fc_rag_done")[0]["rounds"] == 0


def test_ranking_sampled_answers_keeps_the_highest_leaf_score(index):
    by_seed = {
        0: "It is a disorder of the tendons rather than of a nerve. So the answer is B.",
        1: FC_CTS,
        2: PLAIN_CTS,
    }
    rules = [(ANSWER, lambda req: by_seed[req.seed])] + RULES
    result, backend = run_answer("answer:rank-3", index, rules=rules)
    sampled = [c for c in backend.calls if re.search(ANSWER, c.messages[-1][1])]
    assert [c.seed for c in sampled] == [0, 1, 2] and all(c.temperature == 0.8 for c in sampled)
    samples = steps(result, "leaf_samples")[0]
    assert [(s["letter"], s["score"]) for s in samples["samples"]] == [
        ("B", 0.0),
        ("A", 1.0),
        ("B", pytest.approx(1 / 3)),
    ]
    assert samples["chosen"] == 1 and result.verdict.label == "A"


def test_options_that_do_not_parse_are_one_line_errors(tmp_path, index):
    assert parse_options({"A": "yes", "B": "no"}) == {"A": "yes", "B": "no"}
    assert parse_options(["first", "second"]) == {"A": "first", "B": "second"}
    bad = {
        "not json": "{A: yes",
        "a list of one": '["only"]',
        "an empty text": '{"A": "yes", "B": "  "}',
        "a bad key": '{"A": "yes", "option two": "no"}',
        "a number": "42",
    }
    messages = {}
    for what, content in bad.items():
        f = tmp_path / f"{what.replace(' ', '_')}.json"
        f.write_text(content)
        with pytest.raises(UserError) as e:
            load_options_file(f)
        messages[what] = str(e.value)
        assert "\n" not in messages[what]
    assert "not valid JSON" in messages["not json"]
    assert "at least two options" in messages["a list of one"]
    assert "option B has no text" in messages["an empty text"]
    assert "'option two'" in messages["a bad key"]
    with pytest.raises(UserError, match="not found"):
        load_options_file(tmp_path / "missing.json")
    # a question without options cannot go through an answer pipeline
    cfg = config()
    with pytest.raises(UserError, match="needs options"):
        run_check(
            Claim(Q_CTS),
            get_pipeline("answer:plain", cfg),
            Model(ScriptedBackend(RULES)),
            cfg,
            retriever=index.retriever(),
        )


def test_the_rater_is_a_separate_model(tmp_path, index):
    rater_rules = tmp_path / "rater.json"
    rater_rules.write_text(
        json.dumps(
            {
                "rules": [
                    {"match": "Search query:$", "reply": " carpal tunnel"},
                    {"match": "Reasoning:$", "reply": " The rater's own view."},
                    {"match": "Final answer:$", "reply": " Supported"},
                ]
            }
        )
    )
    answer_rules = [(ANSWER, answer), (LETTER, letter)]  # the answering model knows no LEAF prompt
    result, backend = run_answer(
        "answer:plain", index, rules=answer_rules, **{"leaf.rater_model": f"scripted:{rater_rules}"}
    )
    assert not prompts(backend, QUERY) and not prompts(backend, DECIDE)
    final = steps(result, "leaf_final")[0]
    assert final["rater"] == "scripted:rater.json" and final["score"] == 1.0
    assert {s["query"] for s in steps(result, "leaf_sentence")} == {"carpal tunnel"}
    assert result.usage["by_stage"]["leaf_rating"]["calls"] == 6  # metered in the same run
    assert "answer:fc-rag" in available_pipelines() and "answer:rank-5" in available_pipelines()


# ------------------------------------------------------------------------------------ evaluation


def test_run_eval_on_a_mirage_shaped_set_then_filtered_accuracy_and_auc(tmp_path):
    items = [
        EvalItem(
            id="t:1",
            claim=Claim(Q_CTS, id="t:1", metadata={"task": "t", "options": OPT_CTS}),
            gold="A",
            metadata={"task": "t", "options": OPT_CTS},
        ),
        EvalItem(
            id="t:2",
            claim=Claim(Q_LI, id="t:2", metadata={"task": "t", "options": OPT_LI}),
            gold="B",
            metadata={"task": "t", "options": OPT_LI},
        ),
    ]
    ds = Dataset(
        name="mirage:t",
        setting="multiple-choice",
        labels=("A", "B", "C"),
        metric="accuracy",
        items=items,
        knowledge_base=DOCS,
    )
    out = tmp_path / "run"
    summary = run_eval(
        ds, ["answer:plain", "answer:fc-rag"], Model(ScriptedBackend(RULES)), config(), out, progress=False
    )
    assert summary.done == 4 and summary.errors == 0
    rows = read_rows(out)
    got = {(r["pipeline"], r["id"]): (r["pred"], r["correct"]) for r in rows}
    assert got == {
        ("answer:plain", "t:1"): ("B", False),
        ("answer:plain", "t:2"): ("B", True),
        ("answer:fc-rag", "t:1"): ("A", True),
        ("answer:fc-rag", "t:2"): ("B", True),
    }
    s = {x["pipeline"]: x for x in summarize(rows)}
    assert s["answer:plain"]["accuracy"] == 0.5 and s["answer:fc-rag"]["accuracy"] == 1.0
    # the wrong plain answer scored 1/3, the right one 1.0: only the right one passes
    assert s["answer:plain"]["passing"] == 1 and s["answer:plain"]["filtered_accuracy"] == 1.0
    assert s["answer:plain"]["auc"] == 1.0
    assert s["answer:fc-rag"]["auc"] is None  # every answer right: nothing to separate
    assert s["answer:plain"]["stated_accuracy"] == 0.5  # the texts name B and B (the scripted letters agree)
    assert "| mirage:t | answer:plain | 2 | 50.0 |" in to_markdown(summarize(rows))


def test_auc_by_the_rank_formula():
    assert auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == 0.75
    assert auc([1.0, 1.0, 0.0, 0.0], [True, False, True, False]) == 0.5  # ties share ranks
    assert auc([0.2, 0.9], [False, True]) == 1.0 and auc([0.9, 0.2], [False, True]) == 0.0
    assert auc([0.5, 0.7], [True, True]) is None


# ------------------------------------------------------------------------------------ the command line


@pytest.fixture
def cli_setup(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(CLI_RULES))
    Index.build(DOCS, tmp_path / "idx")
    options = tmp_path / "options.json"
    options.write_text(json.dumps(OPT_CTS))
    return {"model": f"scripted:{rules}", "index": str(tmp_path / "idx"), "options": str(options)}


def veracity(*args, env, stdin=None):
    return subprocess.run(
        veracity_cmd() + [str(a) for a in args], capture_output=True, env=env, input=stdin, timeout=120
    )


def test_cli_leaf_score_prints_each_sentence_its_evidence_and_the_score(cli_setup, cli_env, tmp_path):
    s = cli_setup
    r = veracity(
        "leaf",
        "score",
        "--question",
        Q_CTS,
        "--answer",
        PLAIN_CTS,
        "--index",
        s["index"],
        "--model",
        s["model"],
        "--top-k",
        "1",
        env=cli_env,
    )
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "[1] Supported: Carpal tunnel syndrome causes numbness" in out
    assert "[2] Not Supported: It is a disorder of the tendons" in out
    assert "query: carpal tunnel median nerve compressed entrapment" in out
    assert "evidence: Carpal tunnel syndrome is an entrapment neuropathy" in out and "— Carpal tunnel syndrome" in out
    assert "LEAF score: 0.33 (1 of 3 sentences supported)" in out
    # the same as JSON, the answer read from a file
    f = tmp_path / "answer.txt"
    f.write_text(PLAIN_CTS)
    r = veracity(
        "leaf",
        "score",
        "--question",
        Q_CTS,
        "--answer-file",
        f,
        "--index",
        s["index"],
        "--model",
        s["model"],
        "--top-k",
        "1",
        "--json",
        env=cli_env,
    )
    doc = json.loads(r.stdout)
    assert doc["leaf"]["score"] == pytest.approx(1 / 3)
    assert [x["supported"] for x in doc["leaf"]["sentences"]] == [True, False, False]
    assert doc["leaf"]["sentences"][1]["evidence"][0]["doc_id"] == "cts-cause"


def test_cli_leaf_answer_fc_rag(cli_setup, cli_env):
    s = cli_setup
    r = veracity(
        "leaf",
        "answer",
        "--question",
        Q_CTS,
        "--options",
        s["options"],
        "--index",
        s["index"],
        "--mode",
        "fc-rag",
        "--model",
        s["model"],
        "--top-k",
        "1",
        "--json",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(r.stdout)
    assert doc["answer"]["letter"] == "A" and doc["answer"]["option"] == "yes"
    assert doc["answer"]["leaf_score"] == 1.0 and doc["answer"]["rounds"] == 1
    assert doc["verdict"]["label"] == "A" and doc["answer"]["text"] == FC_CTS
    r = veracity(
        "leaf",
        "answer",
        "--question",
        Q_CTS,
        "--options",
        s["options"],
        "--index",
        s["index"],
        "--mode",
        "plain",
        "--model",
        s["model"],
        "--top-k",
        "1",
        env=cli_env,
    )
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "Answer: B. no" in out and "LEAF score: 0.33 (1 of 3 sentences supported)" in out


@pytest.mark.parametrize("case", ["bad options", "empty answer", "no index", "empty index folder"])
def test_cli_leaf_bad_input_is_one_line(case, cli_setup, cli_env, tmp_path):
    s = cli_setup
    if case == "bad options":
        bad = tmp_path / "bad.json"
        bad.write_text('{"A": "yes"}')
        args = ["answer", "--question", Q_CTS, "--options", bad, "--index", s["index"]]
        expect = "at least two options"
    elif case == "empty answer":
        args = ["score", "--question", Q_CTS, "--answer", "  ", "--index", s["index"]]
        expect = "the answer is empty"
    elif case == "no index":
        args = ["score", "--question", Q_CTS, "--answer", PLAIN_CTS]
        expect = "needs an index"
    else:
        (tmp_path / "empty").mkdir()
        args = ["score", "--question", Q_CTS, "--answer", PLAIN_CTS, "--index", tmp_path / "empty"]
        expect = "not a veracity index"
    r = veracity("leaf", *args, "--model", s["model"], env=cli_env)
    err = r.stderr.decode()
    assert r.returncode == 2 and expect in err and len(err.strip().splitlines()) == 1, err


# ------------------------------------------------------------------------------------ the embedded model


@pytest.mark.embedded
@pytest.mark.native
def test_embedded_model_scores_a_short_answer_end_to_end(tmp_path):
    Index.build(DOCS, tmp_path / "idx")
    cfg = load_config(overrides={"index": str(tmp_path / "idx"), "n_threads": 2, "n_ctx": 4096, "cache": False}, env={})
    from veracity.check import open_retriever
    from veracity.llm import make_model

    tracer, meter = Tracer(), UsageMeter()
    result = AnswerChecker.from_config(cfg).check(
        f"{Q_CTS}\nA. yes\nB. no",
        "Carpal tunnel syndrome is compression of the median nerve at the wrist. So the answer is A.",
        model=make_model(cfg).bind(meter, tracer),
        retriever=open_retriever(cfg),
        tracer=tracer,
    )
    assert result.checked == 2
    for s in result.sentences:
        assert s.query.strip() and s.evidence and s.rating in ("Supported", "Not Supported")
        assert s.confidence is not None and 0.5 <= s.confidence <= 1.0  # scored, not parsed
    assert result.score in (0.0, 0.5, 1.0)


def test_cli_eval_on_mirage_with_a_config_file_then_leaf_report(cli_setup, cli_env, tmp_path):
    s = cli_setup
    data = tmp_path / "mirage_tiny.json"
    data.write_text(json.dumps({"bioasq": {"q1": {"question": Q_CTS, "options": OPT_CTS, "answer": "A"}}}))
    cfg = tmp_path / "leaf.toml"
    cfg.write_text("[leaf]\ntop_k = 1\nmax_rounds = 1\n")
    out = tmp_path / "out"
    r = veracity(
        "eval",
        "--dataset",
        "mirage",
        "--path",
        data,
        "--pipeline",
        "answer:plain",
        "--pipeline",
        "answer:fc-rag",
        "--index",
        s["index"],
        "--model",
        s["model"],
        "--config",
        cfg,
        "--out",
        out,
        "--no-progress",
        "--no-plots",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr.decode()
    r = veracity("leaf", "report", out, env=cli_env)
    lines = r.stdout.decode().splitlines()
    assert r.returncode == 0, r.stderr.decode()
    assert "| mirage | answer:fc-rag | 1 | 100.0 | 1.000 | 1 | 100.0 | – |" in lines
    assert "| mirage | answer:plain | 1 | 0.0 | 0.333 | 0 | – | – |" in lines


@pytest.mark.skipif(not (WEIGHTS_DIR / "verifier.json").is_file(), reason="no trained verifier")
def test_with_the_verifier_on_the_rater_model_writes_queries_and_the_verifier_rates(index):
    only_queries = [(QUERY, write_query)]  # a rating prompt would match no rule and fail the test
    text = "Carpal tunnel syndrome is caused by compression of the median nerve at the wrist."
    result, backend, tracer = check_answer(text, rules=only_queries, index_=index, **{"verifier.use": "on"})
    assert result.checked == 1 and not prompts(backend, DECIDE)
    s = result.sentences[0]
    verified = [x for x in tracer.to_list() if x["stage"] == "evidence_verifier"]
    assert len(verified) == 1 and s.rating == verified[0]["label"] and s.rating in ("Supported", "Not Supported")
    assert s.reasoning.startswith(f"Label {s.rating}") and s.confidence == verified[0]["confidence"]


RIVERS = [
    Document(
        id="danube",
        title="Danube",
        text="The Danube is the second-longest river in Europe. It flows through Vienna, Bratislava, "
        "Budapest and Belgrade.",
    ),
    Document(id="seine", title="Seine", text="The Seine is a river in northern France. It flows through Paris."),
]


@pytest.mark.skipif(not (WEIGHTS_DIR / "verifier.json").is_file(), reason="no trained verifier")
def test_the_verifier_reads_a_sentence_with_its_pronoun_resolved_and_searches_with_it():
    """With no model writing queries (the proxy's verifier mode), "It flows through Paris." as its own query finds
    the Seine, which does flow through Paris: the sentence means the Danube, and is read and searched as such."""
    cfg = config(**{"verifier.use": "on"})
    tracer = Tracer()
    checker = AnswerChecker.from_config(cfg, write_queries=False)
    answer = "The Danube is a river in Europe. It flows through Paris. He lost it."
    result = checker.check(
        "Tell me about the Danube.",
        answer,
        model=Model(ScriptedBackend([])).bind(UsageMeter(), tracer),
        retriever=Index.from_documents(RIVERS).retriever(),
        tracer=tracer,
    )
    first, second, third = result.sentences
    assert second.sentence == "It flows through Paris." and second.read_as == "The Danube flows through Paris."
    assert second.query == second.read_as and [e.doc_id for e in second.evidence] == ["danube"]
    assert second.rating == "Not Supported"
    assert first.read_as == "" and first.query == first.sentence  # nothing to resolve: read as written
    assert third.read_as == "" and third.query == "He lost it."  # nobody "he" can be: left as written
    steps = [s for s in tracer.to_list() if s["stage"] == "leaf_sentence"]
    assert steps[1]["read_as"] == "The Danube flows through Paris." and "read_as" not in steps[0]
    # the verifier's reading in the trace is that of the resolved sentence against the Danube's page
    verified = [s for s in tracer.to_list() if s["stage"] == "evidence_verifier"][1]
    v = load_verifier("default").verify("The Danube flows through Paris.", [second.evidence[0].text])
    assert verified["probabilities"] == {k: round(x, 4) for k, x in v.probabilities.items()}
    # the check as printed says what was read
    from veracity.report.terminal import item_lines
    from veracity.steps import view_items

    printed = "\n".join(line for it in view_items(tracer.to_list()) for line in item_lines(it))
    assert "[2] Not Supported" in printed and "      read as: The Danube flows through Paris.\n" in printed
    assert printed.count("read as:") == 1
    # the proxy's units: the span of the sentence as written, and what was read
    from veracity.proxy.checking import result_view

    units = result_view(tracer.to_list(), answer)["units"]
    start = answer.index("It flows")
    assert units[1]["span"] == [start, start + len("It flows through Paris.")]
    assert units[1]["read_as"] == "The Danube flows through Paris." and "read_as" not in units[0]
    # as written, the same sentence is its own query and finds the Seine
    assert [e.doc_id for e in Index.from_documents(RIVERS).retriever().search(second.sentence, k=1)] == ["seine"]
