"""AVeriTeC's scorer against hand-worked values, and the submission written from a scripted DEFAME run.

METEOR (NLTK's, as the official scorer calls it; alpha 0.9, beta 3, gamma 0.5):
    P = m / len(hypothesis), R = m / len(reference), Fmean = P R / (0.9 P + 0.1 R),
    penalty = 0.5 (chunks / m)^3, score = Fmean (1 - penalty)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from veracity.check import run_check
from veracity.config import load_config
from veracity.eval import averitec
from veracity.eval.averitec import claim_scores, evidence_pairs, gold_qa_strings, hungarian, submission_entry
from veracity.eval.datasets import load_dataset
from veracity.eval.meteor import has_wordnet, meteor, tokenize
from veracity.llm.model import Model
from veracity.llm.scripted import ScriptedBackend
from veracity.registry import get_pipeline
from veracity.retrieval.documents import Document
from veracity.retrieval.index import Index
from veracity.types import Claim

DEV = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks" / "averitec" / "dev_200.json"


def by_formula(m: int, hyp: int, ref: int, chunks: int) -> float:
    p, r = m / hyp, m / ref
    fmean = p * r / (0.9 * p + 0.1 * r)
    return fmean * (1 - 0.5 * (chunks / m) ** 3)


# --------------------------------------------------------------------------- METEOR


def test_identical_strings_score_one_less_the_fragmentation_penalty_of_one_chunk():
    # 6 words, all matched, 1 chunk: 1 - 0.5 / 6^3
    assert meteor("the cat sat on a mat", "the cat sat on a mat") == pytest.approx(1 - 0.5 / 216)
    assert meteor("x", "x") == pytest.approx(0.5)  # one word: one chunk of one match, penalty 0.5


def test_a_prefix_of_the_reference_and_nltks_alignment_of_a_repeated_word():
    # "the cat sat" in "the cat sat on the mat": 3 matches, P 1, R 1/2. NLTK aligns from the end, so the
    # hypothesis' "the" takes the reference's second "the": 2 chunks, not 1 (the official scorer does the same)
    assert meteor("the cat sat", "the cat sat on the mat") == pytest.approx(by_formula(3, 3, 6, 2))
    assert meteor("the cat sat", "the cat sat on the mat") == pytest.approx(0.448343, abs=1e-6)
    # without a repeated word the alignment is contiguous: 1 chunk
    assert meteor("a cat sat", "a cat sat on the mat") == pytest.approx(by_formula(3, 3, 6, 1))


def test_stem_matches():
    # dogs~dog, barked~barks by Porter stems: 2 matches, P 1, R 2/3, one chunk -> 0.646552
    assert meteor("dogs barked", "the dog barks") == pytest.approx(by_formula(2, 2, 3, 1))
    assert meteor("dogs barked", "the dog barks") == pytest.approx(0.646552, abs=1e-6)


def test_the_candidate_is_the_hypothesis_and_the_reference_the_gold():
    # P and R swap with the roles: 0.9 weighs recall, so the order matters
    assert meteor("the dog barks", "dogs barked") == pytest.approx(by_formula(2, 3, 2, 1))
    assert meteor("the dog barks", "dogs barked") != pytest.approx(meteor("dogs barked", "the dog barks"))


@pytest.mark.skipif(not has_wordnet(), reason="no WordNet (apt-get install wordnet-base, or NLTK's wordnet corpus)")
def test_synonym_matches_with_wordnet():
    # start~begin (WordNet synonyms, stems unchanged): 3 matches of 3, 1 chunk
    assert meteor("they start now", "they begin now") == pytest.approx(by_formula(3, 3, 3, 1))
    # car~automobile is not matched: NLTK compares the synonyms with the reference's Porter stem ("automobil")
    assert meteor("the car is red", "the automobile is red") == pytest.approx(by_formula(3, 4, 4, 2))


def test_tokenizer_splits_sentence_final_periods_like_word_tokenize():
    assert tokenize("Yes. The FBI did it.") == ["Yes", ".", "The", "FBI", "did", "it", "."]


# --------------------------------------------------------------------------- matching and the claim's scores


def table(values: dict[tuple[str, str], float]):
    return lambda p, g: values[(p, g)]


def test_hungarian_takes_the_best_assignment_not_the_greedy_one():
    metric = table({("a", "x"): 0.9, ("a", "y"): 0.8, ("b", "x"): 0.7, ("b", "y"): 0.0})
    # greedy takes a-x (0.9) then b-y (0.0): 0.45; the best is a-y + b-x = 1.5, over 2 gold strings
    assert hungarian(["a", "b"], ["x", "y"], metric) == pytest.approx(0.75)


def test_the_sum_is_divided_by_the_gold_count_and_extra_predictions_do_not_count():
    one = lambda p, g: 1.0 if p == g else 0.0  # noqa: E731
    assert hungarian(["x"], ["x", "y", "z"], one) == pytest.approx(1 / 3)
    assert hungarian(["x", "q", "r", "s"], ["x"], one) == pytest.approx(1.0)
    assert hungarian([], ["x"], one) == 0.0


def test_only_the_first_ten_pairs_are_read():
    one = lambda p, g: 1.0 if p.split()[0] == g.split()[0] else 0.0  # noqa: E731
    gold = [{"question": "g", "answers": [{"answer": "yes", "answer_type": "Abstractive"}]}]
    late = [{"question": f"q{i}", "answer": "a"} for i in range(10)] + [{"question": "g", "answer": "yes"}]
    assert claim_scores(late, "Refuted", "Refuted", gold, one)["qa"] == 0.0
    assert claim_scores(late[1:], "Refuted", "Refuted", gold, one)["qa"] == 1.0


def test_gold_strings_follow_the_scorer():
    gold = [
        {
            "question": "Q1?",
            "answers": [
                {"answer": "Yes", "answer_type": "Boolean", "boolean_explanation": "B."},
                {"answer": "It was.", "answer_type": "Extractive"},
            ],
        },
        {"question": "Q2?", "answers": []},
    ]
    assert gold_qa_strings(gold) == ["Q1? Yes. B.", "Q1? It was.", "Q2? No answer could be found."]


def test_the_averitec_score_needs_the_right_label_and_qa_above_the_threshold():
    gold = [{"question": "g", "answers": [{"answer": "a", "answer_type": "Abstractive"}]}]
    pred = [{"question": "p", "answer": "a"}]
    for qa, label, expected in [
        (0.26, "Refuted", 1.0),
        (0.24, "Refuted", 0.0),
        (0.25, "Refuted", 0.0),
        (0.9, "Supported", 0.0),
    ]:
        s = claim_scores(pred, label, "Refuted", gold, lambda p, g, v=qa: v)
        assert s["qa"] == pytest.approx(qa) and s["averitec"] == expected, (qa, label)


def test_a_claim_without_predicted_evidence_scores_zero():
    gold = [{"question": "Was it?", "answers": [{"answer": "Yes", "answer_type": "Abstractive"}]}]
    assert claim_scores([], "Refuted", "Refuted", gold) == {"q_only": 0.0, "qa": 0.0, "correct": 1.0, "averitec": 0.0}


def test_real_meteor_through_the_claim_scores():
    gold = [{"question": "Did the dog bark?", "answers": [{"answer": "The dog barks", "answer_type": "Abstractive"}]}]
    pred = [{"question": "Did the dog bark?", "answer": "The dog barks"}]
    s = claim_scores(pred, "Supported", "Supported", gold)
    # 8 tokens each ("Did the dog bark ? The dog barks"), identical: 1 - 0.5 / 8^3; 5 for the question alone
    assert s["qa"] == pytest.approx(1 - 0.5 / 512) and s["q_only"] == pytest.approx(1 - 0.5 / 125)
    assert s["averitec"] == 1.0


# --------------------------------------------------------------------------- the submission from DEFAME

CLAIM = "The Eiffel Tower was dismantled and moved to Rome in 2023."
DOCS = [
    Document(
        "eiffel-2023",
        "Eiffel Tower summer season 2023",
        "In May 2023 the Eiffel Tower in Paris opened its summer season and welcomed visitors.",
        url="https://example.org/eiffel-2023",
        date="2023-05-30",
    ),
    Document(
        "colosseum",
        "Colosseum visitor numbers",
        "The Colosseum in Rome had 12 million visitors in 2023.",
        url="https://example.org/colosseum",
    ),
]


def defame_rules():
    return [
        (r"Next action:\s*$", "stop web_search"),
        (r'Next action:\s*[a-z_]+\("$', "Eiffel Tower Rome 2023"),
        (
            r"Summary:$",
            lambda req: (
                "The page says: " + re.findall(r"<result>\n(.*?)\n</result>", req.messages[-1][1], re.S)[-1][:60]
            ),
        ),
        (r"Elaboration:$", "The tower was in Paris in May 2023."),
        (r"Key findings:$", "The Eiffel Tower stayed in Paris in 2023."),
        (r"Verdict:$", "Refuted"),
        (r"Justification:$", "The tower opened its 2023 season in Paris."),
    ]


def test_submission_of_a_scripted_defame_run():
    config = load_config()
    res = run_check(
        Claim(CLAIM),
        get_pipeline("defame", config),
        Model(ScriptedBackend(defame_rules())),
        config,
        retriever=Index.from_documents(DOCS).retriever("bm25"),
        labels=averitec.AVERITEC_LABELS,
    )
    row = {"pred": res.verdict.label, "verdict": res.verdict.to_dict(), "trace": res.trace}
    entry = json.loads(json.dumps(submission_entry(row, "7", CLAIM)))
    assert entry["claim_id"] == 7 and entry["claim"] == CLAIM and entry["pred_label"] == "Refuted"
    assert entry["justification"].startswith("The tower opened its 2023 season in Paris")
    pairs = entry["evidence"]
    assert pairs, "DEFAME's findings become question-answer pairs"
    urls = {p["url"] for p in pairs}
    assert "https://example.org/eiffel-2023" in urls
    for p in pairs:
        assert p["question"] == "Eiffel Tower Rome 2023"  # the action's query, quotes and tool name removed
        assert p["answer"].startswith("The page says: ")
        assert p["from"].startswith("DEFAME round 1: the query of web_search(") and "as the answer" in p["from"]
    assert set(p) == {"question", "answer", "url", "from"}


def test_qacheck_steps_and_closed_book_rows():
    row = {
        "pred": "Supported",
        "verdict": {
            "rationale": "r",
            "steps": [
                {
                    "depth": 1,
                    "question": "Where is it?",
                    "answer": "Paris",
                    "evidence": [{"text": "t", "url": None}, {"text": "u", "url": "https://e.org/p"}],
                },
                {"depth": 2, "question": "When?", "answer": "2023", "evidence": []},
            ],
        },
        "trace": [],
    }
    pairs = evidence_pairs(row, "c")
    assert [(p["question"], p["answer"], p["url"]) for p in pairs] == [
        ("Where is it?", "Paris", "https://e.org/p"),
        ("When?", "2023", ""),
    ]
    assert "QACheck step 2" in pairs[1]["from"] and "no source URL" in pairs[1]["from"]
    assert evidence_pairs({"pred": "Refuted", "verdict": {"steps": []}, "trace": []}, "c") == []
    odd = submission_entry({"pred": "Unverified", "verdict": {}, "trace": []}, "c3", "c")
    assert odd["pred_label"] == "Not Enough Evidence" and "Unverified" in odd["pred_label_note"]


@pytest.mark.benchmarks
def test_dev_gold_pairs_score_themselves_near_one(tmp_path):
    if not DEV.is_file():
        pytest.skip(f"benchmark data not available ({DEV})")
    ds = load_dataset("averitec", DEV, setting="closed-book")
    item = ds.items[0]
    gold = item.metadata["questions"]
    pred = [
        {
            "question": q["question"],
            "answer": a["answer"] + (". " + a["boolean_explanation"] if a.get("answer_type") == "Boolean" else ""),
        }
        for q in gold
        for a in q["answers"]
    ]
    rows = [
        {
            "dataset": "averitec",
            "pipeline": "oracle",
            "id": item.id,
            "pred": item.gold,
            "verdict": {"steps": [{"depth": n, **p, "evidence": []} for n, p in enumerate(pred)]},
            "trace": [],
        }
    ]
    s = averitec.scores(rows, ds)["oracle"]
    assert s["n"] == 1 and s["accuracy"] == 1.0 and s["averitec"] == 1.0 and s["qa"] > 0.95
    out = averitec.write_outputs(tmp_path, rows, ds, str(tmp_path / "sub.json"))
    assert json.loads((tmp_path / "sub.json").read_text())[0]["claim"] == item.claim.text
    assert "| oracle | 1 | 100.00 |" in "\n".join(averitec.report_lines(tmp_path, "averitec"))
    assert out["pipelines"]["oracle"]["qa"] == s["qa"]


def test_cli_writes_the_submission_and_the_report_shows_the_scores(tmp_path, cli_env):
    """`veracity eval --dataset averitec --averitec-out FILE` on a two-claim file in AVeriTeC's format."""
    import subprocess

    from conftest import veracity_cmd

    records = [
        {
            "claim": c,
            "label": l,
            "claim_date": "1-1-2020",
            "justification": "j",
            "questions": [
                {
                    "question": "Was it so?",
                    "answers": [{"answer": "No", "answer_type": "Abstractive", "source_url": "https://e.org"}],
                }
            ],
        }
        for c, l in [("The moon is made of cheese.", "Refuted"), ("Water is wet.", "Supported")]
    ]
    data = tmp_path / "dev.json"
    data.write_text(json.dumps(records))
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"match": ".*", "reply": "Refuted"}]}))
    out, sub = tmp_path / "out", tmp_path / "submission.json"
    r = subprocess.run(
        veracity_cmd()
        + [
            "eval",
            "--dataset",
            "averitec",
            "--path",
            str(data),
            "--setting",
            "closed-book",
            "--pipeline",
            "direct",
            "--model",
            f"scripted:{rules}",
            "--out",
            str(out),
            "--no-plots",
            "--no-progress",
            "--averitec-out",
            str(sub),
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    entries = json.loads(sub.read_text())
    assert [(e["claim_id"], e["pred_label"], e["evidence"]) for e in entries] == [
        (0, "Refuted", []),
        (1, "Refuted", []),
    ]
    scores = json.loads((out / averitec.SCORES).read_text())["pipelines"]["direct"]
    assert scores == {"n": 2, "accuracy": 0.5, "q_only": 0.0, "qa": 0.0, "averitec": 0.0}
    assert "| direct | 2 | 50.00 | 0.0000 | 0.0000 | 0.00 |" in r.stdout
    assert "| direct | 2 | 50.00 |" in (out / "report.md").read_text()
    bad = subprocess.run(
        veracity_cmd()
        + ["eval", "--dataset", "jsonl", "--path", str(data), "--out", str(out), "--averitec-out", str(sub)],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=120,
    )
    assert bad.returncode == 2 and "--averitec-out needs --dataset averitec" in bad.stderr
