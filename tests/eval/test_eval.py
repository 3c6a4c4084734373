"""`veracity eval` end to end: resumable runs, budgets, concurrency, failures and the report."""

import json
import os
import signal
import subprocess
import time

import pytest
from conftest import veracity_cmd
from stub_server import StubServer, chat_response

CLAIMS = [
    ("The Orrin Bridge stands in Tallinn.", "supported"),
    ("Kestrel Bay was written by Mara Lind.", "supported"),
    ("The Orrin Bridge is made of glass.", "refuted"),
    ("Mara Lind was born on the Moon.", "refuted"),
    ("Tallinn is the capital of Estonia.", "supported"),
    ("Sardines are a kind of bird.", "refuted"),
]


@pytest.fixture
def claims_file(tmp_path):
    f = tmp_path / "claims.jsonl"
    f.write_text("".join(json.dumps({"id": f"c{i}", "claim": c, "label": l}) + "\n" for i, (c, l) in enumerate(CLAIMS)))
    return f


@pytest.fixture
def direct_rules(tmp_path):
    # the direct baseline says True exactly for claims mentioning Tallinn
    f = tmp_path / "rules.json"
    f.write_text(
        json.dumps(
            {
                "rules": [
                    {
                        "match": "Claim = [^\\n]*Tallinn[^\\n]*\\nIs this claim true or false\\?\\nAnswer:$",
                        "reply": " True",
                    },
                    {"match": "Is this claim true or false\\?\\nAnswer:$", "reply": " False"},
                ]
            }
        )
    )
    return f"scripted:{f}"


def veracity(*args, env, timeout=300):
    return subprocess.run(veracity_cmd() + list(args), capture_output=True, text=True, env=env, timeout=timeout)


def rows(out):
    return [json.loads(l) for l in (out / "items.jsonl").read_text().splitlines()]


