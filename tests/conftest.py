import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """No test reads the user's config, keys or cache."""
    for k in list(os.environ):
        if k.startswith("VERACITY_") or k == "OPENAI_API_KEY":
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def cli_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_") and k != "OPENAI_API_KEY"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def veracity_cmd() -> list[str]:
    return [sys.executable, "-m", "veracity.cli"]
