"""QACheck's loop, module by module, driven by the scripted backend (real prompts, real parsing)."""

import re

import pytest

from veracity.check import run_check
from veracity.config import load_config
from veracity.errors import UserError
from veracity.llm import Model
from veracity.llm.scripted import ScriptedBackend
from veracity.registry import available_pipelines, get_pipeline
from veracity.retrieval import Document, Index
from veracity.types import Claim
from veracity.verify import uncertain_threshold
from veracity.verify.model import WEIGHTS_DIR as ROOT_WEIGHTS

CLAIM = "The author of the novel Kestrel Bay was born in the same city where the Orrin Bridge stands."

# Each rule is anchored at the end of the prompt, where the final query asks its question.
VERIFIER = r"Yes or no\?\nPrediction =$"
FIRST_Q = r"first ask a simple question:\nQuestion =$"
FOLLOW_Q = r"Question (\d+) =$"
RECITE = r"Relevant passage =$"
READER = r"Passages:\n(?:(?!-{8}).)*Answer =$"
CLOSED = r"-{8}\nQuestion = [^\n]*\nAnswer =$"
VALIDATOR = r"useful for verifying the claim\?\nThe answer:$"
REASONER = r"Is this claim true or false\?\nAnswer:$"
LABEL = r"final answer is:$"


def config(**over):
    return load_config(overrides=over, env={})


def run(rules, pipeline="qacheck", retriever=None, **over):
    cfg = config(**over)
    backend = ScriptedBackend(rules)
    result = run_check(Claim(CLAIM), get_pipeline(pipeline, cfg), Model(backend), cfg, retriever=retriever)
    return result, backend


def stages(result):
    return [s["stage"] for s in result.trace if s["stage"] != "model_call"]


BASE_RULES = [
    (VERIFIER, ["No, we cannot know.", "Yes, we can know."]),
    (FIRST_Q, " Who wrote the novel Kestrel Bay?"),
    (FOLLOW_Q, " Where was Mara Lind born?"),
    (
        RECITE,
        [
            " Kestrel Bay is a 1998 novel by the writer Mara Lind.",
            " Mara Lind was born in Tallinn, the city of the Orrin Bridge.",
        ],
    ),
    (READER, [" Mara Lind", " Tallinn."]),
    (VALIDATOR, " Yes"),
    (REASONER, "\nKestrel Bay was written by Mara Lind.\nMara Lind was born in Tallinn, where the bridge is.\n"),
    (LABEL, " True."),
]


def test_full_loop_reciter_reader_default():
    result, backend = run(BASE_RULES)
    v = result.verdict
    assert v.label == "Supported"
    assert [(s.depth, s.question, s.answer) for s in v.steps] == [
        (1, "Who wrote the novel Kestrel Bay?", "Mara Lind"),
        (2, "Where was Mara Lind born?", "Tallinn"),
    ]
    assert v.steps[0].evidence[0].source == "recited by the model"
    assert "1998 novel" in v.steps[0].evidence[0].text
    answer = next(s for s in result.trace if s["stage"] == "answer")
    assert answer["evidence"][0]["memory"] is True  # the JSON marks it plainly: the model's memory, not a source
    assert "source_sha256" not in answer["evidence"][0]  # nothing was read, so there is nothing to hash
    # recited text is the model's memory, not a source: never a confident verdict, and the reason says so
    assert v.basis == "memory" and v.uncertain and "model's memory" in v.uncertain_reason
    assert result.to_dict()["verdict"]["basis"] == "memory"
    assert "Mara Lind was born in Tallinn" in v.rationale
    assert stages(result) == [
        "claim",
        "question",
        "answer",
        "validator",
        "verifier",
        "question",
        "answer",
        "validator",
        "verifier",
        "context_done",
        "reasoner",
        "verdict",
    ]
    # the follow-up question saw the first QA pair and asked for question 2
    followup = [c for c in backend.calls if re.search(FOLLOW_Q, c.messages[-1][1])][0].messages[-1][1]
    assert followup.endswith(
        "Question 1 = Who wrote the novel Kestrel Bay?\nAnswer 1 = Mara Lind\n"
        "To verify the claim, what is the next question we need to know the answer to?\n"
        "Question 2 ="
    )
    # the reasoner saw both pairs in the Q1/A1 format
    reasoner = [c for c in backend.calls if re.search(REASONER, c.messages[-1][1])][0].messages[-1][1]
    assert "Q2: Where was Mara Lind born?\nA2: Tallinn\nClaim = " + CLAIM in reasoner
    u = result.usage["by_stage"]
    assert u["question"]["calls"] == 2 and u["recite"]["calls"] == 2 and u["verifier"]["calls"] == 2
    assert result.usage["total"]["calls"] == 2 + 2 + 2 + 2 + 2 + 2  # q, recite, read, validate, verify, reason+label


