"""Answering a multiple-choice question: the model explains, then the letter is decided by `choose`.

Three prompts (files `answer_plain`, `answer_rag`, `answer_fc_rag`) differ only in what knowledge
they show: none, the passages retrieved for the question (MedRAG style), or the passages retrieved
while fact-checking the failed sentences of an earlier answer (Fact-Check-Then-RAG). The answer is
generated as a chat reply; then `answer_letter` asks which option it chose, through `choose` over
the option keys. On the embedded model that decision is scored by log-probability; on HTTP
backends it is parsed, and `extract_letter` re-reads the reply (and, failing that, the answer
itself) robustly, since a naive match would take the article "a" for option A.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..prompts.parsers import RETRY_MARK
from ..types import Evidence
from .options import extract_letter
from .prompts import ANSWER_LETTER, ANSWERS, KNOWLEDGE_SLOT

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.model import RunModel
    from ..trace import Tracer

SCORED = ("logprob", "grammar")  # choice methods that never parse text


@dataclass
class Answer:
    """One answer to a multiple-choice question."""

    text: str
    letter: str | None  # None only when no option could be read at all
    kind: str  # plain | rag | fc-rag
    confidence: float | None = None  # probability of the letter, when the backend scores options
    method: str = ""  # how the letter was decided: logprob, parse, parse-retry, extracted, ...
    knowledge: list[Evidence] = field(default_factory=list)  # passages the prompt showed
    parse_failure: str | None = None
    stated: str | None = None  # the option the text itself names, read by `extract_letter` (for analysis only)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "letter": self.letter,
            "confidence": self.confidence,
            "method": self.method,
            "stated": self.stated,
            "knowledge": [e.to_dict() for e in self.knowledge],
            "parse_failure": self.parse_failure,
        }


class Answerer:
    def __init__(self, config: Config) -> None:
        pd = config.prompts_dir
        self.max_tokens = config.leaf.answer_max_tokens
        self.templates = {kind: spec.load(pd) for kind, spec in ANSWERS.items()}  # specs: prompts.py
        self.p_letter = ANSWER_LETTER.load(pd)

    @staticmethod
    def slots(kind: str, question: str, options: dict[str, str], knowledge: list[Evidence]) -> dict[str, Any]:
        """The answer prompt's slots: the question, its options, and the passages the kind shows."""
        values: dict[str, Any] = {"QUESTION": question, "OPTIONS": options}
        if kind in KNOWLEDGE_SLOT:
            values[KNOWLEDGE_SLOT[kind]] = knowledge
        return values

    def prompt(self, kind: str, question: str, options: dict[str, str], knowledge: list[Evidence]) -> str:
        return self.templates[kind].render(**self.slots(kind, question, options, knowledge))

    def answer(
        self,
        question: str,
        options: dict[str, str],
        *,
        model: RunModel,
        tracer: Tracer,
        kind: str = "plain",
        knowledge: list[Evidence] | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        label: dict[str, Any] | None = None,
    ) -> Answer:
        knowledge = list(knowledge or [])
        text = (
            self.templates[kind]
            .ask(
                model,
                tracer=tracer,
                max_tokens=self.max_tokens,
                temperature=temperature,
                seed=seed,
                **self.slots(kind, question, options, knowledge),
            )
            .value
        )
        ans = self.decide_letter(question, options, text, model=model, tracer=tracer)
        ans.kind, ans.knowledge, ans.stated = kind, knowledge, extract_letter(text, options)
        tracer.emit(
            "mc_answer",
            **(label or {}),
            **{k: v for k, v in ans.to_dict().items() if k != "knowledge"},
            knowledge=[e.to_dict() for e in knowledge],
        )
        return ans

    def decide_letter(
        self, question: str, options: dict[str, str], text: str, *, model: RunModel, tracer: Tracer
    ) -> Answer:
        keys = list(options)
        choice = self.p_letter.ask(
            model,
            tracer=tracer,
            options=keys,
            defer=True,
            QUESTION=question,
            OPTIONS=options,
            ANSWER=text,
            LETTERS=keys,
        )  # a failure is recorded below, after the re-reading
        if choice.method in SCORED and choice.ok:
            return Answer(text=text, letter=choice.value, kind="", confidence=choice.confidence, method=choice.method)
        # Parsed from text: re-read the reply robustly, then the answer itself; the naive match last.
        first, _, retry = choice.raw.partition(RETRY_MARK)
        for source, candidate in (("reply", first), ("retry", retry), ("answer", text)):
            letter = extract_letter(candidate, options)
            if letter is not None:
                return Answer(text=text, letter=letter, kind="", method=f"extracted from the {source}")
        if choice.ok:
            return Answer(text=text, letter=choice.value, kind="", method=choice.method)
        return Answer(text=text, letter=None, kind="", method=choice.method, parse_failure=choice.fail())
