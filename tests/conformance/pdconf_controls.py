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
import copy
import json
import sys
import time
from typing import Any
from urllib.parse import unquote, urlsplit

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
    # Issue 11: the subtle ones.
    "endless-cursor": "tools/list hands out the same nextCursor forever (violates PD-3.1-01)",
    "placeholder-descriptions": "every tool is listed with one placeholder description (violates PD-3.1-02)",
    "docstring-listing": "listed descriptions document parameters (:param, Args:, @param) (violates PD-3.1-04)",
    "call-example-listing": "listed descriptions carry an inline call example (violates PD-3.1-04)",
    "hidden-detail-listing": "parameter docs and an example hide in _meta and the title (violates PD-3.1-04)",
    "keyword-description": "the resource description has the keywords but not the workflow (violates PD-4.2-01/02/04)",
    "paraphrased-missing": "MISSING_TOOL_SELECTION with a paraphrased message and other examples (violates PD-6.1-01)",
    "blank-names": "blank names (?tools=%20, ?other=x) are looked up instead of refused (our I-3: WARNING)",
    "two-names-max": "a read serves at most the first two names (violates PD-4.3-02)",
    "unknown-fails-read": "a read naming any unknown tool fails as a whole (violates PD-4.3-02/PD-4.4-01)",
    "loose-punctuation": "names match ignoring '_', '-' and '.' (violates PD-4.3-03)",
    "raw-query": "the query is split without percent-decoding or merging (our I-3: WARNING)",
    "strict-query": "a read with any other query parameter is refused (our I-3: WARNING)",
    "invalid-example": "an example that does not validate against its own schema (violates PD-3.2-02)",
    "lost-required": "served schemas lost their required lists; the tools still require them (violates PD-3.2-02)",
    "split-content": "a read adds a second content item with notes (violates PD-4.4-03)",
    "text-plain-content": "read contents are labelled text/plain (SHOULD application/json, PD-4.1-05)",
    "silent-rate-limit": "after 12 reads a session gets only the first requested tool, as success (violates PD-4.4-01)",
    "gates-first-only": "only the first listed tool is gated (violates PD-5.1-02)",
    "lenient-retry": "only the first unfetched call of a tool is refused (violates PD-5.1-02)",
    "refused-read-grants": "a read without a selection grants every tool (violates PD-5.1-02)",
    "variant-grants": "a read of a case variant grants the real tool (violates PD-5.1-02)",
    "any-read-grants": "any successful read grants every tool (violates PD-5.1-02)",
    "first-name-grants": "a read of several tools grants the first only (violates PD-5.1-01)",
    "mixed-grants-nothing": "a read with any unknown name grants nothing (violates PD-5.1-01)",
    "short-lived-grants": "a grant lapses after 10 further requests of its session (violates PD-5.1-03)",
    "expiring-grants": "a grant lapses after 2 seconds (violates PD-5.1-03; found with --grant-hold)",
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
    "list_notes": {
        "name": "list_notes",
        "description": "List the stored notes, newest first. Without a limit, every note is listed.",
        "inputSchema": {
            "type": "object",
            "properties": {"limit": {"type": "integer", "minimum": 1, "description": "At most this many"}},
        },
        "annotations": {"readOnlyHint": True},
        "examples": [{"description": "The five newest notes", "input": {"limit": 5}}],
        "error_guidance": {"INVALID_ARGUMENTS": "limit must be a positive integer"},
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
    "list_notes": "List the stored notes, newest first.",
    "wipe_notes": "Delete every stored note permanently.",
}
RESOURCE_DESCRIPTION = (
    "Full tool definitions. WORKFLOW: Step 1: choose a tool from tools/list by its short description "
    "(tools/list is for selecting, not for parameters). Step 2: read this resource to learn its parameters: "
    f"{BASE}?tools=TOOL_NAME (several: {BASE}?tools=TOOL1,TOOL2). Step 3: call the tool. Fetching a "
    "description authorizes that tool for this session; calling a tool before fetching fails with "
    "TOOL_DESCRIPTION_REQUIRED."
)
# The keywords the old checks looked for, without the workflow they stand for.
KEYWORDS_ONLY = (
    "Tool definitions as JSON. Errors follow the tools/list format. First published in 2024. "
    f"Syntax: {BASE}?tools=TOOL_NAME. Step 1: read the changelog. Authorization lasts for the session."
)
INSTRUCTIONS = f"Before calling a tool, read {BASE}?tools=TOOL_NAME to learn its parameters."


def _text_result(document: dict[str, Any], *, error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(document))],
        structured_content=document,
        is_error=error,
    )


