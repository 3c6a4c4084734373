"""The README's commands run as written.

Every command of the README's ```bash / ```sh / ```console blocks is either run here (in README order, in one
folder holding the files the README names: `my_docs/`, `article.md`, `my_claims.jsonl`) and its output checked, or
listed in NOT_RUN with the reason. The one substitution: the model. The README's commands use the default
(embedded) model; here `VERACITY_MODEL` makes them use the scripted backend (veracity.llm.scripted, the rules of a
QACheck run), so that they run in seconds and say the same thing every time. The Wikipedia knowledge base is off
(`VERACITY_KB=off`) for the same reason; every other setting is the README's.

The README's first two lines are exempt from running: each creates a virtualenv and installs veracity with every
test extra (llama-cpp-python compiles for 8-13 minutes), then runs the embedded model or the whole test suite,
which includes this test. Their `veracity` part is still parsed with the real parser.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from stub_server import QACHECK_RULES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SETUP = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "

# Commands of the README that this test does not run, and why. Their arguments are still parsed (below).
NOT_RUN = {
    "veracity serve": (
        "a server that runs until stopped, on the fixed port 8000, which another process may hold; "
        "tests/server/ start it on a free port and drive the page and the API"
    ),
    "veracity proxy --upstream https://api.openai.com/v1 --index my_index --pipeline verifier": (
        "forwards to api.openai.com (network and a key) and runs until stopped; tests/proxy/ run it against a local "
        "upstream"
    ),
}

WORLD = {
    "my_docs/orrin.md": (
        "# The Orrin Bridge\n\nThe Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in "
        "1871 and crosses the harbour canal.\n"
    ),
    "my_docs/curie.txt": "Marie Curie was a physicist and chemist. She was born in Warsaw in 1867.\n",
    "article.md": "The Orrin Bridge is a stone bridge in Tallinn. Marie Curie was born in Warsaw.\n",
    "answer.txt": "The Orrin Bridge was built in 1871. It crosses the harbour canal. It was built of steel.\n",
    "report.md": (
        "# The Orrin Bridge\n\nThe Orrin Bridge is a stone bridge in Tallinn, Estonia. It was built in 1871 and "
        "crosses the harbour canal.\n"
    ),
    "fact_checks.json": json.dumps(
        {
            "@context": "https://schema.org",
            "@type": "DataFeed",
            "dataFeedElement": [
                {
                    "@type": "DataFeedItem",
                    "item": [
                        {
                            "@type": "ClaimReview",
                            "url": "https://fullfact.example/5g-coronavirus",
                            "claimReviewed": "5G mobile masts spread the coronavirus.",
                            "author": {"@type": "Organization", "name": "Full Fact"},
                            "reviewRating": {"@type": "Rating", "alternateName": "False"},
                            "datePublished": "2020-04-03",
                        }
                    ],
                }
            ],
        }
    ),
    "my_claims.jsonl": (
        '{"claim": "The Orrin Bridge stands in Tallinn.", "label": "supported"}\n'
        '{"claim": "The Orrin Bridge stands in Riga.", "label": "refuted"}\n'
    ),
}


def readme_commands() -> list[str]:
    """Each command line of the README's shell blocks (continuation lines joined, comments kept, `$ ` dropped)."""
    commands: list[str] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", README.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL):
        if lang not in ("bash", "sh", "shell", "console"):
            continue
        pending = ""
        for line in body.splitlines():
            if lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pending += line
            if pending.endswith("\\"):
                pending = pending[:-1]
                continue
            commands.append(pending)
            pending = ""
    return commands


def canon(command: str) -> str:
    """A command line without its comment, its quoting and spacing made canonical."""
    return shlex.join(shlex.split(command, comments=True))


