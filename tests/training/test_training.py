"""Self-training from LEAF fact-checks: sampling, building the SFT and SimPO sets, training.

Sampling and building run the real answerer, fact-checker and a real BM25 index, with scripted
replies (the world of test_leaf.py); one embedded test trains SmolLM2-135M for one step on the CPU
and loads the result through the hf: backend.
"""

import itertools
import json

import pytest
from conftest import veracity_cmd
from worlds import (
    ANSWER,
    DECIDE,
    DOCS,
    FC_CTS,
    LETTER,
    OPT_CTS,
    OPT_LI,
    PLAIN_CTS,
    PLAIN_LI,
    Q_CTS,
    Q_LI,
    QUERY,
    REASON,
    config,
    letter,
    rate,
    write_query,
)

from veracity.errors import UserError
from veracity.eval.datasets.records import EvalItem
from veracity.llm import Model
from veracity.llm.scripted import ScriptedBackend
from veracity.retrieval import Index
from veracity.training.building import PAIRS, SFT, build_sets
from veracity.training.sampling import SAMPLES, read_samples, sample_dataset
from veracity.training.split import load_or_make_split, make_split
from veracity.training.training import TrainSettings, train
from veracity.types import Claim


def item(qid, question, options, gold):
    meta = {"task": "t", "options": options}
    return EvalItem(id=qid, claim=Claim(question, id=qid, metadata=dict(meta)), gold=gold, metadata=meta)


ITEMS = [item("t:cts", Q_CTS, OPT_CTS, "A"), item("t:li", Q_LI, OPT_LI, "B")]


def rules():
    cts = itertools.cycle([PLAIN_CTS, FC_CTS])  # sampled answers alternate: 1/3 then 1.0

    def answer(req):
        return PLAIN_LI if "lithium" in req.messages[-1][1] else next(cts)

    return [
        (QUERY, write_query),
        (REASON, " The passage addresses this statement."),
        (DECIDE, rate),
        (ANSWER, answer),
        (LETTER, letter),
    ]


def sample(out, items=ITEMS, k=2):
    backend = ScriptedBackend(rules())
    model = Model(backend)
    n = sample_dataset(items, out, config(), model, model, Index.from_documents(DOCS).retriever(), k=k, temperature=0.8)
    return n, backend


def test_the_split_is_seeded_written_once_and_checked(tmp_path):
    ids = [f"q{i}" for i in range(10)]
    s = load_or_make_split(tmp_path, "mirage:t", ids, 3, seed=1)
    assert len(s["eval_ids"]) == 3 and sorted(s["eval_ids"] + s["train_ids"]) == sorted(ids)
    assert not set(s["eval_ids"]) & set(s["train_ids"])
    assert load_or_make_split(tmp_path, "mirage:t", ids, 3, seed=1) == s
    assert make_split(ids, 3, 1)["eval_ids"] == s["eval_ids"] and make_split(ids, 3, 2)["eval_ids"] != s["eval_ids"]
    with pytest.raises(UserError, match="same settings"):
        load_or_make_split(tmp_path, "mirage:t", ids, 4, seed=1)


def test_sampling_scores_each_answer_and_resumes(tmp_path):
    (done, skipped), backend = sample(tmp_path)
    assert (done, skipped) == (2, 0)
    rows = {r["id"]: r for r in read_samples(tmp_path / SAMPLES)}
    cts = rows["t:cts"]
    assert cts["question"] == Q_CTS and cts["options"] == OPT_CTS and cts["gold"] == "A"
    assert [s["text"] for s in cts["samples"]] == [PLAIN_CTS, FC_CTS]
    assert [s["letter"] for s in cts["samples"]] == ["B", "A"]
    assert [s["score"] for s in cts["samples"]] == [pytest.approx(1 / 3), 1.0]
    assert [x["supported"] for x in cts["samples"][0]["sentences"]] == [True, False, False]
    assert cts["samples"][0]["sentences"][1]["evidence"][0]["doc_id"] == "cts-cause"
    assert "ANSWER:" in cts["prompt"] and Q_CTS in cts["prompt"]
    # answers are sampled at the temperature, one seed per sample
    answers = [c for c in backend.calls if c.messages[-1][1].rstrip().endswith("ANSWER:")]
    assert [(c.temperature, c.seed) for c in answers][:2] == [(0.8, 0), (0.8, 1)]
    # a second run skips what is there; a new question is added
    extra = item("t:li2", Q_LI + " (again)", OPT_LI, "B")
    (done, skipped), _ = sample(tmp_path, items=ITEMS + [extra])
    assert (done, skipped) == (1, 2)
    assert [r["id"] for r in read_samples(tmp_path / SAMPLES)] == ["t:cts", "t:li", "t:li2"]


