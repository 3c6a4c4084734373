"""Checking on a real Ray cluster: a head and a second node process on this machine, started by the module's
fixture and killed at its end. A worker killed mid-run loses no item and writes none twice; the budget, the
response cache and the index hold across the cluster; the CLI's --ray resumes a run made without it."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter

import pytest

if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed (pip install 'veracity[ray]')", allow_module_level=True)

from conftest import veracity_cmd  # noqa: E402
from scripted_claims import rows, scripted_config, write_claims, write_rules  # noqa: E402
from stub_server import StubServer, chat_response, message_text  # noqa: E402

from veracity.cluster.dispatch import RayDispatch  # noqa: E402
from veracity.cluster.local import LocalCluster  # noqa: E402
from veracity.eval.datasets import load_dataset  # noqa: E402
from veracity.eval.runner import Budget, run_eval  # noqa: E402
from veracity.llm import make_model  # noqa: E402
from veracity.retrieval import Document, Index  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two node processes with 1 CPU each; this test process is their driver.

    Ray is imported here, after the cluster's token is in the environment: Ray reads its authentication mode when
    it is first imported."""
    node_cache = tmp_path_factory.mktemp("node-cache")  # the nodes' XDG cache: where shipped indexes land
    local = LocalCluster(nodes=2, cpus=1, env={"XDG_CACHE_HOME": str(node_cache)})
    saved = {k: os.environ.get(k) for k in local.env}
    try:
        local.start()
        os.environ.update(local.env)
        import ray

        ray.init(address=local.address, log_to_driver=False, logging_level="warning")
        local.node_cache = node_cache
        yield local
    finally:
        if "ray" in sys.modules and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()
        local.stop()
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    assert not local.processes(), "the test cluster left processes behind"


class KillAfter(RayDispatch):
    """The real RayDispatch; once `after` results are back, `kill` runs (once)."""

    def __init__(self, after: int, **kw) -> None:
        super().__init__(**kw)
        self.after, self.seen, self.killed = after, 0, False

    def wait(self):
        out = super().wait()
        self.seen += len(out)
        if not self.killed and self.seen >= self.after:
            self.killed = True
            self.kill()
        return out

    def kill(self) -> None:
        raise NotImplementedError


class KillOneWorker(KillAfter):
    """One actor's process is killed (SIGKILL on the pid the actor itself reported)."""

    victim = killed_pid = None

    def kill(self) -> None:
        self.victim = self.pool.slots[0]
        self.killed_pid = self.victim.pid
        os.kill(self.victim.pid, signal.SIGKILL)


class KillOneNode(KillAfter):
    """The second node of `cluster` is killed whole (its raylet, daemons and workers)."""

    lost_node = None

    def __init__(self, cluster: LocalCluster, after: int, **kw) -> None:
        super().__init__(after, **kw)
        self.cluster = cluster

    def kill(self) -> None:
        killed = self.cluster.kill_node(1)
        self.lost_node = next(s.node for s in self.pool.slots if s.pid in killed)  # an actor of that node


def predictions(out):
    return {r["id"]: r["pred"] for r in rows(out)}


def by_number(n: int) -> dict[str, str]:
    """The verdicts the stub server gives claims c0..c{n-1}: even numbers supported."""
    return {f"c{i}": "Supported" if i % 2 == 0 else "Refuted" for i in range(n)}


def run_on_stub_server(tmp_path, n: int, dispatch: RayDispatch):
    """`n` claims checked by actors that call a stub server answering each claim by its number after 0.3 s:
    (the run's summary, the most calls the server had at once)."""

    def respond(body):
        number = int(re.findall(r"number (\d+)\.", message_text(body))[-1])
        return 200, chat_response(" True" if number % 2 == 0 else " False"), 0.3

    srv = StubServer(respond)
    try:
        ds = load_dataset("jsonl", write_claims(tmp_path / "claims.jsonl", n))
        config = scripted_config(
            tmp_path,
            model="stub",
            base_url=srv.url,
            cache=False,
            **{"http.decisions": "parse", "http.endpoint": "chat"},
        )
        summary = run_eval(ds, ["direct"], None, config, tmp_path / "ray", progress=False, dispatch=dispatch)
    finally:
        srv.close()
    return summary, srv.max_active