def test_validator_discards_and_question_is_resampled():
    rules = [(VALIDATOR, [" No", " Yes"])] + [r for r in BASE_RULES if r[0] != VALIDATOR]
    rules = [(VERIFIER, "Yes, we can know.") if r[0] == VERIFIER else r for r in rules]
    rules = [
        (FIRST_Q, [" What colour is the sky?", " Who wrote the novel Kestrel Bay?"]) if r[0] == FIRST_Q else r
        for r in rules
    ]
    result, backend = run(rules, **{"qacheck.max_rejected": 2})
    steps = result.verdict.steps
    assert [s.question for s in steps] == ["Who wrote the novel Kestrel Bay?"]
    validator = [s for s in result.trace if s["stage"] == "validator"]
    assert [s["useful"] for s in validator] == [False, True]
    q_calls = [c for c in backend.calls if re.search(FIRST_Q, c.messages[-1][1])]
    assert q_calls[0].temperature == 0.0 and q_calls[1].temperature > 0  # greedy would repeat the rejected question


@pytest.mark.parametrize(
    "max_rejected, asked, reason",
    [(1, 1, "rejected"), (2, 2, "rejected"), (3, 3, "rejected"), (0, 5, "max_iterations")],
)
def test_questions_rejected_in_a_row_stop_the_loop(max_rejected, asked, reason):
    """A validator that rejects every pair: the loop stops after `max_rejected` rejections in a row (0: it asks
    until max_iterations), and the reasoner decides from the empty context without more model calls."""
    rules = [(VALIDATOR, " No"), (FIRST_Q, [f" Question {i} of many?" for i in range(1, 6)])]
    rules += [r for r in BASE_RULES if r[0] not in (VALIDATOR, FIRST_Q)]
    result, backend = run(rules, **{"qacheck.max_rejected": max_rejected})
    assert result.verdict.steps == []
    assert sum(bool(re.search(VALIDATOR, c.messages[-1][1])) for c in backend.calls) == asked
    done = [s for s in result.trace if s["stage"] == "context_done"][0]
    assert done["reason"] == reason and done["depth"] == 0
    assert not any(re.search(VERIFIER, c.messages[-1][1]) for c in backend.calls)  # nothing to judge: never asked
    assert result.usage["total"]["calls"] == 4 * asked + 2


def test_a_kept_pair_resets_the_rejection_count():
    rules = [
        (VALIDATOR, [" No", " Yes", " No", " Yes"]),
        (VERIFIER, "No, we cannot know."),
        (FIRST_Q, [" Who wrote Kestrel Bay?", " Who wrote the novel Kestrel Bay?"]),
        (FOLLOW_Q, [" Where was Mara Lind born?", " Where is the Orrin Bridge?"]),
    ]
    rules += [r for r in BASE_RULES if r[0] not in (VALIDATOR, VERIFIER, FIRST_Q, FOLLOW_Q)]
    result, _ = run(rules, **{"qacheck.max_rejected": 2, "qacheck.max_iterations": 4})
    assert [s["useful"] for s in result.trace if s["stage"] == "validator"] == [False, True, False, True]
    assert len(result.verdict.steps) == 2
    assert [s for s in result.trace if s["stage"] == "context_done"][0]["reason"] == "max_iterations"


