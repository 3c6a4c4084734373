"""QACheck's question-answering module A(q) -> (answer, evidence), in the paper's three forms."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..errors import UserError
from ..llm.base import fewshot
from ..pipeline import Context
from ..prompts import load_prompt
from ..prompts.quoting import quote_passages
from ..types import Evidence
from .parsing import parse_closed_book, parse_passage, parse_short_answer

UNKNOWN = "Unknown"


class QAModule(ABC):
    name: str = ""

    def __init__(self, prompts_dir: str | None = None, top_k: int = 3) -> None:
        self.prompts_dir = prompts_dir
        self.top_k = top_k

    @abstractmethod
    def answer(self, question: str, ctx: Context) -> tuple[str, list[Evidence]]: ...

    def _fail(self, ctx: Context, stage: str, raw: str, fallback: str) -> None:
        ctx.tracer.emit("parse_failure", for_stage=stage, raw=raw, fallback=fallback)

    def read(self, question: str, passages: list[Evidence], ctx: Context) -> str:
        """The reader: answer `question` from numbered passages, quoted as data (they may be any page's text)."""
        block = quote_passages(passages)
        prompt = load_prompt("reader", self.prompts_dir).render(PASSAGES=block, QUESTION=question)
        out = ctx.model.complete(fewshot(prompt, max_tokens=32, stop=["\n"]), stage="answer")
        ans = parse_short_answer(out.text)
        if ans is None:
            self._fail(ctx, "answer", out.text, f"answer {UNKNOWN!r}")
            return UNKNOWN
        return ans


class RetrieverReader(QAModule):
    """Retrieve the top-k passages from an index; the model reads them and answers."""

    name = "retriever-reader"

    def answer(self, question: str, ctx: Context) -> tuple[str, list[Evidence]]:
        if ctx.retriever is None:
            raise UserError("the retriever-reader QA module needs an index: pass --index DIR "
                            "(build one with `veracity index build`)")
        passages = ctx.retriever.search(question, k=self.top_k)
        ctx.tracer.emit("retrieval", query=question, results=[p.to_dict() for p in passages])
        if not passages:
            return UNKNOWN, []
        return self.read(question, passages, ctx), passages


class ClosedBook(QAModule):
    """The model answers from its own knowledge and states the fact it used (the paper's FLAN-T5 mode)."""

    name = "closed-book"

    def answer(self, question: str, ctx: Context) -> tuple[str, list[Evidence]]:
        prompt = load_prompt("qa_closed_book", self.prompts_dir).render(QUESTION=question)
        out = ctx.model.complete(fewshot(prompt, max_tokens=80, stop=["\n\n", "\nQuestion"]),
                                 stage="answer")
        ans, ev = parse_closed_book(out.text)
        if ans is None:
            self._fail(ctx, "answer", out.text, f"answer {UNKNOWN!r}")
            ans = UNKNOWN
        evidence = [Evidence(text=ev, source="model knowledge (closed-book)")] if ev else []
        return ans, evidence


class ReciterReader(QAModule):
    """The model recites a passage it remembers; a reader call answers from that passage."""

    name = "reciter-reader"

    def answer(self, question: str, ctx: Context) -> tuple[str, list[Evidence]]:
        prompt = load_prompt("recite", self.prompts_dir).render(QUESTION=question)
        out = ctx.model.complete(fewshot(prompt, max_tokens=120, stop=["\n\n", "\nQuestion"]),
                                 stage="recite")
        passage = parse_passage(out.text)
        if passage is None:
            self._fail(ctx, "recite", out.text, f"answer {UNKNOWN!r} (nothing recited)")
            return UNKNOWN, []
        evidence = [Evidence(text=passage, source="recited by the model")]
        return self.read(question, evidence, ctx), evidence


QA_MODULES: dict[str, type[QAModule]] = {m.name: m for m in (RetrieverReader, ClosedBook, ReciterReader)}
