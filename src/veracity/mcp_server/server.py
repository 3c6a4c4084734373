"""The MCP server (the official SDK's MCPServer) with veracity's tools, over stdio or streamable HTTP.

Over HTTP the endpoint is /mcp, behind the web server's guard (server/auth.py): without VERACITY_API_TOKEN only
loopback Host headers are answered (DNS rebinding); with it (required on any other address) every request needs
'Authorization: Bearer TOKEN'. A request with an Origin header (a browser's) is answered only when that origin is the
server's own or one given with --allow-origin (403 otherwise, 'null' included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from .. import __version__
from . import schemas as sc
from .tools import Tools, answer_text, claim_text, factchecks_text, grounding_text, run_text, search_text, text_text

if TYPE_CHECKING:
    from ..server.auth import Auth
    from ..server.state import ServerState

INSTRUCTIONS = (
    "veracity checks facts against evidence and shows its sources. check_claim verifies one statement; check_text "
    "extracts the claims of a text and checks each; check_answer rates each sentence of an answer to a question "
    "against the evidence index (LEAF score); search_evidence returns passages from the index; find_factchecks "
    "returns published fact-checks of a claim or post (check_claim shows them first too); ground_answer tells which "
    "sentences of an answer the documents given with it support (no model call); get_run reads a "
    "stored check. Every verdict carries its confidence, whether it is uncertain and why, and the evidence it read: "
    "a verdict marked uncertain, or resting on the model's memory (basis 'memory'), should not be presented as a "
    "finding: tell it as its shown_as says ('Uncertain, leaning Supported')."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
CHECK = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


def _result(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=model.model_dump(mode="json")
    )


def _progress(ctx: Context):
    async def report(done: int, message: str) -> None:
        await ctx.report_progress(done, None, message)

    return report


def build_server(state: ServerState, *, local_files: bool, pipeline: str | None = None) -> MCPServer:
    """The MCP server over `state` (server.app.create_state). `local_files`: check_claim may read an image from
    a path on this machine (stdio, where the client runs here too). `pipeline`: the claim pipeline of a call
    that names none."""
    tools = Tools(state, local_files=local_files, pipeline=pipeline)
    mcp = MCPServer(name="veracity", version=__version__, instructions=INSTRUCTIONS)

    @mcp.tool(
        title="Check a claim",
        annotations=CHECK,
        description="Fact-check one claim with a veracity pipeline (default qacheck; defame looks at images "
        "too). Returns the verdict, its confidence, whether it is uncertain and why, the rationale "
        "and the evidence with its sources. Progress is reported step by step.",
    )
    async def check_claim(
        ctx: Context,
        claim: Annotated[str, Field(description="the statement to check")],
        pipeline: Annotated[
            str | None,
            Field(
                description="the pipeline (default: the server's --pipeline, else "
                "qacheck): qacheck, defame, verifier, direct, ... "
                "(`veracity pipelines`)"
            ),
        ] = None,
        date: Annotated[
            str | None, Field(description="when the claim was made, YYYY-MM-DD: later sources are not used")
        ] = None,
        image_path: Annotated[
            str | None,
            Field(
                description="an image the claim is about, as a path on "
                "this machine (stdio only; pipelines that take "
                "images)"
            ),
        ] = None,
        image_base64: Annotated[
            str | None, Field(description="or the image's bytes in base64 (or a data: URL)")
        ] = None,
        evidence: Annotated[
            list[str] | None,
            Field(
                description="passages to check the claim against (a source "
                "the user gave, a page you read), instead of "
                "the server's index: read in the order given; "
                "at most 20"
            ),
        ] = None,
    ) -> Annotated[CallToolResult, sc.ClaimResult]:
        r = await tools.check_claim(_progress(ctx), claim, pipeline, date, image_path, image_base64, evidence)
        return _result(r, claim_text(r))

    @mcp.tool(
        title="Check a text",
        annotations=CHECK,
        description="Extract the checkable claims of a text and check each: every claim with its character "
        "spans in the text, its outcome (supported, refuted, uncertain, ...), confidence and "
        "evidence, and the text's factuality (supported / decided claims; not determined "
        "when no claim was decided).",
    )
    async def check_text(
        ctx: Context,
        text: Annotated[str, Field(description="the text whose claims to check")],
        pipeline: Annotated[str | None, Field(description="the claim pipeline that checks each claim")] = None,
        max_claims: Annotated[int | None, Field(description="check at most this many claims")] = None,
        evidence: Annotated[
            list[str] | None,
            Field(
                description="documents to check the claims against (e.g. "
                "the source of a summary) instead of the "
                "server's index; at most 20"
            ),
        ] = None,
    ) -> Annotated[CallToolResult, sc.TextResult]:
        r = await tools.check_text(_progress(ctx), text, pipeline, max_claims, evidence)
        return _result(r, text_text(r))

    @mcp.tool(
        title="Check an answer",
        annotations=CHECK,
        description="Fact-check an answer to a question sentence by sentence against the evidence index "
        "(LEAF): each sentence's rating, query and evidence, and the LEAF score (supported / "
        "checked sentences). Needs the server started with --index.",
    )
    async def check_answer(
        ctx: Context,
        question: Annotated[str, Field(description="the question the answer replies to")],
        answer: Annotated[str, Field(description="the answer to check")],
    ) -> Annotated[CallToolResult, sc.AnswerResult]:
        r = await tools.check_answer(_progress(ctx), question, answer)
        return _result(r, answer_text(r))

    @mcp.tool(
        title="Search the evidence",
        annotations=READ_ONLY,
        description="Passages from the evidence index for a query, best first, with their sources.",
    )
    async def search_evidence(
        query: Annotated[str, Field(description="what to look for")],
        k: Annotated[int, Field(description="how many passages (1-50)")] = 5,
    ) -> Annotated[CallToolResult, sc.SearchResult]:
        r = await tools.search_evidence(query, k)
        return _result(r, search_text(r))

    @mcp.tool(
        title="Find published fact-checks",
        annotations=READ_ONLY,
        description="Published fact-checks of a claim, a sentence or a social-media post (links, handles and emoji "
        "are ignored) from the server's fact-check store: each with the claim as the fact-checker worded it, its "
        "rating in its own words, publisher, date, link and the probability that it checks the same claim; says "
        "'no published fact-check found' when none reaches the threshold. Look here before checking a claim.",
    )
    async def find_factchecks(
        text: Annotated[str, Field(description="the claim, sentence or post")],
        k: Annotated[int, Field(description="at most this many matches (1-20)")] = 5,
        related: Annotated[bool, Field(description="also the best candidates below the threshold")] = False,
    ) -> Annotated[CallToolResult, sc.FactCheckResult]:
        r = await tools.find_factchecks(text, k, related)
        return _result(r, factchecks_text(r))

    @mcp.tool(
        title="Ground an answer in its documents",
        annotations=READ_ONLY,
        description="Which sentences of an answer the given documents support: for every sentence, supported, "
        "not_supported or contradicted, the calibrated probability that the documents support it, whether that is "
        "decided, and the quote (document, offsets) that decided it; the grounded share of the decided sentences. "
        "Every part of every document is read; no model is called and nothing is stored.",
    )
    async def ground_answer(
        answer: Annotated[str, Field(description="the answer (or any text) to check")],
        documents: Annotated[list[str], Field(description="the documents it should rest on (their texts)")],
    ) -> Annotated[CallToolResult, sc.GroundingResult]:
        r = await tools.ground_answer(answer, documents)
        return _result(r, grounding_text(r))

    @mcp.tool(
        title="Read a stored check",
        annotations=READ_ONLY,
        description="A stored run by its id (from a check's run_id, or the web page's history): its status, "
        "verdict, and for a text or an answer check its claims or sentences.",
    )
    async def get_run(
        run_id: Annotated[str, Field(description="the run's id")],
    ) -> Annotated[CallToolResult, sc.RunResult]:
        r = await tools.get_run(run_id)
        return _result(r, run_text(r))

    return mcp


class Guard:
    """ASGI: the web server's host, origin and token rules in front of the MCP endpoint. A request whose Origin is
    another site's (a page elsewhere reaching this server through the browser: DNS rebinding) is refused (403)
    unless the user allowed that origin (`--allow-origin`); one without Origin (not a browser) is not concerned.
    The origin rule is the page's forms' (`server.auth.origin_allowed`), 'null' refused."""

    def __init__(self, app: Any, auth: Auth, allowed_origins: tuple[str, ...] = ()) -> None:
        self.app, self.auth, self.allowed_origins = app, auth, allowed_origins

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            from ..server.auth import origin_allowed

            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            if not self.auth.host_allowed(headers.get("host", "")):
                return await _refuse(
                    send,
                    421,
                    "this server only answers requests addressed to localhost, "
                    "127.0.0.1 or [::1]; to serve other hosts, set VERACITY_API_TOKEN",
                )
            if not origin_allowed(headers.get("origin"), headers.get("host", ""), self.allowed_origins):
                shown = headers["origin"][:100]
                return await _refuse(
                    send,
                    403,
                    f"requests from the origin {shown!r} are refused: only this "
                    "server's own origin, or one given with --allow-origin, may call it "
                    "from a browser",
                )
            if not self.auth.allowed(headers, {}):
                return await _refuse(
                    send,
                    401,
                    "this server needs 'Authorization: Bearer TOKEN' with the value "
                    "of VERACITY_API_TOKEN it was started with",
                    [(b"www-authenticate", b'Bearer realm="veracity"')],
                )
        return await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, message: str, headers: list | None = None) -> None:
    import json

    body = json.dumps({"error": {"message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def http_app(mcp: MCPServer, auth: Auth, allowed_origins: tuple[str, ...] = ()) -> Any:
    """The streamable HTTP app at /mcp, guarded (the SDK's own host and origin checks are off: the guard does them,
    and also lets a token-guarded server answer other hosts). `allowed_origins`: as `auth.normal_origin` writes
    them."""
    app = mcp.streamable_http_app(transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return Guard(app, auth, allowed_origins)
