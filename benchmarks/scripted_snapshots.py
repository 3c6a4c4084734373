"""Snapshots of what every registered pipeline shows, run with the scripted backend, for before/after comparisons.

For every pipeline in the registry (QACheck and its variants, the baselines, DEFAME and its ablations, LEAF's
answering pipelines) and 2-3 fixed claims (or questions), over a tiny BM25 index built in a temporary folder,
this writes into OUT/<pipeline>/<case>/:

    result.json     the result as `veracity check --json` prints it (`veracity leaf answer --json` for answer:*;
                    `run_check(...).to_dict()` where no command reaches the pipeline: answer:rank*)
    trace.json      its trace steps
    report.md       the Markdown report (`veracity check --report x.md`; `report.to_markdown` elsewhere)
    report.html     the HTML report
    cli.txt         the human-readable output of the command (absent where no command reaches the pipeline)
    server/         the run stored in the server's database and read back through the HTTP app (FastAPI's
                    TestClient): api.json (GET /api/checks/ID), panel.html (GET /checks/ID/panel, the page's
                    view of the run), events.txt (GET /api/checks/ID/events, the SSE stream of a finished run),
                    report.md, report.html, report.json (the downloads)

plus OUT/leaf-score/* (`veracity leaf score`, text and --json) and OUT/answer-check/* (the server's answer
check, POSTed to the app and run by its executor, then read back like the others).

Deterministic: timings, dates, run ids and the temporary folder are normalised (`normalise`). Run it with
the tree to compare on PYTHONPATH:

    PYTHONPATH=/tmp/before/src .venv/bin/python benchmarks/scripted_snapshots.py /tmp/snap_before
    .venv/bin/python benchmarks/scripted_snapshots.py /tmp/snap_after
    diff -r /tmp/snap_before /tmp/snap_after
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# -- the world: one index for every system --------------------------------------------------------------------

DOCS = [
    ("kb", "Kestrel Bay", "Kestrel Bay is a 1998 novel written by Mara Lind.", None, None),
    ("ml", "Mara Lind", "Mara Lind is an Estonian novelist, born in Tallinn in 1961.", None, None),
    ("ob", "Orrin Bridge", "The Orrin Bridge is a stone bridge in Tallinn, Estonia, finished in 1884.",
     "https://example.org/orrin", "2020-03-01"),
    ("ob-2023", "Orrin Bridge repairs 2023", "In 2023 the Orrin Bridge in Tallinn was closed for repairs of its "
     "stone arches and reopened in October.", "https://example.org/orrin-2023", "2023-10-12"),
    ("riga", "Riga bridges", "Riga has several bridges over the Daugava; none of them was moved from Tallinn.",
     "https://example.net/riga", None),
    ("onsager", "Lars Onsager", "Lars Onsager, born in 1903 in Kristiania, won the 1968 Nobel Prize in Chemistry.",
     None, None),
    ("sardines", "Sardines", "Sardines are small oily fish that live in schools near the Orrin Bridge rumour pages.",
     "https://fish.example.com/sardines", None),
    ("cts-symptoms", "Carpal tunnel symptoms", "Numbness and tingling of the thumb, index and middle fingers, often "
     "worse at night, are the typical symptoms of carpal tunnel syndrome.", None, None),
    ("cts-cause", "Carpal tunnel syndrome", "Carpal tunnel syndrome is an entrapment neuropathy: the median nerve is "
     "compressed as it passes through the carpal tunnel at the wrist.", None, None),
    ("cts-release", "Carpal tunnel release", "Cutting the transverse carpal ligament frees the median nerve when "
     "splints and steroid injections do not help.", None, None),
    ("lithium", "Lithium and the kidney", "Long-term lithium therapy is the most common drug cause of nephrogenic "
     "diabetes insipidus, with polyuria and thirst.", None, None),
]

# -- QACheck ---------------------------------------------------------------------------------------------------

VERIFIER = r"Yes or no\?\nPrediction =$"
FIRST_Q = r"first ask a simple question:\nQuestion =$"
FOLLOW_Q = r"Question (\d+) =$"
RECITE = r"Relevant passage =$"
READER = r"Passages:\n(?:(?!-{8}).)*Answer =$"
CLOSED = r"-{8}\nQuestion = [^\n]*\nAnswer =$"
VALIDATOR = r"useful for verifying the claim\?\nThe answer:$"
REASONER = r"Is this claim true or false\?\nAnswer:$"
LABEL = r"final answer is:$"
REMINDER = r"Reply with that word only\.\n$"

Q_CLAIM_1 = "The author of the novel Kestrel Bay was born in the same city where the Orrin Bridge stands."
Q_RULES_1 = [
    {"match": REMINDER, "reply": "Unsure"},
    {"match": VERIFIER, "reply": ["No, we cannot know.", "Yes, we can know."]},
    {"match": FIRST_Q, "reply": " Who wrote the novel Kestrel Bay?"},
    {"match": FOLLOW_Q, "reply": " Where was Mara Lind born?"},
    {"match": RECITE, "reply": [" Kestrel Bay is a 1998 novel by the writer Mara Lind.",
                                " Mara Lind was born in Tallinn, the city of the Orrin Bridge."]},
    {"match": READER, "reply": [" Mara Lind", " Tallinn."]},
    {"match": CLOSED, "reply": [" Mara Lind\nEvidence = Kestrel Bay is a novel by Mara Lind.",
                                " Tallinn\nEvidence = Mara Lind was born in Tallinn."]},
    {"match": VALIDATOR, "reply": " Yes"},
    {"match": REASONER, "reply": "\nKestrel Bay was written by Mara Lind.\nMara Lind was born in Tallinn, where the "
                                 "bridge is.\n"},
    {"match": LABEL, "reply": " True."},
]

# an unusable verifier answer, a repeated question, a discarded pair, a stop by the verifier
Q_CLAIM_2 = "Lars Onsager won the Nobel prize when he was 30 years old."
Q_RULES_2 = [
    {"match": REMINDER, "reply": "Unsure"},
    {"match": VERIFIER, "reply": ["Perhaps.", "No, we cannot know.", "No, we cannot know.", "Yes, we can know."]},
    {"match": FIRST_Q, "reply": " Who won the Nobel prize in chemistry in 1968?"},
    {"match": FOLLOW_Q, "reply": [" Who won the Nobel prize in chemistry in 1968?", " When was Lars Onsager born?",
                                  " What is the capital of Norway?"]},
    {"match": RECITE, "reply": [" Lars Onsager won the 1968 Nobel Prize in Chemistry.",
                                " Lars Onsager was born on 27 November 1903 in Kristiania, Norway.",
                                " Oslo is the capital of Norway."]},
    {"match": READER, "reply": [" Lars Onsager", " 1903", " Oslo"]},
    {"match": CLOSED, "reply": [" Lars Onsager\nEvidence = Onsager won the 1968 Nobel Prize in Chemistry.",
                                " 1903\nEvidence = Onsager was born in 1903.",
                                " Oslo\nEvidence = Oslo is the capital."]},
    {"match": VALIDATOR, "reply": [" Yes", " Yes", " No"]},
    {"match": REASONER, "reply": "\nOnsager was born in 1903 and won in 1968, at 64, not 30.\n"},
    {"match": LABEL, "reply": " False."},
]

# no question at all, and a reasoner whose label is unusable
Q_CLAIM_3 = "The Orrin Bridge is older than the Eiffel Tower."
Q_RULES_3 = [
    {"match": REMINDER, "reply": "It is hard to say"},
    {"match": FIRST_Q, "reply": "\n\n"},
    {"match": REASONER, "reply": "\nI cannot tell.\n"},
    {"match": LABEL, "reply": "Perhaps, who knows"},
]

QACHECK_CASES = [("c1", Q_CLAIM_1, Q_RULES_1), ("c2", Q_CLAIM_2, Q_RULES_2), ("c3", Q_CLAIM_3, Q_RULES_3)]

# -- baselines -------------------------------------------------------------------------------------------------

DIRECT_CASES = [
    ("c1", Q_CLAIM_1, [{"match": r"true or false\?\nAnswer:$", "reply": " True"}]),
    ("c2", Q_CLAIM_2, [{"match": REMINDER, "reply": "Unsure"},
                       {"match": r"true or false\?\nAnswer:$", "reply": " It is hard to say"}]),
]
COT_CASES = [
    ("c1", Q_CLAIM_1, [{"match": r"step by step\.\nAnswer:$", "reply": "\nKestrel Bay is by Mara Lind, born in "
                                                                       "Tallinn, where the Orrin Bridge is.\n"},
                       {"match": LABEL, "reply": " True"}]),
    ("c2", Q_CLAIM_2, [{"match": r"step by step\.\nAnswer:$", "reply": "\nOnsager won in 1968, aged 64.\n"},
                       {"match": LABEL, "reply": " False"}]),
]

# -- DEFAME ----------------------------------------------------------------------------------------------------

D_CLAIM_1 = "The Orrin Bridge was moved from Tallinn to Riga in 2023."
D_CLAIM_2 = "This photo shows the Orrin Bridge in Tallinn in May 2024."
PLAN = r"Executed actions: [^\n]*\nActions:$"


def defame_rules(plan: list[str] | str, verdicts: list[str] | str) -> list[dict[str, Any]]:
    return [
        {"match": REMINDER, "reply": "Refuted"},
        {"match": r"Actions:\n$", "reply": "web_search"},  # a scored tool choice after an unusable plan
        {"match": r'web_search\("$', "reply": "Orrin Bridge Riga"},
        {"match": PLAN, "reply": plan},
        {"match": r"<result>[^<]*none of them was moved[^<]*</result>\nSummary:$", "reply": "NONE"},
        {"match": r"<result>[^<]*stone bridge in Tallinn[^<]*</result>\nSummary:$",
         "reply": "The Orrin Bridge is a stone bridge in Tallinn, Estonia, finished in 1884."},
        {"match": r"<result>[^<]*closed for repairs[^<]*</result>\nSummary:$",
         "reply": "In 2023 the bridge was closed for repairs in Tallinn and reopened in October."},
        {"match": r"Summary:$", "reply": "The claim says the bridge went to Riga."},  # not drawn from the source
        {"match": r"Elaboration:$", "reply": "The bridge was repaired in Tallinn in 2023; nothing says it moved."},
        {"match": r"Key findings:$", "reply": "The Orrin Bridge stayed in Tallinn in 2023."},
        {"match": r"Verdict:$", "reply": verdicts},
        {"match": r"Justification:$", "reply": "The bridge was repaired in place in Tallinn in 2023 "
                                               "([Orrin Bridge repairs 2023](https://example.org/orrin-2023))."},
    ]


DEFAME_CASES = [
    # two rounds: not enough information, then a new search and a verdict
    ("c1", D_CLAIM_1, {}, defame_rules(['web_search("Orrin Bridge Tallinn")', 'web_search("Orrin Bridge Riga 2023")'],
                                       ["Not Enough Information", "Refuted"])),
    # a claim image and a date; the plan names an unknown tool and the metadata tool
    ("c2", D_CLAIM_2, {"image": True, "date": "2024-05-15"},
     defame_rules('fly_to("Tallinn")\nimage_metadata(<image:1>)', "Refuted")),
    # a plan with no usable action: the tool is scored, the query written
    ("c3", D_CLAIM_1, {}, defame_rules("I would look it up.", "Refuted")),
]

# -- LEAF ------------------------------------------------------------------------------------------------------

Q_CTS = "Is carpal tunnel syndrome a type of nerve entrapment?"
OPT_CTS = {"A": "yes", "B": "no"}
Q_LI = "Which disorder does long-term lithium therapy most often cause?"
OPT_LI = {"A": "Central diabetes insipidus", "B": "Nephrogenic diabetes insipidus", "C": "Hypothyroid coma"}
PLAIN_CTS = ("Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger. "
             "It is a disorder of the tendons rather than of a nerve. So the answer is B.")
FC_CTS = "Carpal tunnel syndrome is an entrapment neuropathy of the median nerve at the wrist. So the answer is A."
RAG_CTS = "The documents say the median nerve is compressed in the carpal tunnel. The answer is A."
PLAIN_LI = "Long-term lithium therapy is the most common drug cause of nephrogenic diabetes insipidus. The answer is B."

LEAF_RULES = [
    {"match": "STATEMENT:\nCarpal tunnel syndrome causes numbness[^\n]*\nSearch query:$",
     "reply": " numbness tingling thumb index finger night"},
    {"match": "STATEMENT:\nIt is a disorder of the tendons[^\n]*\nSearch query:$",
     "reply": " carpal tunnel median nerve compressed entrapment"},
    {"match": "STATEMENT:\nSo the answer is B.\nSearch query:$", "reply": " transverse carpal ligament splints"},
    {"match": "STATEMENT:\nLong-term lithium[^\n]*\nSearch query:$",
     "reply": " lithium nephrogenic diabetes insipidus"},
    {"match": "STATEMENT:\nThe answer is B.\nSearch query:$", "reply": "\n\n"},  # no query: the sentence is searched
    {"match": "Search query:$", "reply": " carpal tunnel syndrome entrapment neuropathy"},
    {"match": "Reasoning:$", "reply": " The passage addresses this statement."},
    {"match": "STATEMENT:\n(It is a disorder of the tendons|So the answer is B)[^\n]*\nReasoning:[^\n]*\n"
              "Final answer:$", "reply": " Not Supported"},
    {"match": "STATEMENT:\nThe answer is B.\nReasoning:[^\n]*\nFinal answer:$", "reply": " I cannot tell."},
    {"match": "Reply with (that|one of)[^\n]*\n$", "reply": " Maybe"},
    {"match": "Final answer:$", "reply": " Supported"},
    {"match": "^Pick the correct answer.*ANSWER:$", "reply": FC_CTS},
    {"match": "documents that may be relevant.*ANSWER:$", "reply": RAG_CTS},
    {"match": "lithium.*ANSWER:$", "reply": PLAIN_LI},
    {"match": "ANSWER:$", "reply": PLAIN_CTS},
    {"match": "answer is A.\n\nOf the options A or B, the one this answer chooses is option$", "reply": " A"},
    {"match": "chooses is option$", "reply": " B"},
]
LEAF_CASES = [("c1", Q_CTS, OPT_CTS), ("c2", Q_LI, OPT_LI)]
ANSWER_CHECKS = [("c1", Q_CTS, PLAIN_CTS), ("c2", Q_LI, PLAIN_LI)]


# -- normalising -----------------------------------------------------------------------------------------------

TIME_KEYS = {"t", "seconds", "latency_s", "created_at", "finished_at", "started_at"}


def normalise_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<T>" if k in TIME_KEYS and value[k] is not None else normalise_json(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise_json(v) for v in value]
    return value


class Normaliser:
    def __init__(self, tmp: Path) -> None:
        self.tmp = str(tmp.resolve())
        self.ids: dict[str, str] = {}

    def text(self, s: str) -> str:
        s = s.replace(self.tmp, "<TMP>").replace(self.tmp.replace("/", "%2F"), "<TMP>")
        for real, fake in self.ids.items():
            s = s.replace(real, fake)
        s = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:\+00:00|Z)?", "<ISO-TIME>", s)
        s = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "<TIME>", s)
        s = re.sub(r"\b\d+\.\d s\b", "<S> s", s)  # usage lines: "..., 0.0 s"
        s = re.sub(r"Finished in \d+\.\d s", "Finished in <S> s", s)
        s = re.sub(r"(<dt>Time</dt><dd>)[\d.]+ s", r"\1<S> s", s)
        s = re.sub(r'("(?:t|seconds|created_at|finished_at|started_at)": )(?:-?[\d.e+-]+|"[^"]*")', r'\1"<T>"', s)
        s = re.sub(r"\| [\d.]+ \|\n", "| <S> |\n", s)  # the seconds column of the usage table
        s = re.sub(r"(<td>)\d+\.\d\d(</td><td>(?:yes|no)</td>)", r"\1<S>\2", s)  # model-call seconds on the page
        return s

    def json(self, value: Any) -> str:
        return self.text(json.dumps(normalise_json(value), indent=2, ensure_ascii=False)) + "\n"


# -- running ---------------------------------------------------------------------------------------------------

def cli(argv: list[str]) -> tuple[int, str, str]:
    """`veracity ARGV` in this process: (exit code, stdout, stderr)."""
    from veracity.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def write_rules(path: Path, rules: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"rules": rules}))
    return f"scripted:{path}"


class Snapshots:
    def __init__(self, out: Path, tmp: Path) -> None:
        self.out, self.tmp = out, tmp
        self.norm = Normaliser(tmp)
        self.stored: list[tuple[Path, str, dict[str, Any], dict[str, Any]]] = []  # (folder, run id, run row, result)

    def write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.norm.text(text), encoding="utf-8")

    def write_json(self, path: Path, value: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.norm.json(value), encoding="utf-8")

    def rules_file(self, name: str, rules: list[dict[str, Any]]) -> str:
        return write_rules(self.tmp / f"rules-{name.replace(':', '-')}.json", rules)

    def keep(self, folder: Path, result: dict[str, Any], options: dict[str, Any] | None = None) -> None:
        """Store the result as a server run, read back later (`server_views`)."""
        run_id = f"{len(self.stored) + 1:016x}"
        self.stored.append((folder, run_id, {"options": options or {}}, result))

    # -- claim pipelines through `veracity check` -------------------------------------------------------------

    def check(self, pipeline: str, case: str, claim: str, rules: list[dict[str, Any]], extra: list[str]) -> None:
        folder = self.out / pipeline / case
        model = self.rules_file(f"{pipeline}-{case}", rules)
        base = ["check", claim, "--pipeline", pipeline, "--model", model, "--no-cache", "--index",
                str(self.tmp / "index"), *extra]
        md, page = self.tmp / "report.md", self.tmp / "report.html"
        code, out, err = cli(base + ["--report", str(md)])
        self.write(folder / "cli.txt", f"exit {code}\n{out}{err}")
        self.write(folder / "report.md", md.read_text(encoding="utf-8") if md.exists() else "(none)\n")
        cli(base + ["--report", str(page)])
        self.write(folder / "report.html", page.read_text(encoding="utf-8") if page.exists() else "(none)\n")
        code, out, err = cli(base + ["--json"])
        if code != 0:
            self.write(folder / "result.json", f"exit {code}\n{out}{err}")
            return
        result = json.loads(out)
        self.write(folder / "result.json", out)
        self.write_json(folder / "trace.json", result["trace"])
        md.unlink(missing_ok=True)
        page.unlink(missing_ok=True)
        self.keep(folder, result)

    # -- LEAF's answering pipelines -------------------------------------------------------------------------------

    def answer(self, pipeline: str, case: str, question: str, options: dict[str, str]) -> None:
        from veracity.check import run_check
        from veracity.config import load_config
        from veracity.llm import make_model
        from veracity.registry import get_pipeline
        from veracity.report import to_html, to_markdown
        from veracity.retrieval.index import Index
        from veracity.types import Claim

        folder = self.out / pipeline / case
        model = self.rules_file(f"{pipeline}-{case}", LEAF_RULES)
        mode = pipeline.split(":", 1)[1]
        if mode in ("plain", "rag", "fc-rag"):
            opts = self.tmp / f"options-{case}.json"
            opts.write_text(json.dumps(options))
            base = ["leaf", "answer", "--question", question, "--options", str(opts), "--index",
                    str(self.tmp / "index"), "--mode", mode, "--model", model, "--no-cache", "--top-k", "1"]
            code, out, err = cli(base)
            self.write(folder / "cli.txt", f"exit {code}\n{out}{err}")
            code, out, err = cli(base + ["--json"])
            self.write(folder / "result.json", out if code == 0 else f"exit {code}\n{out}{err}")
        config = load_config(overrides={"model": model, "cache": False, "leaf.top_k": 1}, env={})
        result = run_check(Claim(question, metadata={"options": options}), get_pipeline(pipeline, config),
                           make_model(config), config, retriever=Index.load(str(self.tmp / "index")).retriever())
        doc = result.to_dict()
        if mode not in ("plain", "rag", "fc-rag"):
            self.write_json(folder / "result.json", doc)
        self.write_json(folder / "trace.json", doc["trace"])
        self.write(folder / "report.md", to_markdown(result))
        self.write(folder / "report.html", to_html(result))
        self.keep(folder, doc)

    def leaf_score(self, case: str, question: str, answer: str) -> None:
        folder = self.out / "leaf-score" / case
        model = self.rules_file(f"leaf-score-{case}", LEAF_RULES)
        base = ["leaf", "score", "--question", question, "--answer", answer, "--index", str(self.tmp / "index"),
                "--model", model, "--no-cache", "--top-k", "1"]
        code, out, err = cli(base)
        self.write(folder / "cli.txt", f"exit {code}\n{out}{err}")
        code, out, err = cli(base + ["--json"])
        self.write(folder / "result.json", out if code == 0 else f"exit {code}\n{out}{err}")

    # -- the server ------------------------------------------------------------------------------------------------

    def server_views(self) -> None:
        """Every kept result stored as a finished run, and the server's answer checks run through its executor;
        then each read back through the app as the page and the API show it."""
        from fastapi.testclient import TestClient

        from veracity.config import load_config
        from veracity.server.app import create_app
        from veracity.server.settings import ServerSettings
        from veracity.server.store import RunStore

        db = self.tmp / "server" / "runs.sqlite"
        store = RunStore(db)
        for folder, run_id, row, result in self.stored:
            self.norm.ids[run_id] = "<RUN-ID>"
            store.create(run_id, claim=result["claim"]["text"], pipeline=result["pipeline"], qa=None,
                         model=result["model"], options=row["options"])
            store.mark_running(run_id)
            for seq, step in enumerate(result["trace"]):
                store.add_step(run_id, seq, step)
            store.finish(run_id, result)
        model = self.rules_file("answer-check", LEAF_RULES)
        config = load_config(overrides={"model": model, "cache": False, "index": str(self.tmp / "index"),
                                        "leaf.top_k": 1}, env={})
        app = create_app(config, ServerSettings(db_path=str(db), rate_limit=0, max_concurrent=1))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            for folder, run_id, _, _ in self.stored:
                self.read_run(client, folder / "server", run_id)
            for case, question, answer in ANSWER_CHECKS:
                r = client.post("/api/checks", json={"question": question, "answer": answer})
                assert r.status_code == 202, r.text
                run_id = r.json()["id"]
                self.norm.ids[run_id] = "<RUN-ID>"
                for _ in range(600):
                    if client.get(f"/api/checks/{run_id}").json()["status"] not in ("queued", "running"):
                        break
                    time.sleep(0.05)
                self.read_run(client, self.out / "answer-check" / case / "server", run_id)

    def read_run(self, client, folder: Path, run_id: str) -> None:
        api = client.get(f"/api/checks/{run_id}").json()
        api.pop("queue_position", None)
        self.write_json(folder / "api.json", api)
        self.write(folder / "panel.html", client.get(f"/checks/{run_id}/panel").text)
        for fmt in ("md", "html", "json"):
            self.write(folder / f"report.{fmt}", client.get(f"/api/checks/{run_id}/report.{fmt}").text)
        with client.stream("GET", f"/api/checks/{run_id}/events") as r:
            events = "".join(line + "\n" for line in r.iter_lines() if not line.startswith(": ping"))
        self.write(folder / "events.txt", events)


def build_index(tmp: Path) -> None:
    from veracity.retrieval.documents import Document
    from veracity.retrieval.index import Index

    docs = [Document(i, title, text, url=url, date=date) for i, title, text, url, date in DOCS]
    Index.build(docs, tmp / "index")


def claim_image(tmp: Path) -> Path:
    from PIL import Image

    path = tmp / "photo.png"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(path)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="folder to write the snapshots into (emptied first)")
    parser.add_argument("--only", help="only pipelines whose name contains this")
    args = parser.parse_args()
    for k in list(os.environ):
        if k.startswith("VERACITY_") or k in ("OPENAI_API_KEY", "SERPER_API_KEY"):
            del os.environ[k]
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="veracity-snap-") as t:
        tmp = Path(t).resolve()
        os.environ["XDG_CACHE_HOME"] = str(tmp / "xdg-cache")
        os.environ["XDG_DATA_HOME"] = str(tmp / "xdg-data")
        os.chdir(tmp)
        build_index(tmp)
        image = claim_image(tmp)
        snaps = Snapshots(out, tmp)
        from veracity.registry import available_pipelines

        names = list(available_pipelines())
        (out / "pipelines.txt").write_text("\n".join(names) + "\n")
        for name in names:
            if args.only and args.only not in name:
                continue
            print(name, file=sys.stderr, flush=True)
            if name.startswith("qacheck"):
                for case, claim, rules in QACHECK_CASES:
                    snaps.check(name, case, claim, rules, [])
            elif name == "direct":
                for case, claim, rules in DIRECT_CASES:
                    snaps.check(name, case, claim, rules, [])
            elif name == "cot":
                for case, claim, rules in COT_CASES:
                    snaps.check(name, case, claim, rules, [])
            elif name.startswith("defame"):
                for case, claim, opts, rules in DEFAME_CASES:
                    extra = ["--search", "local"]
                    if opts.get("image"):
                        extra += ["--image", str(image)]
                    if opts.get("date"):
                        extra += ["--date", opts["date"]]
                    snaps.check(name, case, claim, rules, extra)
            elif name.startswith("answer:"):
                for case, question, options in LEAF_CASES:
                    snaps.answer(name, case, question, options)
            else:
                print(f"  no cases for {name}", file=sys.stderr)
                (out / name).mkdir(parents=True, exist_ok=True)
                (out / name / "NO-CASES").write_text("no snapshot cases for this pipeline\n")
        if not args.only or "leaf" in args.only:
            for case, question, answer in ANSWER_CHECKS:
                snaps.leaf_score(case, question, answer)
        snaps.server_views()
        os.chdir("/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
