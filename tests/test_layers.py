"""The shape of the code: the top-level parts of `veracity` (a package or a module directly under src/veracity/)
import one another one way only, and no module grows past 500 lines.

An import from part A to part B (any import in any module of A, at the top or inside a function, of a module of B)
is an arrow A -> B. The arrows must form no circle: then every part can be given a floor above all it imports, and
no arrow runs back up (docs/contributing.md, "The layers of the code"). A circle means some part reaches a part that
reaches it back, which is how layers erode; the failure names the arrows of each circle and the files that draw them.
"""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "veracity"
MAX_LINES = 500


def _module_of(path: Path) -> list[str]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported(path: Path) -> set[str]:
    """The veracity modules `path` imports, as dotted names."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)  # `from . import x` names module x
    return {name for name in found if name.startswith("veracity.")}


def part_arrows() -> dict[tuple[str, str], set[str]]:
    """(part A, part B) -> the files of A that import B."""
    arrows: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        source = _module_of(path)
        if len(source) < 2:
            continue  # veracity/__init__.py: the package's face
        for name in _imported(path):
            target = name.split(".")[1]
            if target != source[1] and ((PACKAGE / target).is_dir() or (PACKAGE / f"{target}.py").is_file()):
                arrows[(source[1], target)].add(str(path.relative_to(ROOT)))
    return arrows


def circles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one part (Tarjan)."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        graph[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted({p for edge in edges for p in edge}):
        if v not in index:
            visit(v)
    return found


def test_the_parts_import_one_way():
    arrows = part_arrows()
    assert ("cli", "config") in arrows and ("server", "db") in arrows  # the walk reads real imports
    problems = []
    for component in circles(set(arrows)):
        inside = [
            f"  {a} -> {b} ({', '.join(sorted(files))})"
            for (a, b), files in sorted(arrows.items())
            if a in component and b in component
        ]
        problems.append(f"parts that import one another: {', '.join(component)}\n" + "\n".join(inside))
    assert not problems, "\n".join(problems)


def test_nothing_imports_the_command_line():
    users = sorted(files for (a, b), files in part_arrows().items() if b == "cli")
    assert not users, f"the command line is the top layer; imported by {users}"


def test_circle_finder_finds_a_circle():
    assert circles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert circles({("a", "b"), ("b", "c")}) == []


def test_no_module_over_500_lines():
    modules = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.js"), *(ROOT / "benchmarks").glob("*.py")]
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in modules}
    too_long = {path: n for path, n in sizes.items() if n > MAX_LINES}
    assert len(sizes) > 100
    assert not too_long, f"modules over {MAX_LINES} lines (split them by what their parts do): {too_long}"
