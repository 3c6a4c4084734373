"""What the server itself is configured with (the checks use the ordinary `Config`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import UserError


def default_db_path() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "veracity", "runs.sqlite")


@dataclass
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    db_path: str = field(default_factory=default_db_path)
    max_concurrent: int = 2          # checks running at once; more wait in the queue
    max_queue: int = 100             # checks waiting; beyond that POST /api/checks answers 503
    rate_limit: int = 30             # checks started per minute per client (0: no limit)
    rate_burst: int = 10             # ... of which this many may come at once
    extra_models: list[str] = field(default_factory=list)  # models offered besides config.model
    max_image_bytes: int = 10 * 1024 * 1024  # DEFAME uploads (not accepted by any pipeline yet)
    max_body_bytes: int = 1024 * 1024        # JSON request bodies
    max_answer_chars: int = 10_000           # answer check: the longest answer accepted

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
        if not 0 <= self.port <= 65535:
            raise UserError(f"--port must be between 0 and 65535, not {self.port}")