def test_eval_scores_items_and_writes_report(claims_file, direct_rules, cli_env, tmp_path):
    out = tmp_path / "run"
    r = veracity(
        "eval",
        "--dataset",
        "jsonl",
        "--path",
        str(claims_file),
        "--pipeline",
        "direct",
        "--model",
        direct_rules,
        "--out",
        str(out),
        "--no-progress",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr
    got = {x["id"]: (x["gold"], x["pred"]) for x in rows(out)}
    assert got["c0"] == ("Supported", "Supported") and got["c1"] == ("Supported", "Refuted")
    assert got["c2"] == ("Refuted", "Refuted") and got["c4"] == ("Supported", "Supported")
    # 5 of 6 right: c1 is the only miss
    assert "| direct | 6 | " in r.stdout and "| 83.33 |" in r.stdout
    report = (out / "report.md").read_text()
    assert "scripted:rules.json" in report and "slice: 6 of 6 items" in report
    assert (out / "confusion_jsonl_direct.png").stat().st_size > 1000
    again = veracity("eval", "report", str(out), env=cli_env)
    assert again.returncode == 0 and "| direct | 6 |" in again.stdout


def test_rerun_skips_finished_items_and_repairs_a_cut_line(claims_file, direct_rules, cli_env, tmp_path):
    out = tmp_path / "run"
    args = (
        "eval",
        "--dataset",
        "jsonl",
        "--path",
        str(claims_file),
        "--pipeline",
        "direct",
        "--model",
        direct_rules,
        "--out",
        str(out),
        "--no-progress",
    )
    assert veracity(*args, "--limit", "3", env=cli_env).returncode == 0
    assert len(rows(out)) == 3
    # a kill in the middle of writing leaves half a line
    with (out / "items.jsonl").open("a") as f:
        f.write('{"dataset": "jsonl", "pipeline": "direct", "id": "c5", "gold"')
    r = veracity(*args, env=cli_env)
    assert r.returncode == 0, r.stderr
    assert "3 items done, 3 already there" in r.stdout
    ids = [x["id"] for x in rows(out)]
    assert sorted(ids) == [f"c{i}" for i in range(6)]


def test_token_budget_stops_cleanly_and_says_so(claims_file, direct_rules, cli_env, tmp_path):
    out = tmp_path / "run"
    r = veracity(
        "eval",
        "--dataset",
        "jsonl",
        "--path",
        str(claims_file),
        "--pipeline",
        "direct",
        "--model",
        direct_rules,
        "--out",
        str(out),
        "--no-progress",
        "--no-cache",
        "--max-tokens",
        "500",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr
    n = len(rows(out))
    assert 1 <= n < 6
    assert "Stopped early: token budget reached" in r.stdout
    assert json.loads((out / "run.json").read_text())["datasets"]["jsonl"]["stopped"].startswith("token budget")


def slow_server(delay, fail=()):
    """Answers ' False' after `delay` seconds; HTTP 500 for claims containing a word in `fail`."""

    def respond(body):
        query = body["messages"][-1]["content"].split("--------")[-1]
        if any(f in query for f in fail):
            return 500, {"error": {"message": "boom"}}, delay
        return 200, chat_response("False", prompt_tokens=100, completion_tokens=1), delay

    return StubServer(respond)


def test_killed_run_resumes_without_loss_or_duplicates(claims_file, cli_env, tmp_path):
    srv = slow_server(delay=0.4)
    out = tmp_path / "run"
    args = veracity_cmd() + [
        "eval",
        "--dataset",
        "jsonl",
        "--path",
        str(claims_file),
        "--pipeline",
        "direct",
        "--model",
        "m",
        "--base-url",
        srv.url,
        "--out",
        str(out),
        "--no-progress",
        "--no-plots",
    ]
    try:
        proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cli_env, start_new_session=True
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            if (out / "items.jsonl").exists() and len((out / "items.jsonl").read_text().splitlines()) >= 2:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = len(rows(out))
        assert 2 <= before < 6
        r = subprocess.run(args, capture_output=True, text=True, env=cli_env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "already there" in r.stdout
        ids = [x["id"] for x in rows(out)]
        assert sorted(ids) == [f"c{i}" for i in range(6)]
    finally:
        srv.close()


def test_workers_send_concurrent_requests_and_failures_are_retried_later(claims_file, cli_env, tmp_path):
    fail = ["Sardines"]
    srv = slow_server(delay=0.3, fail=fail)
    out = tmp_path / "run"
    cli_env["VERACITY_MAX_RETRIES"] = "0"

    def args(url):
        return (
            "eval",
            "--dataset",
            "jsonl",
            "--path",
            str(claims_file),
            "--pipeline",
            "direct",
            "--model",
            "m",
            "--base-url",
            url,
            "--out",
            str(out),
            "--no-progress",
            "--no-plots",
            "--workers",
            "4",
        )

    try:
        r = veracity(*args(srv.url), env=cli_env)
        assert r.returncode == 1  # one item failed
        assert srv.max_active >= 3
        assert len(rows(out)) == 5
        err = [json.loads(l) for l in (out / "errors.jsonl").read_text().splitlines()]
        assert err[0]["id"] == "c5" and "HTTP 500" in err[0]["error"]
        fail.clear()  # the server recovers
        r = veracity(*args(srv.url), env=cli_env)
        assert r.returncode == 0, r.stderr
        assert "1 items done, 5 already there" in r.stdout
    finally:
        srv.close()


def test_pipeline_needing_evidence_on_closed_book_set_is_refused(claims_file, direct_rules, cli_env, tmp_path):
    r = veracity(
        "eval",
        "--dataset",
        "jsonl",
        "--path",
        str(claims_file),
        "--pipeline",
        "qacheck-retriever-reader",
        "--model",
        direct_rules,
        "--out",
        str(tmp_path / "o"),
        env=cli_env,
    )
    assert r.returncode == 2
    assert "needs evidence to retrieve from" in r.stderr and "Traceback" not in r.stderr


def test_a_larger_limit_extends_a_smaller_one():
    from veracity.eval.datasets.records import EvalItem
    from veracity.eval.runner import select_items
    from veracity.types import Claim

    items = [
        EvalItem(id=str(i), claim=Claim(f"claim {i}"), gold="Supported", evidence=[], metadata={}) for i in range(600)
    ]
    small = select_items(items, 30, seed=0)
    large = select_items(items, 100, seed=0)
    assert len(small) == 30 and len(large) == 100
    assert {i.id for i in small} <= {i.id for i in large}
    assert [int(i.id) for i in large] == sorted(int(i.id) for i in large)  # file order kept
    assert {i.id for i in select_items(items, 30, seed=1)} != {i.id for i in small}


def test_the_evidence_given_with_a_claim_is_read_even_where_it_shares_no_word_with_the_claim(cli_env, tmp_path):
    """A claim's own evidence (JSONL `evidence`, a benchmark's gold sentences) is its index: BM25 found nothing for
    a sentence worded otherwise, and the verifier said "No evidence was found"."""
    claims = tmp_path / "given.jsonl"
    claims.write_text(
        json.dumps(
            {
                "id": "sweden",
                "claim": "Sweden's population is almost entirely atheist.",
                "label": "refuted",
                "evidence": ["34% answered that they do not believe there is any sort of spirit, god, or life force."],
            }
        )
        + "\n"
    )
    no_rules = tmp_path / "no-rules.json"
    no_rules.write_text('{"rules": []}')
    out = tmp_path / "run"
    r = veracity(
        "eval",
        "--dataset",
        "jsonl",
        "--path",
        str(claims),
        "--pipeline",
        "verifier",
        "--model",
        f"scripted:{no_rules}",
        "--out",
        str(out),
        "--no-progress",
        env=cli_env,
    )
    assert r.returncode == 0, r.stderr
    [row] = rows(out)
    assert "No evidence was found" not in row["verdict"]["rationale"]
    assert 'passage [1] (sweden-e0): "34% answered' in row["verdict"]["rationale"]  # read, whatever it decides
    retrieved = [s for s in row["trace"] if s["stage"] == "retrieval"]
    assert retrieved and retrieved[0]["results"][0]["found_by"]["retriever"] == "given"
