"""An upstream on the plain `mcp` SDK whose tools are whatever its environment says: used as a real subprocess by
tests/gateway/test_export_safety.py (tools named like paths) and for the cache's lazy start (a live tool that
differs from its exported copy).

NAMED_TOOLS  a JSON list of tools as listed on the wire ({"name", "description", "inputSchema"}, ...)
NAMED_RAN    a file each call appends one JSON line to ({"name", "arguments"}): which tools really ran

python named_server.py   serve over stdio
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [types.Tool.model_validate(tool) for tool in json.loads(os.environ.get("NAMED_TOOLS", "[]"))]


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    ran = os.environ.get("NAMED_RAN")
    if ran:
        with open(ran, "a", encoding="utf-8") as log:
            log.write(json.dumps({"name": params.name, "arguments": params.arguments}) + "\n")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])


def main() -> None:
    server: Server[Any] = Server("named", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