def test_no_validator_ablation_keeps_every_pair_and_iteration_limit_holds():
    rules = [
        (VERIFIER, "No, we cannot know."),
        (FIRST_Q, " Who wrote Kestrel Bay?"),
        (FOLLOW_Q, lambda req: f" Question number {req.messages[-1][1].count('Answer ')} about it?"),
        (RECITE, " Some passage about the book and its author."),
        (READER, " Mara Lind"),
        (REASONER, "\nNot enough is known.\n"),
        (LABEL, " False"),
    ]
    result, backend = run(rules, pipeline="qacheck-no-validator", **{"qacheck.max_iterations": 3})
    assert len(result.verdict.steps) == 3
    assert all(s.useful is None for s in result.verdict.steps)
    assert not any(re.search(VALIDATOR, c.messages[-1][1]) for c in backend.calls)
    assert result.verdict.label == "Refuted"
    assert [s for s in result.trace if s["stage"] == "context_done"][0]["reason"] == "max_iterations"


def test_duplicate_question_is_not_answered_twice():
    rules = [
        (VERIFIER, "No"),
        (FIRST_Q, " Who wrote Kestrel Bay?"),
        (FOLLOW_Q, " Who wrote Kestrel Bay?"),
        (RECITE, " Kestrel Bay is a novel by Mara Lind."),
        (READER, " Mara Lind"),
        (VALIDATOR, " Yes"),
        (REASONER, "\nKnown.\n"),
        (LABEL, " True"),
    ]
    result, backend = run(rules, **{"qacheck.max_iterations": 3, "qacheck.max_rejected": 0})
    assert len(result.verdict.steps) == 1
    dups = [s for s in result.trace if s["stage"] == "question" and s.get("duplicate")]
    assert len(dups) == 2
    assert sum(bool(re.search(RECITE, c.messages[-1][1])) for c in backend.calls) == 1


def test_unusable_model_output_is_recorded_never_guessed():
    rules = [
        (FIRST_Q, "\n\n"),  # no question at all
        (REASONER, "\nI cannot tell.\n"),
        (LABEL, "Perhaps, who knows"),
        (r"Reply with that word only\.\n$", "It is hard to say"),
    ]  # the one retry
    result, _ = run(rules)
    v = result.verdict
    assert v.label == "Unverified"
    assert v.steps == []
    failures = [s for s in result.trace if s["stage"] == "parse_failure"]
    assert [f["for_stage"] for f in failures] == ["question", "reasoner"]
    assert "stop asking" in failures[0]["fallback"]
    assert len(v.parse_failures) == 2


def test_retriever_reader_reads_passages_from_a_real_index():
    index = Index.from_documents(
        [
            Document(id="kb", title="Kestrel Bay", text="Kestrel Bay is a 1998 novel written by Mara Lind."),
            Document(id="ob", title="Orrin Bridge", text="The Orrin Bridge is a stone bridge in Tallinn."),
            Document(id="x", title="Sardines", text="Sardines are small oily fish that live in schools."),
        ]
    )
    rules = [
        (VERIFIER, "Yes, we can know."),
        (FIRST_Q, " Who wrote the novel Kestrel Bay?"),
        (READER, " Mara Lind"),
        (VALIDATOR, " Yes"),
        (REASONER, "\nMara Lind wrote it.\n"),
        (LABEL, " True"),
    ]
    result, backend = run(
        rules, pipeline="qacheck-retriever-reader", retriever=index.retriever("bm25"), **{"qacheck.top_k": 2}
    )
    step = result.verdict.steps[0]
    assert step.evidence[0].doc_id == "kb" and step.evidence[0].source == "Kestrel Bay"
    assert [e.doc_id for e in step.evidence] == ["kb"]  # passages sharing no term with the question are not read
    reader_prompt = [c for c in backend.calls if re.search(READER, c.messages[-1][1], re.S)][0].messages[-1][1]
    assert "[1] Kestrel Bay: Kestrel Bay is a 1998 novel written by Mara Lind." in reader_prompt
    assert "Sardines" not in reader_prompt.split("--------")[-1]
    assert [s for s in result.trace if s["stage"] == "retrieval"][0]["results"][0]["doc_id"] == "kb"


def test_retriever_reader_without_index_is_a_user_error():
    cfg = config(**{"qacheck.qa": "retriever-reader"})
    with pytest.raises(UserError, match="needs an index"):
        run_check(Claim(CLAIM), get_pipeline("qacheck", cfg), Model(ScriptedBackend([])), cfg)


