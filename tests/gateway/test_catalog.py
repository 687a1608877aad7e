"""`mcp-pd proxy --mode catalog`: real upstreams behind search, browse, describe and call, with the upstreams
(or a category from the config) as categories and describe-before-call held at the gateway."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from gateway.gwtest import PLAIN, connect, describe, error_of, gateway_params, stdio, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.req("PDX-CATALOG-01", "PDX-CATALOG-04")]


def _document(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    document = result.structured_content
    assert document == json.loads(result.content[0].text)  # structured, with the same JSON as text
    assert isinstance(document, dict)
    return document


async def test_catalog_mode_in_front_of_real_upstreams(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    config = write_config(
        tmp_path / "servers.json",
        {
            "memory": stdio("node", str(npm["memory"]), mark=mark, env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}),
            "everything": stdio("node", str(npm["everything"]), mark=mark),
            "plain": stdio(sys.executable, str(PLAIN), mark=mark, category="arithmetic"),
        },
    )
    async with connect(gateway_params("--config", str(config), "--mode", "catalog")) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert listed == {"search_tools", "browse_tools", "describe_tools", "call_tool"}

        # Categories are the upstreams, or the config's category; every served tool is in one.
        browsed = _document(await client.call_tool("browse_tools", {}))
        assert {c["name"] for c in browsed["categories"]} == {"memory", "everything", "arithmetic"}
        page = _document(await client.call_tool("browse_tools", {"category": "memory"}))
        assert {"create_entities", "search_nodes", "read_graph"} <= {t["name"] for t in page["tools"]}
        arithmetic = _document(await client.call_tool("browse_tools", {"category": "arithmetic"}))
        # `echo` is listed by two upstreams: namespaced on both, never one silently winning.
        assert {"add", "plain__echo"} <= {t["name"] for t in arithmetic["tools"]}

        found = _document(await client.call_tool("search_tools", {"query": "store entities in the knowledge graph"}))
        assert found["results"] and found["results"][0]["category"] == "memory"
        assert all(set(r) - {"warning"} == {"name", "category", "description", "match"} for r in found["results"])
        in_category = _document(await client.call_tool("search_tools", {"query": "add", "category": "arithmetic"}))
        assert [r["category"] for r in in_category["results"]] == ["arithmetic"] * len(in_category["results"])

        # call_tool is gated exactly as a direct call: refused before describing, runs after.
        refused = await client.call_tool("call_tool", {"name": "get-sum", "arguments": {"a": 2, "b": 40}})
        assert error_of(refused)["code"] == "TOOL_DESCRIPTION_REQUIRED"
        await describe(client, "get-sum", "add")
        ran = await client.call_tool("call_tool", {"name": "get-sum", "arguments": {"a": 2, "b": 40}})
        assert not ran.is_error and "42" in ran.content[0].text
        # Arguments are checked against the upstream's own schema before the upstream is asked.
        bad = error_of(await client.call_tool("call_tool", {"name": "add", "arguments": {"a": "two", "b": 3}}))
        assert "a" in json.dumps(bad) and bad["code"] != "TOOL_DESCRIPTION_REQUIRED"
        direct = await client.call_tool("add", {"a": 2, "b": 3})  # direct calls by name keep working
        assert not direct.is_error and direct.structured_content == {"sum": 5}
        unknown = error_of(await client.call_tool("call_tool", {"name": "get_sum", "arguments": {}}))
        assert "get-sum" in json.dumps(unknown)
