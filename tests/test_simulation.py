"""Simulation mode serves real catalogs through the same extension code path (mcp-pd serve --simulate)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_pd.reference import serve_simulation
from pdtest import CATALOGS, serve_params
from pdtest_servers import ADD_DEFINITION, write_definitions

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"


async def test_github_catalog_over_stdio() -> None:
    catalog = CATALOGS / "github-mcp-server"
    expected = {p.stem for p in catalog.glob("*.json")}
    async with Client(serve_params("--simulate", "--descriptions", str(catalog)), cache=None) as client:
        assert "SIMULATION" in (client.instructions or "")
        listed = (await client.list_tools()).tools
        assert listed[0].name == "describe_tools"
        tools = listed[1:]
        assert {t.name for t in tools} == expected
        assert all(t.input_schema == {"type": "object", "additionalProperties": True} for t in tools)
        original = json.loads((catalog / "issue_read.json").read_text())
        body = json.loads((await client.read_resource(f"{URI}?tools=issue_read")).contents[0].text)  # type: ignore[union-attr]
        assert body["issue_read"]["inputSchema"] == original["inputSchema"]
        bad = await client.call_tool("issue_read", {"owner": 1})
        assert bad.is_error
        assert bad.structured_content is not None
        assert bad.structured_content["error"]["code"] == "INVALID_ARGUMENTS"
        schema = original["inputSchema"]
        args = {
            name: spec["enum"][0] if "enum" in spec else "x" if spec.get("type") == "string" else 1
            for name, spec in schema["properties"].items()
            if name in schema["required"]
        }
        good = await client.call_tool("issue_read", args)
        assert not good.is_error, good.content
        assert good.structured_content == {
            "simulated": True,
            "tool": "issue_read",
            "arguments": args,
            "note": good.structured_content["note"],
        }


def test_simulate_needs_a_directory() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "serve", "--simulate"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    assert "--simulate needs --descriptions DIR" in proc.stderr


@pytest.mark.req("PD-7.2-02", "PD-4.4-04")
async def test_a_read_after_an_edit_serves_the_new_schema_before_any_relisting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    definition = {**ADD_DEFINITION, "name": "adder"}
    write_definitions(tmp_path, definition)
    server, _ = serve_simulation(tmp_path)

    async def read(client: Client) -> dict[str, Any]:
        content = (await client.read_resource(f"{URI}?tools=adder")).contents[0]
        entry: dict[str, Any] = json.loads(content.text)["adder"]  # type: ignore[union-attr]
        return entry

    async with Client(server, mode="legacy", cache=None) as client:
        assert set((await read(client))["inputSchema"]["properties"]) == {"a", "b"}
        renamed = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        write_definitions(tmp_path, {**definition, "inputSchema": renamed})
        with anyio.fail_after(5):
            while (await read(client))["inputSchema"] != renamed:
                await anyio.sleep(0.02)
        assert (await client.call_tool("adder", {"x": 1})).is_error is False
    assert "differ from the registered tool" not in caplog.text
