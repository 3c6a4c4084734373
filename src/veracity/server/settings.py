"""What the server itself is configured with (the checks use the ordinary `Config`)."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..db.url import redact
from ..errors import UserError
from ..inputs import DEFAULT_MAX_ANSWER_CHARS, MAX_TEXT_BYTES

if TYPE_CHECKING:
    from ..config import Config


def _data_home() -> str:
    return os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")


def default_db_path() -> str:
    """Where runs are kept when neither --db nor the config's `database_url` (VERACITY_DATABASE_URL) says."""
    return os.path.join(_data_home(), "veracity", "runs.sqlite")


def database_of(given: str | None, config: Config | None = None) -> str:
    """The run database a command uses: `--db`, else the config's `database_url`, else the default SQLite file."""
    return given or (config.database_url if config is not None else None) or default_db_path()


def is_server_url(db: str) -> bool:
    """Whether `db` names a database server (PostgreSQL, or embedded:DIR) rather than an SQLite file."""
    return db.split(":", 1)[0].lower() in ("postgresql", "postgres", "embedded") and ":" in db


MAX_IMAGE_BYTES = 20_000_000  # what the pipelines load (image_files.MAX_BYTES): a larger upload could not run


@dataclass
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    db_path: str = field(default_factory=default_db_path)
    max_concurrent: int = 2  # checks running at once; more wait in the queue
    max_queue: int = 100  # checks waiting; beyond that POST /api/checks answers 503
    rate_limit: int = 30  # checks started per minute per client (0: no limit)
    rate_burst: int = 10  # ... of which this many may come at once
    extra_models: list[str] = field(default_factory=list)  # models offered besides config.model
    max_image_bytes: int = 10_000_000  # one uploaded image (pipelines that look at images: DEFAME)
    max_images: int = 4  # images one check may carry (0: no uploads)
    images_dir: str | None = None  # where uploads are kept; default: next to the database
    max_body_bytes: int = 1024 * 1024  # JSON request bodies (a check with images may add its images)
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS  # answer check: the longest answer accepted
    max_text_bytes: int = MAX_TEXT_BYTES  # text check: the longest text (UTF-8) or uploaded file accepted
    max_text_claims: int = 100  # text check: claims checked per text at most (the rest: not checked)
    # proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (addresses or networks, e.g. 10.0.0.0/8);
    # none by default: the address that connects is the client, whatever headers it sends
    trusted_proxies: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if not 1 <= self.max_concurrent <= 64:
            raise UserError(f"--max-concurrent must be between 1 and 64, not {self.max_concurrent}")
        if not 0 <= self.max_queue <= 100_000:
            raise UserError(f"--max-queue must be between 0 and 100000, not {self.max_queue}")
        if self.rate_limit < 0:
            raise UserError(f"--rate-limit must be 0 (off) or positive, not {self.rate_limit}")
        if self.rate_burst < 1:
            raise UserError(f"--rate-burst must be positive, not {self.rate_burst}")
        if self.max_answer_chars < 1:
            raise UserError(f"--max-answer-chars must be positive, not {self.max_answer_chars}")
        if not 1000 <= self.max_text_bytes <= 100_000_000:
            raise UserError(f"--max-text-mb must be between 0.001 and 100, not {self.max_text_bytes / 1e6:g}")
        if not 1 <= self.max_text_claims <= 10_000:
            raise UserError(f"--max-text-claims must be between 1 and 10000, not {self.max_text_claims}")
        if not 0 <= self.max_images <= 16:
            raise UserError(f"--max-images must be between 0 and 16, not {self.max_images}")
        if not 1000 <= self.max_image_bytes <= MAX_IMAGE_BYTES:
            raise UserError(
                f"--max-image-mb must be between 0.001 and {MAX_IMAGE_BYTES / 1e6:g}, not "
                f"{self.max_image_bytes / 1e6:g}"
            )
        if not 0 <= self.port <= 65535:
            raise UserError(f"--port must be between 0 and 65535, not {self.port}")
        for proxy in self.trusted_proxies:
            try:
                ipaddress.ip_network(proxy.strip(), strict=False)
            except ValueError:
                raise UserError(
                    f"--trusted-proxy {proxy!r} is not an IP address or network (e.g. 127.0.0.1, 10.0.0.0/8 or ::1)"
                ) from None

    @property
    def images_path(self) -> Path:
        """Uploaded images, by content hash: `images_dir`, else `<db name>-images/` next to the database (so two
        databases in one folder never share, and deleting a run can delete the images only it used)."""
        if self.images_dir:
            return Path(self.images_dir).expanduser().resolve()
        if is_server_url(self.db_path):  # one folder per database on this machine (--images-dir: a shared one)
            import hashlib

            key = hashlib.sha256(redact(self.db_path).encode()).hexdigest()[:12]
            return Path(_data_home(), "veracity", f"images-{key}").resolve()
        db = Path(self.db_path).expanduser().resolve()
        return db.with_name(f"{db.stem}-images")

    @property
    def db_shown(self) -> str:
        """The run database as messages show it: a URL without its password."""
        return redact(self.db_path)

    @property
    def upload_body_bytes(self) -> int:
        """The largest request body a check with images may send: its images in base64, plus the JSON around."""
        per_image = (self.max_image_bytes + 2) // 3 * 4 + 4096  # base64, a data: prefix and a filename
        return self.max_body_bytes + self.max_images * per_image

    @property
    def text_body_bytes(self) -> int:
        """The largest request body a text check may send: its text in JSON (escapes can lengthen it) or its file
        in base64, so that a text just over `max_text_bytes` is still read and answered with that limit."""
        return 2 * self.max_text_bytes + 65536