def test_closed_book_answers_with_stated_evidence():
    rules = [
        (VERIFIER, "Yes, we can know."),
        (FIRST_Q, " Who wrote the novel Kestrel Bay?"),
        (CLOSED, " Mara Lind\nEvidence = Kestrel Bay is a novel by Mara Lind."),
        (VALIDATOR, " Yes"),
        (REASONER, "\nMara Lind wrote it.\n"),
        (LABEL, " False"),
    ]
    result, _ = run(rules, pipeline="qacheck-closed-book")
    step = result.verdict.steps[0]
    assert step.answer == "Mara Lind"
    assert step.evidence[0].text == "Kestrel Bay is a novel by Mara Lind."
    assert step.evidence[0].source == "model knowledge (closed-book)" and step.evidence[0].memory
    assert result.verdict.label == "Refuted"


def test_baselines_direct_and_cot():
    direct, _ = run([(r"true or false\?\nAnswer:$", " False")], pipeline="direct")
    assert direct.verdict.label == "Refuted" and direct.verdict.steps == []
    assert direct.verdict.basis == "memory"  # no index: the model's knowledge only
    cot, _ = run(
        [(r"step by step\.\nAnswer:$", "\nThe bridge is in Riga, not Tallinn.\n"), (LABEL, " False")], pipeline="cot"
    )
    assert cot.verdict.label == "Refuted"
    assert cot.verdict.rationale == "The bridge is in Riga, not Tallinn."


def test_registry_names_every_variant():
    names = available_pipelines()
    for n in [
        "qacheck",
        "qacheck-retriever-reader",
        "qacheck-closed-book",
        "qacheck-reciter-reader",
        "qacheck-no-validator",
        "qacheck-1-iter",
        "qacheck-3-iter",
        "direct",
        "cot",
    ]:
        assert n in names
    with pytest.raises(UserError, match="unknown pipeline 'qa-check'"):
        get_pipeline("qa-check", config())


def test_a_rationale_that_concludes_otherwise_than_the_label_says_so():
    rules = [
        (VERIFIER, "Yes, we can know."),
        (FIRST_Q, " Who wrote the novel Kestrel Bay?"),
        (RECITE, " A novel."),
        (READER, " Mara Lind"),
        (VALIDATOR, " Yes"),
        (REASONER, "\nNo, the claim is false.\n"),
        (LABEL, " True"),
    ]
    result, _ = run(rules)
    assert result.verdict.label == "Supported"
    assert "[Note: this reasoning concludes Refuted, but the label is Supported" in result.verdict.rationale


def _bridge_index():
    return Index.from_documents(
        [
            Document(
                id="kb",
                title="Kestrel Bay",
                text="Kestrel Bay is a 1998 novel written by Mara Lind, who was born in Riga.",
            ),
            Document(id="ob", title="Orrin Bridge", text="The Orrin Bridge is a stone bridge in Tallinn."),
        ]
    )


@pytest.mark.skipif(not (ROOT_WEIGHTS / "verifier.json").is_file(), reason="no trained verifier")
def test_the_evidence_verifier_decides_the_reasoners_label_in_evidence_settings_and_the_ablation_does_not():
    rules = [
        (VERIFIER, "Yes, we can know."),
        (FIRST_Q, " Who wrote the novel Kestrel Bay?"),
        (READER, " Mara Lind"),
        (VALIDATOR, " Yes"),
        (REASONER, "\nThe claim is true.\n"),
        (LABEL, " True"),
    ]
    claim = "The Orrin Bridge is a stone bridge in Tallinn."
    # a threshold this two-passage reading clears (the shipped 0.80 is rarely reached once several passages are tempered)
    cfg = config(**{"verifier.use": "on", "verifier.uncertain_below": 0.6})
    backend = ScriptedBackend(rules)
    with_v = run_check(
        Claim(claim),
        get_pipeline("qacheck-retriever-reader", cfg),
        Model(backend),
        cfg,
        retriever=_bridge_index().retriever("bm25"),
    )
    step = [s for s in with_v.trace if s["stage"] == "evidence_verifier"]
    assert step and step[-1]["label"] == with_v.verdict.label == "Supported"
    assert with_v.verdict.confidence == step[-1]["confidence"]
    # the claim verifier's "enough?": the evidence read as decisive and confident, so the model is not asked
    enough = [s for s in with_v.trace if s["stage"] == "verifier"]
    assert [(s["enough"], s["by"]) for s in enough] == [(True, "evidence_verifier")]
    assert step[0]["confidence"] >= uncertain_threshold(cfg.verifier)
    assert with_v.verdict.basis == "evidence" and not with_v.verdict.uncertain
    assert not [c for c in backend.calls if re.search(VERIFIER, c.messages[-1][1])]
    # the reasoner reuses the reading that stopped the loop: the same evidence is verified once, one step shown
    assert len(step) == 1
    without = run_check(
        Claim(claim),
        get_pipeline(
            "qacheck-no-evidence-verifier", config(**{"verifier.use": "on", "qacheck.qa": "retriever-reader"})
        ),
        Model(ScriptedBackend(rules)),
        cfg,
        retriever=_bridge_index().retriever("bm25"),
    )
    assert not [s for s in without.trace if s["stage"] == "evidence_verifier"]
    # auto: off with any model but the embedded default, so scripted runs decide as before
    auto = run_check(
        Claim(claim),
        get_pipeline("qacheck-retriever-reader", config()),
        Model(ScriptedBackend(rules)),
        config(),
        retriever=_bridge_index().retriever("bm25"),
    )
    assert not [s for s in auto.trace if s["stage"] == "evidence_verifier"]