@pytest.mark.parametrize("restarts", [3, 0], ids=["restarted", "out-of-restarts"])
def test_a_worker_killed_mid_run_loses_no_item_and_changes_no_prediction(cluster, tmp_path, restarts):
    ds = load_dataset("jsonl", write_claims(tmp_path / "claims.jsonl", 300))
    config = scripted_config(tmp_path, cache=False)
    local = run_eval(ds, ["direct"], make_model(config), config, tmp_path / "local", progress=False)
    dispatch = KillOneWorker(after=20, actors=4, restarts=restarts)
    summary = run_eval(ds, ["direct"], None, config, tmp_path / "ray", progress=False, dispatch=dispatch)

    assert dispatch.killed_pid is not None and dispatch.seen == 300
    assert summary.where == "4 Ray actors on 2 nodes"
    ids = Counter(r["id"] for r in rows(tmp_path / "ray"))
    assert ids == Counter(f"c{i}" for i in range(300))  # every item, exactly once
    assert summary.done == 300 and summary.errors == 0 and not (tmp_path / "ray" / "errors.jsonl").exists()
    assert summary.retried >= 1  # the items the dead worker held were checked again elsewhere
    assert predictions(tmp_path / "ray") == predictions(tmp_path / "local")
    assert local.done == 300 and Counter(predictions(tmp_path / "local").values()) == {"Supported": 150, "Refuted": 150}
    if restarts == 0:
        assert dispatch.victim.dead  # out of restarts: the other three actors checked the rest


def test_the_budget_is_enforced_across_the_cluster(cluster, tmp_path):
    ds = load_dataset("jsonl", write_claims(tmp_path / "claims.jsonl", 200))
    config = scripted_config(tmp_path, cache=False)
    one = run_eval(ds, ["direct"], make_model(config), config, tmp_path / "one", limit=1, progress=False)
    assert one.done == 1
    usage = rows(tmp_path / "one")[0]["usage"]["total"]
    per_item = usage["prompt_tokens"] + usage["completion_tokens"]
    cap = 10 * per_item  # reached by the 10th result
    dispatch = RayDispatch(actors=4)
    summary = run_eval(
        ds, ["direct"], None, config, tmp_path / "ray", budget=Budget(max_tokens=cap), progress=False, dispatch=dispatch
    )

    assert summary.stopped and summary.stopped.startswith("token budget reached")
    in_flight = 4 * 1 * 2  # actors x concurrency x queue depth (the overshoot bound the README states)
    written = rows(tmp_path / "ray")
    assert len(written) == summary.done
    assert 10 <= summary.done <= 10 + in_flight - 1
    assert json.loads((tmp_path / "ray" / "run.json").read_text())["datasets"]["jsonl"]["stopped"] == summary.stopped


def test_workers_on_every_node_share_the_response_cache_of_runs_without_ray(cluster, tmp_path):
    ds = load_dataset("jsonl", write_claims(tmp_path / "claims.jsonl", 40))
    config = scripted_config(tmp_path)  # cache at tmp_path/cache.sqlite, on the driver's machine

    def cached(out):
        return {(r["usage"]["total"]["calls"], r["usage"]["total"]["cached_calls"]) for r in rows(out)}

    first = run_eval(ds, ["direct"], None, config, tmp_path / "ray1", progress=False, dispatch=RayDispatch(actors=4))
    assert first.where == "4 Ray actors on 2 nodes" and cached(tmp_path / "ray1") == {(1, 0)}
    # the workers wrote to the driver's cache file: a run without Ray finds every answer there
    run_eval(ds, ["direct"], make_model(config), config, tmp_path / "local", progress=False)
    assert cached(tmp_path / "local") == {(1, 1)}
    again = run_eval(ds, ["direct"], None, config, tmp_path / "ray2", progress=False, dispatch=RayDispatch(actors=4))
    assert again.done == 40 and cached(tmp_path / "ray2") == {(1, 1)}
    assert predictions(tmp_path / "ray2") == predictions(tmp_path / "local") == predictions(tmp_path / "ray1")


def test_an_index_built_on_the_driver_reaches_the_workers(cluster, tmp_path):
    docs = [
        Document(
            id=f"d{i}",
            title=f"Item {i}",
            text=f"Item {i} has the number {i}. It is a {'large' if i > 4 else 'small'} item numbered {i}.",
        )
        for i in range(8)
    ]
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "claim": text, "label": label}) + "\n"
            for i, (text, label) in enumerate(
                [
                    ("Item 3 has the number 3.", "supported"),
                    ("Item 6 is a large item.", "supported"),
                    ("Item 1 is numbered 1.", "supported"),
                    ("Item 7 is a small item.", "refuted"),
                ]
            )
        )
    )
    ds = load_dataset("jsonl", claims)
    config = scripted_config(tmp_path, cache=False)
    index = Index.from_documents(docs).retriever("bm25")  # in memory only: no folder a worker could read
    run_eval(ds, ["lexical"], make_model(config), config, tmp_path / "local", index=index, progress=False)
    summary = run_eval(
        ds, ["lexical"], None, config, tmp_path / "ray", index=index, progress=False, dispatch=RayDispatch(actors=2)
    )

    def found(out):
        return {
            r["id"]: (
                r["pred"],
                [e["doc_id"] for s in r["trace"] if s.get("stage") == "retrieval" for e in s["results"]],
            )
            for r in rows(out)
        }

    assert summary.done == 4 and found(tmp_path / "ray") == found(tmp_path / "local")
    assert all(docs for _, docs in found(tmp_path / "ray").values())
    copies = list((cluster.node_cache / "veracity" / "ray-indexes").iterdir())
    assert copies and all((c / "manifest.json").is_file() for c in copies)  # written once per node, whole


