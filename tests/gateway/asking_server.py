"""An upstream that asks its client things, during calls and after them (plain `mcp` SDK, stdio, handshake era).
Used as a real subprocess by the gateway's isolation tests (test_isolation.py).

- Roots (unless started with `--no-roots`): asked at `notifications/initialized` and on every
  `notifications/roots/list_changed` (as the filesystem server does); `resources/list` lists one
  `folder://<name>` per root it holds, `roots` tells them.
- `ask QUESTION`: an elicitation during the call; answers what the client said.
- `ask_roots`: asks its client for roots during the call; answers what it got (or the error).
- `touch NAME`: tells its subscribers that `folder://NAME` was updated.
- `later QUESTION MARKER`: answers at once; then, outside any call, logs "later: QUESTION" and sends an elicitation,
  and writes what came back (or the error) to the file MARKER.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

Context = ServerRequestContext[Any, Any]
warnings.simplefilter("ignore")  # roots and logging are deprecated as of 2026-07-28; this server speaks 2025
_roots: list[str] = []
_session: Any = None
_tasks: TaskGroup | None = None
SCHEMA: types.ElicitRequestedSchema = {"type": "object", "properties": {"answer": {"type": "string"}}}


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


TOOLS = [
    types.Tool(name="ask", description="Ask the user a question now.", input_schema=_obj(question={"type": "string"})),
    types.Tool(
        name="later",
        description="Ask the user a question after answering.",
        input_schema=_obj(question={"type": "string"}, marker={"type": "string"}),
    ),
    types.Tool(name="roots", description="The folders this server may use.", input_schema={"type": "object"}),
    types.Tool(name="ask_roots", description="Ask the client for its roots now.", input_schema={"type": "object"}),
    types.Tool(name="touch", description="Say a folder was updated.", input_schema=_obj(name={"type": "string"})),
]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _ask_roots() -> None:
    global _roots
    try:
        listed = await _session.list_roots()
    except Exception as exc:  # nobody to ask: keep what it had, as the filesystem server does
        print(f"roots request failed: {exc}", file=sys.stderr, flush=True)
        return
    _roots = [str(root.uri) for root in listed.roots]


async def _later(question: str, marker: str) -> None:
    await anyio.sleep(0.3)  # after the call's answer has left
    await _session.send_log_message("info", f"later: {question}")
    try:
        request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=question, requested_schema=SCHEMA))
        answer = await _session.send_request(request, types.ElicitResult, request_read_timeout_seconds=30)
        outcome = f"answered: {json.dumps(answer.content)}"
    except MCPError as exc:
        outcome = f"error: {exc.error.message}"
    Path(marker).write_text(outcome)


async def list_tools(ctx: Context, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    global _session
    _session = ctx.session
    args = params.arguments or {}
    if params.name == "ask":
        answer = await ctx.session.elicit_form(str(args["question"]), SCHEMA, related_request_id=ctx.request_id)
        return _text(f"{answer.action}: {json.dumps(answer.content)}")
    if params.name == "later":
        assert _tasks is not None
        _tasks.start_soon(_later, str(args["question"]), str(args["marker"]))
        return _text("scheduled")
    if params.name == "roots":
        return _text(json.dumps(_roots))
    if params.name == "ask_roots":
        try:
            request = types.ListRootsRequest()
            metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
            listed = await ctx.session.send_request(request, types.ListRootsResult, metadata=metadata)
        except MCPError as exc:
            return _text(f"error: {exc.error.message}")
        return _text(json.dumps([str(root.uri) for root in listed.roots]))
    if params.name == "touch":
        await ctx.session.send_resource_updated(f"folder://{args['name']}")
        return _text("touched")
    raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")


async def list_resources(ctx: Context, params: Any) -> types.ListResourcesResult:
    resources = [
        types.Resource(uri=f"folder://{Path(urlparse(root).path).name}", name=Path(urlparse(root).path).name)
        for root in _roots
    ]
    return types.ListResourcesResult(resources=resources)


async def read_resource(ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    name = str(params.uri).removeprefix("folder://")
    for root in _roots:
        folder = Path(urlparse(root).path)
        if folder.name == name:
            listing = "\n".join(sorted(p.name for p in folder.iterdir()))
            return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), text=listing)])
    raise MCPError(-32002, f"Resource {params.uri} not found")


async def subscribe(ctx: Context, params: types.SubscribeRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def initialized(ctx: Context, params: Any) -> None:
    global _session
    _session = ctx.session
    assert _tasks is not None
    if "--no-roots" not in sys.argv:
        _tasks.start_soon(_ask_roots)


async def roots_changed(ctx: Context, params: Any) -> None:
    await initialized(ctx, params)


def main() -> None:
    server = Server(
        "asking",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_roots_list_changed=roots_changed,
        on_subscribe_resource=subscribe,
    )
    server.add_notification_handler("notifications/initialized", types.NotificationParams, initialized)

    async def run() -> None:
        global _tasks
        options = server.create_initialization_options(NotificationOptions())
        async with anyio.create_task_group() as tg, stdio_server() as (read, write):
            _tasks = tg
            await server.run(read, write, options)
            tg.cancel_scope.cancel()

    anyio.run(run)


if __name__ == "__main__":
    main()
