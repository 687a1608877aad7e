"""An upstream on the plain `mcp` SDK whose results are as large as asked, and that can die with a secret on its
stderr: used as a real subprocess by tests/gateway/test_streams.py and benchmarks/streams.py.

Tools: `big` returns a text of `mb` MiB (one JSON-RPC line of that size on the pipe), after `delay` seconds if
given; `blocks` returns `count` text blocks of `kb` KiB each; `rows` returns `count` rows as `structuredContent` (and
a one-line summary as text); `file` returns a text of `mb` MiB and the same text again as `structuredContent`
(`{"content": text}`, as the reference filesystem server reads a file); `leak_and_die` prints its
`secret` on stderr (as a server that logs its arguments or its environment would) and exits with code 7. With
BIG_DIE_MARKER set, `leak_and_die` also writes the secret there, and while that file exists the server prints it
and exits at start-up (a crash loop: every later call is refused while the gateway restarts it). With BIG_DONE_FILE
set, each `big` answer adds a line there as it is sent (a test knows when every answer has reached the gateway).

python big_server.py   serve over stdio
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [
    types.Tool(
        name="big",
        description="Return a text of `mb` MiB.",
        input_schema={"type": "object", "properties": {"mb": {"type": "number"}}, "required": ["mb"]},
    ),
    types.Tool(
        name="blocks",
        description="Return `count` text blocks of `kb` KiB each.",
        input_schema={"type": "object", "properties": {"count": {"type": "integer"}, "kb": {"type": "number"}}},
    ),
    types.Tool(
        name="rows",
        description="Return `count` rows as structured content.",
        input_schema={"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]},
    ),
    types.Tool(
        name="file",
        description="Return a text of `mb` MiB, and the same text as structured content.",
        input_schema={"type": "object", "properties": {"mb": {"type": "number"}}, "required": ["mb"]},
    ),
    types.Tool(
        name="leak_and_die",
        description="Print a secret on stderr, then exit.",
        input_schema={"type": "object", "properties": {"secret": {"type": "string"}}, "required": ["secret"]},
    ),
]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _varied(size: int) -> str:
    """`size` characters of varied text (not one repeated byte: nothing along the way gets an easy ride), ending
    in a known tail."""
    unit = "0123456789abcdefghijklmnopqrstuvwxyz" * 28 + "\n"
    return (unit * (size // len(unit) + 1))[: size - 3] + "END"


def _row(n: int) -> dict[str, Any]:
    return {"id": n, "name": f"row {n}", "price": n * 0.25, "tags": ["a", "b"], "ok": n % 2 == 0}


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "big":
        if args.get("delay"):
            await anyio.sleep(float(args["delay"]))
        result = _text(_varied(int(float(args["mb"]) * (1 << 20))))
        if done := os.environ.get("BIG_DONE_FILE"):
            with open(done, "a", encoding="utf-8") as file:
                file.write("answered\n")
        return result
    if params.name == "blocks":
        text = _varied(int(float(args.get("kb", 1024)) * 1024))
        count = int(args.get("count", 60))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text) for _ in range(count)])
    if params.name == "rows":
        count = int(args["count"])
        summary = types.TextContent(type="text", text=f"{count} rows")
        return types.CallToolResult(content=[summary], structured_content={"rows": [_row(n) for n in range(count)]})
    if params.name == "file":
        text = _varied(int(float(args["mb"]) * (1 << 20)))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content={"content": text}
        )
    if params.name == "leak_and_die":
        marker = os.environ.get("BIG_DIE_MARKER")
        if marker:
            with open(marker, "w", encoding="utf-8") as file:
                file.write(str(args["secret"]))
        _die(str(args["secret"]))
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"no tool {params.name}")], is_error=True)


def _die(secret: str) -> None:
    print(f"fatal: cannot open database with password {secret}", file=sys.stderr, flush=True)
    os._exit(7)


def main() -> None:
    marker = os.environ.get("BIG_DIE_MARKER")
    if marker and os.path.exists(marker):
        with open(marker, encoding="utf-8") as file:
            _die(file.read())
    server: Server[Any] = Server("big", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
