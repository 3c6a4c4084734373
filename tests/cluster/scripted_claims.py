"""The scripted world of tests/cluster: numbered claims, and a scripted model that calls the even ones true."""

from __future__ import annotations

import json
from pathlib import Path

from veracity.config import load_config

EVEN_IS_TRUE = {
    "rules": [
        {"match": "Claim = [^\\n]*number \\d*[02468]\\.\\nIs this claim true or false\\?\\nAnswer:$", "reply": " True"},
        {"match": "Is this claim true or false\\?\\nAnswer:$", "reply": " False"},
    ]
}


def write_claims(path: Path, n: int, *, labels: bool = True, start: int = 0) -> Path:
    """Append claims c{start}..: 'Item I has the number I.', labelled refuted for every third one."""
    with path.open("a", encoding="utf-8") as f:
        for i in range(start, start + n):
            row = {"id": f"c{i}", "claim": f"Item {i} has the number {i}."}
            if labels:
                row["label"] = "refuted" if i % 3 == 0 else "supported"
            f.write(json.dumps(row) + "\n")
    return path


def write_rules(folder: Path) -> str:
    """The scripted model as a --model spec."""
    path = folder / "rules.json"
    path.write_text(json.dumps(EVEN_IS_TRUE))
    return f"scripted:{path}"


def scripted_config(folder: Path, **over):
    return load_config(
        overrides={"model": write_rules(folder), "cache_path": str(folder / "cache.sqlite"), **over}, env={}
    )


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