def veracity_argvs(command: str) -> list[list[str]]:
    """The argument lists of the `veracity` invocations of a command line (its parts between && ; |)."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split, lex.commenters = True, "#"
    parts, current = [], []
    for token in lex:
        if token in ("&&", "||", ";", "|", "&"):
            parts.append(current)
            current = []
        else:
            current.append(token)
    parts.append(current)
    return [p[1:] for p in parts if p and Path(p[0]).name == "veracity"]


def test_the_readme_stays_short_and_opens_with_its_two_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the detail into docs/"
    assert lines[2:6] == [
        "```bash",
        SETUP + '.venv/bin/veracity check "The Eiffel Tower is located in Rome."',
        SETUP + ".venv/bin/python -m pytest -q",
        "```",
    ]


def test_every_readme_link_to_a_file_of_the_repository_exists():
    text = README.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]
    assert len(targets) >= 20
    for target in targets:
        assert (ROOT / target.split("#")[0]).exists(), f"README links to {target}, which does not exist"


def test_every_readme_command_is_run_here_or_listed_with_its_reason():
    commands = [canon(c) for c in readme_commands()]
    assert commands[:2] == [
        canon(SETUP + '.venv/bin/veracity check "The Eiffel Tower is located in Rome."'),
        canon(SETUP + ".venv/bin/python -m pytest -q"),
    ]
    rest = commands[2:]
    listed = {canon(c) for c in RUN} | {canon(c) for c in NOT_RUN}
    assert set(rest) == listed, (
        "the README's commands and this test disagree: run a new command in RUN or list it in NOT_RUN, "
        f"and drop what the README no longer has:\nREADME: {sorted(rest)}\ntest: {sorted(listed)}"
    )
    assert not {canon(c) for c in RUN} & {canon(c) for c in NOT_RUN}


def test_every_veracity_command_of_the_readme_parses():
    from veracity.cli import build_parser

    for command in readme_commands():
        for argv in veracity_argvs(command):
            if argv[:2] == ["eval", "report"]:  # as veracity.cli.main maps it
                argv = ["eval-report", *argv[2:]]
            try:
                args = build_parser().parse_args(argv)
            except SystemExit as e:  # argparse's usage error
                pytest.fail(f"`veracity {shlex.join(argv)}` (README) does not parse: exit {e.code}")
            assert getattr(args, "func", None), command


# -- the commands run, in README order, each with what its output must say ---------------------------------------


def check_verdict(r, world):
    assert "[1] Q: " in r.stdout and "\nVerdict: " in r.stdout and "Usage: " in r.stdout


def check_index(r, world):
    assert "Indexed 2 documents" in r.stdout
    assert (world / "my_index").is_dir()


def check_against_the_index(r, world):
    assert "evidence: " in r.stdout and "The Orrin Bridge is a stone bridge in Tallinn, Estonia." in r.stdout
    assert "\nVerdict: Supported\n" in r.stdout  # decided by a source, not the model's memory


def check_text(r, world):
    assert "Pipeline: verifier" in r.stdout  # the default with an index: no model call
    assert (
        "The Orrin Bridge is a stone bridge in Tallinn." in r.stdout and "Marie Curie was born in Warsaw." in r.stdout
    )
    assert "Factuality" in r.stdout


def check_eval(r, world):
    assert "2 items done" in r.stdout
    items = (world / "runs" / "mine" / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(items) == 2 and {json.loads(line)["pipeline"] for line in items} == {"qacheck"}


def check_report(r, world):
    assert r.stdout.startswith("# Evaluation report") and "| qacheck | 2 |" in r.stdout


def run_mcp(command: str, env: dict, world: Path) -> None:
    """`veracity mcp` serves MCP over stdio until its input ends: an MCP client's handshake, then the tool list."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test_readme", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=world,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        replies = {}
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                line = proc.stdout.readline()
                assert line, f"veracity mcp said nothing: {proc.stderr.read()[-2000:]}"
                reply = json.loads(line)
                replies[reply["id"]] = reply
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert replies[1]["result"]["capabilities"]["tools"] is not None
    tools = {t["name"] for t in replies[2]["result"]["tools"]}
    assert {"check_claim", "check_text", "get_run"} <= tools, tools


def check_ground(r, world):
    lines = r.stdout.splitlines()
    assert lines[0].startswith("[1] Supported (grounded ") and lines[0].endswith("The Orrin Bridge was built in 1871.")
    assert "doc-1 (report.md) [" in lines[1] and "It was built in 1871" in lines[1]
    assert "[3] " in r.stdout and "[3] Supported" not in r.stdout  # steel: the document says stone
    assert "grounded: " in r.stdout


def check_factchecks_import(r, world):
    assert "1 fact-check added, 0 updated, 0 already there; 1 in the store" in r.stdout


def check_factchecks_match(r, world):
    assert r.stdout.startswith("Published fact-checks: published fact-check found: Full Fact rated it 'False'")
    assert "https://fullfact.example/5g-coronavirus" in r.stdout


RUN = {
    'veracity check "Lars Onsager won the Nobel prize when he was 30 years old."': check_verdict,
    "veracity index build my_docs/ --out my_index": check_index,
    'veracity check --index my_index --qa retriever-reader "The Orrin Bridge stands in Tallinn."': check_against_the_index,
    "veracity check-text article.md --index my_index": check_text,
    "veracity ground answer.txt --document report.md": check_ground,
    "veracity factchecks import fact_checks.json": check_factchecks_import,
    'veracity factchecks match "Turn off 5G, the masts spread the virus!"': check_factchecks_match,
    "veracity mcp": run_mcp,
    "veracity eval --dataset jsonl --path my_claims.jsonl --out runs/mine": check_eval,
    "veracity eval report runs/mine": check_report,
}


def test_the_readme_commands_run_as_written(tmp_path):
    world = tmp_path / "world"
    for name, text in WORLD.items():
        (world / name).parent.mkdir(parents=True, exist_ok=True)
        (world / name).write_text(text, encoding="utf-8")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(QACHECK_RULES), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_") and k != "OPENAI_API_KEY"}
    env.update(
        VERACITY_MODEL=f"scripted:{rules}",
        VERACITY_KB="off",
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        PYTHONIOENCODING="utf-8",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
    )
    checks = {canon(c): check for c, check in RUN.items()}
    not_run = {canon(c) for c in NOT_RUN}
    ran = []
    for command in readme_commands()[2:]:
        key = canon(command)
        if key in not_run:
            continue
        check = checks[key]
        if check is run_mcp:
            run_mcp(command, env, world)
        else:
            r = subprocess.run(
                ["bash", "-c", command], cwd=world, env=env, capture_output=True, text=True, timeout=300, check=False
            )
            assert r.returncode == 0, f"`{key}` exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
            check(r, world)
        ran.append(key)
    assert len(ran) == len(RUN)  # each command the test knows was run, once
