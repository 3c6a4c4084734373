"""Generate reference/configuration.md from the configuration schema: the dataclasses of src/veracity/config.py
(`Config` and the sections it nests), each field with its type, default and the comment that explains it (read
from the source: a trailing `# ...`, or the `#:`/`#` lines right above), and the environment variables the code
reads (found in the source, so a new one shows up without editing this script)."""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import sys
import tokenize
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))
from _common import ROOT, SRC, cell, code, importable

importable()

OUT = "reference/configuration.md"


def comments_by_line(source: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0]] = tok.string
    return found


def field_docs(source: str) -> dict[str, dict[str, dict[str, str]]]:
    """{class name: {field: {"type", "default", "doc"}}} for every class of the module, from its source."""
    tree = ast.parse(source)
    comments = comments_by_line(source)
    lines = source.splitlines()
    out: dict[str, dict[str, dict[str, str]]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, dict[str, str]] = {}
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            doc: list[str] = []
            above = stmt.lineno - 1
            block: list[str] = []
            while above >= 1 and lines[above - 1].strip().startswith("#"):
                block.insert(0, comments.get(above, lines[above - 1].strip()))
                above -= 1
            for c in block:
                doc.append(re.sub(r"^#:?\s?", "", c))
            trailing = comments.get(stmt.end_lineno or stmt.lineno)
            if trailing and not lines[(stmt.end_lineno or stmt.lineno) - 1].strip().startswith("#"):
                doc.append(re.sub(r"^#:?\s?", "", trailing))
            default = ast.get_source_segment(source, stmt.value) if stmt.value is not None else ""
            fields[stmt.target.id] = {
                "type": ast.get_source_segment(source, stmt.annotation) or "",
                "default": default or "",
                "doc": " ".join(d.strip() for d in doc if d.strip()),
            }
        out[node.name] = fields
    return out


def show_default(f: dataclasses.Field, instance: object, source_default: str) -> str:
    if f.default is not dataclasses.MISSING:
        return code(repr(f.default))
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = getattr(instance, f.name)
        if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
            return code(repr(list(value)))
        m = re.search(r"default_factory=([^,)]+(?:\([^)]*\))?)", source_default)
        expr = m.group(1).strip() if m else source_default
        if expr.startswith("lambda"):
            expr = expr.split(":", 1)[1].strip()
        elif not expr.endswith(")"):
            expr += "()"
        return code(expr)
    return "(required)"


def section(
    cls: type, key: str, docs: dict, lines: list[str], nested: list[tuple[str, type]], env_keys: tuple[str, ...] = ()
) -> None:
    instance = cls()
    title = f"`[{key}]`" if key else "Top level"
    lines.append(f"## {title}\n")
    if key:
        lines.append(f"Class `veracity.config.{cls.__name__}`, the table `[{key}]` of the file.\n")
    else:
        lines.append(f"Class `veracity.config.{cls.__name__}`: the keys outside any table.\n")
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        lines.append(" ".join(cls.__doc__.split()) + "\n")
    lines.append("| key | type | default | what it is |")
    lines.append("|---|---|---|---|")
    own = docs.get(cls.__name__, {})
    for f in dataclasses.fields(cls):
        info = own.get(f.name, {"type": str(f.type), "default": "", "doc": ""})
        value = getattr(instance, f.name)
        name = f"{key}.{f.name}" if key else f.name
        if dataclasses.is_dataclass(value):
            nested.append((name, type(value)))
            anchor = re.sub(r"[^a-z0-9_-]", "", name.lower())
            lines.append(f"| {code(name)} | table | see [`[{name}]`](#{anchor}) | {cell(info['doc'])} |")
            continue
        doc = cell(info["doc"])
        if not key and f.name in env_keys:
            doc = (doc + " " if doc else "") + f"Environment: {code('VERACITY_' + f.name.upper())}."
        lines.append(f"| {code(name)} | {code(info['type'])} | {show_default(f, instance, info['default'])} | {doc} |")
    lines.append("")


ENV_READ = re.compile(
    r"""(?:environ\.get|environ\.pop|getenv|environ\[|\benv\.get|\benv\[)\(?\s*["']([A-Z][A-Z0-9_]{2,})["'](\]\s*=(?!=))?"""
)
ENV_LITERAL = re.compile(r"""["'](VERACITY_[A-Z0-9_]+)["']""")

