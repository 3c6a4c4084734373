"""Without --ray nothing changes and Ray is never imported; how --ray sizes and places its actors (no cluster
needed for these)."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys

import pytest
from conftest import veracity_cmd
from scripted_claims import rows, write_claims, write_rules

from veracity.cluster.sizing import place, shape_actors
from veracity.config import load_config
from veracity.errors import UserError


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def test_runs_without_ray_never_import_it(tmp_path, cli_env):
    claims = write_claims(tmp_path / "claims.jsonl", 5)
    common = ["--pipeline", "direct", "--model", write_rules(tmp_path), "--no-progress"]
    evaluate = [
        "eval",
        "--dataset",
        "jsonl",
        "--path",
        str(claims),
        "--out",
        str(tmp_path / "eval"),
        "--no-plots",
        "--workers",
        "2",
        *common,
    ]
    batch = ["check-batch", str(claims), "--out", str(tmp_path / "batch"), *common]
    r = run_python(
        "import sys\nfrom veracity.cli import main\n"
        f"codes = [main({evaluate!r}), main({batch!r})]\n"
        "print('exit codes', codes, 'ray imported:', 'ray' in sys.modules)",
        cli_env,
    )
    assert r.returncode == 0, r.stderr
    assert "exit codes [0, 0] ray imported: False" in r.stdout
    assert len(rows(tmp_path / "eval")) == 5 and len(rows(tmp_path / "batch")) == 5
    assert "Verdicts of 5 of 5 checks" in r.stdout and "Agreeing with your labels: " in r.stdout


def test_asking_for_ray_without_it_installed_says_how_to_install_it(tmp_path, cli_env):
    claims = write_claims(tmp_path / "claims.jsonl", 2)
    args = [
        "check-batch",
        str(claims),
        "--out",
        str(tmp_path / "out"),
        "--pipeline",
        "direct",
        "--model",
        write_rules(tmp_path),
        "--ray",
    ]
    r = run_python(
        f"import sys\nsys.modules['ray'] = None  # as if not installed\nfrom veracity.cli import main\n"
        f"sys.exit(main({args!r}))",
        cli_env,
    )
    assert r.returncode == 2
    assert "--ray needs Ray, which is not installed: pip install 'veracity[ray]'" in r.stderr
    assert "Traceback" not in r.stderr


def test_ray_before_the_claims_file_says_the_file_is_no_address(tmp_path, cli_env):
    claims = write_claims(tmp_path / "claims.jsonl", 2)
    r = subprocess.run(
        veracity_cmd() + ["check-batch", "--ray", str(claims), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=60,
    )
    assert r.returncode == 2
    assert f"argument --ray: {str(claims)!r} is not a Ray address" in r.stderr
    assert "put --ray after the claims file" in r.stderr and not (tmp_path / "out").exists()


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")
def test_a_ray_address_where_nothing_listens_is_one_line_at_once(tmp_path, cli_env):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    claims = write_claims(tmp_path / "claims.jsonl", 2)
    r = subprocess.run(
        veracity_cmd()
        + [
            "check-batch",
            str(claims),
            "--out",
            str(tmp_path / "out"),
            "--model",
            write_rules(tmp_path),
            f"--ray=127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=60,
    )
    assert r.returncode == 2
    assert f"nothing answers at the Ray address 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out" / "items.jsonl").exists()


def config(model: str):
    return load_config(overrides={"model": model}, env={})


def test_a_model_run_in_the_actors_gets_cpus_and_as_many_threads():
    nodes = {"a": 4.0, "b": 4.0}
    shape = shape_actors(config("embedded"), nodes, cpus=2)
    assert (shape.count, shape.cpus, shape.threads, shape.concurrency) == (4, 2.0, 2, 1)
    assert sorted(place(shape, nodes)) == ["a", "a", "b", "b"]
    assert shape_actors(config("embedded"), {"a": 3.0, "b": 3.0}, cpus=2).count == 2  # 1 CPU left on each
    with pytest.raises(UserError, match="needs at least 1 CPU per actor"):
        shape_actors(config("gguf:/models/x.gguf"), nodes, cpus=0.5)
    with pytest.raises(UserError, match="do not fit on the cluster's nodes"):
        place(shape_actors(config("embedded"), nodes, actors=5, cpus=2), nodes)


def test_actors_calling_a_server_reserve_no_cpu_and_check_several_items_at_once():
    nodes = {"head": 0.0, "a": 2.0, "b": 1.0}
    shape = shape_actors(
        load_config(overrides={"model": "m", "base_url": "http://127.0.0.1:1/v1"}, env={}), nodes, concurrency=4
    )
    assert (shape.count, shape.cpus, shape.threads, shape.concurrency, shape.capacity) == (3, 0.0, None, 4, 24)
    assert place(shape, nodes) == ["a", "b", "a"]  # round robin over the nodes with CPUs
    assert place(shape_actors(config("scripted:x.json"), nodes, actors=4), nodes) == ["a", "b", "a", "b"]
