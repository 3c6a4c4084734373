"""LEAF's rater alone, on MIRAGE: does the LEAF score tell a right answer from a wrong one, whoever wrote it?

LEAF's AUC (benchmarks/leaf_mirage.py) is measured on the answers a model wrote, so with the embedded 135M
answerer it measures that model's answers (near chance) more than the rater. This script measures the rater
on answers whose rightness is known in advance: for every question whose options can be stated as a sentence
without a model, each option becomes a one-sentence answer, the question's stem completed by it
("Oedema is the presence of: excessive extravascular fluid."). LEAF checks each such answer the way it
checks a model's answer (its sentences split, each searched for in the medical corpus, rated by the trained
verifier; no model call), and the table gives, per task:

- AUC of the LEAF score (the share of an answer's sentences supported) for the right option's answer against
  the wrong options' answers (0.5 = no separation), how many of each pass (score 1.0), and LEAF's filtered
  accuracy here: the share of the passing answers that are right (against chance, the share of all answers);
- AUC of the verifier's probability that the stated option is supported (the same ranking, not cut at a label);
- how often the option the rater finds best supported is the right one (chance: 1 in the options), with its
  accuracy against coverage (the questions where the best option leads the next by the widest margin first).

Statable: a stem ending without a question mark (or holding a blank "___"), with no "which", "except", "not",
"false", "following" or a question word in it and no option that points at the others ("all of the above", "both").
Questions asked as questions (MedQA's vignettes, PubMedQA's and BioASQ's yes/no questions) would need a model
to turn into statements and are left out; the table says how many questions each task kept. The corpus holds
MedMCQA explanations (2,206 of its dev questions'), so MedMCQA is partly an oracle-in-corpus setting (see the
data README).

    python benchmarks/leaf_rater_options.py                       # medmcqa, mmlu; BM25 index built once
    python benchmarks/leaf_rater_options.py --verifier runs/candidate --top-k 5
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from leaf_mirage import SHARED, get_index, pct

from veracity.config import load_config
from veracity.eval.leaf_figures import auc
from veracity.eval.report import COVERAGES, accuracy_at_coverage
from veracity.leaf.factcheck import AnswerChecker, SentenceCheck
from veracity.leaf.pipelines import question_context
from veracity.leaf.prompts import SUPPORTED
from veracity.llm import make_model
from veracity.llm.usage import UsageMeter
from veracity.trace import Tracer

BLANK = re.compile(r"_{2,}|\.{4,}")
ASKED = re.compile(r"\b(which|what|how|why|when|where|who|except|not|false|incorrect|untrue|following)\b", re.I)
POINTING = re.compile(r"\b(above|both|all of these|none of these|neither)\b|\b[A-D] and [A-D]\b", re.I)


def statement(question: str, option: str) -> str | None:
    """The answer that states `option` as one sentence, or None when the question cannot be stated without a
    model (asked as a question, or negated, or an option pointing at the others)."""
    q, o = " ".join(question.split()), " ".join(option.split()).rstrip(".")
    if not o or ASKED.search(q) or POINTING.search(o):
        return None
    if BLANK.search(q):
        text = BLANK.sub(lambda _: o, q, count=1)  # the option as written (a backslash in it is no escape)
    elif q.endswith("?"):
        return None
    else:
        text = f"{q.rstrip(' -–—')} {o}"  # a colon stays: "Oedema is the presence of: excessive ..."
    return text if text.endswith((".", "!")) else text + "."


def supported_probability(check: SentenceCheck) -> float:
    """The verifier's probability that a rated sentence is supported: its confidence in the label it gave, turned
    around when the label was Not Supported (the two-label reading the rater decides by)."""
    confidence = float(check.confidence if check.confidence is not None else 0.5)
    return confidence if check.rating == SUPPORTED else 1.0 - confidence


def decided_by_joined(tracer: Tracer, passages: int) -> bool:
    """Whether the last sentence's reading was decided by its passages read together (no one passage decided)."""
    step = [st for st in tracer.steps if st.kind == "evidence_verifier"][-1]
    return passages > 1 and step.passage is None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="medmcqa,mmlu", help="comma-separated MIRAGE tasks (default: medmcqa,mmlu)")
    ap.add_argument("--work", default="runs/leaf_mirage", help="folder of the cached index (leaf_mirage.py's)")
    ap.add_argument("--data", default=str(SHARED / "benchmark_750.json"))
    ap.add_argument("--corpus", default=str(SHARED / "medcorpus.jsonl"))
    ap.add_argument("--verifier", default="default", help="the verifier folder (default: the shipped one)")
    ap.add_argument("--top-k", type=int, default=3, help="passages per sentence (default 3, as leaf.top_k)")
    ap.add_argument("--out", help="write each stated option's score here (JSONL)")
    args = ap.parse_args()

    for f in (args.data, args.corpus):
        if not Path(f).is_file():
            print(f"benchmark data not found: {f}", file=sys.stderr)
            return 2
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in data]
    if unknown:
        print(f"unknown task(s) {unknown}; the data has {', '.join(data)}", file=sys.stderr)
        return 2
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    index, t_index, built = get_index(work, Path(args.corpus), dense=False)
    retriever = index.retriever()
    config = load_config(overrides={"verifier.use": "on", "verifier.model": args.verifier, "leaf.top_k": args.top_k})
    checker = AnswerChecker.from_config(config, write_queries=False)
    model = make_model(config, lazy=True)  # never called: the verifier rates and each sentence is its own query
    print(
        f"Index: {len(index)} passages ({'built' if built else 'loaded'} in {t_index:.1f} s); verifier "
        f"{args.verifier}; top {args.top_k} passages per sentence",
        flush=True,
    )

    rows: list[dict] = []
    t0 = time.perf_counter()
    for task in tasks:
        for qid, item in data[task].items():
            stated = {k: statement(item["question"], v) for k, v in item["options"].items()}
            if not all(stated.values()):
                continue
            context = question_context(item["question"], item["options"])
            explanation = f"medmcqa-exp:{qid}"  # the corpus's document of a MedMCQA question's explanation
            for key, text in stated.items():
                tracer = Tracer()
                result = checker.check(
                    context, text, model=model.bind(UsageMeter(), tracer), retriever=retriever, tracer=tracer
                )
                rows.append(
                    {
                        "task": task,
                        "id": qid,
                        "option": key,
                        "right": key == item["answer"],
                        "answer": text,
                        "score": result.score,
                        "p_supported": supported_probability(result.sentences[-1]),
                        "sentences": result.checked,
                        "explained": index.document(explanation) is not None,
                        "explanation_found": any(e.doc_id == explanation for e in result.sentences[-1].evidence),
                        "joined": decided_by_joined(tracer, len(result.sentences[-1].evidence)),
                    }
                )
    seconds = time.perf_counter() - t0
    if model.backend.loaded:
        print("error: the model was called; this measurement is meant to rate with the verifier alone", file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    print(f"\n## LEAF's rater on answers that state each option ({args.verifier} verifier, MIRAGE)\n")
    print(
        "| task | questions kept / all | answers | AUC LEAF score | AUC P(supported) | passing: right | "
        "passing: wrong | right among passing | best-supported option right | chance |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    curves = []
    groups = {t: [r for r in rows if r["task"] == t] for t in tasks}
    if "medmcqa" in tasks:  # its explanation in the corpus (an oracle passage the search may find) or not
        groups["medmcqa, explanation in corpus"] = [r for r in groups["medmcqa"] if r["explained"]]
        groups["medmcqa, not in corpus"] = [r for r in groups["medmcqa"] if not r["explained"]]
    if len(tasks) > 1:
        groups["all"] = rows
    for task, rs in groups.items():
        total = sum(len(data[t]) for t in tasks) if task == "all" else len(data[task.split(",")[0]])
        right, wrong = [r for r in rs if r["right"]], [r for r in rs if not r["right"]]
        picks = []  # (margin of the best option over the next, is it the right one)
        for qid in dict.fromkeys(r["id"] for r in rs):
            opts = sorted((r for r in rs if r["id"] == qid), key=lambda r: -r["p_supported"])
            picks.append((opts[0]["p_supported"] - opts[1]["p_supported"], opts[0]["right"]))
        chance = sum(1 / len(data[r["task"]][r["id"]]["options"]) for r in right) / max(1, len(right))
        a_score = auc([r["score"] for r in rs], [r["right"] for r in rs])
        a_prob = auc([r["p_supported"] for r in rs], [r["right"] for r in rs])
        passed_right, passed_wrong = sum(r["score"] == 1.0 for r in right), sum(r["score"] == 1.0 for r in wrong)
        fmt = lambda x: "–" if x is None else f"{x:.3f}"  # noqa: E731
        print(
            f"| {task} | {len(picks)} / {total} | {len(rs)} | {fmt(a_score)} | {fmt(a_prob)} | "
            f"{passed_right} / {len(right)} | {passed_wrong} / {len(wrong)} | "
            f"{pct(passed_right / (passed_right + passed_wrong) if passed_right + passed_wrong else None)} | "
            f"{pct(sum(ok for _, ok in picks) / max(1, len(picks)))} | {pct(chance)} |"
        )
        curve = accuracy_at_coverage(
            [{"verdict": {"confidence": lead}, "gold": True, "pred": ok} for lead, ok in picks]
        )
        curves.append((task, [acc for _, _, acc in curve or []]))
    print("\nThe best-supported option's accuracy against coverage (questions with the widest lead first):\n")
    print("| task | " + " | ".join(f"{int(100 * c)}%" for c in COVERAGES) + " |")
    print("|---|" + "---:|" * len(COVERAGES))
    for task, curve in curves:
        print(f"| {task} | " + " | ".join(pct(x) for x in curve) + " |")
    passing_wrong = [r for r in rows if not r["right"] and r["score"] == 1.0]
    print(
        f"\nWrong answers passing whose last sentence the passages read together decided (no one passage did): "
        f"{sum(r['joined'] for r in passing_wrong)} of {len(passing_wrong)}; right ones passing: "
        f"{sum(r['joined'] for r in rows if r['right'] and r['score'] == 1.0)} of "
        f"{sum(r['right'] and r['score'] == 1.0 for r in rows)}."
    )
    oracle = [r for r in rows if r["explained"]]
    if oracle:
        print(
            f"\nThe question's own explanation among the passages read: {sum(r['explanation_found'] for r in oracle)}"
            f" of {len(oracle)} answers ({sum(r['explanation_found'] for r in oracle if r['right'])} of "
            f"{sum(r['right'] for r in oracle)} right ones)."
        )
    print(
        f"\n{len(rows)} answers checked in {seconds:.0f} s ({1000 * seconds / max(1, len(rows)):.0f} ms each, "
        f"{sum(r['sentences'] for r in rows)} sentences); no model call."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