def test_a_server_backed_actor_checks_several_items_at_once(cluster, tmp_path):
    summary, most_at_once = run_on_stub_server(tmp_path, 24, RayDispatch(actors=2, concurrency=3))
    assert summary.done == 24 and summary.errors == 0
    assert most_at_once >= 5  # 2 actors x 3 items at once reached the server together
    assert predictions(tmp_path / "ray") == by_number(24)


def test_cli_check_batch_with_ray_resumes_a_run_made_without_it(cluster, tmp_path, cli_env):
    env = {**cli_env, **cluster.env}
    claims = write_claims(tmp_path / "claims.jsonl", 6, labels=False)
    args = veracity_cmd() + [
        "check-batch",
        str(claims),
        "--out",
        str(tmp_path / "out"),
        "--pipeline",
        "direct",
        "--model",
        write_rules(tmp_path),
        "--no-progress",
    ]
    first = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "6 items done, 0 already there" in first.stdout
    write_claims(claims, 4, labels=False, start=6)
    second = subprocess.run(
        args + ["--ray", cluster.address, "--ray-actors", "2"], capture_output=True, text=True, env=env, timeout=300
    )
    assert second.returncode == 0, second.stderr
    assert "4 items done, 6 already there" in second.stdout
    assert "2 Ray actors on 2 nodes" in second.stdout
    assert "Verdicts of 10 of 10 checks" in second.stdout and "Supported 5, Refuted 5" in second.stdout
    assert sorted(r["id"] for r in rows(tmp_path / "out")) == sorted(f"c{i}" for i in range(10))


def test_cli_eval_with_ray_shows_one_progress_bar_for_all_nodes(cluster, tmp_path, cli_env):
    env = {**cli_env, **cluster.env}
    claims = write_claims(tmp_path / "claims.jsonl", 12)
    r = subprocess.run(
        veracity_cmd()
        + [
            "eval",
            "--dataset",
            "jsonl",
            "--path",
            str(claims),
            "--pipeline",
            "direct",
            "--model",
            write_rules(tmp_path),
            "--out",
            str(tmp_path / "out"),
            "--no-plots",
            "--ray",
            cluster.address,
            "--ray-actors",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "12 items done, 0 already there, 0 failed" in r.stdout and "| direct | 12 |" in r.stdout
    bar = r.stderr.replace("\r", "\n")
    assert "jsonl (2 Ray actors on 2 nodes)" in bar and "12/12" in bar
    assert "Traceback" not in r.stderr


def test_a_node_lost_mid_run_loses_no_item_and_changes_no_prediction(cluster, tmp_path):
    """Last in this module: the cluster has one node left after it. The actors call a server (0.3 s a call), so
    the run is still going when the second node's raylet and daemons are killed."""
    dispatch = KillOneNode(cluster, after=8, actors=4, concurrency=2)
    summary, _ = run_on_stub_server(tmp_path, 60, dispatch)
    assert dispatch.lost_node is not None and dispatch.seen == 60
    ids = Counter(r["id"] for r in rows(tmp_path / "ray"))
    assert ids == Counter(f"c{i}" for i in range(60))  # every item, exactly once
    assert summary.done == 60 and summary.errors == 0 and not (tmp_path / "ray" / "errors.jsonl").exists()
    assert predictions(tmp_path / "ray") == by_number(60)
    assert summary.retried >= 1  # what the lost node's actors held was checked again on the head
    on_lost = [s for s in dispatch.pool.slots if s.node == dispatch.lost_node]
    # an actor there is given up when an item fails on it (not waited for); one whose items were all back before
    # its raylet went may still look available: anything sent to it later would fail and be sent again
    assert len(on_lost) == 2 and any(s.dead or not s.available for s in on_lost)