def test_build_writes_sft_from_passing_answers_and_pairs_from_best_vs_worst(tmp_path):
    sample(tmp_path)
    res = build_sets(tmp_path)
    sft = [json.loads(x) for x in (tmp_path / SFT).read_text().splitlines()]
    pairs = [json.loads(x) for x in (tmp_path / PAIRS).read_text().splitlines()]
    # passing: FC_CTS (1.0) and PLAIN_LI (1.0, twice the same text: kept once)
    assert [(r["id"], r["completion"]) for r in sft] == [("t:cts", FC_CTS), ("t:li", PLAIN_LI)]
    assert all("ANSWER:" in r["prompt"] for r in sft)
    # lithium: both answers scored 1.0, a tie: no pair
    assert len(pairs) == 1 and pairs[0]["id"] == "t:cts"
    assert (pairs[0]["chosen"], pairs[0]["rejected"]) == (FC_CTS, PLAIN_CTS)
    assert set(pairs[0]) >= {"prompt", "chosen", "rejected"}
    assert (res.sft, res.pairs, res.ties) == (2, 1, 1)


def write_failing_samples(out):
    out.mkdir(parents=True, exist_ok=True)
    row = {
        "id": "t:cts",
        "question": Q_CTS,
        "options": OPT_CTS,
        "gold": "A",
        "prompt": "Q?\nANSWER:",
        "samples": [
            {"text": PLAIN_CTS, "letter": "B", "score": 1 / 3},
            {"text": "It is a tendon disorder.", "letter": "B", "score": 0.0},
        ],
    }
    (out / SAMPLES).write_text(json.dumps(row) + "\n")


def test_no_passing_answers_is_a_clear_message_and_train_refuses(tmp_path):
    write_failing_samples(tmp_path)
    res = build_sets(tmp_path)
    assert res.sft == 0 and (tmp_path / SFT).read_text() == ""
    assert "no answer scored 1.0" in res.message and "sft.jsonl is empty" in res.message
    assert res.pairs == 1
    with pytest.raises(UserError, match="no sampled answer scored 1.0"):
        train(tmp_path, "embedded", TrainSettings(method="sft"))


def test_cli_build_then_train_with_no_passing_answers(tmp_path, cli_env):
    import subprocess

    out = tmp_path / "run"
    write_failing_samples(out)
    r = subprocess.run(
        veracity_cmd() + ["selftrain", "build", "--out", str(out)], capture_output=True, env=cli_env, timeout=120
    )
    assert r.returncode == 0, r.stderr.decode()
    assert "no answer scored 1.0" in r.stdout.decode()
    r = subprocess.run(
        veracity_cmd() + ["selftrain", "train", "--out", str(out)], capture_output=True, env=cli_env, timeout=120
    )
    err = r.stderr.decode()
    assert r.returncode == 2 and "is empty: no sampled answer scored 1.0" in err and len(err.strip().splitlines()) == 1


@pytest.mark.embedded
@pytest.mark.parametrize("method", ["sft", "simpo"])
def test_one_real_training_step_saves_a_model_that_loads_as_a_backend(tmp_path, method):
    pytest.importorskip("trl")
    from veracity.config import load_config
    from veracity.llm import CompletionRequest, make_backend

    sample(tmp_path)
    build_sets(tmp_path)
    info = train(
        tmp_path,
        "embedded",
        TrainSettings(method=method, max_steps=1, batch_size=1, limit=1, max_length=384, threads=2),
    )
    assert info["steps"] == 1 and (tmp_path / "model" / "config.json").is_file()
    backend = make_backend(load_config(overrides={"model": info["backend"], "n_threads": 2}, env={}))
    choice = backend.choose(CompletionRequest.of("Is the sky blue? Answer yes or no."), ["yes", "no"])
    assert choice.option in ("yes", "no") and choice.method == "logprob"
    assert sum(choice.probabilities.values()) == pytest.approx(1.0)


def test_evaluate_compares_models_on_the_held_apart_questions_only(tmp_path):
    from worlds import CLI_RULES

    from veracity.eval.datasets.records import Dataset
    from veracity.training.evaluation import evaluate, to_text

    before = tmp_path / "before.json"
    before.write_text(json.dumps(CLI_RULES))  # answers PLAIN_CTS: letter B, wrong
    after_rules = {
        "rules": [r if r["match"] != "ANSWER:$" else {"match": "ANSWER:$", "reply": FC_CTS} for r in CLI_RULES["rules"]]
    }
    after = tmp_path / "after.json"
    after.write_text(json.dumps(after_rules))
    ds = Dataset(
        name="mirage:t",
        setting="multiple-choice",
        labels=("A", "B", "C"),
        metric="accuracy",
        items=[ITEMS[0], item("t:other", "Unused question?", OPT_CTS, "A")],
    )
    (tmp_path / "split.json").write_text(
        json.dumps({"dataset": "mirage:t", "seed": 0, "n_eval": 1, "eval_ids": ["t:cts"], "train_ids": ["t:other"]})
    )
    table = evaluate(
        tmp_path,
        ds,
        {"before": f"scripted:{before}", "after": f"scripted:{after}"},
        config(cache=False),
        Index.from_documents(DOCS).retriever(),
        progress=False,
    )
    assert [(r["model"], r["n"], r["accuracy"]) for r in table] == [("before", 1, 0.0), ("after", 1, 1.0)]
    assert table[1]["mean_score"] == 1.0 and table[0]["mean_score"] == pytest.approx(1 / 3)
    assert table[0]["predicted"] == {"B": 1} and table[1]["predicted"] == {"A": 1}
    text = to_text(table)
    assert "| after | 1 | 100.0 | 1.000 | 1 | 100.0 | A 1 |" in text
    assert "most frequent gold option would score 100.0" in text
