"""Readers of user files stop at their limit while reading (issue 11, item 2), and the input checks hold
for any input (Hypothesis property tests: the bounded reader, the config loader)."""

from __future__ import annotations

import io
import json
import logging
import os
import resource
import subprocess
import sys
import threading
import time

import pytest
from conftest import veracity_cmd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veracity.config import load_config
from veracity.errors import ConfigError, UserError
from veracity.image_files import ImageError, load_image
from veracity.llm.scripted import ScriptedBackend
from veracity.reading import human_size, read_limited, read_stream_limited
from veracity.retrieval import load_documents

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
MEMORY_LIMIT = 2 * 1024**3  # a regression must fail the test, not eat the machine


class CountingStream(io.RawIOBase):
    """An endless stream that counts how many bytes were taken from it."""

    def __init__(self, byte: bytes = b"x") -> None:
        self.byte, self.taken = byte, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = len(buffer)
        buffer[:n] = self.byte * n
        self.taken += n
        return n


# --------------------------------------------------------------------------- the shared reader


def test_reads_a_small_file_whole(tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes(b"hello")
    assert read_limited(f, 5, "the file") == b"hello"
    assert read_limited(str(f), 100, "the file") == b"hello"


def test_a_regular_file_over_the_limit_is_refused_with_its_size_and_the_limit(tmp_path):
    f = tmp_path / "big.txt"
    f.write_bytes(b"x" * 2500)
    with pytest.raises(UserError) as e:
        read_limited(f, 1000, "the claim file")
    assert str(e.value) == f"the claim file {f} is too large: 2.5 kB, the limit is 1.0 kB"


def test_dev_zero_stops_at_the_limit():
    t0 = time.monotonic()
    with pytest.raises(UserError) as e:
        read_limited("/dev/zero", 1_000_000, "the claim file")
    assert str(e.value) == "the claim file /dev/zero is too large: more than 1.0 MB, the limit is 1.0 MB"
    assert time.monotonic() - t0 < 5


def test_an_endless_stream_is_read_only_to_the_limit_plus_one():
    stream = CountingStream()
    with pytest.raises(UserError, match="standard input is too large: more than 100 bytes"):
        read_stream_limited(io.BufferedReader(stream, buffer_size=1), 100, "the answer from")
    assert stream.taken <= 101


def test_a_fifo_is_read_up_to_the_limit(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer():
        try:
            with open(fifo, "wb") as f:
                while not stop.is_set():
                    f.write(b"y" * 65536)
        except (BrokenPipeError, OSError):
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        with pytest.raises(UserError, match=r"pipe is too large: more than 200\.0 kB, the limit is 200\.0 kB"):
            read_limited(fifo, 200_000, "the claim file")
    finally:
        stop.set()
        t.join(5)


def test_missing_file_and_folder_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match="the claim file not found: "):
        read_limited(tmp_path / "nope", 10, "the claim file")
    with pytest.raises(UserError, match="is a folder, not a file"):
        read_limited(tmp_path, 10, "the claim file")


@pytest.mark.parametrize(
    "n, text",
    [(0, "0 bytes"), (999, "999 bytes"), (20_000_000, "20.0 MB"), (256_000_000, "256.0 MB"), (3_000_000_000, "3.0 GB")],
)
def test_human_size(n, text):
    assert human_size(n) == text


@PROPERTY
@given(
    data=st.binary(max_size=3000),
    limit=st.integers(min_value=0, max_value=2500),
    chunk=st.integers(min_value=1, max_value=700),
)
def test_property_the_reader_never_returns_more_than_the_limit(data, limit, chunk):
    raw = io.BytesIO(data)

    class Chunky(io.RawIOBase):  # a stream that hands out at most `chunk` bytes per read
        taken = 0

        def readable(self):
            return True

        def readinto(self, buffer):
            piece = raw.read(min(len(buffer), chunk))
            buffer[: len(piece)] = piece
            Chunky.taken += len(piece)
            return len(piece)

    try:
        out = read_stream_limited(Chunky(), limit, "input")
    except UserError as e:
        assert len(data) > limit and "too large" in str(e) and "\n" not in str(e)
    else:
        assert out == data and len(out) <= limit
    assert Chunky.taken <= limit + 1


@PROPERTY
@given(data=st.binary(max_size=3000), limit=st.integers(min_value=0, max_value=2500))
def test_property_files_too(tmp_path_factory, data, limit):
    f = tmp_path_factory.mktemp("r") / "f.bin"
    f.write_bytes(data)
    try:
        out = read_limited(f, limit, "the file")
    except UserError:
        assert len(data) > limit
    else:
        assert out == data and len(out) <= limit


# --------------------------------------------------------------------------- each reader


def test_image_from_dev_zero_is_refused_at_the_limit():
    with pytest.raises(ImageError) as e:
        load_image("/dev/zero", max_bytes=1_000_000)
    assert str(e.value) == "image /dev/zero is too large: more than 1.0 MB, the limit is 1.0 MB"


def test_config_from_dev_zero_and_folder(tmp_path):
    with pytest.raises(ConfigError, match="configuration file /dev/zero is too large: more than 1.0 MB"):
        load_config("/dev/zero", env={})
    with pytest.raises(ConfigError, match="is a folder"):
        load_config(str(tmp_path), env={})


def test_rules_file_from_dev_zero():
    with pytest.raises(UserError, match="scripted model file /dev/zero is too large: more than 10.0 MB"):
        ScriptedBackend.from_file("/dev/zero")


def test_corpus_files_are_bounded(tmp_path, monkeypatch):
    import veracity.retrieval.documents as documents

    monkeypatch.setattr(documents, "MAX_CORPUS_FILE_BYTES", 1000)
    big = tmp_path / "big.txt"
    big.write_text("word " * 400)
    with pytest.raises(UserError, match=r"big.txt is too large: 2.0 kB, the limit is 1.0 kB"):
        list(load_documents(big))
    lines = tmp_path / "c.jsonl"
    lines.write_text(
        json.dumps({"id": "a", "text": "short"}) + "\n" + json.dumps({"id": "b", "text": "x" * 2000}) + "\n"
    )
    with pytest.raises(UserError, match=r"c.jsonl: line 2 is too large: more than 1.0 kB"):
        list(load_documents(lines))
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "big.md").write_text("word " * 400)
    (folder / "ok.txt").write_text("A small document.")
    assert [d.id for d in load_documents(folder)] == ["ok.txt"]  # the big one is skipped with a warning


