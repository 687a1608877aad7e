"""Edits to definition files reach connected clients, in each protocol era's own way (spec 7.2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from pdtest import CATALOGS, serve_params

pytestmark = pytest.mark.anyio


def catalog_copy(tmp_path: Path) -> Path:
    target = tmp_path / "defs"
    shutil.copytree(CATALOGS / "mcp-server-memory", target, ignore=shutil.ignore_patterns("*.md"))
    return target


def edit(directory: Path, name: str, summary: str) -> None:
    path = directory / f"{name}.json"
    data = json.loads(path.read_text())
    data["minimal_description"] = summary
    tmp = directory / f".{name}.json.tmp"
    tmp.write_text(json.dumps(data))
    tmp.replace(path)  # atomic, as editors and deploy tools do


@pytest.mark.req("PD-7.2-02", "PD-4.4-04")
async def test_handshake_era_client_gets_list_changed(tmp_path: Path) -> None:
    defs = catalog_copy(tmp_path)
    seen: dict[str, list[str]] = {"subscriber": [], "bystander": []}
    changed = {who: anyio.Event() for who in seen}

    def handler(who: str) -> Any:
        async def on_message(message: Any) -> None:
            text = repr(message)
            seen[who].append(text)
            if "tools/list_changed" in text:
                changed[who].set()

        return on_message

    params = serve_params("--simulate", "--descriptions", str(defs))
    async with (
        Client(params, mode="legacy", cache=None, message_handler=handler("subscriber")) as client,
        Client(params, mode="legacy", cache=None, message_handler=handler("bystander")) as bystander,
    ):
        # What is sent is what is advertised (issue 12): list changes, and subscriptions to the resource.
        capabilities = client.server_capabilities
        assert capabilities.tools is not None and capabilities.tools.list_changed is True
        assert capabilities.resources is not None and capabilities.resources.subscribe is True
        for uri in (
            "resource:///tool_descriptions?tools=read_graph",
            "resource:///tool_descriptions?tools=create_entities",
        ):
            # The handshake-era method; the SDK warns because 2026-07-28 replaced it with subscriptions/listen.
            with pytest.warns(MCPDeprecationWarning):
                await client.subscribe_resource(uri)
        before = {t.name: t.description for t in (await client.list_tools()).tools}
        await bystander.list_tools()
        assert before["read_graph"] != "Reads the graph, edited."
        await anyio.sleep(0.3)  # the watcher starts with the server
        edit(defs, "read_graph", "Reads the graph, edited.")
        with anyio.fail_after(5):
            await changed["subscriber"].wait()
            await changed["bystander"].wait()
        after = {t.name: t.description for t in (await client.list_tools()).tools}
        assert after["read_graph"] == "Reads the graph, edited."
        body = json.loads(
            (await client.read_resource("resource:///tool_descriptions?tools=read_graph")).contents[0].text  # type: ignore[union-attr]
        )
        assert body["read_graph"]["name"] == "read_graph"
    updated = [s for s in seen["subscriber"] if "resources/updated" in s]
    # Only the subscribed URI that covers the edited tool is announced, and only to the subscriber.
    assert len(updated) == 1 and "tools=read_graph" in updated[0]
    assert not any("resources/updated" in s for s in seen["bystander"])


@pytest.mark.req("PD-7.2-02")
async def test_sessionless_era_client_gets_a_listen_event(tmp_path: Path) -> None:
    defs = catalog_copy(tmp_path)
    async with Client(serve_params("--simulate", "--descriptions", str(defs)), cache=None) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as subscription:
            edit(defs, "read_graph", "Edited while listening.")
            with anyio.fail_after(5):
                event = await subscription.__anext__()
        assert "ToolsListChanged" in type(event).__name__
        tools = {t.name: t.description for t in (await client.list_tools()).tools}
        assert tools["read_graph"] == "Edited while listening."
