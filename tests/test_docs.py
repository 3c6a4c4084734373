"""The documentation site: `mkdocs build --strict` passes (no broken link or anchor, no missing page or snippet, no
warning), and the reference pages generated from the code at build time (docs/gen/) say what the code says."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

for _module in ("mkdocs", "material", "mkdocs_gen_files", "mkdocstrings", "mkdocstrings_handlers.python", "pymdownx"):
    pytest.importorskip(_module, reason="the docs build needs the `docs` extra: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once for this module with the interpreter running the tests."""
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_")}
    env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true", PYTHONIOENCODING="utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=out,
        timeout=600,
        check=False,
    )
    log = r.stdout + r.stderr
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{log[-6000:]}"
    return out, log


def text_of(page: Path) -> str:
    """A built page's article as plain text."""
    html = page.read_text(encoding="utf-8")
    html = html[html.find("<article") : html.find("</article>")]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&lt;", "<").replace("&gt;", ">")


def test_the_strict_build_warns_about_nothing(site):
    _, log = site
    assert not [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))], log[-4000:]
    assert "Documentation built" in log


def test_every_page_of_the_nav_is_built_and_no_snippet_is_left_unresolved(site):
    out, _ = site
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)  # !relative and the like
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)

    def pages(nav):
        for item in nav:
            for value in item.values() if isinstance(item, dict) else [item]:
                if isinstance(value, list):
                    yield from pages(value)
                else:
                    yield value

    names = list(pages(config["nav"]))
    assert len(names) >= 25
    for name in names:
        built = out / (name.removesuffix(".md").removesuffix("index") + "/index.html").lstrip("/")
        built = out / "index.html" if name == "index.md" else built
        assert built.is_file(), f"{name} was not built ({built})"
        assert "--8<--" not in built.read_text(encoding="utf-8"), f"{name}: a snippet was not included"


def test_the_cli_reference_is_generated_from_the_parser(site):
    out, _ = site
    text = text_of(out / "reference" / "cli" / "index.html")
    for command in (
        "veracity check",
        "veracity serve",
        "veracity mcp",
        "veracity proxy",
        "veracity check-text",
        "veracity index build",
        "veracity eval",
    ):
        assert command in text, command
    assert "--max-claim-chars" in text and "--evidence-file" in text  # flags with their help
    assert "the claim to check" in text  # a positional argument's help, as `veracity check --help` prints it


def test_the_configuration_reference_is_generated_from_the_schema(site):
    out, _ = site
    text = text_of(out / "reference" / "configuration" / "index.html")
    for key in ("database_url", "qacheck.max_rejected", "defame.search", "verifier.uncertain_below", "leaf.units"):
        assert key in text, key
    # the comment beside a field in the source, and the environment variables the code reads
    import veracity.config

    source = Path(veracity.config.__file__).read_text(encoding="utf-8")
    comment = re.search(r"^    \w+: [^=]+ = [^#\n]+  # ([^\n]{12,})$", source, re.MULTILINE).group(1)
    assert " ".join(comment.split()) in text, comment
    assert "VERACITY_MODEL" in text and "VERACITY_KB_DIR" in text and "VERACITY_API_TOKEN" in text


def test_the_http_reference_is_generated_from_the_openapi_schema(site):
    out, _ = site
    text = text_of(out / "reference" / "http-api" / "index.html")
    assert "POST /api/checks" in text and "GET /api/checks/{run_id}/events" in text and "POST /api/texts" in text
    assert "CheckIn" in text and "ErrorBody" in text  # request and response schemas
    schema = json.loads((out / "reference" / "openapi.json").read_text(encoding="utf-8"))
    assert schema["info"]["title"] == "veracity"
    assert any(path.startswith("/api/") for path in schema["paths"])


def test_the_python_api_reference_has_a_page_per_public_module(site):
    out, _ = site
    api = out / "reference" / "api"
    index = text_of(api / "index.html")
    src = ROOT / "src" / "veracity"
    for module in ("veracity.config", "veracity.pipeline", "veracity.registry"):
        if (src / (module.split(".", 1)[1] + ".py")).is_file():
            assert module in index, module
            assert (api / module / "index.html").is_file(), module
    assert "load_config" in text_of(api / "veracity.config" / "index.html")  # rendered from its docstrings
    assert not [p for p in api.iterdir() if p.name.split(".")[-1].startswith("_")]  # no private module


def test_the_model_card_and_the_benchmark_pages_show_the_checked_in_results(site):
    out, _ = site
    card = text_of(out / "verifier" / "model-card" / "index.html")
    assert "fm2_heldout" in card and "cross_encoder" in card and "Command:" in card
    results = text_of(out / "reference" / "benchmark-results" / "index.html")
    for f in RESULTS.glob("*.md"):
        assert f.name in results, f.name


def test_every_benchmark_result_opens_with_its_command_machine_and_date():
    files = sorted(RESULTS.glob("*.md"))
    assert files
    for f in files:
        head = f.read_text(encoding="utf-8").splitlines()[:3]
        assert head[0].startswith("- **Command:** `"), f.name
        assert head[1].startswith("- **Machine:** "), f.name
        assert head[2].startswith("- **Date:** ") and re.search(r"\d{4}-\d{2}-\d{2}", head[2]), f.name
        assert re.search(r"^\|.*\|$", f.read_text(encoding="utf-8"), re.MULTILINE), f"{f.name} has no table"


def test_the_model_cards_table_is_the_one_shipped_beside_the_weights():
    """The docs' model card shows benchmarks/results/verifier_heldout.md; a retrained verifier rewrites the card
    beside its weights (MODEL_CARD.md), and then the result file must follow."""

    def table(text):
        return [line for line in text.splitlines() if line.startswith("| ")]

    card = ROOT / "src" / "veracity" / "verify" / "weights" / "MODEL_CARD.md"
    shipped = [line for line in table(card.read_text(encoding="utf-8")) if line.count("|") == 8]
    assert shipped and table((RESULTS / "verifier_heldout.md").read_text(encoding="utf-8")) == shipped
