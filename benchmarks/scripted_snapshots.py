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

The claims, questions and scripted rules are in snapshot_cases.py, the runner that writes the views in
snapshot_runner.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from snapshot_cases import (
    ANSWER_CHECKS,
    COT_CASES,
    DEFAME_CASES,
    DIRECT_CASES,
    LEAF_CASES,
    QACHECK_CASES,
    build_index,
    claim_image,
)
from snapshot_runner import Snapshots


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
