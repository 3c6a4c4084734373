"""Run a test in a forked child process, so that a crash of native code fails that test instead of the run.

Tests marked `native` load native model code (llama.cpp) in the test process. On a CPU where that
code dies (SIGILL in llama.cpp's AMX kernels on some Xeons), the whole pytest run would end without
a summary line. Here the test runs in a fork; its reports come back through pytest's own report
serialization hooks; a child killed by a signal, or one that outlives the test timeout, becomes a
failed test that names the signal and shows what the child printed.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time

from _pytest.reports import TestReport
from _pytest.runner import runtestprotocol


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"the test process was killed by {name} (a crash in native code?)"
    return f"the test process exited with status {os.WEXITSTATUS(status)} before reporting"


def _timeout(item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker and marker.args:
        return float(marker.args[0])
    try:
        value = float(item.config.getini("timeout") or 0)
    except (ValueError, KeyError):
        value = 0.0
    return max(30.0, value - 5) if value else 3600.0


def run_forked(item, nextitem) -> list[TestReport]:
    config = item.config
    with tempfile.TemporaryDirectory(prefix="veracity-forked-") as tmp:
        out_path, result_path = os.path.join(tmp, "output"), os.path.join(tmp, "reports.json")
        pid = os.fork()
        if pid == 0:  # the child: run the test, write its reports, leave without running any atexit handler
            code = 1
            try:
                fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                reports = runtestprotocol(item, log=False, nextitem=nextitem)
                data = [config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports]
                with open(result_path, "w", encoding="utf-8") as f:
                    json.dump(data, f)
                code = 0
            except BaseException:  # noqa: BLE001 - anything here is reported by the parent
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
        deadline = time.monotonic() + _timeout(item)
        status = None
        while status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            elif time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = -1
            else:
                time.sleep(0.05)
        if status == 0 and os.path.exists(result_path):
            with open(result_path, encoding="utf-8") as f:
                reports = [config.hook.pytest_report_from_serializable(config=config, data=d) for d in json.load(f)]
            for r in reports:  # JSON made a skip's (path, line, reason) a list; the -rs summary wants the tuple
                if r.skipped and isinstance(r.longrepr, list):
                    r.longrepr = tuple(r.longrepr)
            return reports
        try:
            with open(out_path, encoding="utf-8", errors="replace") as f:
                output = f.read()[-20000:]
        except OSError:
            output = ""
        why = f"the test process ran past {_timeout(item):.0f} s and was killed" if status == -1 else _describe(status)
        return [
            TestReport(
                item.nodeid,
                item.location,
                {k: 1 for k in item.keywords},
                "failed",
                f"{item.nodeid}: {why}\n--- its output ---\n{output}",
                "call",
                sections=[("Captured output of the crashed test process", output)],
            )
        ]
