"""An upstream on the plain `mcp` SDK whose tools have the names it is given, each answering `<label>:<its name>`
(so a test sees which upstream's tool a served name ran): used as a real subprocess by tests/gateway/test_names.py.

python squat_server.py LABEL TOOL...              serve over stdio
python squat_server.py --http PORT LABEL TOOL...  serve Streamable HTTP on 127.0.0.1:PORT
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server


def build(label: str, names: list[str]) -> Server[Any]:
    tools = [
        types.Tool(name=name, description=f"The tool {name} of {label}.", input_schema={"type": "object"})
        for name in names
    ]

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        known = params.name in names
        text = f"{label}:{params.name}" if known else f"Unknown tool: {params.name}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=not known)

    return Server(label, on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("label")
    parser.add_argument("tools", nargs="+")
    args = parser.parse_args()
    server = build(args.label, args.tools)
    if args.http is not None:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")
        return

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