def test_when_the_evidence_is_not_decisive_the_verdict_is_uncertain_with_the_verifiers_leaning(monkeypatch):
    """The verifier reads the retrieved evidence as not settling the claim (not enough information 0.6) and, on two
    labels, leans Refuted (0.3 / (0.1 + 0.3)): the model's True gives way to Refuted with the verifier's 0.75,
    never the model's confidence, and the verdict is uncertain, saying what the model chose."""
    import veracity.verify.decide as decide
    from veracity.verify.result import Verification

    class Unsettled:  # a verifier that reads any evidence as not settling the claim
        name, binary_rule, rest_rule = "unsettled", "supported_vs_refuted", "supported_vs_rest"

        def verify(self, claim, passages):
            return Verification(
                {"supported": 0.1, "refuted": 0.3, "nei": 0.6},
                None,
                [{"supported": 0.1, "refuted": 0.3, "nei": 0.6} for _ in passages],
            )

    monkeypatch.setattr(decide, "get_verifier", lambda settings, kind="verifier": Unsettled())
    rules = [
        (VERIFIER, "Yes, we can know."),
        (FIRST_Q, " Who wrote the novel Kestrel Bay?"),
        (READER, " Mara Lind"),
        (VALIDATOR, " Yes"),
        (REASONER, "\nThe claim is true.\n"),
        (LABEL, " True"),
    ]
    # above 0.75, the two-label reading's confidence, so it is not decisive (a sure one is: the test below)
    cfg = config(**{"verifier.use": "on", "verifier.uncertain_below": 0.8})
    result = run_check(
        Claim("Mara Lind has two children."),
        get_pipeline("qacheck-retriever-reader", cfg),
        Model(ScriptedBackend(rules)),
        cfg,
        retriever=_bridge_index().retriever("bm25"),
    )
    assert [s["label"] for s in result.trace if s["stage"] == "evidence_verifier"][-1] == "Refuted"
    assert result.verdict.label == "Refuted" and result.verdict.confidence == pytest.approx(0.75)
    assert result.verdict.uncertain and "do not address the claim" in result.verdict.uncertain_reason
    assert "the language model chose Supported" in result.verdict.uncertain_reason
    # the model's reasoning stays, marked as concluding otherwise than the label
    assert "The claim is true." in result.verdict.rationale


