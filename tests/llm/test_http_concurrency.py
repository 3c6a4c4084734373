"""LEAF's sentences over a server: checked several at once, traced as if one after the other."""

import math

from stub_server import FakeModel, StubServer
from worlds import DOCS

from veracity.config import load_config
from veracity.leaf import AnswerChecker
from veracity.llm import Model, UsageMeter
from veracity.llm.openai_http import OpenAIBackend
from veracity.retrieval import Index
from veracity.trace import Tracer

ANSWER = (
    "Carpal tunnel syndrome causes numbness. It affects the thumb. It is worse at night. "
    "The median nerve is compressed."
)


def check(concurrency, tmp_path):
    def next_tokens(text):
        if text.rstrip().endswith("Search query:"):
            return {" carpal tunnel": 0.0}
        return {" Supported": math.log(0.9), " Not": math.log(0.1)}

    stub = StubServer(FakeModel(next_tokens, delay=0.1))
    try:
        cfg = load_config(
            overrides={
                "leaf.top_k": 1,
                "leaf.rater_reasoning": False,
                "concurrency": concurrency,
                "verifier.use": "off",
            },
            env={},
        )
        backend = OpenAIBackend("fake", base_url=stub.url, max_retries=0, caps_path=tmp_path / "caps.json")
        tracer = Tracer()
        result = AnswerChecker.from_config(cfg).check(
            "What causes carpal tunnel syndrome?",
            ANSWER,
            model=Model(backend).bind(UsageMeter(), tracer),
            retriever=Index.from_documents(DOCS).retriever(),
            tracer=tracer,
        )
        return result, tracer, stub.max_active
    finally:
        stub.close()


def test_sentences_are_checked_together_and_traced_in_order(tmp_path):
    result, tracer, active = check(4, tmp_path)
    assert active >= 2 and result.checked == 4 and result.score == 1.0
    assert [s.to_dict()["index"] for s in tracer.steps if s.stage == "leaf_sentence"] == [1, 2, 3, 4]
    _, one_by_one, active = check(1, tmp_path)
    assert active == 1
    assert [s.stage for s in tracer.steps] == [s.stage for s in one_by_one.steps]
