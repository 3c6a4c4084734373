"""LEAF checks an answer claim by claim with leaf.units = "claims" (the extractor check-text uses); sentences
stay the default."""

import pytest

from veracity.config import load_config
from veracity.errors import ConfigError
from veracity.leaf import AnswerChecker
from veracity.llm import Model, UsageMeter
from veracity.llm.scripted import ScriptedBackend
from veracity.retrieval.documents import Document
from veracity.retrieval.index import Index
from veracity.trace import Tracer

ANSWER = "Lithium causes polyuria and it raises thirst. You should ask a doctor."


def checked_units(units):
    config = load_config(overrides={"leaf.units": units, "leaf.rater_reasoning": False})
    checker = AnswerChecker.from_config(config)
    checker.verifier = None  # the rater model decides (scripted)
    backend = ScriptedBackend(
        [(r"Search query:\s*$", "lithium"), (r"Final answer:\s*$", "Supported"), (r".*", "Supported")]
    )
    index = Index.from_documents([Document(id="1", title="Lithium", text="Lithium causes polyuria and thirst.")])
    result = checker.check(
        "What does lithium do?",
        ANSWER,
        model=Model(backend).bind(UsageMeter()),
        retriever=index.retriever("bm25"),
        tracer=Tracer(),
    )
    return [s.sentence for s in result.sentences]


def test_claims_units_split_the_answer_into_atomic_claims_and_leave_advice_out():
    assert checked_units("sentences") == ["Lithium causes polyuria and it raises thirst.", "You should ask a doctor."]
    assert checked_units("claims") == ["Lithium causes polyuria.", "Lithium raises thirst."]


def test_units_must_be_known():
    with pytest.raises(ConfigError, match="leaf.units"):
        load_config(overrides={"leaf.units": "words"})
