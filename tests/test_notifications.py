"""Edits to definition files reach connected clients, in each protocol era's own way (spec 7.2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
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
    seen: list[str] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        text = repr(message)
        seen.append(text)
        if "tools/list_changed" in text:
            changed.set()

    params = serve_params("--simulate", "--descriptions", str(defs))
    async with Client(params, mode="legacy", cache=None, message_handler=on_message) as client:
        before = {t.name: t.description for t in (await client.list_tools()).tools}
        assert before["read_graph"] != "Reads the graph, edited."
        await anyio.sleep(0.3)  # the watcher starts with the server
        edit(defs, "read_graph", "Reads the graph, edited.")
        with anyio.fail_after(5):
            await changed.wait()
        after = {t.name: t.description for t in (await client.list_tools()).tools}
        assert after["read_graph"] == "Reads the graph, edited."
        body = json.loads(
            (await client.read_resource("resource:///tool_descriptions?tools=read_graph")).contents[0].text  # type: ignore[union-attr]
        )
        assert body["read_graph"]["name"] == "read_graph"
    assert any("resources/updated" in s for s in seen)


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
