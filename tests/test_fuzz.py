"""Property-based tests of the request paths: any read URI or call gets a well-formed answer, and the
server keeps serving (spec 4.3, 6.x; bad input never takes the server down)."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from pdtest_servers import make_mcpserver

URI = "resource:///tool_descriptions"
APP, PD = make_mcpserver()
READ_ERRORS = {"MISSING_TOOL_SELECTION", "INVALID_TOOL_NAME", "TOO_MANY_TOOLS", "URI_TOO_LONG"}

name_parts = st.one_of(
    st.sampled_from(["add", "write_note", "admin_reset", "ADD", "../x", "a/b", "%00", "%2C", "%ff", " ", ""]),
    st.text(max_size=20),
)
queries = st.lists(name_parts, max_size=80).map(lambda parts: "?tools=" + ",".join(parts)) | st.text(max_size=200).map(
    lambda text: "?" + text
)


async def exercise(query: str, tool: str, arguments: dict[str, Any]) -> None:
    async with Client(APP, mode="legacy", cache=None) as client:
        try:
            result = await client.read_resource(URI + query)
        except MCPError as exc:
            error = exc.error
        else:
            error = None
            body = json.loads(result.contents[0].text)  # type: ignore[union-attr]
            assert isinstance(body, dict)
            for name, entry in body.items():
                assert (entry.get("name") == name) != ("error" in entry)
        if error is not None:
            assert error.code == -32602
            assert error.data["error"]["code"] in READ_ERRORS
            assert error.data["error"]["message"]
        answer = await client.call_tool(tool, arguments)
        if answer.is_error and answer.structured_content:
            # Refused before it runs: not fetched, or a name the server does not have (never passed through).
            assert answer.structured_content["error"]["code"] in {"TOOL_DESCRIPTION_REQUIRED", "TOOL_NOT_FOUND"}
        # Whatever came before, the server still answers a well-formed request.
        await client.read_resource(f"{URI}?tools=add")
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=queries,
    tool=st.sampled_from(["add", "write_note", "nope", "", "x" * 300]),
    arguments=st.dictionaries(st.text(max_size=10), st.one_of(st.integers(), st.text(max_size=50), st.none())),
)
def test_any_read_and_call_is_answered_and_the_server_survives(
    query: str, tool: str, arguments: dict[str, Any]
) -> None:
    anyio.run(exercise, query, tool, arguments)
