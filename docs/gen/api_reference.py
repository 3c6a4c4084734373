"""Generate the Python API reference: one page per public package and module of src/veracity, found by walking the
source tree (no list of modules is kept here: modules move and split), each rendered from its docstrings by
mkdocstrings. Private modules (a leading underscore), `__main__`, and a module shadowed by a package of the same
name are left out."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))
from _common import ROOT, SRC, cell

PACKAGE = SRC / "veracity"
BASE = "reference/api"


def public_modules() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        elif parts[-1] == "__main__" or parts[-1].startswith("_"):
            continue
        if any(p.startswith("_") for p in parts):
            continue
        folder = SRC.joinpath(*parts[:-1]) if len(parts) > 1 else SRC
        if not (folder / "__init__.py").is_file():  # not inside a package: not importable as veracity.x.y
            continue
        if path.name != "__init__.py" and (path.with_suffix("") / "__init__.py").is_file():
            continue  # a module and a package of the same name: the package is what imports
        found.append((".".join(parts), path))
    return found


def collectable(modules: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """The modules griffe (what mkdocstrings reads them with) can collect: one it cannot (a file half-moved, a
    syntax error) is left out of the reference instead of failing the whole build."""
    try:
        import griffe
    except ImportError:
        return modules
    try:
        package = griffe.load("veracity", search_paths=[str(SRC)], resolve_aliases=False, allow_inspection=False)
    except Exception:  # noqa: BLE001  (then mkdocstrings will say what is wrong)
        return modules

    def found(name: str) -> bool:
        try:
            if name != "veracity":
                package[name.split(".", 1)[1]]
        except (KeyError, ValueError, AttributeError):
            return False
        return True

    return [(name, path) for name, path in modules if found(name)]


def summary(path: Path) -> str:
    import ast

    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (SyntaxError, UnicodeDecodeError):
        return ""
    if not doc:
        return ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def main() -> None:
    modules = collectable(public_modules())
    index = [
        "# Python API reference\n",
        (
            "Generated at build time from the docstrings of every public package and module under "
            "`src/veracity` (mkdocstrings), one page each. Private modules (a leading underscore) are left out. "
            "The layers these modules form are described on the [contributor page](../../contributing.md).\n"
        ),
        "| module | what it is |",
        "|---|---|",
    ]
    for name, path in modules:
        page = Path(BASE, f"{name}.md")  # flat: veracity.retrieval.index beside veracity.retrieval
        with mkdocs_gen_files.open(page.as_posix(), "w") as fh:
            fh.write(f"# `{name}`\n\n::: {name}\n")
        mkdocs_gen_files.set_edit_path(page.as_posix(), path.relative_to(ROOT).as_posix())
        link = page.relative_to(BASE).as_posix()
        index.append(f"| [`{name}`]({link}) | {cell(summary(path))} |")
    with mkdocs_gen_files.open(f"{BASE}/index.md", "w") as fh:
        fh.write("\n".join(index) + "\n")


main()
