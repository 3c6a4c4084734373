"""Bad input to the CLI is one line on stderr, never a traceback (issue 11, item 5): damaged index files,
a folder as --config, broken rules files, non-finite config numbers, dates that are not ISO or lie ahead."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import veracity_cmd

CORPUS = [
    {"id": "orrin", "title": "Orrin Bridge", "text": "The Orrin Bridge is a stone bridge in Tallinn, Estonia."},
    {"id": "kestrel", "title": "Kestrel Bay", "text": "Kestrel Bay is a novel written by Mara Lind."},
    {"id": "nile", "title": "Nile", "text": "The Nile is a long river in Africa."},
]


def veracity(*args, env, stdin=None, timeout=120):
    return subprocess.run(
        veracity_cmd() + [str(a) for a in args], capture_output=True, env=env, input=stdin, timeout=timeout
    )


def one_line_error(r, code=2) -> str:
    err = r.stderr.decode()
    assert r.returncode == code, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.fixture(scope="module")
def built_index(tmp_path_factory):
    import os

    root = tmp_path_factory.mktemp("idx")
    corpus = root / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_")}
    r = veracity("index", "build", corpus, "--out", root / "index", env=env)
    assert r.returncode == 0, r.stderr.decode()
    return root / "index"


@pytest.fixture
def index(built_index, tmp_path):
    import shutil

    copy = tmp_path / "index"
    shutil.copytree(built_index, copy)
    return copy


def _save(path: Path, array) -> None:
    np.save(path, np.asarray(array))


def _edit_json(path: Path, change) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def _edit_passages(index: Path, change) -> None:
    rows = [json.loads(line) for line in (index / "passages.jsonl").read_text().splitlines()]
    (index / "passages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in change(rows)))


def test_the_untouched_index_searches(index, cli_env):
    r = veracity("index", "search", index, "stone bridge", env=cli_env)
    assert r.returncode == 0 and "Orrin Bridge" in r.stdout.decode(), r.stderr.decode()


DAMAGE = {
    "token id out of range": (
        lambda i: _edit_json(i / "bm25" / "vocab.index.json", lambda v: {**v, "stone": 10_000}),
        "vocabulary maps 'stone'",
    ),
    "negative token id": (
        lambda i: _edit_json(i / "bm25" / "vocab.index.json", lambda v: {**v, "bridg": -1}),
        "vocabulary maps",
    ),
    "a token at the empty token's place": (
        lambda i: _edit_json(i / "bm25" / "vocab.index.json", lambda v: {**v, "stone": v[""]}),
        "vocabulary maps",
    ),
    "vocabulary is a list": (
        lambda i: _edit_json(i / "bm25" / "vocab.index.json", lambda v: list(v)),
        "BM25 index is unreadable",
    ),
    "indices out of range": (
        lambda i: _save(i / "bm25" / "indices.csc.index.npy", np.load(i / "bm25" / "indices.csc.index.npy") + 7),
        "indices point outside the 3 passages",
    ),
    "wrong indptr": (
        lambda i: _save(i / "bm25" / "indptr.csc.index.npy", np.load(i / "bm25" / "indptr.csc.index.npy")[::-1]),
        "indptr array is inconsistent",
    ),
    "short indptr end": (
        lambda i: _save(i / "bm25" / "indptr.csc.index.npy", np.load(i / "bm25" / "indptr.csc.index.npy") // 2),
        "indptr array",
    ),
    "text null": (
        lambda i: _edit_passages(i, lambda rows: [{**rows[0], "text": None}, *rows[1:]]),
        "passages.jsonl line 1 is unreadable",
    ),
    "id a number": (
        lambda i: _edit_passages(i, lambda rows: [rows[0], {**rows[1], "id": 5}, rows[2]]),
        "passages.jsonl line 2 is unreadable",
    ),
    "duplicate passage ids": (
        lambda i: _edit_passages(i, lambda rows: [rows[0], {**rows[1], "id": rows[0]["id"]}, rows[2]]),
        "passages.jsonl line 2 repeats the passage id 'orrin#0'",
    ),
    "scores not finite": (
        lambda i: _save(
            i / "bm25" / "data.csc.index.npy", np.full_like(np.load(i / "bm25" / "data.csc.index.npy"), np.nan)
        ),
        "non-finite",
    ),
    "params not json": (lambda i: (i / "bm25" / "params.index.json").write_text("{"), "BM25 index is unreadable"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_index_is_one_line(case, index, cli_env, rules):
    damage, message = DAMAGE[case]
    damage(index)
    err = one_line_error(veracity("index", "search", index, "stone bridge Tallinn", env=cli_env))
    assert f"corrupt index {index}" in err and message in err and "rebuild it" in err
    err = one_line_error(
        veracity(
            "check",
            "--model",
            rules,
            "--index",
            index,
            "--qa",
            "retriever-reader",
            "The Orrin Bridge stands in Tallinn.",
            env=cli_env,
        )
    )
    assert message in err


def test_invalid_utf8_in_a_corpus_is_replaced_with_a_warning(tmp_path, cli_env):
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b'{"id": "a", "text": "Caf\xe9 culture started in Vienna \xff\xfe."}\n')
    r = veracity("index", "build", corpus, "--out", tmp_path / "idx", env=cli_env)
    assert r.returncode == 0, r.stderr.decode()
    err = r.stderr.decode()
    assert f"{corpus} is not valid UTF-8: replaced 3 invalid byte sequences with U+FFFD" in err
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"Caf\xe9 culture.")
    r = veracity("index", "build", folder, "--out", tmp_path / "idx2", env=cli_env)
    assert r.returncode == 0 and "a.txt is not valid UTF-8: replaced 1 invalid byte sequence" in r.stderr.decode()


def test_lone_surrogate_escapes_in_a_corpus_are_replaced_with_a_warning(tmp_path, cli_env):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        '{"id": "a\\udc00", "title": "T \\ud800", "text": "Lone \\ud800 surrogate, and a pair \\ud83d\\ude00."}\n'
    )
    r = veracity("index", "build", corpus, "--out", tmp_path / "idx", env=cli_env)
    assert r.returncode == 0, r.stderr.decode()
    assert f"{corpus}: replaced 3 lone surrogate escapes (not a character) with U+FFFD" in r.stderr.decode()
    r = veracity("index", "search", tmp_path / "idx", "surrogate pair", "--json", env=cli_env)
    hit = json.loads(r.stdout)[0]
    assert hit["text"] == "Lone \ufffd surrogate, and a pair \U0001f600." and hit["doc_id"] == "a\ufffd"


def test_config_that_is_a_folder(tmp_path, cli_env):
    err = one_line_error(veracity("check", "--config", tmp_path, "A claim.", env=cli_env))
    assert f"configuration file {tmp_path} is a folder, not a file" in err


@pytest.mark.parametrize(
    "text, message",
    [
        ("timeout = nan", "timeout must be a finite number, not nan"),
        ("timeout = inf", "timeout must be a finite number, not inf"),
        ("[defame]\ntimeout = nan", "defame.timeout must be a finite number"),
        ("[leaf]\ntemperature = -inf", "leaf.temperature must be a finite number"),
        ("timeout = 1e999", "timeout must be a finite number"),
        ('n_ctx = "\u00b2"', "n_ctx must be int"),
        ("timeout = [1, 2]", "timeout must be float"),
        ("this is not toml", "is not valid TOML"),
    ],
)
def test_bad_config_values(tmp_path, cli_env, text, message):
    f = tmp_path / "veracity.toml"
    f.write_text(text + "\n", encoding="utf-8")
    assert message in one_line_error(veracity("check", "--config", f, "A claim.", env=cli_env))


def test_non_finite_timeout_flag(cli_env):
    assert "--timeout must be a finite number" in one_line_error(
        veracity("check", "--timeout", "nan", "A claim.", env=cli_env)
    )


@pytest.mark.parametrize(
    "rules_json, message",
    [
        (
            {"rules": [{"match": "(unclosed", "reply": "x"}]},
            "rule 1: \"match\" '(unclosed' is not a valid regular expression",
        ),
        ({"rules": [{"match": 5, "reply": "x"}]}, 'rule 1: "match" must be a regular expression (a string), not int'),
        ({"rules": [{"match": ".*", "reply": 5}]}, '"reply" must be a string or a non-empty list of strings'),
        ({"rules": [{"match": ".*", "reply": []}]}, '"reply" must be a string or a non-empty list of strings'),
        ({"rules": [{"reply": "x"}]}, 'rule 1 needs a "match" and a "reply"'),
        ({"rules": ["x"]}, 'rule 1 needs a "match" and a "reply"'),
        ({"rules": {"match": ".*"}}, 'needs an object with a "rules" list'),
        ([1, 2], 'needs an object with a "rules" list'),
        ("not json", "is not valid JSON"),
    ],
)
def test_bad_rules_files(tmp_path, cli_env, rules_json, message):
    f = tmp_path / "rules.json"
    f.write_text(rules_json if isinstance(rules_json, str) else json.dumps(rules_json))
    err = one_line_error(veracity("check", "--model", f"scripted:{f}", "A claim.", env=cli_env))
    assert f"scripted model file {f}" in err and message in err


def test_a_rules_file_without_a_matching_rule_is_a_backend_error(tmp_path, cli_env):
    f = tmp_path / "rules.json"
    f.write_text(json.dumps({"rules": [{"match": "^never this$", "reply": "x"}]}))
    err = one_line_error(
        veracity(
            "check",
            "--model",
            f"scripted:{f}",
            "--pipeline",
            "direct",
            "--no-cache",
            "The Orrin Bridge stands in Tallinn.",
            env=cli_env,
        ),
        code=3,
    )
    assert "veracity: model backend error: scripted:rules.json: no rule matches the prompt" in err


def test_no_rule_is_still_an_assertion_error_for_tests():
    from veracity.errors import BackendError
    from veracity.llm.base import CompletionRequest
    from veracity.llm.scripted import ScriptedBackend

    b = ScriptedBackend([("^a$", "x")])
    for kind in (AssertionError, BackendError):
        with pytest.raises(kind, match="no rule matches"):
            b.complete(CompletionRequest.of("b"))


@pytest.mark.parametrize(
    "value, message",
    [
        ("20240515", "--date: date '20240515' is not a date: write it as YYYY-MM-DD"),
        ("2024-5-15", "is not a date: write it as YYYY-MM-DD"),
        ("15.05.2024", "is not a date"),
        ("2024-02-30", "--date: date '2024-02-30' does not exist"),
        ("9999-12-31", "--date: date 9999-12-31 is in the future"),
        ("", "--date is empty"),
    ],
)
def test_claim_dates(rules, cli_env, value, message):
    err = one_line_error(
        veracity("check", "--model", rules, "--date", value, "The Orrin Bridge stands in Tallinn.", env=cli_env)
    )
    assert message in err


def test_a_past_iso_date_is_accepted(rules, cli_env):
    r = veracity(
        "check", "--model", rules, "--date", "2024-05-15", "--json", "The Orrin Bridge stands in Tallinn.", env=cli_env
    )
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["claim"]["date"] == "2024-05-15"


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("empty.png", b"", "empty.png is empty (0 bytes)"),
        ("notes.png", b"just some text, not pixels", "notes.png is not an image"),
        ("cut.png", None, "is truncated or corrupt"),
    ],
)
def test_a_broken_image_is_refused_before_any_model_runs(rules, cli_env, tmp_path, name, data, message):
    """The CLI checks a claim's images with the server's rules (inputs.py) before the pipeline starts: the
    scripted model, which has no DEFAME rule, is never asked (it would fail with a backend error instead)."""
    import io

    from PIL import Image

    if data is None:  # a real PNG cut in half
        buf = io.BytesIO()
        Image.new("RGB", (64, 64), "teal").save(buf, "PNG")
        data = buf.getvalue()[: len(buf.getvalue()) // 2]
    (tmp_path / name).write_bytes(data)
    err = one_line_error(
        veracity(
            "check",
            "--pipeline",
            "defame",
            "--model",
            rules,
            "--image",
            tmp_path / name,
            "This photo shows the Orrin Bridge.",
            env=cli_env,
        )
    )
    assert message in err and "no rule" not in err


def test_too_many_images_is_one_line(rules, cli_env, tmp_path):
    from PIL import Image

    for i in range(11):
        Image.new("RGB", (8, 8), (i * 20, 0, 0)).save(tmp_path / f"{i}.png")
    args = [a for i in range(11) for a in ("--image", tmp_path / f"{i}.png")]
    err = one_line_error(
        veracity(
            "check", "--pipeline", "defame", "--model", rules, *args, "This photo shows the Orrin Bridge.", env=cli_env
        )
    )
    assert "11 images; a check takes at most 10" in err


# --------------------------------------------------------------------------- any damage to an index

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ODD = [None, -1, 10**12, "x", [], {}, 1.5, True, "int8", "float16", "object", "", 0, [1, 2], {"a": 1}]
INDEX_FILES = [
    "manifest.json",
    "passages.jsonl",
    "bm25/params.index.json",
    "bm25/vocab.index.json",
    "bm25/data.csc.index.npy",
    "bm25/indices.csc.index.npy",
    "bm25/indptr.csc.index.npy",
]


def _damage_json(value, draw):
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        if draw(st.booleans()):
            value[key] = draw(st.sampled_from(ODD))
        else:
            value.pop(key)
        return value
    if isinstance(value, list) and value:
        value[draw(st.integers(0, len(value) - 1))] = draw(st.sampled_from(ODD))
        return value
    return draw(st.sampled_from(ODD))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property_a_damaged_index_is_an_index_error_never_a_crash(built_index, tmp_path_factory, data):
    import shutil

    from veracity.errors import UserError
    from veracity.retrieval import Index

    index = tmp_path_factory.mktemp("damaged") / "index"
    shutil.copytree(built_index, index)
    for name in data.draw(st.lists(st.sampled_from(INDEX_FILES), min_size=1, max_size=2)):
        f = index / name
        if not f.exists():
            continue
        raw = f.read_bytes()
        how = data.draw(st.sampled_from(["truncate", "flip", "json", "array", "delete"]))
        try:  # a file an earlier draw already broke is only truncated, flipped or deleted
            parsed = (
                json.loads(raw)
                if f.suffix == ".json"
                else [json.loads(line) for line in raw.decode().splitlines()]
                if f.suffix == ".jsonl"
                else np.load(f).copy()
            )
        except Exception:
            parsed = None
        if how in ("json", "array") and (parsed is None or (f.suffix == ".jsonl" and not parsed)):
            how = "delete"
        if how == "truncate":
            f.write_bytes(raw[: data.draw(st.integers(0, len(raw)))])
        elif how == "flip":
            b = bytearray(raw)
            for _ in range(data.draw(st.integers(1, 6))):
                if b:
                    b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
            f.write_bytes(bytes(b))
        elif how == "json" and f.suffix == ".json":
            f.write_text(json.dumps(_damage_json(parsed, data.draw)))
        elif how == "json" and f.suffix == ".jsonl":
            rows = parsed
            i = data.draw(st.integers(0, len(rows) - 1))
            rows[i] = _damage_json(rows[i], data.draw)
            f.write_text("".join(json.dumps(r) + "\n" for r in rows))
        elif how == "array" and f.suffix == ".npy":
            a = parsed
            change = data.draw(st.sampled_from(["value", "dtype", "shape"]))
            if change == "value" and a.size:
                value = data.draw(st.sampled_from([-5, 10**6, 0, 1, 3]))  # cast as a writer of this dtype would
                a.flat[data.draw(st.integers(0, a.size - 1))] = np.array(value).astype(a.dtype)
            elif change == "dtype":
                a = a.astype(data.draw(st.sampled_from(["float16", "int8", "float64", "uint64", "bool"])))
            else:
                a = a.reshape(1, -1)
            np.save(f, a)
        elif how == "delete":
            f.unlink()
    try:
        loaded = Index.load(index)
        for query in ("stone bridge Tallinn", "novel Mara Lind", "long river Africa"):
            loaded.search(query, k=3)
        loaded.info()
    except UserError as e:
        assert "\n" not in str(e)


def test_answer_check_input_follows_the_servers_rules(cli_env, tmp_path):
    """The CLI's `leaf score` refuses what the server's answer check refuses (`inputs.clean_question/answer`)."""
    for args, message in [
        (["--question", "   ", "--answer", "Fine."], "the question is empty: give the question the answer replies to"),
        (["--question", "Q?", "--answer", " \n "], "the answer is empty: give the answer text to fact-check"),
        (["--question", "Q?", "--answer", "x" * 10_001], "the answer has 10001 characters; the limit is 10000"),
        (["--question", "q" * 2001, "--answer", "Fine."], "the question has 2001 characters; the limit is 2000"),
    ]:
        r = subprocess.run(
            veracity_cmd() + ["leaf", "score", *args, "--index", str(tmp_path / "none")],
            capture_output=True,
            env=cli_env,
            timeout=60,
        )
        err = r.stderr.decode()
        assert r.returncode == 2 and message in err and len(err.strip().splitlines()) == 1, err
