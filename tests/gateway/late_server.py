"""An upstream that starts late: it reads nothing (so answers no `initialize`) until a file the test creates
appears, then serves one tool over stdio. Used as a real subprocess by tests/gateway/test_fast_start.py.

python late_server.py READY_FILE [STARTED_FILE]

`LATE_SERVER_NAME` in the environment (default `late`) names the server, its tool (`<name>_echo`) and its
instructions (`instructions_of`), so that a test can run several of them side by side.

STARTED_FILE, when given, is written as soon as the process runs (the test then knows it is waiting). Without
READY_FILE within 120 s it exits with an error, so a forgotten test cannot leave it waiting.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NAME = os.environ.get("LATE_SERVER_NAME", "late")
TOOL = types.Tool(
    name=f"{NAME}_echo",
    description="Echo a text back, from the upstream that started late.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    annotations=types.ToolAnnotations(read_only_hint=True),
)

INSTRUCTIONS = "Started late, when the test said so."


def instructions_of(name: str) -> str:
    """The instructions of the server named `name`."""
    return INSTRUCTIONS if name == "late" else f"{INSTRUCTIONS} This is '{name}': call {name}_echo to hear from it."


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{NAME}: {text}")])


async def serve() -> None:
    server: Server[Any] = Server(
        NAME, instructions=instructions_of(NAME), on_list_tools=list_tools, on_call_tool=call_tool
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> int:
    ready = Path(sys.argv[1])
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text("waiting")
    deadline = time.monotonic() + 120
    while not ready.exists():  # a readiness file, not a duration: the test decides when this upstream is up
        if time.monotonic() > deadline:
            print(f"late_server: {ready} did not appear within 120 s", file=sys.stderr)
            return 1
        time.sleep(0.05)
    anyio.run(serve)
    return 0


if __name__ == "__main__":
    sys.exit(main())
