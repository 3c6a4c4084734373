"""Reading files a user gives (claims, answers, images, configs, rules files, corpora) with a size limit.

Every reader of user input goes through `read_limited`: it reads at most ``limit + 1`` bytes, in
chunks, and refuses more with one line that names the file and the limit (``the claim file
/dev/zero is too large: more than 1.0 MB, the limit is 1.0 MB``). So a device (``/dev/zero``), a
FIFO, an endless pipe or a file that grows while it is read never fills the memory: non-regular
files are read like any other, but only up to the limit.

The limits of each kind of input live with their readers; the shared ones are here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from .errors import UserError

CHUNK = 1 << 16

#: A claim (or answer) file: far above any claim length, far below what hurts.
MAX_TEXT_FILE_BYTES = 1_000_000
#: A TOML configuration file.
MAX_CONFIG_BYTES = 1_000_000
#: A scripted backend's rules file (tests and demos).
MAX_RULES_BYTES = 10_000_000
#: A benchmark or user dataset file read whole (JSON, JSON lines); CSV is read row by row.
MAX_DATASET_BYTES = 512_000_000
#: A sidecar caption file of an image collection.
MAX_CAPTION_BYTES = 1_000_000


def human_size(n: int | float) -> str:
    """A byte count as people read it: 512 bytes, 50.0 kB, 2.4 MB, 1.5 GB."""
    if n < 1000:
        return f"{int(n)} bytes"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    if n < 1_000_000_000:
        return f"{n / 1_000_000:.1f} MB"
    return f"{n / 1_000_000_000:.1f} GB"


def _name(source: object) -> str:
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    name = getattr(source, "name", None)
    if isinstance(name, str) and name not in ("<stdin>", "<fdopen>"):
        return name
    return "standard input"


def _too_large(what: str, name: str, limit: int, known: int | None, error: type[UserError]) -> UserError:
    size = human_size(known) if known is not None else f"more than {human_size(limit)}"
    return error(f"{what} {name} is too large: {size}, the limit is {human_size(limit)}".strip())


def read_stream_limited(
    stream: BinaryIO, limit: int, what: str, *, name: str | None = None, error: type[UserError] = UserError
) -> bytes:
    """At most `limit` bytes of a binary stream; raises `error` (one line) when there are more.

    Never reads more than ``limit + 1`` bytes from the stream.
    """
    if limit < 0:
        raise ValueError("limit must not be negative")
    name = name or _name(stream)
    parts: list[bytes] = []
    got = 0
    while got <= limit:
        chunk = stream.read(min(CHUNK, limit + 1 - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    if got > limit:
        raise _too_large(what, name, limit, None, error)
    return b"".join(parts)


def read_limited(
    source: str | os.PathLike | BinaryIO, limit: int, what: str, *, error: type[UserError] = UserError
) -> bytes:
    """The bytes of a file path or binary stream, at most `limit` of them, else a one-line `error`.

    `what` names the kind of input in messages ("the claim file", "image", "configuration file").
    A path that is missing, a folder or unreadable raises `error` with one line too. A regular file
    whose size is already over the limit is refused before reading; anything else (devices, FIFOs,
    pipes, files that grow) is read up to ``limit + 1`` bytes and refused there.
    """
    if not isinstance(source, (str, os.PathLike)):
        return read_stream_limited(source, limit, what, error=error)
    path = Path(source)
    name = str(source)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise error(f"{what} {name} is a folder, not a file".strip())
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise _too_large(what, name, limit, st.st_size, error)
            return read_stream_limited(f, limit, what, name=name, error=error)
    except FileNotFoundError:
        raise error(f"{what} not found: {name}".strip()) from None
    except IsADirectoryError:
        raise error(f"{what} {name} is a folder, not a file".strip()) from None
    except OSError as e:
        raise error(f"cannot read {what} {name}: {e.strerror or e}".replace("  ", " ").strip()) from None
