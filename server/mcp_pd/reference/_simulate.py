"""Simulation mode: serve any directory of definitions with tools that validate and echo.

Clearly labelled: every result says it is simulated. Used to run real catalogs (benchmarks, scale
tests) through the same extension code path as the real reference server.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from mcp_pd._errors import ErrorCode, Refusal
from mcp_pd._store import DescriptionStore

__all__ = ["SimulatedListing", "build_simulated_server"]

SIMULATION_NOTE = "simulation mode: arguments were validated against the tool's schema; no real action was performed"


def _validator(schema: dict[str, Any]) -> Any:
    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError:
        return None
    return cls(schema)


class SimulatedListing:
    """The simulated server's `tools/list` result, built once per store generation.

    Rebuilding 10,000 `Tool` models on every listing was half the listing's cost at scale; reusing
    the same objects also keeps the extension's "unchanged?" comparison (`==` against its shallow
    copies) to shared fields.
    """

    def __init__(self, store: DescriptionStore) -> None:
        self.store = store
        self._generation = -1
        self._result = types.ListToolsResult(tools=[])

    def __call__(self) -> types.ListToolsResult:
        if self._generation != self.store.generation:
            self._generation, self._result = self.store.generation, self._build()
        return self._result

    def _build(self) -> types.ListToolsResult:
        tools = []
        for tool_name in sorted(self.store.names()):
            definition = self.store.get(tool_name)
            if definition is None or self.store.is_overlay(tool_name):
                continue  # an overlay adds to a registered tool: here nothing is registered (the catalog says so)
            tools.append(
                types.Tool(
                    name=definition.name,
                    title=definition.title,
                    description=definition.description,
                    input_schema=definition.input_schema,
                    annotations=types.ToolAnnotations.model_validate(definition.annotations)
                    if definition.annotations
                    else None,
                )
            )
        return types.ListToolsResult(tools=tools)


def build_simulated_server(
    store: DescriptionStore, name: str = "mcp-pd-simulator", *, listing: SimulatedListing | None = None
) -> Server[Any]:
    """A low-level server whose tools are exactly the definitions in `store` (kept live on reload)."""
    validator_cache: dict[tuple[str, int], Any] = {}
    listing = listing if listing is not None else SimulatedListing(store)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing()

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        definition = store.get(params.name)
        if definition is None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Unknown tool: {params.name}")], is_error=True
            )
        arguments = params.arguments or {}
        key = (definition.name, store.generation)
        if key not in validator_cache:
            validator_cache[key] = _validator(definition.input_schema)
        validator = validator_cache[key]
        if validator is not None:
            errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
            if errors:
                problems = [
                    {"path": "/".join(map(str, e.absolute_path)) or "(arguments)", "message": e.message}
                    for e in errors[:20]
                ]
                message = f"The arguments do not match {definition.name}'s inputSchema; fix the listed problems."
                refusal = Refusal(ErrorCode.INVALID_ARGUMENTS, message, tool=definition.name, problems=problems)
                return refusal.tool_result()
        echo = {"simulated": True, "tool": definition.name, "arguments": arguments, "note": SIMULATION_NOTE}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(echo, ensure_ascii=False))],
            structured_content=echo,
        )

    return Server(
        name,
        instructions="SIMULATION: these tools only validate their arguments and echo them back.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