# What the variables outside the configuration schema do, where the reading code does not say it in a line
KNOWN = {
    "VERACITY_API_TOKEN": "the bearer token `veracity serve`, `mcp --http` and `proxy` require on any address but "
    "localhost (at least 16 characters); clients send it as `Authorization: Bearer TOKEN`",
    "VERACITY_CONTACT": "your e-mail address or URL, added to the User-Agent of requests to Wikipedia's API",
    "VERACITY_KB_DIR": "where the Wikipedia knowledge base's index is built (default `~/.cache/veracity/kb/`)",
    "VERACITY_LLAMA_SERVER": "the path of llama.cpp's `llama-server` binary",
    "VERACITY_UPSTREAM_KEY": "the upstream server's API key for `veracity proxy` (`--upstream-key-env` names another)",
    "SERPER_API_KEY": "Serper's key, for `--search serper` (or `defame.serper_api_key`)",
    "XDG_CACHE_HOME": "the base of the cache folder (response cache, model states, the knowledge base's index)",
    "XDG_DATA_HOME": "the base of the default run database (`$XDG_DATA_HOME/veracity/runs.sqlite`)",
}


def environment(config_mod) -> list[str]:
    """Every environment variable the source reads, with the modules that read it."""
    readers: dict[str, set[str]] = {}
    for path in sorted((SRC / "veracity").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        mod = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for m in ENV_READ.finditer(text):
            if not m.group(2):  # os.environ["X"] = ...: set, not read
                readers.setdefault(m.group(1), set()).add(mod)
        for m in ENV_LITERAL.finditer(text):
            readers.setdefault(m.group(1), set()).add(mod)
    env_keys = list(getattr(config_mod, "ENV_KEYS", ()))
    from_config = {f"VERACITY_{k.upper()}": k for k in env_keys}
    for name in from_config:
        readers.setdefault(name, set()).add("veracity.config")
    lines = [
        "## Environment variables\n",
        (
            "Found in the source: the configuration keys that `load_config` reads from `VERACITY_<KEY>` "
            "(they override the file; flags override them), then every other variable a module reads.\n"
        ),
        "| variable | what it sets | read in |",
        "|---|---|---|",
    ]

    def order(name: str) -> tuple[int, str]:
        return (0 if name in from_config else 1 if name.startswith("VERACITY_") else 2, name)

    for name in sorted(readers, key=order):
        if name in from_config:
            key = from_config[name]
            what = f"the configuration key {code(key)}"
        elif name == "VERACITY_CONFIG":
            what = "the configuration file (when `--config` is not given)"
        elif name == "OPENAI_API_KEY":
            what = "the API key when `api_key` is not set"
        else:
            what = KNOWN.get(name, "")
        mods = ", ".join(code(m) for m in sorted(readers[name]))
        lines.append(f"| {code(name)} | {what} | {mods} |")
    lines.append("")
    return lines


def main() -> None:
    import veracity.config as config_mod

    # the schema's source: veracity/config.py, or every module of a veracity/config/ package
    origin = Path(config_mod.__file__)
    files = sorted(origin.parent.glob("*.py")) if origin.name == "__init__.py" else [origin]
    docs: dict[str, dict[str, dict[str, str]]] = {}
    for f in files:
        docs.update(field_docs(f.read_text(encoding="utf-8")))
    lines = [
        "# Configuration reference\n",
        (
            "Generated at build time from the configuration schema, the dataclasses of `veracity.config`, "
            "and the comments beside their fields. How the file, the environment and the flags combine is in "
            "the [configuration guide](../guide/configuration.md).\n"
        ),
    ]
    module_doc = (config_mod.__doc__ or "").strip()
    if module_doc:
        lines.append('??? note "The module\'s own summary (`veracity.config`)"\n')
        lines.append("    ```text")
        lines.extend(("    " + line).rstrip() for line in module_doc.splitlines())
        lines.append("    ```\n")
    queue: list[tuple[str, type]] = [("", config_mod.Config)]
    while queue:
        key, cls = queue.pop(0)
        nested: list[tuple[str, type]] = []
        section(cls, key, docs, lines, nested, tuple(getattr(config_mod, "ENV_KEYS", ())))
        queue.extend(nested)
    lines.extend(environment(config_mod))
    with mkdocs_gen_files.open(OUT, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    if origin.is_relative_to(ROOT):
        mkdocs_gen_files.set_edit_path(OUT, origin.relative_to(ROOT).as_posix())


main()
