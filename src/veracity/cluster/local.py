"""A throwaway Ray cluster on this machine, for tests and benchmarks: a head and more node processes.

    with LocalCluster(nodes=2, cpus=1) as cluster:       # `ray start --head`, then `ray start --address ...`
        os.environ.update(cluster.env)                  # the token that lets a driver in
        run_eval(..., dispatch=RayDispatch(cluster.address))

Every node keeps its files in one temporary folder and the cluster has its own token (RAY_AUTH_TOKEN), which
every process of the cluster inherits. `stop()` kills exactly those processes: the process groups of its
`ray start` commands and any process that carries its token (the workers the raylets started), then removes the
folder. (`ray stop --force` would end every Ray process of the machine, including other people's clusters.)
Ray replaces a loopback --node-ip-address by the machine's own address; the token keeps the ports closed to
others.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def ray_command() -> str:
    """The `ray` script of this Python environment."""
    script = Path(sys.executable).with_name("ray")
    return str(script) if script.is_file() else (shutil.which("ray") or "ray")


class LocalCluster:
    def __init__(
        self, nodes: int = 2, cpus: int = 1, *, env: dict[str, str] | None = None, timeout: float = 120.0
    ) -> None:
        self.nodes, self.cpus, self.timeout = nodes, cpus, timeout
        self.folder = Path(tempfile.mkdtemp(prefix="vray-", dir="/tmp"))  # short: Ray's socket paths are limited
        self.token = secrets.token_hex(32)
        #: what a driver needs in its environment to connect (also given to every node)
        self.env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token, "RAY_USAGE_STATS_ENABLED": "0"}
        self._node_env = {**os.environ, **(env or {}), **self.env}
        self.address = ""
        self._groups: list[int] = []

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LocalCluster:
        try:
            head = self._ray_start(["--head", "--port", "0", "--include-dashboard", "false"])
            found = re.search(r"ray start --address='([^']+)'", head)
            if not found:
                raise RuntimeError(f"`ray start --head` printed no address:\n{head[-2000:]}")
            self.address = found.group(1)
            for _ in range(self.nodes - 1):
                self._ray_start(["--address", self.address])
        except BaseException:
            self.stop()
            raise
        return self

    def _ray_start(self, args: list[str]) -> str:
        cmd = [
            ray_command(),
            "start",
            *args,
            "--node-ip-address",
            "127.0.0.1",
            "--num-cpus",
            str(self.cpus),
            "--temp-dir",
            str(self.folder),
            "--disable-usage-stats",
        ]
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self._node_env, start_new_session=True
        )
        self._groups.append(proc.pid)  # its session: the daemons it starts stay in this process group
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise RuntimeError(f"{' '.join(cmd[:3])} did not finish within {self.timeout:.0f} s") from None
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-2000:]}")
        return out

    def kill_node(self, index: int) -> set[int]:
        """Kill node `index` (0 is the head) as a lost machine goes: its raylet and the daemons beside it (their
        process group) and the workers the raylet started (each in a group of its own), all with SIGKILL at once.
        Returns the process ids it killed."""
        if not 0 <= index < len(self._groups):
            raise ValueError(f"this cluster has {len(self._groups)} nodes, not a node {index}")
        alive = self.processes()
        daemons = {pid for pid in alive if _pgid(pid) == self._groups[index]}
        doomed = daemons | {pid for pid in alive if _ppid(pid) in daemons}
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return doomed

    def processes(self) -> list[int]:
        """The processes of this cluster still alive: those in its process groups or carrying its token."""
        mine = []
        marker = f"RAY_AUTH_TOKEN={self.token}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            pid = int(entry.name)
            try:
                if os.getpgid(pid) in self._groups or marker in (entry / "environ").read_bytes().split(b"\0"):
                    if (entry / "stat").read_text().split(") ", 1)[1][:1] != "Z":  # not a zombie
                        mine.append(pid)
            except (OSError, IndexError):
                continue
        return mine

    def stop(self) -> None:
        for _ in range(3):
            pids = self.processes()
            if not pids:
                break
            for group in self._groups:
                try:
                    os.killpg(group, signal.SIGKILL)
                except OSError:
                    pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.5)
        shutil.rmtree(self.folder, ignore_errors=True)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
