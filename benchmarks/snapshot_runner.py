"""The runner of scripted_snapshots.py: `Snapshots` runs a pipeline's case through the command line in this
process (`veracity check`, `veracity leaf answer|score`) or `run_check`, writes what it shows into OUT/<pipeline>/
<case>/, and at the end stores every result as a server run and reads it back through the HTTP app
(`server_views`); `Normaliser` takes the timings, dates, run ids and the temporary folder out of what is written.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
from pathlib import Path
from typing import Any

from snapshot_cases import ANSWER_CHECKS, LEAF_RULES

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
        base = [
            "check",
            claim,
            "--pipeline",
            pipeline,
            "--model",
            model,
            "--no-cache",
            "--index",
            str(self.tmp / "index"),
            *extra,
        ]
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
        from veracity.report.check import to_html, to_markdown
        from veracity.retrieval.index import Index
        from veracity.types import Claim

        folder = self.out / pipeline / case
        model = self.rules_file(f"{pipeline}-{case}", LEAF_RULES)
        mode = pipeline.split(":", 1)[1]
        if mode in ("plain", "rag", "fc-rag"):
            opts = self.tmp / f"options-{case}.json"
            opts.write_text(json.dumps(options))
            base = [
                "leaf",
                "answer",
                "--question",
                question,
                "--options",
                str(opts),
                "--index",
                str(self.tmp / "index"),
                "--mode",
                mode,
                "--model",
                model,
                "--no-cache",
                "--top-k",
                "1",
            ]
            code, out, err = cli(base)
            self.write(folder / "cli.txt", f"exit {code}\n{out}{err}")
            code, out, err = cli(base + ["--json"])
            self.write(folder / "result.json", out if code == 0 else f"exit {code}\n{out}{err}")
        config = load_config(overrides={"model": model, "cache": False, "leaf.top_k": 1}, env={})
        result = run_check(
            Claim(question, metadata={"options": options}),
            get_pipeline(pipeline, config),
            make_model(config),
            config,
            retriever=Index.load(str(self.tmp / "index")).retriever(),
        )
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
        base = [
            "leaf",
            "score",
            "--question",
            question,
            "--answer",
            answer,
            "--index",
            str(self.tmp / "index"),
            "--model",
            model,
            "--no-cache",
            "--top-k",
            "1",
        ]
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
            store.create(
                run_id,
                claim=result["claim"]["text"],
                pipeline=result["pipeline"],
                qa=None,
                model=result["model"],
                options=row["options"],
            )
            store.mark_running(run_id)
            for seq, step in enumerate(result["trace"]):
                store.add_step(run_id, seq, step)
            store.finish(run_id, result)
        model = self.rules_file("answer-check", LEAF_RULES)
        config = load_config(
            overrides={"model": model, "cache": False, "index": str(self.tmp / "index"), "leaf.top_k": 1}, env={}
        )
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
