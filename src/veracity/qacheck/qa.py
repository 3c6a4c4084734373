"""QACheck's question-answering module A(q) -> (answer, evidence), in the paper's three forms."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..errors import UserError
from ..pipeline import Context
from ..types import RECITED, Evidence
from .prompts import CLOSED_BOOK, READER, RECITE, UNKNOWN


class QAModule(ABC):
    name: str = ""

    def __init__(self, prompts_dir: str | None = None, top_k: int = 3) -> None:
        self.prompts_dir = prompts_dir
        self.top_k = top_k
        self.p_reader = READER.load(prompts_dir)

    @abstractmethod
    def answer(self, question: str, ctx: Context, failures: list[str] | None = None) -> tuple[str, list[Evidence]]: ...

    def read(self, question: str, passages: list[Evidence], ctx: Context, failures: list[str] | None = None) -> str:
        """The reader: answer `question` from numbered passages, quoted as data (they may be any page's text)."""
        reply = self.p_reader.ask(ctx.model, failures=failures, PASSAGES=passages, QUESTION=question)
        return reply.value if reply.ok else UNKNOWN


class RetrieverReader(QAModule):
    """Retrieve the top-k passages from an index; the model reads them and answers."""

    name = "retriever-reader"

    def answer(self, question: str, ctx: Context, failures: list[str] | None = None) -> tuple[str, list[Evidence]]:
        if ctx.retriever is None:
            raise UserError(
                "the retriever-reader QA module needs an index: pass --index DIR "
                "(build one with `veracity index build`)"
            )
        passages = ctx.retriever.search(question, k=self.top_k)
        ctx.tracer.emit("retrieval", query=question, results=[p.to_dict() for p in passages])
        if not passages:
            return UNKNOWN, []
        return self.read(question, passages, ctx, failures), passages


class ClosedBook(QAModule):
    """The model answers from its own knowledge and states the fact it used (the paper's FLAN-T5 mode)."""

    name = "closed-book"

    def __init__(self, prompts_dir: str | None = None, top_k: int = 3) -> None:
        super().__init__(prompts_dir, top_k)
        self.p_closed_book = CLOSED_BOOK.load(prompts_dir)

    def answer(self, question: str, ctx: Context, failures: list[str] | None = None) -> tuple[str, list[Evidence]]:
        ans, ev = self.p_closed_book.ask(ctx.model, failures=failures, QUESTION=question).value
        ans = UNKNOWN if ans is None else ans
        evidence = [Evidence(text=ev, source="model knowledge (closed-book)", memory=True)] if ev else []
        return ans, evidence


class ReciterReader(QAModule):
    """The model recites a passage it remembers; a reader call answers from that passage."""

    name = "reciter-reader"

    def __init__(self, prompts_dir: str | None = None, top_k: int = 3) -> None:
        super().__init__(prompts_dir, top_k)
        self.p_recite = RECITE.load(prompts_dir)

    def answer(self, question: str, ctx: Context, failures: list[str] | None = None) -> tuple[str, list[Evidence]]:
        passage = self.p_recite.ask(ctx.model, failures=failures, QUESTION=question).value
        if passage is None:
            return UNKNOWN, []
        evidence = [Evidence(text=passage, source=RECITED, memory=True)]
        return self.read(question, evidence, ctx, failures), evidence


QA_MODULES: dict[str, type[QAModule]] = {m.name: m for m in (RetrieverReader, ClosedBook, ReciterReader)}
