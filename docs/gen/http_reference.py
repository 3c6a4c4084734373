"""Generate reference/http-api.md and reference/openapi.json from the web server's OpenAPI schema: the FastAPI app
is built as `veracity serve` builds it (`veracity.server.app.create_app`), on the scripted model, without the
Wikipedia knowledge base and with its run store in a temporary folder, so that nothing is loaded, downloaded or
written outside it; its `openapi()` is rendered to Markdown (paths, methods, summaries, parameters, request bodies,
responses and their schemas)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))
from _common import cell, code, importable

importable()

OUT = "reference/http-api.md"
RAW = "reference/openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")


def openapi_schema() -> dict[str, Any]:
    from veracity.config import load_config
    from veracity.server.app import create_app
    from veracity.server.settings import ServerSettings

    with tempfile.TemporaryDirectory(prefix="veracity-docs-") as tmp:
        d = Path(tmp)
        rules = d / "rules.json"
        rules.write_text('{"rules": []}', encoding="utf-8")
        config = load_config(
            overrides={"model": f"scripted:{rules}", "kb": False, "cache_path": str(d / "cache.sqlite")}, env={}
        )
        app = create_app(config, ServerSettings(db_path=str(d / "runs.sqlite")), env={})
        try:
            return app.openapi()
        finally:
            state = getattr(app.state, "veracity", None)
            manager = getattr(state, "manager", None)
            if manager is not None:
                manager.shutdown()


def ref_name(schema: dict[str, Any] | None) -> str:
    """A schema as a short type: a component's name (linked), an array of it, or its type."""
    if not schema:
        return ""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[`{name}`](#schema-{name.lower()})"
    if schema.get("type") == "array":
        return f"array of {ref_name(schema.get('items'))}"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(ref_name(s) for s in schema[key])
    kind = schema.get("type", "")
    if "enum" in schema:
        return f"{kind} (one of {', '.join(code(v) for v in schema['enum'])})"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {ref_name(schema['additionalProperties'])}"
    return code(kind) if kind else "any"


def indent(text: str) -> str:
    return "\n".join(("    " + line).rstrip() for line in text.splitlines())


def render(spec: dict[str, Any]) -> str:
    info = spec.get("info", {})
    out = [
        "# HTTP API reference\n",
        (
            f"Generated at build time from the OpenAPI schema of the web server (`{info.get('title', '')}` "
            f"{info.get('version', '')}, OpenAPI {spec.get('openapi', '')}), the same schema a running "
            "`veracity serve` serves at `/openapi.json`. The raw schema of this build: "
            "[openapi.json](openapi.json). How the API is used is in the "
            "[web page and HTTP API guide](../guide/web.md).\n"
        ),
    ]
    if info.get("description"):
        out.append('??? note "The API\'s own description"\n')
        out.append(indent(info["description"].strip()) + "\n")
    out.append("| method | path | summary |")
    out.append("|---|---|---|")
    ops = []
    for path, item in spec.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                ops.append((path, method, item[method]))
    for path, method, op in ops:
        out.append(
            f"| {method.upper()} | [{code(path)}](#{op.get('operationId', '').lower()}) | "
            f"{cell(op.get('summary', ''))} |"
        )
    out.append("")
    for path, method, op in ops:
        out.append(f"## {method.upper()} `{path}` {{#{op.get('operationId', '').lower()}}}\n")
        if op.get("summary"):
            out.append(f"**{cell(op['summary'])}**\n")
        if op.get("description"):
            out.append(op["description"].strip() + "\n")
        params = op.get("parameters", [])
        if params:
            out.append("| parameter | in | required | type | description |")
            out.append("|---|---|---|---|---|")
            for p in params:
                out.append(
                    f"| {code(p.get('name', ''))} | {p.get('in', '')} | "
                    f"{'yes' if p.get('required') else 'no'} | {ref_name(p.get('schema'))} | "
                    f"{cell(p.get('description', '') or p.get('schema', {}).get('description', ''))} |"
                )
            out.append("")
        body = op.get("requestBody")
        if body:
            kinds = ", ".join(f"{code(ct)}: {ref_name(c.get('schema'))}" for ct, c in body.get("content", {}).items())
            out.append(f"Request body ({'required' if body.get('required') else 'optional'}): {kinds}\n")
        responses = op.get("responses", {})
        if responses:
            out.append("| status | meaning | body |")
            out.append("|---|---|---|")
            for status, r in sorted(responses.items()):
                content = r.get("content", {})
                kinds = ", ".join(f"{code(ct)} {ref_name(c.get('schema'))}".strip() for ct, c in content.items())
                out.append(f"| {status} | {cell(r.get('description', ''))} | {kinds} |")
            out.append("")
    schemas = spec.get("components", {}).get("schemas", {})
    if schemas:
        out.append("## Schemas\n")
        for name, schema in sorted(schemas.items()):
            out.append(f"### `{name}` {{#schema-{name.lower()}}}\n")
            if schema.get("description"):
                out.append(cell(schema["description"]) + "\n")
            props = schema.get("properties", {})
            required = set(schema.get("required", []))
            if props:
                out.append("| field | type | required | description |")
                out.append("|---|---|---|---|")
                for field, s in props.items():
                    default = f" (default {code(json.dumps(s['default']))})" if "default" in s else ""
                    out.append(
                        f"| {code(field)} | {ref_name(s)} | {'yes' if field in required else 'no'} | "
                        f"{cell(s.get('description', '') or s.get('title', ''))}{default} |"
                    )
                out.append("")
            elif "enum" in schema or "type" in schema:
                out.append(f"Type: {ref_name(schema)}\n")
    return "\n".join(out) + "\n"


def main() -> None:
    spec = openapi_schema()
    with mkdocs_gen_files.open(RAW, "w") as fh:
        json.dump(spec, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    with mkdocs_gen_files.open(OUT, "w") as fh:
        fh.write(render(spec))


main()
