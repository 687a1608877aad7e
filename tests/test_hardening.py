"""Regressions from the attack, broken-file and real-client reports (issue 12): each test reproduces one finding.

Enforcement (runtime-registered and unlisted tools, redefined tools), availability (bounded suggestions,
broken and special definition files, a watcher that survives), protocol (pagination, truthful capabilities,
actionable refusals). Real servers through the real client; no mocks.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_pd import EXTENSION_ID, DescriptionStore, ProgressiveDisclosure
from pdtest import http_in_process, serve_params
from pdtest_servers import ADD_DEFINITION, make_mcpserver, write_definitions

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"


def legacy(target: Any) -> Client:
    return Client(target, mode="legacy", cache=None)


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error and result.structured_content is not None, result
    error: dict[str, Any] = result.structured_content["error"]
    return error


class MutableServer:
    """A low-level server whose tool list a test changes at run time, logging every tool that really runs."""

    def __init__(self, tools: dict[str, dict[str, Any]], *, unlisted: tuple[str, ...] = ()) -> None:
        self.tools = tools
        self.ran: list[str] = []

        async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[
                    types.Tool(name=name, description=f"The {name} tool. It does {name}.", input_schema=schema)
                    for name, schema in self.tools.items()
                ]
            )

        async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            if params.name not in self.tools and params.name not in unlisted:
                return types.CallToolResult(content=[types.TextContent(type="text", text="Unknown")], is_error=True)
            self.ran.append(params.name)
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])

        self.server: Server[Any] = Server("mutable", on_list_tools=list_tools, on_call_tool=call_tool)


SCHEMA: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}


# -- enforcement -------------------------------------------------------------------------------------------
@pytest.mark.req("PD-5.1-02")
async def test_a_tool_registered_at_run_time_is_gated_at_once() -> None:
    # Found: a tool registered after start, called within a second of the last listing, ran without a fetch.
    app, _ = make_mcpserver()
    ran: list[int] = []
    async with legacy(app) as client:
        await client.list_tools()

        @app.tool()
        def late(x: int) -> int:
            """A tool registered after the first listing."""
            ran.append(x)
            return x

        assert error_of(await client.call_tool("late", {"x": 1}))["code"] == "TOOL_DESCRIPTION_REQUIRED"
        assert ran == []
        await client.read_resource(f"{URI}?tools=late")
        assert not (await client.call_tool("late", {"x": 2})).is_error
    assert ran == [2]


@pytest.mark.req("PD-5.1-02", "PD-10.2-01", "PDX-GATE-01")
async def test_a_tool_the_server_accepts_but_does_not_list_is_never_run() -> None:
    # Found: names missing from the listing were handed straight to the server's handler.
    mutable = MutableServer({"visible": SCHEMA}, unlisted=("backdoor",))
    ProgressiveDisclosure().install(mutable.server)
    async with legacy(mutable.server) as client:
        refusal = error_of(await client.call_tool("backdoor", {}))
        assert refusal["code"] == "TOOL_NOT_FOUND"
        assert refusal["available_tools"] == ["visible"]
        body = json.loads((await client.read_resource(f"{URI}?tools=backdoor")).contents[0].text)  # type: ignore[union-attr]
        assert body["backdoor"]["error"] == "Tool 'backdoor' not found"
        assert error_of(await client.call_tool("backdoor", {}))["code"] == "TOOL_NOT_FOUND"
    assert mutable.ran == []


@pytest.mark.req("PDX-GRANT-01", "PD-5.1-03")
async def test_a_grant_is_for_the_definition_read_not_for_the_name() -> None:
    # Found: a tool deleted and replaced by a different tool of the same name kept the old grant.
    mutable = MutableServer({"export": SCHEMA, "other": SCHEMA})
    ProgressiveDisclosure().install(mutable.server)
    async with legacy(mutable.server) as client:
        await client.read_resource(f"{URI}?tools=export")
        assert not (await client.call_tool("export", {"x": 1})).is_error
        # The tool goes away and a different one takes its name (a new schema).
        del mutable.tools["export"]
        await client.list_tools()
        mutable.tools["export"] = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        await client.list_tools()
        refusal = error_of(await client.call_tool("export", {"path": "/tmp/x"}))
        assert refusal["code"] == "TOOL_DESCRIPTION_REQUIRED"
        assert "changed since this session fetched it" in refusal["reason"]
        assert mutable.ran == ["export"]
        body = json.loads((await client.read_resource(f"{URI}?tools=export")).contents[0].text)  # type: ignore[union-attr]
        assert body["export"]["inputSchema"]["required"] == ["path"]
        assert not (await client.call_tool("export", {"path": "/tmp/x"})).is_error
    assert mutable.ran == ["export", "export"]


@pytest.mark.req("PDX-GRANT-01")
async def test_an_edited_definition_file_needs_a_new_read(tmp_path: Path) -> None:
    app, pd = make_mcpserver(write_definitions(tmp_path, ADD_DEFINITION), watch=False)
    async with legacy(app) as client:
        await client.read_resource(f"{URI}?tools=add")
        assert not (await client.call_tool("add", {"a": 1, "b": 2})).is_error
        write_definitions(tmp_path, {**ADD_DEFINITION, "description": "Add two integers. Now with a warning."})
        assert pd.store.rescan() == {"add"}
        assert error_of(await client.call_tool("add", {"a": 1, "b": 2}))["code"] == "TOOL_DESCRIPTION_REQUIRED"
        await client.read_resource(f"{URI}?tools=add")
        assert not (await client.call_tool("add", {"a": 1, "b": 2})).is_error


# -- availability ------------------------------------------------------------------------------------------
def many_tools_server(count: int) -> Server[Any]:
    listing = types.ListToolsResult(
        tools=[
            types.Tool(name=f"{verb}_{noun}_{i}", description=f"{verb.title()} a {noun}.", input_schema=SCHEMA)
            for i in range(count // 10)
            for verb, noun in (
                ("get", "issue"),
                ("list", "issues"),
                ("create", "pull_request"),
                ("delete", "branch"),
                ("update", "label"),
                ("search", "code"),
                ("run", "workflow"),
                ("fetch", "page"),
                ("send", "message"),
                ("read", "file"),
            )
        ]
    )

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server("many", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.mark.req("PD-6.3-01")
async def test_sixty_four_unknown_names_at_ten_thousand_tools_get_bounded_suggestions() -> None:
    # Found: one 1.4 KB read of 64 unknown names blocked the loop for 12.9 s at 10k tools (quadratic matcher).
    # The time is measured in benchmarks/ (unknown-name read); here, the answer's shape and its bounds.
    server = many_tools_server(10_000)
    ProgressiveDisclosure().install(server)
    names = [f"get_isue_{i}" for i in range(64)]
    async with legacy(server) as client:
        with anyio.fail_after(30):
            body = json.loads((await client.read_resource(f"{URI}?tools={','.join(names)}")).contents[0].text)  # type: ignore[union-attr]
    assert list(body) == names
    for name in names:
        entry = body[name]
        assert entry["available_tools_total"] == 10_000
        assert len(entry["available_tools"]) == 20
    # The first names of a read are ranked (closest first); past the per-read budget, the alphabetical head.
    assert body["get_isue_7"]["available_tools"][0] == "get_issue_7"
    assert body["get_isue_63"]["available_tools"] == sorted(body["get_isue_63"]["available_tools"])


def broken_definitions(directory: Path) -> dict[str, str]:
    """Files that are valid JSON (or not files at all) but no valid definition; -> name: what is wrong."""
    good = {**ADD_DEFINITION}
    bad: dict[str, Any] = {
        "props": {**good, "name": "props", "inputSchema": {"type": "object", "properties": ["a"]}},
        "req": {**good, "name": "req", "inputSchema": {"type": "object", "required": "a"}},
        "ann": {**good, "name": "ann", "annotations": {"readOnlyHint": "yes"}},
        "exe": {**good, "name": "exe", "execution": {"taskSupport": 5}},
        "icons": {**good, "name": "icons", "icons": [{"src": 7}]},
    }
    write_definitions(directory, ADD_DEFINITION, *bad.values())
    (directory / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    os.mkfifo(directory / "fifo.json")
    (directory / "zero.json").symlink_to("/dev/zero")
    (directory / "loop.json").symlink_to(directory / "loop.json")
    (directory / "dir.json").mkdir()
    return {
        "props": "properties",
        "req": "required",
        "ann": "readOnlyHint",
        "exe": "taskSupport",
        "icons": "src",
        "deep": "nested too deeply",
        "fifo": "not a regular file",
        "zero": "not a regular file",
        "loop": "cannot read file",
        "dir": "not a regular file",
    }


@pytest.mark.req("PD-7.2-01")
async def test_broken_and_special_files_are_reported_and_skipped_at_start(tmp_path: Path) -> None:
    # Found: one such file broke tools/list for every client and stopped the server from starting; a FIFO hung
    # every request; a link to /dev/zero passed the size check and ate memory.
    expected = broken_definitions(tmp_path)
    async with Client(serve_params("--simulate", "--descriptions", str(tmp_path)), mode="legacy", cache=None) as client:
        with anyio.fail_after(20):
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["describe_tools", "add"]
            await client.read_resource(f"{URI}?tools=add")
            assert not (await client.call_tool("add", {"a": 1, "b": 2})).is_error
    store = DescriptionStore(tmp_path)
    problems = {Path(p.source).stem: p.reason for p in store.problems}
    assert set(problems) == set(expected)
    for name, needle in expected.items():
        assert needle in problems[name], (name, problems[name])
        # Said for an author, without Python internals.
        assert "Traceback" not in problems[name] and "pydantic" not in problems[name]
        assert "errors.pydantic.dev" not in problems[name] and "input_value=" not in problems[name]


@pytest.mark.req("PD-7.2-02")
async def test_the_watcher_survives_any_file_and_a_deleted_directory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Found: a deeply nested file killed the watcher for good; deleting and recreating the directory ended hot
    # reload silently.
    caplog.set_level(logging.INFO, logger="mcp_pd.store")
    directory = write_definitions(tmp_path / "defs", ADD_DEFINITION)
    store = DescriptionStore(directory)
    changes: list[frozenset[str]] = []
    arrived = anyio.Event()

    async def listener(changed: frozenset[str]) -> None:
        changes.append(changed)
        arrived.set()

    async def next_change() -> frozenset[str]:
        nonlocal arrived
        with anyio.fail_after(10):
            await arrived.wait()
        arrived = anyio.Event()
        return changes[-1]

    store.add_listener(listener)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: store.watch(retry_seconds=0.1))
        await anyio.sleep(0.3)
        (directory / "deep.json").write_text("{" * 50_000)
        (directory / "deep.json").write_text('{"a":' * 50_000 + "1" + "}" * 50_000)
        await anyio.sleep(0.3)
        write_definitions(directory, {**ADD_DEFINITION, "description": "Add. After the deep file."})
        assert await next_change() == {"add"}
        shutil.rmtree(directory)
        await anyio.sleep(0.5)
        write_definitions(directory, {**ADD_DEFINITION, "description": "Add. In the new directory."})
        while getattr(store.get("add"), "description", None) != "Add. In the new directory.":
            await next_change()
        write_definitions(directory, {**ADD_DEFINITION, "description": "Add. Edited in the new directory."})
        assert await next_change() == {"add"}
        tg.cancel_scope.cancel()
    definition = store.get("add")
    assert definition is not None and definition.description == "Add. Edited in the new directory."
    assert "nested too deeply" in caplog.text
    assert "watching descriptions directory" in caplog.text and "again" in caplog.text


@pytest.mark.req("PD-7.2-01")
def test_a_dangling_or_looping_link_keeps_the_last_good_definition(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Found: replacing a served file by a broken link removed the tool silently.
    write_definitions(tmp_path, ADD_DEFINITION, {**ADD_DEFINITION, "name": "twin"})
    store = DescriptionStore(tmp_path)
    (tmp_path / "add.json").unlink()
    (tmp_path / "add.json").symlink_to(tmp_path / "nowhere.json")
    (tmp_path / "twin.json").unlink()
    (tmp_path / "twin.json").symlink_to(tmp_path / "twin.json")
    assert store.rescan() == frozenset()
    assert store.get("add") is not None and store.get("twin") is not None
    reasons = {Path(p.source).stem: p.reason for p in store.problems}
    assert "keeping the last good version" in reasons["add"] and "keeping the last good version" in reasons["twin"]
    assert "tool definition problem" in caplog.text
    (tmp_path / "add.json").unlink()  # removing the link itself does remove the tool
    assert store.rescan() == {"add"} and store.get("add") is None


# -- protocol ----------------------------------------------------------------------------------------------
async def list_all(client: Client) -> tuple[list[str], int]:
    names: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await client.list_tools(cursor=cursor)
        pages += 1
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names, pages


@pytest.mark.req("PD-3.1-01", "PDX-LIST-01")
async def test_a_large_catalog_is_listed_in_pages_over_http() -> None:
    # Found: 10k tools were one 1.9 MB tools/list page the SDK's own HTTP client refused.
    server = many_tools_server(2_500)
    ProgressiveDisclosure(page_size=1000).install(server)
    async with http_in_process(server) as url, legacy(url) as client:
        names, pages = await list_all(client)
        assert pages == 3 and names[0] == "describe_tools" and len(names) == 2_501 == len(set(names))
        with pytest.raises(MCPError) as caught:
            await client.list_tools(cursor="not-a-cursor")
        assert caught.value.error.code == -32602 and "Invalid cursor" in caught.value.error.message


@pytest.mark.req("PDX-CAP-01")
async def test_capabilities_say_what_is_sent_in_both_eras_over_http() -> None:
    # Found: over HTTP initialize said tools.listChanged false and resources.subscribe false, yet both were sent;
    # handshake-era clients saw no sign of the extension.
    app, _ = make_mcpserver()
    lowlevel = app._lowlevel_server
    async with http_in_process(lowlevel) as url, legacy(url) as client:
        capabilities = client.server_capabilities
        assert capabilities.tools is not None and capabilities.tools.list_changed is True
        assert capabilities.resources is not None and capabilities.resources.subscribe is True
        assert capabilities.experimental is not None
        settings = capabilities.experimental[EXTENSION_ID]
        assert settings["resourceUri"] == URI and settings["describeTool"] == "describe_tools"
        assert "describe_tools" in settings["workflow"]
        handshake = capabilities.model_dump(exclude={"experimental", "extensions"})
    async with Client(lowlevel, cache=None) as modern:  # 2026-07-28, in process: extensions carry the same
        assert modern.protocol_version == "2026-07-28"
        extensions = modern.server_capabilities.extensions or {}
        assert "resource:///tool_descriptions?tools=TOOL_NAME" in extensions[EXTENSION_ID]["workflow"]
        # Found: resources.listChanged and prompts.listChanged differed by era on one server, and an MCPServer
        # advertised prompts it did not have. Now one server gives one answer.
        assert modern.server_capabilities.model_dump(exclude={"experimental", "extensions"}) == handshake
        assert handshake["prompts"] is None and handshake["resources"]["list_changed"] is True
    with_prompt, _ = make_mcpserver()
    with_prompt.prompt(name="hello")(lambda: "Say hello.")  # a server that has a prompt still advertises it
    async with http_in_process(with_prompt._lowlevel_server) as url, legacy(url) as client:
        assert client.server_capabilities.prompts is not None


async def test_a_client_pinned_to_2026_over_http_learns_how_to_connect() -> None:
    # Found: the -32601 answer to server/discover gave no reason (TypeScript SDK 2.x, Inspector).
    app, _ = make_mcpserver()
    async with http_in_process(app._lowlevel_server) as url:
        envelope = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "server/discover",
        }
        request = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": envelope}}
        async with httpx2.AsyncClient() as http:
            answer = (await http.post(url, json=request, headers=headers)).json()
        error = answer["error"]
        # -32601 keeps auto-negotiating clients falling back; the message and data say why and what to do.
        assert error["code"] == -32601
        assert "per session" in error["message"] and "2025-11-25" in error["message"]
        assert error["data"]["supportedProtocolVersions"] == ["2025-11-25"] and error["data"]["howToConnect"]
        # A client that skips discovery and stays on 2026-07-28 is told the same at its first gated call.
        async with Client(url, mode="2026-07-28", cache=None) as pinned:
            refusal = error_of(await pinned.call_tool("add", {"a": 1, "b": 2}))
        assert refusal["code"] == "SESSION_REQUIRED" and "2025-11-25" in refusal["hint"]


async def test_stateless_http_names_the_operators_fix() -> None:
    # Found: with --stateless, SESSION_REQUIRED told a client already on the handshake to use the handshake.
    app, _ = make_mcpserver()
    async with http_in_process(app._lowlevel_server, stateless_http=True) as url, legacy(url) as client:
        await client.read_resource(f"{URI}?tools=add")
        refusal = error_of(await client.call_tool("add", {"a": 1, "b": 2}))
    assert refusal["code"] == "SESSION_REQUIRED"
    assert "operator" in refusal["hint"] and "--stateless" in refusal["hint"]
    assert "cannot be fixed by the client" in refusal["hint"]


def test_a_server_process_with_broken_files_still_starts(tmp_path: Path) -> None:
    # The same files through the CLI's start-up report: listed, one line each, and the server runs.
    broken_definitions(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "serve", "--simulate", "--descriptions", str(tmp_path)],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "1 tool, 1 JSON definition," in stderr  # "1 tools" read wrong (issue 40.7)
    assert stderr.count("problem:") >= 10 and "Traceback" not in stderr
