"""MIRAGE: `mirage` or `mirage:TASK` (mirage/benchmark_750.json), 150 questions each of medqa (MedQA-US / USMLE),
medmcqa, pubmedqa (PubMedQA*), bioasq (BioASQ-Y/N), mmlu (MMLU-Med); setting `multiple-choice`.

The claim text is the question, gold is the option letter, the options (`{"A": ..., ...}`) are in both the item's
and the claim's metadata with the task name; accuracy. With all five tasks (150 each) accuracy equals the task
average the papers report. LEAF Table 2 (Llama 3 70B Instruct) for reference, per task. The retrieval corpus
mirage/medcorpus.jsonl is not loaded here; index it with `veracity index build`.
"""

from __future__ import annotations

from pathlib import Path

from veracity.errors import UserError
from veracity.types import Claim

from .files import check_setting, read_json, required
from .records import Dataset, EvalItem

MIRAGE_TASKS = ("medqa", "medmcqa", "pubmedqa", "bioasq", "mmlu")
_MIRAGE_ALIASES = {
    "usmle": "medqa",
    "medqa-us": "medqa",
    "mmlu-med": "mmlu",
    "mmlu-medical": "mmlu",
    "pubmedqa*": "pubmedqa",
    "bioasq-y/n": "bioasq",
    "bioasq-yn": "bioasq",
}
# LEAF Table 2 (Llama 3 70B Instruct): plain, MedRAG, Fact-Check-Then-RAG
_MIRAGE_PAPER = {  # LEAF Table 2: the model alone, MedRAG, Fact-Check-Then-RAG
    "medqa": (73.53, 68.58, 77.52),
    "mmlu": (85.12, 82.46, 86.78),
    "pubmedqa": (60.60, 70.80, 73.60),
    "bioasq": (80.58, 87.70, 87.86),
    "medmcqa": (71.21, 68.78, 72.77),
    None: (74.21, 75.66, 79.71),
}
# keyed by our pipeline names, so the report prints them beside answer:plain / answer:rag / answer:fc-rag
MIRAGE_REFERENCE = {
    task: {"answer:plain": d, "answer:rag": m, "answer:fc-rag": f} for task, (d, m, f) in _MIRAGE_PAPER.items()
}


def load_mirage(path: Path, setting: str | None, task: str | None) -> Dataset:
    setting = check_setting("mirage", setting, ("multiple-choice",))
    if task is not None:
        task = _MIRAGE_ALIASES.get(task, task)
        if task not in MIRAGE_TASKS:
            raise UserError(f"MIRAGE has no task {task!r}; choose one of: {', '.join(MIRAGE_TASKS)}")
    data = read_json(path)
    if not isinstance(data, dict) or not data:
        raise UserError(f"{path} must hold a JSON object of tasks ({', '.join(MIRAGE_TASKS)})")
    if task is not None and task not in data:
        raise UserError(f"{path} has no task {task!r} (it has: {', '.join(data)})")
    items = []
    letters: set[str] = set()
    for name in [task] if task else list(data):
        questions = data[name]
        if not isinstance(questions, dict):
            raise UserError(f"{path}: task {name!r} must map question ids to questions")
        for qid, q in questions.items():
            where = f"{path}: {name} question {qid}"
            if not isinstance(q, dict):
                raise UserError(f"{where} is not a JSON object")
            options = required(q, "options", where)
            answer = str(required(q, "answer", where))
            if not isinstance(options, dict) or answer not in options:
                raise UserError(f"{where}: answer {answer!r} is not one of its options")
            letters.update(options)
            item_id = f"{name}:{qid}"
            meta = {"task": name, "options": dict(options)}
            items.append(
                EvalItem(
                    id=item_id,
                    claim=Claim(str(required(q, "question", where)), id=item_id, metadata=dict(meta)),
                    gold=answer,
                    metadata={**meta, "question_id": qid},
                )
            )
    ref = MIRAGE_REFERENCE.get(task) if task or set(data) == set(MIRAGE_TASKS) else None
    return Dataset(
        name=f"mirage:{task}" if task else "mirage",
        setting=setting,
        labels=tuple(sorted(letters)),
        metric="accuracy",
        items=items,
        reference=dict(ref or {}),
        reference_note=(
            "LEAF (2024) Table 2, MIRAGE accuracy, Llama 3 70B Instruct: answer:plain = the model alone, "
            "answer:rag = MedRAG retrieval, answer:fc-rag = Fact-Check-Then-RAG"
            + ("" if task else "; the average of the five tasks")
            if ref
            else ""
        ),
    )
