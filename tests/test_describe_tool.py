"""Tools-only hosts (issue 13): `describe_tools`, the disclosure modes, and 2026-07-28 cache hints.

A client that never calls resources/read must complete describe-then-call against `mcp-pd serve` over stdio
and HTTP, in both protocol eras, and get from the tool exactly what the resource gives (spec/interpretations.md
I-13, I-14, I-15).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_pd import Caller, RateLimit, tool_description_required
from pdtest import http_in_process, http_subprocess, serve_params
from pdtest_servers import ADD_DEFINITION, make_mcpserver, write_definitions

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"


def legacy(target: Any) -> Client:
    return Client(target, mode="legacy", cache=None)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, result
    return result.structured_content


async def tools_only_workflow(client: Client, tool: str, arguments: dict[str, Any], answer: str) -> None:
    """What a model in Claude Desktop or Cursor can do: list, call tools. Never a resource read."""
    listed = {t.name: t for t in (await client.list_tools()).tools}
    describe = listed["describe_tools"]
    assert describe.input_schema["required"] == ["tools"]
    refusal = structured(await client.call_tool(tool, arguments))["error"]
    assert refusal["code"] == "TOOL_DESCRIPTION_REQUIRED"
    # The refusal names the way out as a tool call a model can make as it stands.
    way_out = refusal["describe_tool_call"]
    described = await client.call_tool(way_out["name"], way_out["arguments"])
    assert not described.is_error
    definition = structured(described)[tool]
    assert set(definition["inputSchema"]["required"]) == set(arguments) and definition["examples"]
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    assert answer in json.dumps(result.model_dump(mode="json"))


async def reference_workflow(client: Client) -> None:
    await tools_only_workflow(client, "calculate", {"expression": "6 * 7"}, "42")


@pytest.mark.req("PDX-DESCRIBE-01", "PDX-DESCRIBE-04", "PDX-DESCRIBE-06")
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_only_client_completes_the_workflow_over_stdio(mode: str) -> None:
    async with Client(serve_params(), mode=mode, cache=None) as client:  # type: ignore[arg-type]
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        await reference_workflow(client)


@pytest.mark.req("PDX-DESCRIBE-01", "PDX-DESCRIBE-04")
async def test_tools_only_client_completes_the_workflow_over_http() -> None:
    with http_subprocess() as url:
        async with Client(url, cache=None) as client:  # auto: over HTTP the server steers it to the handshake
            assert client.protocol_version == "2025-11-25"
            await reference_workflow(client)


@pytest.mark.req("PDX-DESCRIBE-04")
async def test_tools_only_client_on_2026_over_http_with_a_session_key(tmp_path: Path) -> None:
    # Sessionless HTTP has no session unless the operator names one; with a key, 2026-07-28 works over HTTP too.
    app, _ = make_mcpserver(
        write_definitions(tmp_path, ADD_DEFINITION),
        session_key=lambda ctx: ctx.request.headers.get("x-user") if ctx.request is not None else None,
    )
    async with (
        http_in_process(app._lowlevel_server) as url,
        httpx2.AsyncClient(headers={"x-user": "alice"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="2026-07-28", cache=None) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        await tools_only_workflow(client, "add", {"a": 2, "b": 40}, "42")


@pytest.mark.req("PDX-DESCRIBE-02")
async def test_describe_tools_returns_exactly_what_the_resource_returns(tmp_path: Path) -> None:
    app, _ = make_mcpserver(write_definitions(tmp_path, ADD_DEFINITION))
    async with legacy(app) as client:
        names = ["add", "nope", "write_note"]
        read = await client.read_resource(f"{URI}?tools={','.join(names)}")
        text = read.contents[0].text  # type: ignore[union-attr]
        described = await client.call_tool("describe_tools", {"tools": names})
    assert not described.is_error
    assert described.content[0].text == text  # type: ignore[union-attr]
    assert structured(described) == json.loads(text)
    assert list(structured(described)) == names
    assert described.meta is not None and read.contents[0].meta is not None
    assert (
        described.meta["io.github.mcp-pd/progressive-disclosure"]
        == read.contents[0].meta["io.github.mcp-pd/progressive-disclosure"]
    )


@pytest.mark.req("PDX-DESCRIBE-03")
@pytest.mark.parametrize(
    ("arguments", "query", "code"),
    [
        ({"tools": []}, "", "MISSING_TOOL_SELECTION"),
        ({"tools": ["  ", ""]}, "?tools=,%20", "MISSING_TOOL_SELECTION"),
        ({"tools": [f"t{i}" for i in range(65)]}, "?tools=" + ",".join(f"t{i}" for i in range(65)), "TOO_MANY_TOOLS"),
        ({"tools": ["bad\u0007name"]}, "?tools=bad%07name", "INVALID_TOOL_NAME"),
    ],
)
async def test_describe_tools_refuses_what_the_resource_refuses(
    arguments: dict[str, Any], query: str, code: str
) -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(URI + query)
        result = await client.call_tool("describe_tools", arguments)
    assert result.is_error
    assert structured(result) == caught.value.error.data
    assert structured(result)["error"]["code"] == code
    assert json.loads(result.content[0].text) == caught.value.error.data  # type: ignore[union-attr]


@pytest.mark.req("PDX-DESCRIBE-03")
async def test_describe_tools_explains_a_malformed_argument() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        bad = structured(await client.call_tool("describe_tools", {"tools": [1, 2]}))
        one = structured(await client.call_tool("describe_tools", {"tools": "add"}))
    assert bad["error"]["code"] == "INVALID_ARGUMENTS" and '{"tools": ["tool_name", ...]}' in bad["error"]["message"]
    assert one["add"]["name"] == "add"  # one name given as a string is that name


@pytest.mark.req("PDX-DESCRIBE-04", "PDX-DESCRIBE-05")
async def test_describe_tools_is_per_session_and_shares_the_hook_and_the_budget() -> None:
    def permission(caller: Caller, name: str) -> bool:
        return name != "admin_reset"

    app, _ = make_mcpserver(permission=permission, fetch_rate=RateLimit(per_second=0.01, burst=3))
    async with legacy(app) as first, legacy(app) as second:
        body = structured(await first.call_tool("describe_tools", {"tools": ["add", "admin_reset"]}))
        assert body["admin_reset"]["error"] == "Tool 'admin_reset' not found"
        assert "admin_reset" not in body["admin_reset"]["available_tools"]
        assert not (await first.call_tool("add", {"a": 1, "b": 1})).is_error
        hidden = structured(await first.call_tool("admin_reset", {}))["error"]
        assert hidden["code"] == "TOOL_NOT_FOUND"
        # The other session is not authorized by the first one's describe.
        assert structured(await second.call_tool("add", {"a": 1, "b": 1}))["error"]["code"] == (
            "TOOL_DESCRIPTION_REQUIRED"
        )
        # One budget for reads and describes: 1 describe + 2 reads use the burst of 3.
        await first.read_resource(f"{URI}?tools=add")
        await first.read_resource(f"{URI}?tools=add")
        limited = structured(await first.call_tool("describe_tools", {"tools": ["add"]}))["error"]
        assert limited["code"] == "RATE_LIMITED" and limited["retry_after_seconds"] > 0
        with pytest.raises(MCPError):
            await first.read_resource(f"{URI}?tools=add")


@pytest.mark.req("PDX-DESCRIBE-06", "PD-6.2-01")
async def test_tool_description_required_keeps_the_spec_fields_and_adds_the_way_out() -> None:
    document = tool_description_required("add", describe_tool="describe_tools")["error"]
    spec = tool_description_required("add")["error"]
    assert {k: document[k] for k in spec} == spec
    assert document["describe_tool_call"] == {"name": "describe_tools", "arguments": {"tools": ["add"]}}
    assert URI + "?tools=add" in document["hint"] and "describe_tools" in document["hint"]


async def test_describe_tool_can_be_turned_off() -> None:
    app, _ = make_mcpserver(describe_tool=False)
    async with legacy(app) as client:
        assert "describe_tools" not in {t.name for t in (await client.list_tools()).tools}
        assert structured(await client.call_tool("describe_tools", {"tools": ["add"]}))["error"]["code"] == (
            "TOOL_NOT_FOUND"
        )
        refusal = structured(await client.call_tool("add", {"a": 1, "b": 1}))["error"]
        assert refusal == tool_description_required("add")["error"]


@pytest.mark.req("PDX-CACHE-01")
async def test_2026_listing_of_watched_definitions_is_cached_briefly(tmp_path: Path) -> None:
    # A client that does not subscribe sees an edited definition file within the listing's TTL (issue 23.3).
    app, _ = make_mcpserver(tmp_path)
    async with Client(app, cache=None) as client:
        listing = await client.list_tools()
    assert listing.ttl_ms == 30_000 and listing.cache_scope == "public"


@pytest.mark.req("PDX-MODE-01")
async def test_eager_mode_lists_full_definitions_and_enforces_nothing(tmp_path: Path) -> None:
    def permission(caller: Caller, name: str) -> bool:
        return name != "admin_reset"

    app, _ = make_mcpserver(write_definitions(tmp_path, ADD_DEFINITION), mode="eager", permission=permission)
    async with legacy(app) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"add", "write_note"}
        assert tools["add"].input_schema == ADD_DEFINITION["inputSchema"]
        assert tools["add"].description == ADD_DEFINITION["description"]
        assert tools["write_note"].input_schema["properties"]["text"]["maxLength"] == 100
        assert not (await client.call_tool("add", {"a": 1, "b": 1})).is_error
        assert structured(await client.call_tool("admin_reset", {}))["error"]["code"] == "TOOL_NOT_FOUND"
        assert (client.server_capabilities.experimental or {})["io.github.mcp-pd/progressive-disclosure"][
            "mode"
        ] == "eager"


@pytest.mark.req("PDX-CACHE-01")
async def test_2026_cache_hints_are_truthful() -> None:
    app, _ = make_mcpserver()
    async with Client(app, cache=None) as client:
        assert client.protocol_version == "2026-07-28"
        listing = await client.list_tools()
        read = await client.read_resource(f"{URI}?tools=add")
    assert listing.ttl_ms == 300_000 and listing.cache_scope == "public"  # nothing watched: run-time changes only
    # A read grants: it must reach the server every time, never be served from a cache.
    assert read.ttl_ms == 0 and read.cache_scope == "private"


@pytest.mark.req("PDX-MODE-01")
async def test_serve_switches_mode_and_describe_tool_from_the_command_line() -> None:
    async with Client(serve_params("--mode", "eager"), mode="legacy", cache=None) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "describe_tools" not in tools and len(tools) == 20
        assert tools["calculate"].input_schema["required"] == ["expression"]
        assert not (await client.call_tool("calculate", {"expression": "6 * 7"})).is_error
    async with Client(serve_params("--no-describe-tool", "--page-size", "7"), mode="legacy", cache=None) as client:
        first = await client.list_tools()
        assert first.tools[0].name != "describe_tools"
        assert len(first.tools) == 7
        assert first.next_cursor
