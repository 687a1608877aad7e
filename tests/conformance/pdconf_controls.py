"""Negative controls for the conformance suite: small servers, each breaking exactly one requirement.

Built on the SDK's low-level `Server` only (never on mcp_pd), so the suite is proven against an
independent implementation. `good` implements the extension correctly; every other control is
`good` with one behaviour changed. Run one:

    python tests/conformance/pdconf_controls.py good              # stdio
    python tests/conformance/pdconf_controls.py ungated --http 8123 --call-log calls.jsonl

Every tool that really runs is appended to the --call-log file, so tests can prove which tools
the suite invoked. `wipe_notes` is destructive: the suite must never call it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

BASE = "resource:///tool_descriptions"

DEFECTS = {
    "good": "a correct implementation",
    "full-schemas": "tools/list carries the full input schemas (violates PD-3.1-04)",
    "no-resource": "no tool_descriptions resource in resources/list (violates PD-4.1-01)",
    "ignores-selection": "?tools= is ignored: every read returns all tools (violates PD-4.4-02)",
    "extra-tools": "a read returns one unrequested tool besides the requested ones (violates PD-4.4-02)",
    "preamble": "a read adds an instructions key before the tools (violates PD-4.4-03)",
    "case-insensitive": "?tools= matches names case-insensitively (violates PD-4.3-03)",
    "no-missing-selection": "a read without ?tools= returns every tool (violates PD-4.3-04)",
    "ungated": "tools run without their description being fetched (violates PD-5.1-02)",
    "wrong-error-code": "unfetched calls are refused with DESCRIPTION_NOT_FETCHED (violates PD-5.1-02)",
    "jsonrpc-refusal": "unfetched calls are refused with a JSON-RPC error, not a tool result (allowed, WARNING)",
    "global-grants": "one grant set shared by every session (violates PD-5.1-04)",
    "forgetful": "a fetch authorizes a single call only (violates PD-5.1-03)",
    "no-unknown-entry": "unknown names are silently dropped from reads (violates SHOULD PD-6.3-01)",
    "bare-listing": "tools/list carries no annotations, only the definitions do (allowed: a correct server)",
    "bare-global-grants": "global-grants with bare-listing: the suite must learn hints without hiding the leak",
    "plain": "a plain MCP server without the extension at all",
}

FULL: dict[str, dict[str, Any]] = {
    "add": {
        "name": "add",
        "description": "Add two integers and return their sum. Use it for exact integer arithmetic.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "First addend"},
                "b": {"type": "integer", "description": "Second addend"},
            },
            "required": ["a", "b"],
        },
        "annotations": {"readOnlyHint": True},
        "examples": [{"description": "Two plus three", "input": {"a": 2, "b": 3}}],
        "error_guidance": {"INVALID_ARGUMENTS": "a and b must both be integers"},
    },
    "word_count": {
        "name": "word_count",
        "description": "Count the words in a text. Whitespace separates words.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to count"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
        "examples": [{"description": "Three words", "input": {"text": "one two three"}}],
        "error_guidance": {"INVALID_ARGUMENTS": "text must be a string"},
    },
    "wipe_notes": {
        "name": "wipe_notes",
        "description": "Delete every stored note permanently. There is no undo.",
        "inputSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
        "annotations": {"destructiveHint": True, "readOnlyHint": False},
        "examples": [{"description": "Wipe", "input": {"confirm": True}}],
        "error_guidance": {"NOT_CONFIRMED": "pass confirm: true"},
    },
}
SUMMARY = {
    "add": "Add two integers.",
    "word_count": "Count the words in a text.",
    "wipe_notes": "Delete every stored note permanently.",
}
RESOURCE_DESCRIPTION = (
    "Full tool definitions. WORKFLOW: Step 1: choose a tool from tools/list by its short description "
    "(tools/list is for selecting, not for parameters). Step 2: read this resource to learn its parameters: "
    f"{BASE}?tools=TOOL_NAME (several: {BASE}?tools=TOOL1,TOOL2). Step 3: call the tool. Fetching a "
    "description authorizes that tool for this session; calling a tool before fetching fails with "
    "TOOL_DESCRIPTION_REQUIRED."
)
INSTRUCTIONS = f"Before calling a tool, read {BASE}?tools=TOOL_NAME to learn its parameters."


def _text_result(document: dict[str, Any], *, error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(document))],
        structured_content=document,
        is_error=error,
    )


def build(defect: str, call_log: str | None = None) -> Server[Any]:
    """The control server with `defect` (see DEFECTS)."""
    grants: dict[str, set[str]] = {}
    uses: dict[tuple[str, str], int] = {}

    def session_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
        if defect in ("global-grants", "bare-global-grants"):
            return "everyone"
        if ctx.request is None:
            return "stdio"  # one stdio process serves exactly one client
        headers = getattr(ctx.request, "headers", {})
        return headers.get("mcp-session-id")  # None: sessionless HTTP

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        tools = []
        for name, full in FULL.items():
            extended = defect in ("full-schemas", "plain")
            tools.append(
                types.Tool(
                    name=name,
                    description=full["description"] if defect == "plain" else SUMMARY[name],
                    input_schema=full["inputSchema"] if extended else {"type": "object", "additionalProperties": True},
                    annotations=None
                    if defect in ("bare-listing", "bare-global-grants")
                    else types.ToolAnnotations.model_validate(full["annotations"]),
                )
            )
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        name, arguments = params.name, params.arguments or {}
        if name not in FULL:
            return types.CallToolResult(content=[types.TextContent(type="text", text="Unknown tool")], is_error=True)
        if defect not in ("ungated", "plain"):
            key = session_key(ctx)
            if key is None:
                return _text_result(
                    {"error": {"code": "SESSION_REQUIRED", "message": "Connect with a session (initialize)."}},
                    error=True,
                )
            allowed = name in grants.get(key, set())
            if allowed and defect == "forgetful":
                uses[(key, name)] = uses.get((key, name), 0) + 1
                allowed = uses[(key, name)] <= 1
            if not allowed:
                code = "DESCRIPTION_NOT_FETCHED" if defect == "wrong-error-code" else "TOOL_DESCRIPTION_REQUIRED"
                document = {
                    "error": {
                        "code": code,
                        "message": f"Tool '{name}' requires fetching its description before use.",
                        "resource_uri": f"{BASE}?tools={name}",
                    }
                }
                if defect == "jsonrpc-refusal":
                    raise MCPError(-32001, document["error"]["message"], document)
                return _text_result(document, error=True)
        if call_log:
            with open(call_log, "a", encoding="utf-8") as log:
                log.write(json.dumps({"tool": name, "arguments": arguments}) + "\n")
        if name == "add":
            return _text_result({"sum": int(arguments.get("a", 0)) + int(arguments.get("b", 0))}, error=False)
        if name == "word_count":
            return _text_result({"words": len(str(arguments.get("text", "")).split())}, error=False)
        return _text_result({"wiped": True}, error=False)

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        if defect in ("no-resource", "plain"):
            return types.ListResourcesResult(resources=[])
        resource = types.Resource(
            uri=BASE,
            name="tool_descriptions",
            title="Tool Descriptions - required before calling any tool",
            description=RESOURCE_DESCRIPTION,
            mime_type="application/json",
        )
        return types.ListResourcesResult(resources=[resource])

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if defect == "plain" or not uri.startswith(BASE) or uri[len(BASE) : len(BASE) + 1] not in ("", "?"):
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {uri}")
        names = [n for n in ",".join(parse_qs(urlsplit(uri).query).get("tools", [])).split(",") if n]
        if not names:
            if defect != "no-missing-selection":
                message = "You must specify one or more tool names in the 'tools' parameter."
                document = {
                    "error": {
                        "code": "MISSING_TOOL_SELECTION",
                        "message": message,
                        "examples": [f"{BASE}?tools=tool_name", f"{BASE}?tools=tool1,tool2"],
                    }
                }
                raise MCPError(types.INVALID_PARAMS, message, document)
            names = list(FULL)
        if defect == "ignores-selection":
            names = list(FULL)
        body: dict[str, Any] = {}
        if defect == "preamble":
            body["instructions"] = "Read each description carefully before calling the tool."
        served: list[str] = []
        for name in names:
            real = next((n for n in FULL if n.lower() == name.lower()), None) if defect == "case-insensitive" else name
            if real in FULL:
                body[name] = FULL[real]
                served.append(real)
            elif defect != "no-unknown-entry":
                body[name] = {"error": f"Tool '{name}' not found", "available_tools": sorted(FULL)}
        if defect == "extra-tools":
            extra = next(n for n in FULL if n not in body)
            body[extra] = FULL[extra]
        key = session_key(ctx)
        if key is not None:
            grants.setdefault(key, set()).update(served)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(body))]
        )

    if defect == "plain":  # no resources capability at all
        return Server("pdconf-plain", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
    server: Server[Any] = Server(
        f"pdconf-{defect}",
        version="1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    discover = server.get_request_handler("server/discover")
    assert discover is not None
    original = discover.handler

    async def steer(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        # Over HTTP the sessionless protocol has no session id: steer auto clients to the handshake.
        if ctx.request is not None:
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", "server/discover")
        return await original(ctx, params)

    server.add_request_handler("server/discover", types.RequestParams, steer)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("defect", choices=sorted(DEFECTS))
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument("--call-log", metavar="FILE", help="append every tool that really runs to FILE")
    args = parser.parse_args()
    server = build(args.defect, args.call_log)
    if args.http is None:

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
        return
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
