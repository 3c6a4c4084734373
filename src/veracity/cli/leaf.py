"""The `veracity leaf` command: fact-check an answer, answer a multiple-choice question, report.

    veracity leaf score --question Q (--answer TEXT | --answer-file F) --index DIR [--json]
    veracity leaf answer --question Q --options options.json --index DIR --mode plain|rag|fc-rag [--json]
    veracity leaf report OUT [--json]

`register(subparsers)` adds the command to the main CLI. Handlers return an exit code; a UserError
propagates to the main CLI, which prints it as one line (exit 2). The fact-checking flags (leaf_options),
the configuration they make (leaf_config) are in veracity.cli.options (the index check, index_retriever, in
leaf.factcheck),
shared with `veracity selftrain`.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from ..leaf.factcheck import index_retriever
from .options import leaf_config, leaf_options, model_options

MODES = ("plain", "rag", "fc-rag")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `leaf score|answer|report` to the main CLI's subparsers."""
    parser = subparsers.add_parser(
        "leaf",
        help="fact-check model answers (LEAF) and answer with them",
        description="Fact-check an answer sentence by sentence (LEAF score), or "
        "answer a multiple-choice question plainly, with RAG, or Fact-Check-Then-RAG.",
    )
    commands = parser.add_subparsers(dest="leaf_command", metavar="{score,answer,report}", required=True)

    score = commands.add_parser(
        "score",
        parents=[model_options(), leaf_options()],
        help="fact-check an answer: each sentence supported or not, with evidence",
        description="Split the answer into sentences; for each, write a search query "
        "with the question as context, retrieve passages from the index, and rate it "
        "Supported or Not Supported. LEAF score = supported / sentences.",
    )
    score.add_argument("--question", required=True, help="the question the answer replies to")
    src = score.add_mutually_exclusive_group(required=True)
    src.add_argument("--answer", help="the answer text")
    src.add_argument("--answer-file", help="read the answer from a file ('-' for standard input)")
    score.add_argument(
        "--options", metavar="FILE", help='optional JSON file of the question\'s options, {"A": "...", "B": "..."}'
    )
    score.add_argument("--json", action="store_true", help="print the result as one JSON document")
    score.set_defaults(func=cmd_score)

    answer = commands.add_parser(
        "answer",
        parents=[model_options(), leaf_options()],
        help="answer a multiple-choice question and fact-check the answer",
        description="Answer a multiple-choice question (plain, MedRAG-style RAG, or "
        "Fact-Check-Then-RAG) and fact-check the answer.",
    )
    answer.add_argument("--question", required=True, help="the question")
    answer.add_argument(
        "--options", required=True, metavar="FILE", help='JSON file of the options, {"A": "...", "B": "..."}'
    )
    answer.add_argument(
        "--mode",
        dest="answer_mode",
        choices=MODES,
        default="plain",
        help="plain: the model alone; rag: passages retrieved for the question in the prompt; "
        "fc-rag: Fact-Check-Then-RAG (default: plain)",
    )
    answer.add_argument("--max-rounds", type=int, help="fc-rag: regenerations at most (default 2)")
    answer.add_argument("--json", action="store_true", help="print the result as one JSON document")
    answer.set_defaults(func=cmd_answer)

    report = commands.add_parser(
        "report",
        help="accuracy, filtered accuracy and AUC of the LEAF score from an evaluation folder",
        description="Read OUT/items.jsonl of `veracity eval` "
        "with answer:* pipelines and print accuracy, filtered accuracy (answers scoring "
        "1.0) and the AUC of the LEAF score for right vs wrong answers.",
    )
    report.add_argument("out", help="results folder of `veracity eval`")
    report.add_argument("--json", action="store_true", help="print as JSON")
    report.set_defaults(func=cmd_report)


def _question(args: argparse.Namespace, config) -> str:
    """The question, by the same rule as the server's answer check (`inputs.clean_question`)."""
    from ..inputs import clean_question

    return clean_question(args.question, config.max_claim_chars)


def _answer(args: argparse.Namespace) -> str:
    """The answer (argument, file or standard input), by the server's rule (`inputs.clean_answer`)."""
    from ..inputs import clean_answer
    from ..reading import MAX_TEXT_FILE_BYTES
    from .options import read_user_file

    if args.answer_file is None:
        return clean_answer(args.answer)
    return clean_answer(read_user_file(args.answer_file, MAX_TEXT_FILE_BYTES, "the answer file"))


def shown_index(index: str | None) -> str | None:
    """The index setting as printed and recorded (a PostgreSQL index's URL without its password)."""
    from ..retrieval.pg_index import shown_index as shown

    return shown(index)


def _usage_line(usage: dict[str, Any], seconds: float) -> str:
    t = usage.get("total", {})
    return (
        f"{t.get('calls', 0)} model calls ({t.get('cached_calls', 0)} cached), {t.get('prompt_tokens', 0)} "
        f"prompt + {t.get('completion_tokens', 0)} completion tokens, {seconds:.1f} s"
    )


