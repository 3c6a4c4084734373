"""An evaluation resumes from whatever a kill left (issue 11, item 9): an empty or half-written run.json, a
last items.jsonl line cut inside a UTF-8 character; run.json is written atomically."""

from __future__ import annotations

import json
import logging
import os
import subprocess

import pytest
from conftest import veracity_cmd

from veracity.eval.report import build_report, load_rows
from veracity.eval.runner import ITEMS, MANIFEST, read_done, read_manifest

CLAIMS = [
    ("The Orrin Bridge stands in Tallinn.", "supported"),
    ("Kestrel Bay was written by Mara Lind.", "supported"),
    ("The Orrin Bridge is made of glass.", "refuted"),
    ("Tallinn is the capital of Estonia.", "supported"),
]


@pytest.fixture
def run_args(tmp_path):
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        "".join(json.dumps({"id": f"c{i}", "claim": c, "label": l}) + "\n" for i, (c, l) in enumerate(CLAIMS))
    )
    rules = tmp_path / "rules.json"
    rules.write_text(
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
    out = tmp_path / "run"
    return out, [
        "eval",
        "--dataset",
        "jsonl",
        "--path",
        str(claims),
        "--pipeline",
        "direct",
        "--model",
        f"scripted:{rules}",
        "--out",
        str(out),
        "--no-progress",
        "--no-plots",
    ]


def veracity(args, env):
    return subprocess.run(veracity_cmd() + list(args), capture_output=True, text=True, env=env, timeout=300)


def ids(out):
    return sorted(json.loads(line)["id"] for line in (out / ITEMS).read_text(encoding="utf-8").splitlines())


def row(i: int, note: str = "") -> bytes:
    return (
        json.dumps(
            {
                "dataset": "jsonl",
                "pipeline": "direct",
                "id": f"c{i}",
                "gold": "Supported",
                "pred": "Supported",
                "correct": True,
                "seconds": 0.1,
                "usage": {"total": {}},
                "verdict": {},
                "note": note,
            },
            ensure_ascii=False,
        )
        + "\n"
    ).encode()


@pytest.mark.parametrize(
    "damage, warned",
    [
        ("", True),
        ("{", True),
        ('{"model": "scripted:rules.json", "datasets": {"jsonl": {"setti', True),
        ("\xff\xfe", True),
        ("[1, 2]", True),
        ('{"datasets": 3}', False),
        ('{"datasets": {"jsonl": 3}}', False),
    ],
)
def test_a_damaged_run_json_does_not_stop_the_run(run_args, cli_env, damage, warned):
    out, args = run_args
    r = veracity(args + ["--limit", "2"], cli_env)
    assert r.returncode == 0, r.stderr
    (out / MANIFEST).write_bytes(damage.encode("latin-1"))
    r = veracity(args, cli_env)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "2 items done, 2 already there" in r.stdout
    assert (f"{out / MANIFEST} is damaged" in r.stderr) == warned
    assert ids(out) == ["c0", "c1", "c2", "c3"]
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["model"] == "scripted:rules.json" and manifest["datasets"]["jsonl"]["selected"] == 4
    # and the report rebuilds from the same files
    (out / MANIFEST).write_text("")
    r = veracity(["eval", "report", str(out), "--no-plots"], cli_env)
    assert r.returncode == 0 and "| direct | 4 |" in r.stdout, r.stderr


def test_a_last_line_cut_inside_a_utf8_character_is_redone(run_args, cli_env):
    out, args = run_args
    assert veracity(args + ["--limit", "2"], cli_env).returncode == 0
    done = ids(out)
    missing = next(i for i in range(4) if f"c{i}" not in done)
    torn = row(missing, "Tõnu Õun")
    cut = torn[: torn.index("Õ".encode()) + 1]  # the first byte of a two-byte character
    with (out / ITEMS).open("ab") as f:
        f.write(cut)
    r = veracity(args, cli_env)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "2 items done, 2 already there" in r.stdout
    assert "dropped its last line, cut off by a kill" in r.stderr
    assert ids(out) == ["c0", "c1", "c2", "c3"]


def test_read_done_keeps_every_complete_line_and_drops_only_the_torn_tail(tmp_path, caplog):
    (tmp_path / ITEMS).write_bytes(row(0, "Õ") + row(1) + b"not json\n" + row(1) + row(2) + row(3)[:25])
    with caplog.at_level(logging.WARNING):
        done = read_done(tmp_path)
    assert done == {("jsonl", "direct", "c0"), ("jsonl", "direct", "c1"), ("jsonl", "direct", "c2")}
    assert (tmp_path / ITEMS).read_bytes() == row(0, "Õ") + row(1) + row(2)
    assert "dropped its last line" in caplog.text and "dropped 1 line that is not a readable result" in caplog.text
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # the rewrite left no temp file
    # a complete last line without its newline is kept (and the newline added)
    (tmp_path / ITEMS).write_bytes(row(0) + row(1)[:-1])
    assert len(read_done(tmp_path)) == 2 and (tmp_path / ITEMS).read_bytes() == row(0) + row(1)


def test_load_rows_skips_a_torn_tail_given_as_a_file(tmp_path):
    f = tmp_path / "results.jsonl"
    torn = row(1, "Õ")
    f.write_bytes(row(0) + torn[: torn.index("Õ".encode()) + 1])
    assert [r["id"] for r in load_rows(f)] == ["c0"]


def test_read_manifest_treats_damage_as_no_manifest(tmp_path, caplog):
    assert read_manifest(tmp_path) == {}
    (tmp_path / MANIFEST).write_text('{"model": "m"')
    with caplog.at_level(logging.WARNING):
        assert read_manifest(tmp_path) == {}
    assert "is damaged" in caplog.text
    (tmp_path / MANIFEST).write_text('{"model": "m"}')
    assert read_manifest(tmp_path) == {"model": "m"}


def test_run_json_is_written_atomically(run_args, cli_env, monkeypatch):
    """run.json goes through a temporary file and os.replace: a kill never leaves it half-written."""
    import veracity.eval.runner as runner

    calls = []
    real = os.replace
    monkeypatch.setattr(runner.os, "replace", lambda a, b: (calls.append((str(a), str(b))), real(a, b))[1])
    out = run_args[0]
    out.mkdir()

    class M:
        model_id = "scripted:x"
        backend = object()

    class D:
        name, setting, labels, metric, items = "d", "s", ("A", "B"), "accuracy", []
        reference, reference_note = {}, ""

    runner._write_manifest(out, D, M.model_id, "ScriptedBackend", 0, None, 0, ["direct"], None)
    assert calls and calls[-1][1] == str(out / MANIFEST) and calls[-1][0] != str(out / MANIFEST)
    assert json.loads((out / MANIFEST).read_text())["model"] == "scripted:x"
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST]


def test_build_report_with_an_empty_manifest(tmp_path):
    (tmp_path / ITEMS).write_bytes(row(0) + row(1))
    (tmp_path / MANIFEST).write_text("")
    report = build_report(tmp_path, plots=False)
    assert "| direct | 2 |" in report
