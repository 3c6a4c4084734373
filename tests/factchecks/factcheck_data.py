"""Published fact-checks written for the tests, in veracity's own record shape (the kind of claim and rating real
fact-checkers publish; the addresses are example.org)."""

from __future__ import annotations

import json
from pathlib import Path

FACTCHECKS = [
    ("5G mobile networks spread the coronavirus.", "False", "Full Fact", "2020-04-03"),
    ("Drinking hot water every 15 minutes kills the coronavirus.", "False", "AFP Fact Check", "2020-03-12"),
    ("Bill Gates wants to implant microchips in people through COVID-19 vaccines.", "False", "Reuters", "2020-05-20"),
    ("A shark swam on a flooded highway in Houston after Hurricane Harvey.", "Fake", "Snopes", "2017-08-28"),
    ("The Great Wall of China is visible from the Moon with the naked eye.", "False", "Snopes", "2019-03-01"),
    ("Albert Einstein failed mathematics at school.", "Mostly false", "PolitiFact", "2018-02-14"),
    ("Finland is phasing out school subjects in favour of topics.", "Misleading", "Full Fact", "2015-03-26"),
    ("The Eiffel Tower grows by up to 15 centimetres in summer heat.", "True", "Snopes", "2021-07-01"),
    ("Wearing a face mask causes carbon dioxide poisoning.", "False", "Health Feedback", "2020-06-10"),
    (
        "Abraham Lincoln said you cannot believe everything you read on the internet.",
        "Misattributed",
        "Snopes",
        "2016-01-05",
    ),
    ("Goldfish have a memory span of only three seconds.", "False", "Snopes", "2014-09-09"),
    ("Vaccines cause autism in children.", "False", "PolitiFact", "2019-05-02"),
    ("Nancy Pelosi was filmed drunk at a press event.", "Pants on Fire!", "PolitiFact", "2019-05-24"),
    ("Australia's bushfires were mostly started by arsonists.", "Half true", "AAP FactCheck", "2020-01-10"),
    ("The unemployment rate in Spain fell to 8 percent in 2023.", "False", "Maldita", "2023-11-02"),
    ("Lightning never strikes the same place twice.", "False", "Snopes", "2012-06-18"),
]


def records() -> list[dict]:
    return [
        {
            "claim": claim,
            "rating": rating,
            "publisher": publisher,
            "date": date,
            "url": f"https://example.org/fact-check/{i}",
            "title": f"Fact check: {claim.rstrip('.')}?",
        }
        for i, (claim, rating, publisher, date) in enumerate(FACTCHECKS)
    ]


def write_jsonl(path: Path, rows: list[dict] | None = None) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in (rows if rows is not None else records())))
    return path


def imported_store(base: Path) -> Path:
    """A store of these fact-checks in `base/store`, imported as a user does (`veracity factchecks import`)."""
    import subprocess
    import sys

    from conftest import server_env

    r = subprocess.run(
        [sys.executable, "-m", "veracity.cli", "factchecks", "import", str(write_jsonl(base / "checks.jsonl")),
         "--store", str(base / "store")],
        capture_output=True, text=True, env=server_env(base), timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return base / "store"