def test_a_reading_that_does_not_address_the_claim_never_decides_however_sure_on_two_labels(monkeypatch):
    """Nei 0.55: on Supported / Refuted the two-label reading is Refuted 0.89, above the uncertain threshold, but the
    passages do not address the claim. The verdict leans Refuted (the model's True is below one half there) and is
    uncertain, saying the sources do not address the claim; the claim verifier's "enough?" goes to the model."""
    import veracity.verify.decide as decide
    from veracity.verify.result import Verification

    reading = {"supported": 0.05, "refuted": 0.40, "nei": 0.55}

    class SureOnTwoLabels:
        name, binary_rule, rest_rule = "sure-on-two-labels", "supported_vs_refuted", "supported_vs_rest"

        def verify(self, claim, passages):
            return Verification(dict(reading), None, [dict(reading) for _ in passages])

    monkeypatch.setattr(decide, "get_verifier", lambda settings, kind="verifier": SureOnTwoLabels())
    rules = [
        (VERIFIER, "Yes, we can know."),
        (FIRST_Q, " Who wrote the novel Kestrel Bay?"),
        (READER, " Mara Lind"),
        (VALIDATOR, " Yes"),
        (REASONER, "\nThe claim is true.\n"),
        (LABEL, " True"),
    ]
    cfg = config(**{"verifier.use": "on", "verifier.uncertain_below": 0.77})
    backend = ScriptedBackend(rules)
    result = run_check(
        Claim("Kestrel Bay was written by Mara Lind in 2004."),
        get_pipeline("qacheck-retriever-reader", cfg),
        Model(backend),
        cfg,
        retriever=_bridge_index().retriever("bm25"),
    )
    assert result.verdict.label == "Refuted" and result.verdict.confidence == pytest.approx(0.40 / 0.45)
    assert result.verdict.uncertain
    assert result.verdict.uncertain_reason.startswith("the sources read do not address the claim")
    assert "evidence_verifier" not in [s.get("by") for s in result.trace if s["stage"] == "verifier"]


def test_direct_and_cot_read_the_claims_evidence_in_evidence_settings():
    claim = "The Orrin Bridge stands in Tallinn."
    direct_rules = [(r"Given the evidence, is this claim true or false\?\nAnswer:$", " True")]
    cot_rules = [
        (
            r"Given the evidence, is this claim true or false\? Let's think step by step\.\nAnswer:$",
            "\nThe evidence says Tallinn.\n",
        ),
        (LABEL, " True"),
    ]
    for name, rules in (("direct", direct_rules), ("cot", cot_rules)):
        backend = ScriptedBackend(rules)
        result = run_check(
            Claim(claim),
            get_pipeline(name, config()),
            Model(backend),
            config(),
            retriever=_bridge_index().retriever("bm25"),
        )
        prompt = backend.calls[0].messages[-1][1]
        assert "The Orrin Bridge is a stone bridge in Tallinn." in prompt.rsplit("--------", 1)[1]
        assert result.verdict.label == "Supported"
        assert [s for s in result.trace if s["stage"] == "retrieval"][0]["query"] == claim
    closed = ScriptedBackend([(r"step by step\.\nAnswer:$", "\nYes.\n"), (LABEL, " True")])
    run_check(Claim(claim), get_pipeline("cot", config()), Model(closed), config())
    assert "Evidence:" not in closed.calls[0].messages[-1][1]  # no index: closed-book as in the paper


def test_with_a_source_and_any_model_but_the_embedded_one_the_default_qacheck_reads_the_source():
    """The default QA module (auto): with a scripted model (any backend but the embedded one, where the trained
    verifier is off) and a source, the questions are answered from the source's passages, not recited, and the
    verdict rests on evidence; with no source, recited from memory as before; a QA module set in the configuration
    is kept."""
    rules = [
        (VERIFIER, "Yes, we can know."),
        (FIRST_Q, " Who wrote the novel Kestrel Bay?"),
        (READER, " Mara Lind"),
        (RECITE, " Kestrel Bay is a novel by Mara Lind."),
        (VALIDATOR, " Yes"),
        (REASONER, "\nMara Lind wrote it.\n"),
        (LABEL, " True"),
    ]
    result, _ = run(rules, retriever=_bridge_index().retriever("bm25"))
    [answer] = [s for s in result.trace if s["stage"] == "answer"]
    assert answer["qa"] == "retriever-reader" and answer["evidence"][0]["source"] == "Kestrel Bay"
    assert result.verdict.basis == "evidence"
    result, _ = run(rules)
    [answer] = [s for s in result.trace if s["stage"] == "answer"]
    assert answer["qa"] == "reciter-reader" and result.verdict.basis == "memory"
    result, _ = run(rules, retriever=_bridge_index().retriever("bm25"), **{"qacheck.qa": "reciter-reader"})
    assert [s["qa"] for s in result.trace if s["stage"] == "answer"] == ["reciter-reader"]
