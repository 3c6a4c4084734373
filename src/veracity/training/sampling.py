"""Sampling K answers per question at temperature T and fact-checking each with LEAF.

One line of OUT/samples.jsonl per question: its id, question, options, gold letter and the samples
(answer text, letter, LEAF score, per-sentence results). Resumable: questions already in the file
are skipped, so an interrupted run continues where it stopped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..leaf.answering import Answerer
from ..leaf.factcheck import AnswerChecker, ensure_searchable
from ..leaf.pipelines import question_context
from ..llm.usage import UsageMeter
from ..trace import Tracer

if TYPE_CHECKING:
    from ..config import Config
    from ..eval.datasets.records import EvalItem
    from ..llm.model import Model
    from ..retrieval.base import Retriever

SAMPLES = "samples.jsonl"


def read_samples(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by an interruption: its question is sampled again
    return rows


def sample_item(
    item: EvalItem,
    *,
    k: int,
    temperature: float,
    answerer: Answerer,
    checker: AnswerChecker,
    model: Model,
    rater: Model,
    retriever: Retriever,
) -> dict[str, Any]:
    options = item.metadata["options"]
    question = item.claim.text
    tracer, meter = Tracer(), UsageMeter()
    run, rate = model.bind(meter, tracer), rater.bind(meter, tracer)
    samples = []
    for i in range(k):
        ans = answerer.answer(
            question,
            options,
            model=run,
            tracer=tracer,
            kind="plain",
            temperature=temperature,
            seed=i,
            label={"sample": i},
        )
        res = checker.check(
            question_context(question, options),
            ans.text,
            model=rate,
            retriever=retriever,
            tracer=tracer,
            allow_empty=True,
            label={"sample": i},
        )
        samples.append(
            {
                "sample": i,
                "text": ans.text,
                "letter": ans.letter,
                "correct": ans.letter == item.gold,
                "score": res.score,
                "supported": res.supported,
                "checked": res.checked,
                "note": res.note,
                "sentences": [s.to_dict() for s in res.sentences],
            }
        )
    return {
        "id": item.id,
        "question": question,
        "options": options,
        "gold": item.gold,
        "prompt": answerer.prompt("plain", question, options, []),
        "temperature": temperature,
        "samples": samples,
        "usage": meter.to_dict(),
    }


def sample_dataset(
    items: list[EvalItem],
    out: Path,
    config: Config,
    model: Model,
    rater: Model,
    retriever: Retriever,
    *,
    k: int,
    temperature: float,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[int, int]:
    """Sample the items not yet in OUT/samples.jsonl; return (sampled now, skipped as already there)."""
    ensure_searchable(retriever)
    out.mkdir(parents=True, exist_ok=True)
    path = out / SAMPLES
    done = {r["id"] for r in read_samples(path)}
    answerer, checker = Answerer(config), AnswerChecker.from_config(config)
    todo = [it for it in items if it.id not in done]
    with path.open("a", encoding="utf-8") as f:
        for item in todo:
            row = sample_item(
                item,
                k=k,
                temperature=temperature,
                answerer=answerer,
                checker=checker,
                model=model,
                rater=rater,
                retriever=retriever,
            )
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
            if progress:
                progress(row)
    return len(todo), len(items) - len(todo)