def parse_selection(uri: str, defect: str = "good") -> list[str] | None:
    """The names `?tools=` selects, per spec/interpretations.md I-3 (None: no tools parameter at all)."""
    query = urlsplit(uri).query
    pairs = [part.partition("=") for part in query.split("&") if part]
    if defect == "strict-query" and any(unquote(key) != "tools" for key, _, _ in pairs):
        raise MCPError(types.INVALID_PARAMS, "Only the tools parameter is accepted")
    if defect == "raw-query":  # the first tools= value, split as sent: no decoding, no trimming
        raw = next((value for key, eq, value in pairs if key == "tools" and eq), "")
        return [n for n in raw.split(",") if n]
    values = [unquote(value) for key, eq, value in pairs if unquote(key) == "tools" and eq]
    names = [n if defect == "blank-names" else n.strip() for v in values for n in v.split(",")]
    return list(dict.fromkeys(n for n in names if n))


def _missing_required(name: str, arguments: dict[str, Any]) -> list[str]:
    return [p for p in FULL[name]["inputSchema"].get("required", []) if p not in arguments]


def _listed_description(defect: str, name: str) -> str:
    docstrings = {
        "add": "Add two integers. :param a: first addend :param b: second addend",
        "word_count": "Count the words in a text. Args: text (str): the text to count.",
        "list_notes": "List the stored notes. Parameters: limit - at most this many.",
        "wipe_notes": "Delete every stored note permanently. @param confirm must be true.",
    }
    if defect == "plain":
        return str(FULL[name]["description"])
    if defect == "placeholder-descriptions":
        return f"Read {BASE}?tools=<name> before using this tool."
    if defect == "docstring-listing":
        return docstrings[name]
    if defect == "call-example-listing" and name == "add":
        return "Add two integers, e.g. add(a=2, b=3)."
    return SUMMARY[name]


def _served(defect: str, name: str) -> dict[str, Any]:
    full = copy.deepcopy(FULL[name])
    if defect == "lost-required":
        full["inputSchema"].pop("required", None)
    if defect == "invalid-example" and name == "add":
        full["examples"] = [{"description": "Two plus three", "input": {"a": "two", "b": 3}}]
    return full


def _lookup(defect: str, name: str) -> str | None:
    if name in FULL:
        return name
    if defect == "case-insensitive":
        return next((n for n in FULL if n.lower() == name.lower()), None)
    if defect == "loose-punctuation":
        squash = str.maketrans("", "", "_-.")
        return next((n for n in FULL if n.translate(squash) == name.translate(squash)), None)
    return None


PAGE_SIZE = 2  # tools/list pages; resources/list has one resource per page
OTHER = types.Resource(uri="resource:///notes/readme", name="readme", description="About this server.")