def test_invalid_utf8_in_a_corpus_is_replaced_and_reported(tmp_path, caplog):
    f = tmp_path / "c.jsonl"
    f.write_bytes(b'{"id": "a", "text": "Caf\xe9 and cr\xe8me \xff"}\n{"id": "b", "text": "fine \xef\xbf\xbd"}\n')
    with caplog.at_level(logging.WARNING):
        docs = list(load_documents(f))
    assert docs[0].text == "Caf\ufffd and cr\ufffdme \ufffd" and docs[1].text == "fine \ufffd"
    assert f"{f} is not valid UTF-8: replaced 3 invalid byte sequences with U+FFFD" in caplog.text
    t = tmp_path / "t.txt"
    t.write_bytes(b"Caf\xe9 culture.")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert "\ufffd" in next(iter(load_documents(t))).text
    assert f"{t} is not valid UTF-8: replaced 1 invalid byte sequence with U+FFFD" in caplog.text


# --------------------------------------------------------------------------- through the CLI


def _limit_memory():  # pragma: no cover (runs in the child)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _few_threads(env: dict) -> dict:
    """BLAS libraries reserve address space per thread: on a many-core machine that alone could near the limit."""
    return {**env, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def veracity_limited(*args, env, stdin=None, timeout=60):
    return subprocess.run(
        veracity_cmd() + list(args),
        capture_output=True,
        env=_few_threads(env),
        stdin=stdin,
        timeout=timeout,
        preexec_fn=_limit_memory,
    )


def one_line_error(r, code=2) -> str:
    err = r.stderr.decode()
    assert r.returncode == code, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_cli_claim_file_dev_zero(rules, cli_env):
    t0 = time.monotonic()
    r = veracity_limited("check", "--model", rules, "--claim-file", "/dev/zero", env=cli_env)
    assert time.monotonic() - t0 < 30
    err = one_line_error(r)
    assert "the claim file /dev/zero is too large: more than 1.0 MB, the limit is 1.0 MB" in err


def test_cli_claim_file_limit_is_capped_whatever_max_claim_chars_says(rules, cli_env):
    r = veracity_limited(
        "check", "--model", rules, "--max-claim-chars", str(10**15), "--claim-file", "/dev/zero", env=cli_env
    )
    assert "the claim file /dev/zero is too large: more than 100.0 MB, the limit is 100.0 MB" in one_line_error(r)


def test_cli_claim_from_an_endless_pipe(rules, cli_env):
    r = veracity_limited("check", "--model", rules, "--claim-file", "-", env=cli_env, stdin=open("/dev/zero", "rb"))
    assert "the claim file standard input is too large: more than 1.0 MB" in one_line_error(r)


def test_cli_image_dev_zero(rules, cli_env):
    t0 = time.monotonic()
    r = veracity_limited(
        "check",
        "--model",
        rules,
        "--pipeline",
        "defame",
        "--image",
        "/dev/zero",
        "The bridge is in Tallinn.",
        env=cli_env,
    )
    assert time.monotonic() - t0 < 60
    assert "image /dev/zero is too large: more than 20.0 MB, the limit is 20.0 MB" in one_line_error(r)


def test_cli_image_from_a_30_mb_pipe_is_cut_at_20_mb(rules, cli_env):
    r = subprocess.run(
        veracity_cmd()
        + ["check", "--model", rules, "--pipeline", "defame", "--image", "/dev/stdin", "The bridge is in Tallinn."],
        capture_output=True,
        env=_few_threads(cli_env),
        input=b"\x89PNG" + b"x" * 30_000_000,
        timeout=60,
        preexec_fn=_limit_memory,
    )
    assert "image /dev/stdin is too large: more than 20.0 MB, the limit is 20.0 MB" in one_line_error(r)


def test_cli_answer_file_dev_zero(cli_env, tmp_path):
    r = veracity_limited(
        "leaf",
        "score",
        "--question",
        "Where is the bridge?",
        "--answer-file",
        "/dev/zero",
        "--index",
        str(tmp_path / "no-index"),
        env=cli_env,
    )
    assert "the answer file /dev/zero is too large: more than 1.0 MB" in one_line_error(r)


def test_cli_config_and_rules_dev_zero(cli_env):
    r = veracity_limited("check", "--config", "/dev/zero", "A claim.", env=cli_env)
    assert "configuration file /dev/zero is too large" in one_line_error(r)
    r = veracity_limited("check", "--model", "scripted:/dev/zero", "A claim.", env=cli_env)
    assert "scripted model file /dev/zero is too large" in one_line_error(r)


def test_cli_options_file_dev_zero(cli_env, tmp_path):
    r = veracity_limited(
        "leaf",
        "answer",
        "--question",
        "Where is the bridge?",
        "--options",
        "/dev/zero",
        "--index",
        str(tmp_path / "no-index"),
        env=cli_env,
    )
    assert "options file /dev/zero is too large: more than 1.0 MB" in one_line_error(r)


def test_dataset_files_are_read_only_to_their_limit(monkeypatch, tmp_path):
    import veracity.reading as inputs
    from veracity.errors import UserError
    from veracity.eval.datasets import load_dataset

    monkeypatch.setattr(inputs, "MAX_DATASET_BYTES", 1_000_000)
    big = tmp_path / "claims.jsonl"
    with open(big, "wb") as f:
        f.truncate(3_000_000)  # sparse: refused by its size before a byte is read
    with pytest.raises(UserError, match="dataset file .*claims.jsonl is too large: 3.0 MB, the limit is 1.0 MB"):
        load_dataset("jsonl", big)


def test_an_image_path_sent_to_an_http_model_is_read_only_to_the_image_limit():
    from veracity.image_files import ImageError
    from veracity.llm.openai_http import _image_part

    with pytest.raises(ImageError, match="image /dev/zero is too large"):
        _image_part("/dev/zero")


# --------------------------------------------------------------------------- the config loader, any value

toml_scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(["nan", "inf", "-inf", "1e999", "²", "٣", " 3 ", "true", "", "-"]),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)
KEYS = [
    "model",
    "base_url",
    "timeout",
    "max_retries",
    "n_ctx",
    "n_threads",
    "cache",
    "max_claim_chars",
    "retrieval_mode",
    "llama_extra_buffers",
    "qacheck",
    "leaf",
    "defame",
    "nope",
]
SECTION_KEYS = {
    "qacheck": ["qa", "max_iterations", "top_k", "validator"],
    "leaf": ["temperature", "top_k", "rater_model", "samples"],
    "defame": ["timeout", "labels", "nei_label", "excluded_domains", "search", "max_images"],
}


