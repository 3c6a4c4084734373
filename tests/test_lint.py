"""The code passes `ruff check` and `ruff format --check` with the project's settings (pyproject.toml [tool.ruff]),
so that CI, which runs the README's test command, fails on a lint error or an unformatted file."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["src", "tests", "benchmarks", "docs"]


def ruff() -> list[str]:
    pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")
    found = shutil.which("ruff", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "ruff"]


@pytest.mark.parametrize(
    "args", [["check", "--no-cache"], ["format", "--check", "--no-cache"]], ids=["check", "format"]
)
def test_ruff(args):
    r = subprocess.run([*ruff(), *args, *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ruff {' '.join(args)} found problems:\n{r.stdout[-4000:]}{r.stderr[-2000:]}"


def test_ruff_finds_a_problem(tmp_path):
    """The check can fail: an unused import and a badly formatted line are found with the same settings."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nx  =  1\n")
    settings = ["--config", str(ROOT / "pyproject.toml"), "--no-cache"]
    assert subprocess.run([*ruff(), "check", *settings, str(bad)], capture_output=True).returncode == 1
    assert subprocess.run([*ruff(), "format", "--check", *settings, str(bad)], capture_output=True).returncode == 1