def cmd_score(args: argparse.Namespace) -> int:
    from ..leaf.factcheck import AnswerChecker
    from ..leaf.options import load_options_file
    from ..leaf.pipelines import question_context
    from ..leaf.rater import rater_config
    from ..leaf.sentences import answer_sentences
    from ..llm import make_model
    from ..llm.usage import UsageMeter
    from ..report.terminal import TerminalPrinter
    from ..trace import Tracer

    config = leaf_config(args)
    question = _question(args, config)
    answer = _answer(args)
    answer_sentences(answer, config.leaf.max_sentences)  # an empty answer fails before anything loads
    options = load_options_file(args.options) if args.options else {}
    retriever = index_retriever(config)
    model = make_model(rater_config(config) or config)
    listeners = []
    if not args.json:
        print(f"Question: {question}\nRater: {model.model_id}   Index: {shown_index(config.index)}", flush=True)
        # the score and notes are printed at the end; a sentence's line already gives the verifier's reading
        listeners.append(TerminalPrinter(skip=("leaf_score", "leaf_note", "reasoning")))
    tracer, meter = Tracer(listeners), UsageMeter()
    t0 = time.perf_counter()
    result = AnswerChecker.from_config(config).check(
        question_context(question, options), answer, model=model.bind(meter, tracer), retriever=retriever, tracer=tracer
    )
    seconds = time.perf_counter() - t0
    if args.json:
        print(
            json.dumps(
                {
                    "question": question,
                    "options": options or None,
                    "answer": answer,
                    "rater": model.model_id,
                    "index": shown_index(config.index),
                    "leaf": result.to_dict(),
                    "usage": meter.to_dict(),
                    "seconds": round(seconds, 3),
                    "trace": tracer.to_list(),
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    print(f"\nLEAF score: {result.score:.2f} ({result.supported} of {result.checked} sentences supported)")
    if result.note:
        print(f"Note: {result.note}")
    print("Usage: " + _usage_line(meter.to_dict(), seconds))
    return 0


def cmd_answer(args: argparse.Namespace) -> int:
    from ..check import run_check
    from ..leaf.options import load_options_file
    from ..llm import make_model
    from ..registry import get_pipeline
    from ..report.check import check_items
    from ..report.terminal import TerminalPrinter
    from ..types import Claim

    options = load_options_file(args.options)
    config = leaf_config(args)
    question = _question(args, config)
    pipeline = get_pipeline(f"answer:{args.answer_mode}", config)
    retriever = index_retriever(config)
    model = make_model(config)
    listeners = []
    if not args.json:
        rater = config.leaf.rater_model or model.model_id
        print(f"Question: {question}", flush=True)
        for k, v in options.items():
            print(f"  {k}. {v}")
        print(
            f"Mode: {args.answer_mode}   Model: {model.model_id}   Rater: {rater}   Index: {shown_index(config.index)}",
            flush=True,
        )
        # each step as it happens; a sentence's line already gives the verifier's reading
        listeners.append(TerminalPrinter(skip=("reasoning",)))
    result = run_check(
        Claim(text=question, metadata={"options": options}),
        pipeline,
        model,
        config,
        retriever=retriever,
        listeners=listeners,
    )
    final = next((it["data"] for it in reversed(check_items(result)) if it["kind"] == "leaf_final"), {})
    if args.json:
        doc = result.to_dict()
        doc["options"] = options
        doc["answer"] = {
            "letter": final.get("letter"),
            "option": final.get("option"),
            "text": result.verdict.rationale,
            "leaf_score": final.get("score"),
            "supported": final.get("supported"),
            "checked": final.get("checked"),
            "rounds": final.get("rounds"),
            "chosen_round": final.get("chosen_round"),
        }
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    v = result.verdict
    letter = final.get("letter")
    chosen = f"{letter}. {final.get('option')}" if letter else "none (no option could be read from the answer)"
    conf = f" (confidence {v.confidence:.2f})" if v.confidence is not None else ""
    print(f"\nAnswer: {chosen}{conf}")
    extra = ""
    if final.get("rounds") is not None:
        extra = f"; {final['rounds']} Fact-Check-Then-RAG round(s), kept round {final['chosen_round']}"
    print(
        f"LEAF score: {final.get('score', 0.0):.2f} ({final.get('supported', 0)} of {final.get('checked', 0)} "
        f"sentences supported{extra})"
    )
    if final.get("note"):
        print(f"Note: {final['note']}")
    print("Reasoning: " + " ".join(v.rationale.split()))
    print("Usage: " + _usage_line(result.usage, result.seconds))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ..eval.leaf_figures import read_rows, summarize, to_markdown

    summaries = summarize(read_rows(args.out))
    if args.json:
        print(json.dumps(summaries, indent=2))
    else:
        print(to_markdown(summaries))
    return 0
