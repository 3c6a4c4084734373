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

from ..llm.base import CompletionRequest, fewshot
from ..prompts import load_prompt
from ..types import Evidence
from .factcheck import numbered_passages
from .options import extract_letter, format_options

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.model import RunModel
    from ..trace import Tracer

SCORED = ("logprob", "grammar")  # choice methods that never parse text
TEMPLATES = {"plain": "answer_plain", "rag": "answer_rag", "fc-rag": "answer_fc_rag"}


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
        return {"kind": self.kind, "text": self.text, "letter": self.letter, "confidence": self.confidence,
                "method": self.method, "stated": self.stated, "knowledge": [e.to_dict() for e in self.knowledge],
                "parse_failure": self.parse_failure}


def letters_phrase(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " or " + keys[-1]


class Answerer:
    def __init__(self, config: "Config") -> None:
        pd = config.prompts_dir
        self.max_tokens = config.leaf.answer_max_tokens
        self.templates = {kind: load_prompt(name, pd) for kind, name in TEMPLATES.items()}
        self.p_letter = load_prompt("answer_letter", pd)

    def prompt(self, kind: str, question: str, options: dict[str, str], knowledge: list[Evidence]) -> str:
        t = self.templates[kind]
        values: dict[str, Any] = {"QUESTION": question, "OPTIONS": format_options(options)}
        if kind == "rag":
            values["DOCUMENTS"] = numbered_passages(knowledge)
        elif kind == "fc-rag":
            values["KNOWLEDGE"] = numbered_passages(knowledge)
        return t.render(**values)

    def answer(self, question: str, options: dict[str, str], *, model: "RunModel", tracer: "Tracer",
               kind: str = "plain", knowledge: list[Evidence] | None = None, temperature: float = 0.0,
               seed: int | None = None, label: dict[str, Any] | None = None) -> Answer:
        knowledge = list(knowledge or [])
        prompt = self.prompt(kind, question, options, knowledge)
        out = model.complete(CompletionRequest.of(prompt, max_tokens=self.max_tokens, temperature=temperature,
                                                  seed=seed), stage="answer")
        text = out.text.strip()
        ans = self.decide_letter(question, options, text, model=model, tracer=tracer)
        ans.kind, ans.knowledge, ans.stated = kind, knowledge, extract_letter(text, options)
        tracer.emit("mc_answer", **(label or {}), **{k: v for k, v in ans.to_dict().items() if k != "knowledge"},
                    knowledge=[e.to_dict() for e in knowledge])
        return ans

    def decide_letter(self, question: str, options: dict[str, str], text: str, *, model: "RunModel",
                      tracer: "Tracer") -> Answer:
        keys = list(options)
        prompt = self.p_letter.render(QUESTION=question, OPTIONS=format_options(options),
                                      ANSWER=text or "(no answer)", LETTERS=letters_phrase(keys))
        choice = model.choose(fewshot(prompt, max_tokens=8), keys, stage="answer_choice")
        if choice.method in SCORED and choice.option is not None:
            return Answer(text=text, letter=choice.option, kind="", confidence=choice.confidence,
                          method=choice.method)
        # Parsed from text: re-read the reply robustly, then the answer itself; the naive match last.
        first, _, retry = choice.raw.partition("\n---retry---\n")
        for source, candidate in (("reply", first), ("retry", retry), ("answer", text)):
            letter = extract_letter(candidate, options)
            if letter is not None:
                return Answer(text=text, letter=letter, kind="", method=f"extracted from the {source}")
        if choice.option is not None:
            return Answer(text=text, letter=choice.option, kind="", method=choice.method)
        failure = f"answer_choice: no option in {choice.raw[:120]!r}"
        tracer.emit("parse_failure", for_stage="answer_choice", raw=choice.raw,
                    fallback="no option chosen: the item counts as unanswered")
        return Answer(text=text, letter=None, kind="", method=choice.method, parse_failure=failure)
