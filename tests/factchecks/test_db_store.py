"""The fact-check store in a database, for teams: an import by one process is what every other reads, updates stay
single rows, a failed or overtaken import changes nothing. SQLite through the same code in every run, PostgreSQL
where the `postgres` extra is installed."""

from __future__ import annotations

import json

import pytest
from factcheck_data import records, write_jsonl

from veracity.cli import main
from veracity.errors import UserError
from veracity.factchecks.lookup import find
from veracity.factchecks.record import FactCheck
from veracity.factchecks.stores import open_store


def exercise(spec: str, tmp_path, capsys) -> None:
    data = write_jsonl(tmp_path / "checks.jsonl")
    assert main(["factchecks", "import", str(data), "--store", spec]) == 0
    assert "16 fact-checks added" in capsys.readouterr().out
    found = find("Is it true that masks give you carbon dioxide poisoning?", store=spec)
    assert found.matches[0].factcheck.claim == "Wearing a face mask causes carbon dioxide poisoning."
    assert "password" not in found.store

    other = open_store(spec)  # another worker, opened before the next import
    rows = records()
    rows[8] = {**rows[8], "rating": "Pants on Fire!"}
    rows.append({"claim": "Bananas are berries.", "rating": "True", "publisher": "Snopes", "url": "https://x.org/b"})
    summary = open_store(spec).import_records([FactCheck.from_dict(r) for r in rows])
    assert (summary.added, summary.updated, summary.unchanged) == (1, 1, 15)
    # the worker's loaded matcher sees the new stamp and reads the store again
    again = find("Is it true that masks give you carbon dioxide poisoning?", store=spec)
    assert again.matches[0].factcheck.rating == "Pants on Fire!" and again.store_size == 17
    # an import from a store opened before another import landed is refused, and changes nothing
    with pytest.raises(UserError, match="changed by another import meanwhile"):
        other.import_records([FactCheck(claim="A claim from a stale worker.")])
    assert len(open_store(spec)) == 17

    assert main(["factchecks", "info", "--store", spec, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["factchecks"] == 17


def test_sqlite_store(tmp_path, capsys):
    exercise(f"sqlite:{tmp_path / 'team.sqlite'}", tmp_path, capsys)
    with pytest.raises(UserError, match="no fact-check store in"):
        open_store(f"sqlite:{tmp_path / 'empty.sqlite'}")


def test_postgres_store(pg_url, tmp_path, capsys):
    exercise(pg_url, tmp_path, capsys)