def build(defect: str, call_log: str | None = None) -> Server[Any]:
    """The control server with `defect` (see DEFECTS)."""
    grants: dict[str, dict[str, tuple[float, int]]] = {}  # session -> tool -> (when, request number)
    requests: dict[str, int] = {}
    reads: dict[str, int] = {}
    refusals: dict[tuple[str, str], int] = {}
    uses: dict[tuple[str, str], int] = {}

    def session_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
        if defect in ("global-grants", "bare-global-grants"):
            return "everyone"
        if ctx.request is None:
            return "stdio"  # one stdio process serves exactly one client
        headers = getattr(ctx.request, "headers", {})
        return headers.get("mcp-session-id")  # None: sessionless HTTP

    def tick(ctx: ServerRequestContext[Any, Any]) -> str | None:
        key = session_key(ctx)
        if key is not None:
            requests[key] = requests.get(key, 0) + 1
        return key

    def granted(key: str, name: str) -> bool:
        grant = grants.get(key, {}).get(name)
        if grant is None:
            return False
        when, number = grant
        if defect == "short-lived-grants" and requests[key] - number > 10:
            return False
        return not (defect == "expiring-grants" and time.monotonic() - when > 2.0)

    def grant(key: str | None, names: list[str]) -> None:
        if key is not None:
            for name in names:
                grants.setdefault(key, {})[name] = (time.monotonic(), requests.get(key, 0))

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        tick(ctx)
        cursor = params.cursor if params is not None else None
        if defect == "endless-cursor" and cursor is not None:
            return types.ListToolsResult(tools=[], next_cursor="more")
        start = int(cursor.removeprefix("page:")) if cursor else 0
        tools = []
        page = list(FULL) if defect == "endless-cursor" else list(FULL)[start : start + PAGE_SIZE]
        for name in page:
            full = FULL[name]
            extended = defect in ("full-schemas", "plain")
            hidden = defect == "hidden-detail-listing"
            tools.append(
                types.Tool(
                    name=name,
                    title="Add: Args: a (int), b (int)" if hidden and name == "add" else None,
                    description=_listed_description(defect, name),
                    input_schema=full["inputSchema"] if extended else {"type": "object", "additionalProperties": True},
                    annotations=None
                    if defect in ("bare-listing", "bare-global-grants")
                    else types.ToolAnnotations.model_validate(full["annotations"]),
                    meta={"docs": {"parameters": full["inputSchema"]["properties"], "example": full["examples"]}}
                    if hidden
                    else None,
                )
            )
        more = start + PAGE_SIZE < len(FULL)
        if defect == "endless-cursor":
            more, start = True, len(FULL)
        return types.ListToolsResult(tools=tools, next_cursor=f"page:{start + PAGE_SIZE}" if more else None)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        key = tick(ctx)
        name, arguments = params.name, params.arguments or {}
        if name not in FULL:
            return types.CallToolResult(content=[types.TextContent(type="text", text="Unknown tool")], is_error=True)
        gated = defect not in ("ungated", "plain") and not (defect == "gates-first-only" and name != next(iter(FULL)))
        if gated:
            if key is None:
                return _text_result(
                    {"error": {"code": "SESSION_REQUIRED", "message": "Connect with a session (initialize)."}},
                    error=True,
                )
            allowed = granted(key, name)
            if allowed and defect == "forgetful":
                uses[(key, name)] = uses.get((key, name), 0) + 1
                allowed = uses[(key, name)] <= 1
            if not allowed and defect == "lenient-retry":
                refusals[(key, name)] = refusals.get((key, name), 0) + 1
                allowed = refusals[(key, name)] > 1
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
        missing = _missing_required(name, arguments) if defect == "lost-required" else []
        if missing:
            message = f"{name}: missing required argument(s) {', '.join(missing)}"
            return _text_result({"error": {"code": "INVALID_ARGUMENTS", "message": message}}, error=True)
        if call_log:
            with open(call_log, "a", encoding="utf-8") as log:
                log.write(json.dumps({"tool": name, "arguments": arguments}) + "\n")
        if name == "add":
            return _text_result({"sum": int(arguments.get("a", 0)) + int(arguments.get("b", 0))}, error=False)
        if name == "word_count":
            return _text_result({"words": len(str(arguments.get("text", "")).split())}, error=False)
        if name == "list_notes":
            return _text_result({"notes": []}, error=False)
        return _text_result({"wiped": True}, error=False)

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        tick(ctx)
        if defect in ("no-resource", "plain"):
            return types.ListResourcesResult(resources=[])
        resource = types.Resource(
            uri=BASE,
            name="tool_descriptions",
            title="Tool Descriptions - required before calling any tool",
            description=KEYWORDS_ONLY if defect == "keyword-description" else RESOURCE_DESCRIPTION,
            mime_type="application/json",
        )
        if params is not None and params.cursor == "resources:2":
            return types.ListResourcesResult(resources=[OTHER])
        return types.ListResourcesResult(resources=[resource], next_cursor="resources:2")

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        key = tick(ctx)
        uri = str(params.uri)
        if uri == str(OTHER.uri) and defect != "plain":
            return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text="Notes.")])
        if defect == "plain" or not uri.startswith(BASE) or uri[len(BASE) : len(BASE) + 1] not in ("", "?", "#"):
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {uri}")
        names = parse_selection(uri.partition("#")[0], defect)
        if not names:
            if defect == "refused-read-grants":
                grant(key, list(FULL))
            if defect != "no-missing-selection":
                message = "You must specify one or more tool names in the 'tools' parameter."
                examples = [f"{BASE}?tools=tool_name", f"{BASE}?tools=tool1,tool2"]
                if defect == "paraphrased-missing":
                    message, examples = "Please name the tools you want.", [f"{BASE}?tools=NAME"]
                document = {"error": {"code": "MISSING_TOOL_SELECTION", "message": message, "examples": examples}}
                raise MCPError(types.INVALID_PARAMS, message, document)
            names = list(FULL)
        if key is not None:
            reads[key] = reads.get(key, 0) + 1
        if defect == "ignores-selection":
            names = list(FULL)
        if defect == "two-names-max" or (defect == "silent-rate-limit" and reads.get(key or "", 0) > 5):
            names = names[:2] if defect == "two-names-max" else names[:1]
        unknown = [n for n in names if _lookup(defect, n) is None]
        if defect == "unknown-fails-read" and unknown:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool(s): {', '.join(unknown)}")
        body: dict[str, Any] = {}
        if defect == "preamble":
            body["instructions"] = "Read each description carefully before calling the tool."
        served: list[str] = []
        for name in names:
            real = _lookup(defect, name)
            if real is not None:
                body[name] = _served(defect, real)
                served.append(real)
            elif defect != "no-unknown-entry":
                body[name] = {"error": f"Tool '{name}' not found", "available_tools": sorted(FULL)}
            if defect == "variant-grants" and real is None:
                grant(key, [n for n in FULL if n.lower() == name.lower()])
        extra = next((n for n in FULL if n not in body), None)
        if defect == "extra-tools" and extra is not None:
            body[extra] = FULL[extra]
        if defect == "any-read-grants" and served:
            served = list(FULL)
        elif defect == "first-name-grants":
            served = served[:1]
        elif defect == "mixed-grants-nothing" and unknown:
            served = []
        grant(key, served)
        mime = "text/plain" if defect == "text-plain-content" else "application/json"
        contents = [types.TextResourceContents(uri=uri, mime_type=mime, text=json.dumps(body))]
        if defect == "split-content":
            contents.append(
                types.TextResourceContents(uri=uri, mime_type="text/plain", text="Read each description first.")
            )
        return types.ReadResourceResult(contents=contents)

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
