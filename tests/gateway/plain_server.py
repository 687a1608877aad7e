"""An upstream on the plain `mcp` SDK (low-level Server, no progressive disclosure), with tools that misbehave
on request: used as a real subprocess by the gateway tests.

python plain_server.py            serve over stdio
python plain_server.py --http P   serve Streamable HTTP on 127.0.0.1:P
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
_extra: list[types.Tool] = []


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


TOOLS = [
    types.Tool(
        name="add",
        description="Add two integers. Returns their sum as structured content.",
        input_schema=_obj(a={"type": "integer"}, b={"type": "integer"}),
        output_schema=_obj(sum={"type": "integer"}),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="echo", description="Echo a text back.", input_schema=_obj(text={"type": "string"}), annotations=READ_ONLY
    ),
    types.Tool(name="fail", description="Return a tool error.", input_schema=_obj(message={"type": "string"})),
    types.Tool(name="reject", description="Answer with a JSON-RPC error.", input_schema={"type": "object"}),
    types.Tool(
        name="slow",
        description="Sleep, reporting progress; writes 'cancelled' to marker if cancelled.",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}, "marker": {"type": "string"}}},
    ),
    types.Tool(name="hang", description="Never answer.", input_schema={"type": "object"}),
    types.Tool(name="crash", description="Exit the process at once.", input_schema={"type": "object"}),
    types.Tool(
        name="pid", description="The server's process id.", input_schema={"type": "object"}, annotations=READ_ONLY
    ),
    types.Tool(
        name="add_tool", description="Register a new tool and announce it.", input_schema=_obj(name={"type": "string"})
    ),
]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[*TOOLS, *_extra])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "add":
        total = int(args["a"]) + int(args["b"])
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(total))], structured_content={"sum": total}
        )
    if name == "echo":
        return _text(str(args.get("text")))
    if name == "fail":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(args.get("message")))], is_error=True
        )
    if name == "reject":
        raise MCPError(-32042, "rejected on purpose", {"why": "the test asked for it"})
    if name == "slow":
        seconds = float(args.get("seconds", 1))
        steps = max(1, int(seconds / 0.1))
        try:
            for step in range(steps):
                await ctx.session.report_progress(step + 1, steps, f"step {step + 1}")
                await anyio.sleep(seconds / steps)
        except anyio.get_cancelled_exc_class():
            if args.get("marker"):
                Path(str(args["marker"])).write_text("cancelled")
            raise
        return _text(f"slept {seconds}")
    if name == "hang":
        await anyio.sleep_forever()
    if name == "crash":
        print("crashing on request", file=sys.stderr, flush=True)
        os._exit(3)
    if name == "pid":
        return _text(str(os.getpid()))
    if name == "add_tool":
        _extra.append(
            types.Tool(name=str(args["name"]), description="Added at run time.", input_schema={"type": "object"})
        )
        await ctx.session.send_tool_list_changed()
        return _text("added")
    for tool in _extra:
        if tool.name == name:
            return _text(f"{name} ran")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True)


def build() -> Server[Any]:
    return Server(
        "plain", instructions="A plain SDK server used in tests.", on_list_tools=list_tools, on_call_tool=call_tool
    )


def main() -> None:
    server = build()
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
        return

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        async with stdio_server() as (read, write):
            await server.run(read, write, options)

    anyio.run(run)


if __name__ == "__main__":
    main()
