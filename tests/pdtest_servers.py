"""Small real servers for the extension tests (one MCPServer, one low-level Server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp_pd import ProgressiveDisclosure
from pydantic import Field

ADD_DEFINITION: dict[str, Any] = {
    "name": "add",
    "title": "Add numbers",
    "minimal_description": "Add two integers.",
    "description": "Add two integers and return their sum. Use it for exact integer arithmetic.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "First addend"},
            "b": {"type": "integer", "description": "Second addend"},
        },
        "required": ["a", "b"],
    },
    "examples": [{"description": "Two plus three", "input": {"a": 2, "b": 3}}],
    "usage_guidance": {"when_to_use": "Exact integer sums."},
    "error_guidance": {"validation": "Both a and b must be integers."},
}


def write_definitions(directory: Path, *definitions: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for definition in definitions:
        (directory / f"{definition['name']}.json").write_text(json.dumps(definition, indent=2))
    return directory


def make_mcpserver(descriptions: Path | None = None, **options: Any) -> tuple[MCPServer[Any], ProgressiveDisclosure]:
    app: MCPServer[Any] = MCPServer("test-server", instructions="Author's own instructions.")

    @app.tool(annotations=types.ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two integers. Returns their sum."""
        return a + b

    @app.tool()
    def write_note(text: Annotated[str, Field(max_length=100, description="The note")]) -> str:
        """Store a note. Overwrites the previous note."""
        return f"stored {len(text)} characters"

    @app.tool()
    def admin_reset() -> str:
        """Reset everything (administrators only)."""
        return "reset"

    pd = ProgressiveDisclosure(descriptions, **options).install(app)
    return app, pd


def make_lowlevel(**options: Any) -> tuple[Server[Any], ProgressiveDisclosure]:
    """A low-level Server with no resource handlers of its own."""

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="ping_host",
                    description="Check that a host answers. Sends one probe and reports the round trip.",
                    input_schema={
                        "type": "object",
                        "properties": {"host": {"type": "string"}},
                        "required": ["host"],
                    },
                )
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != "ping_host":
            return types.CallToolResult(content=[types.TextContent(type="text", text="Unknown tool")], is_error=True)
        host = (params.arguments or {}).get("host")
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{host} answered")])

    server: Server[Any] = Server("lowlevel-test", on_list_tools=list_tools, on_call_tool=call_tool)
    pd = ProgressiveDisclosure(**options).install(server)
    return server, pd