def _toml(value) -> str:
    """A TOML value (inline) for a Python one; floats in TOML's spelling of nan and inf."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (int, str)):
        return json.dumps(value) if isinstance(value, str) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


@PROPERTY
@given(data=st.data())
def test_property_config_loader_raises_only_config_errors(tmp_path_factory, data):
    lines = []
    for key in data.draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=4)):
        if key in SECTION_KEYS:
            table = data.draw(st.dictionaries(st.sampled_from(SECTION_KEYS[key]), toml_values, max_size=3))
            value = data.draw(st.one_of(st.just(table), toml_values))
        else:
            value = data.draw(toml_values)
        lines.append(f"{key} = {_toml(value)}")
    f = tmp_path_factory.mktemp("cfg") / "veracity.toml"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    env = {"VERACITY_TIMEOUT": data.draw(st.sampled_from(["", "5", "nan", "inf", "-1", "x"]))}
    try:
        cfg = load_config(str(f), env=env)
    except ConfigError as e:
        assert "\n" not in str(e)
    else:
        import math

        for number in (cfg.timeout, cfg.defame.timeout, cfg.leaf.temperature):
            assert math.isfinite(number)


@pytest.mark.parametrize(
    "text", ["timeout = nan", "timeout = inf", "[defame]\ntimeout = -inf", "[leaf]\ntemperature = nan"]
)
def test_non_finite_floats_are_refused(tmp_path, text):
    f = tmp_path / "c.toml"
    f.write_text(text + "\n")
    with pytest.raises(ConfigError, match="must be a finite number"):
        load_config(str(f), env={})


def test_non_finite_float_flags_and_environment():
    with pytest.raises(ConfigError, match="--timeout must be a finite number, not 'nan'"):
        load_config(None, {"timeout": "nan"}, env={})
    with pytest.raises(ConfigError, match="VERACITY_TIMEOUT: timeout must be a finite number"):
        load_config(None, env={"VERACITY_TIMEOUT": "inf"})
    with pytest.raises(ConfigError, match="must be a finite number"):
        load_config(None, {"timeout": float("nan")}, env={})


if sys.platform != "linux":  # /dev/zero, mkfifo and RLIMIT_AS as on the CI machines
    pytestmark = pytest.mark.skip("needs Linux")
