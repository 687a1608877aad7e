"""The extension on real servers through the real client, in process (handshake era: one session per Client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp_pd import (
    EXTENSION_ID,
    MINIMAL_INPUT_SCHEMA,
    Caller,
    RateLimit,
    missing_tool_selection,
    system_prompt_guidance,
    tool_description_required,
)
from pdtest_servers import ADD_DEFINITION, make_lowlevel, make_mcpserver, write_definitions

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"


def legacy(app: Any) -> Client:
    return Client(app, mode="legacy", cache=None)


async def read_json(client: Client, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    (content,) = result.contents
    assert content.mime_type == "application/json"
    data: dict[str, Any] = json.loads(content.text)  # type: ignore[union-attr]
    return data


async def call_doc(client: Client, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    result = await client.call_tool(name, args)
    return bool(result.is_error), result.structured_content if result.is_error else result


@pytest.mark.req("PD-2-01", "PD-3.1-01", "PD-3.1-02", "PD-3.1-03", "PD-3.1-04", "PD-3.1-05")
async def test_tools_list_is_minimal(tmp_path: Path) -> None:
    app, _ = make_mcpserver(write_definitions(tmp_path, ADD_DEFINITION))
    async with legacy(app) as client:
        tools = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools}
    assert set(tools) == {"describe_tools", "add", "write_note", "admin_reset"}
    # The describe tool keeps its small real schema (spec 3.1 MAY; interpretations I-13).
    assert tools.pop("describe_tools")["inputSchema"]["required"] == ["tools"]
    for entry in tools.values():
        assert entry["inputSchema"] == MINIMAL_INPUT_SCHEMA
        assert entry["description"].strip()
        assert set(entry) <= {"name", "title", "description", "inputSchema", "annotations", "execution", "_meta"}
        assert "outputSchema" not in entry and "examples" not in entry
    # The hand-written minimal description wins; otherwise the first sentence of the docstring.
    assert tools["add"]["description"] == "Add two integers."
    assert tools["write_note"]["description"] == "Store a note."
    # Title and annotations stay in the full definition by default (spec/interpretations.md I-5).
    assert all("annotations" not in entry and "title" not in entry for entry in tools.values())


@pytest.mark.req("PD-3.1-04", "PD-4.4-01")
async def test_list_annotations_keeps_hints_in_the_listing(tmp_path: Path) -> None:
    titled = {**ADD_DEFINITION, "title": "Adder", "annotations": {"readOnlyHint": True, "idempotentHint": True}}
    app, _ = make_mcpserver(write_definitions(tmp_path, titled), list_annotations=True)
    async with legacy(app) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        full = (await read_json(client, URI + "?tools=add"))["add"]
    add = tools["add"]
    assert add.title == "Adder"
    assert add.annotations is not None and add.annotations.read_only_hint is True
    assert add.annotations.idempotent_hint is True
    assert add.input_schema == MINIMAL_INPUT_SCHEMA
    # A tool without a file keeps the annotations it was registered with; the listing stays minimal otherwise.
    assert tools["write_note"].annotations is None
    assert full["title"] == "Adder" and full["annotations"] == titled["annotations"]


@pytest.mark.req("PD-4.4-01")
async def test_fetched_definition_carries_title_and_annotations(tmp_path: Path) -> None:
    app, _ = make_mcpserver(write_definitions(tmp_path, ADD_DEFINITION))
    async with legacy(app) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        full = await read_json(client, URI + "?tools=add,write_note")
    assert listed["add"].annotations is None
    # From the code registration when the file has none.
    assert full["add"]["annotations"]["readOnlyHint"] is True
    assert "annotations" not in full["write_note"]


@pytest.mark.req("PD-2-02", "PD-3.2-01", "PD-4.1-01", "PD-4.1-02", "PD-4.1-03", "PD-4.1-04", "PD-4.1-05")
@pytest.mark.req("PD-4.2-01", "PD-4.2-02", "PD-4.2-03", "PD-4.2-04", "PD-4.2-05", "PD-4.2-06", "PD-4.2-07", "PD-4.2-08")
async def test_resource_is_listed_with_workflow_description() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        (resource,) = [r for r in (await client.list_resources()).resources if r.uri == URI]
        (template,) = (await client.list_resource_templates()).resource_templates
    assert resource.name == "tool_descriptions"
    assert "tool descriptions" in (resource.title or "").lower()
    assert resource.mime_type == "application/json"
    text = resource.description or ""
    for needle in (
        "tools/list",
        "Step 1",
        "Step 2",
        "Step 3",
        f"{URI}?tools=TOOL_NAME",
        f"{URI}?tools=TOOL1,TOOL2",
        "TOOL_DESCRIPTION_REQUIRED",
        "authorizes",
        "for choosing, not for parameters",
    ):
        assert needle in text, needle
    assert template.uri_template == URI + "{?tools}"


@pytest.mark.req("PD-3.2-02", "PD-3.2-03", "PD-3.2-04", "PD-3.2-05", "PD-4.3-01", "PD-4.4-01", "PD-7.1-01")
async def test_full_definition_from_json_file(tmp_path: Path) -> None:
    app, _ = make_mcpserver(write_definitions(tmp_path, ADD_DEFINITION))
    async with legacy(app) as client:
        body = await read_json(client, f"{URI}?tools=add")
    add = body["add"]
    assert add["name"] == "add"
    assert add["description"] == ADD_DEFINITION["description"]
    assert add["inputSchema"] == ADD_DEFINITION["inputSchema"]
    assert add["examples"] == ADD_DEFINITION["examples"]
    assert add["usage_guidance"] == ADD_DEFINITION["usage_guidance"]
    assert add["error_guidance"] == ADD_DEFINITION["error_guidance"]


@pytest.mark.req("PD-3.2-02", "PD-7.2-03")
async def test_tool_without_json_is_described_from_its_registered_schema() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        result = await client.read_resource(f"{URI}?tools=write_note")
    body = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    note = body["write_note"]
    assert note["inputSchema"]["properties"]["text"]["maxLength"] == 100
    assert note["inputSchema"]["required"] == ["text"]
    assert note["description"].startswith("Store a note.")
    assert note["version"].startswith("sha256:") and len(note["version"]) == 23
    assert result.contents[0].meta == {EXTENSION_ID: {"versions": {"write_note": note["version"]}}}


@pytest.mark.req("PD-4.3-02", "PD-4.4-02", "PD-4.4-03")
async def test_only_requested_tools_in_request_order() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        body = await read_json(client, f"{URI}?tools=write_note,add")
        assert list(body) == ["write_note", "add"]
        body = await read_json(client, f"{URI}?tools=add")
        assert list(body) == ["add"]


@pytest.mark.req("PD-4.3-03", "PD-6.3-01")
async def test_names_match_exactly_and_unknown_names_get_an_entry() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        body = await read_json(client, f"{URI}?tools=ADD,add,ad")
    assert list(body) == ["ADD", "add", "ad"]
    assert "inputSchema" in body["add"]
    for name in ("ADD", "ad"):
        entry = body[name]
        assert entry["error"] == f"Tool '{name}' not found"
        assert entry["available_tools"][0] == "add"  # the closest match first
        assert sorted(entry["available_tools"]) == ["add", "admin_reset", "write_note"]
        assert entry["available_tools_total"] == 3
    async with legacy(app) as client:
        is_error, _doc = await call_doc(client, "ADD", {"a": 1, "b": 2})
    assert is_error  # a name that differs only in case is not the tool


@pytest.mark.req("PD-4.3-04", "PD-6.1-01")
@pytest.mark.parametrize("uri", [URI, f"{URI}?tools=", f"{URI}?tools=,,", f"{URI}?tools=%20", f"{URI}?other=add"])
async def test_missing_tool_selection(uri: str) -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.error.code == -32602
    assert caught.value.error.message == "You must specify one or more tool names in the 'tools' parameter."
    assert caught.value.error.data == missing_tool_selection()


@pytest.mark.req("PD-2-03", "PD-5.1-01", "PD-5.1-02", "PD-5.1-03", "PD-6.2-01", "PD-5.2-01")
async def test_call_requires_fetch_then_persists() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        is_error, doc = await call_doc(client, "add", {"a": 2, "b": 3})
        assert is_error and doc == tool_description_required("add", describe_tool="describe_tools")
        assert doc["error"]["resource_uri"] == f"{URI}?tools=add"
        await read_json(client, doc["error"]["resource_uri"])
        for i in range(5):
            result = await client.call_tool("add", {"a": i, "b": 1})
            assert not result.is_error and result.structured_content == {"result": i + 1}
        # Fetching one tool authorizes only that tool.
        is_error, doc = await call_doc(client, "write_note", {"text": "x"})
        assert is_error and doc["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"


@pytest.mark.req("PD-5.1-04", "PD-5.2-02")
async def test_sessions_are_isolated_even_when_concurrent() -> None:
    app, pd = make_mcpserver()
    async with legacy(app) as first, legacy(app) as second:
        await read_json(first, f"{URI}?tools=add")
        assert not (await first.call_tool("add", {"a": 1, "b": 1})).is_error
        is_error, doc = await call_doc(second, "add", {"a": 1, "b": 1})
        assert is_error and doc["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"

        results: list[bool] = []

        async def worker(client: Client, fetch: bool) -> None:
            if fetch:
                await read_json(client, f"{URI}?tools=write_note")
            for _ in range(10):
                results.append(bool((await client.call_tool("write_note", {"text": "n"})).is_error) != fetch)

        async with anyio.create_task_group() as tg:
            tg.start_soon(worker, first, True)
            tg.start_soon(worker, second, False)
        assert all(results) and len(results) == 20
        assert len(pd.grants) == 1


@pytest.mark.req("PD-5.2-03")
async def test_grants_end_with_the_session() -> None:
    app, pd = make_mcpserver()
    async with legacy(app) as client:
        await read_json(client, f"{URI}?tools=add")
        assert len(pd.grants) == 1
    await anyio.sleep(0)  # the connection's exit stack runs as the client disconnects
    assert len(pd.grants) == 0
    async with legacy(app) as client:
        is_error, doc = await call_doc(client, "add", {"a": 1, "b": 1})
        assert is_error and doc["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"


@pytest.mark.req("PD-5.3-01", "PD-5.3-02", "PD-10.1-01", "PD-10.2-01", "PD-10.2-02")
async def test_permission_hook_hides_tools_everywhere() -> None:
    seen: list[Caller] = []

    def permission(caller: Caller, name: str) -> bool:
        seen.append(caller)
        return name != "admin_reset"

    app, _ = make_mcpserver(permission=permission)
    async with legacy(app) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "admin_reset" not in names
        body = await read_json(client, f"{URI}?tools=admin_reset,add")
        assert body["admin_reset"]["error"] == "Tool 'admin_reset' not found"
        assert "admin_reset" not in body["admin_reset"]["available_tools"]
        assert "inputSchema" not in body["admin_reset"]
        # Hidden is answered exactly like nonexistent (spec 10.2), and suggestions never name a hidden tool.
        hidden = await client.call_tool("admin_reset", {})
        missing = await client.call_tool("admin_resex", {})
        assert hidden.is_error and missing.is_error
        assert hidden.structured_content is not None and missing.structured_content is not None
        assert hidden.structured_content["error"]["code"] == missing.structured_content["error"]["code"]
        assert "admin_reset" not in hidden.structured_content["error"]["available_tools"]
        assert "admin_reset" not in missing.structured_content["error"]["available_tools"]
        # Runtime authorization still runs after the gate: argument validation by the server.
        await read_json(client, f"{URI}?tools=write_note")
        result = await client.call_tool("write_note", {"text": "x" * 101})
        assert result.is_error and "100" in result.content[0].text  # type: ignore[union-attr]
    assert seen and all(c.session is not None for c in seen)


@pytest.mark.req("PD-10.3-01")
async def test_fetch_rate_limit_per_session() -> None:
    app, _ = make_mcpserver(fetch_rate=RateLimit(per_second=0.5, burst=3))
    async with legacy(app) as client, legacy(app) as other:
        for _ in range(3):
            await read_json(client, f"{URI}?tools=add")
        with pytest.raises(MCPError) as caught:
            await client.read_resource(f"{URI}?tools=add")
        data = caught.value.error.data
        assert data["error"]["code"] == "RATE_LIMITED" and data["error"]["retry_after_seconds"] > 0
        await read_json(other, f"{URI}?tools=add")  # another session has its own bucket
        assert not (await client.call_tool("add", {"a": 1, "b": 1})).is_error  # calls are not limited


@pytest.mark.req("PD-2-04", "PD-8.2-02", "PDX-INSTR-01")
async def test_instructions_carry_system_prompt_guidance() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        await client.list_tools()
        legacy_text = client.instructions
    async with Client(app, cache=None) as modern:
        assert modern.protocol_version == "2026-07-28"
        modern_text = modern.instructions
    for text in (legacy_text, modern_text):
        assert text is not None
        # The generated part comes first, stays under 2 KB and keeps the author's words after it (I-9, I-13).
        generated, _, author = text.partition("\n\n")
        assert author == "Author's own instructions."
        assert generated.startswith(system_prompt_guidance(URI))
        assert 'describe_tools {"tools": ["TOOL_NAME"]} does the same' in generated
        assert "Tools (3): add, admin_reset, write_note." in generated
        assert len(generated) < 2048


async def test_lowlevel_server_gets_resources_it_never_had() -> None:
    server, _ = make_lowlevel()
    async with legacy(server) as client:
        assert client.server_capabilities.resources is not None
        describe, tool = (await client.list_tools()).tools
        assert describe.name == "describe_tools"
        assert tool.input_schema == MINIMAL_INPUT_SCHEMA
        assert tool.description == "Check that a host answers."
        assert [r.uri for r in (await client.list_resources()).resources] == [URI]
        _is_error, doc = await call_doc(client, "ping_host", {"host": "a"})
        assert doc["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
        body = await read_json(client, f"{URI}?tools=ping_host")
        assert body["ping_host"]["inputSchema"]["required"] == ["host"]
        result = await client.call_tool("ping_host", {"host": "a"})
        assert result.content[0].text == "a answered"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as caught:
            await client.read_resource("file:///etc/passwd")
        assert caught.value.error.code == -32602


async def test_unknown_tool_call_is_refused_with_suggestions() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        result = await client.call_tool("ad", {})
    assert result.is_error and result.structured_content is not None
    error = result.structured_content["error"]
    assert error["code"] == "TOOL_NOT_FOUND" and error["message"] == "Tool 'ad' not found."
    assert error["available_tools"][0] == "add" and error["available_tools_total"] == 3


async def test_tools_added_at_run_time_are_fetchable() -> None:
    app, _ = make_mcpserver()
    async with legacy(app) as client:
        await client.list_tools()

        @app.tool()
        def late(x: int) -> int:
            """A tool registered after the first listing."""
            return x

        body = await read_json(client, f"{URI}?tools=late")
        assert body["late"]["inputSchema"]["required"] == ["x"]
        assert (await client.call_tool("late", {"x": 7})).structured_content == {"result": 7}


async def test_installing_twice_is_refused() -> None:
    app, pd = make_mcpserver()
    with pytest.raises(RuntimeError):
        pd.install(app)
    from mcp_pd import ProgressiveDisclosure

    with pytest.raises(RuntimeError):
        ProgressiveDisclosure().install(app)


@pytest.mark.req("PD-5.2-01")
async def test_session_key_hook_identifies_sessionless_callers() -> None:
    # An operator who identifies callers (say, by an authenticated principal) keys authorization on that.
    app, pd = make_mcpserver(session_key=lambda ctx: "tenant-a")
    async with Client(app, cache=None) as client:
        assert client.protocol_version == "2026-07-28"
        _is_error, doc = await call_doc(client, "add", {"a": 1, "b": 2})
        assert doc["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
        await read_json(client, f"{URI}?tools=add")
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
    assert set(pd.grants.granted("custom:tenant-a")) == {"add"}
