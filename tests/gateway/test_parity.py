"""Parity: the same calls, once straight to each upstream and once through the gateway after describing, give
the same results, with real upstreams no one here wrote (the npm reference servers), our reference server and
a server on the plain SDK, all as subprocesses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from gateway.gwtest import PLAIN, connect, describe, direct_params, error_of, gateway_params, stdio, write_config
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio


def _servers(tmp_path: Path, npm: dict[str, Path], mark: str, memory_file: Path) -> dict[str, dict[str, Any]]:
    files = tmp_path / "files"
    files.mkdir(exist_ok=True)
    (files / "note.txt").write_text("hello from the filesystem\n")
    return {
        "memory": stdio("node", str(npm["memory"]), mark=mark, env={"MEMORY_FILE_PATH": str(memory_file)}),
        "everything": stdio("node", str(npm["everything"]), mark=mark),
        "filesystem": stdio("node", str(npm["filesystem"]), str(files), mark=mark),
        "reference": stdio(sys.executable, "-m", "mcp_pd", "serve", "--no-watch", mark=mark),
        "plain": stdio(sys.executable, str(PLAIN), mark=mark),
    }


def _calls(files: Path) -> list[tuple[str, str, dict[str, Any]]]:
    entity = {"name": "gateway", "entityType": "component", "observations": ["routes calls"]}
    return [
        ("memory", "create_entities", {"entities": [entity]}),
        ("memory", "search_nodes", {"query": "gateway"}),
        ("everything", "get-sum", {"a": 2, "b": 40}),
        ("everything", "get-structured-content", {"location": "New York"}),
        ("everything", "get-tiny-image", {}),
        ("everything", "echo", {"message": "through the gateway"}),
        ("filesystem", "list_directory", {"path": str(files)}),
        ("filesystem", "read_text_file", {"path": str(files / "note.txt")}),
        ("filesystem", "read_text_file", {"path": "/etc/passwd"}),  # outside the allowed directory: a tool error
        ("reference", "calculate", {"expression": "(1200 * 1.19) / 12"}),
        ("reference", "hash_text", {"text": "hello world"}),
        ("plain", "add", {"a": 2, "b": 3}),
        ("plain", "echo", {"text": "plain"}),
        ("plain", "fail", {"message": "refused on purpose"}),
        ("plain", "reject", {}),
    ]


def _outcome(result: types.CallToolResult | MCPError) -> dict[str, Any]:
    if isinstance(result, MCPError):
        return {"jsonrpc_error": {"code": result.code, "message": result.message, "data": result.data}}
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _call(client: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        return _outcome(
            await client.session.send_request(
                types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments)),
                types.CallToolResult,
            )
        )
    except MCPError as exc:
        return _outcome(exc)


async def test_same_results_direct_and_through_the_gateway(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    files = tmp_path / "files"
    calls = _calls(files)
    direct_servers = _servers(tmp_path, npm, mark, tmp_path / "memory-direct.jsonl")
    direct: list[dict[str, Any]] = []
    for server in direct_servers:
        async with connect(direct_params(direct_servers[server])) as client:
            for upstream, tool, arguments in calls:
                if upstream != server:
                    continue
                if server == "reference":  # our reference server enforces describe-before-call itself
                    await client.read_resource(f"resource:///tool_descriptions?tools={tool}")
                direct.append(await _call(client, tool, arguments))

    config = write_config(tmp_path / "servers.json", _servers(tmp_path, npm, mark, tmp_path / "memory-gw.jsonl"))
    async with connect(gateway_params("--config", str(config))) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        # Names stay as each upstream names them; only the name both everything and plain list is namespaced.
        assert {"everything__echo", "plain__echo", "create_entities", "get-sum", "calculate", "add"} <= listed
        assert "echo" not in listed
        assert "describe_tools" in listed  # the gateway's own; the reference server's is never passed on
        served = {("everything", "echo"): "everything__echo", ("plain", "echo"): "plain__echo"}
        through: list[dict[str, Any]] = []
        described: set[str] = set()
        for upstream, tool, arguments in calls:
            name = served.get((upstream, tool), tool)
            if name not in described:
                refused = await client.call_tool(name, arguments)
                assert error_of(refused)["code"] == "TOOL_DESCRIPTION_REQUIRED"  # enforced at the gateway, per session
                await describe(client, name)
                described.add(name)
            through.append(await _call(client, name, arguments))
        # Each upstream is named in the instructions. Its own instructions follow under its name for sessions that
        # start once it is up or from the cache: `initialize` is answered while upstreams start (issue 34,
        # tests/gateway/test_fast_start.py checks both).
        assert all(f"- {name}" in (client.instructions or "") for name in ("everything", "plain"))

    for (upstream, tool, _), want, got in zip(calls, direct, through, strict=True):
        assert got == want, f"{upstream}/{tool}: {json.dumps(got)[:400]} != {json.dumps(want)[:400]}"
    kinds = {c["type"] for d in direct if "content" in d for c in d["content"]}
    assert {"text", "image"} <= kinds
    assert any(d.get("structuredContent") for d in direct) and any(d.get("isError") for d in direct)
    assert any("jsonrpc_error" in d for d in direct)


async def test_full_definitions_are_the_upstreams_own(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    config = write_config(
        tmp_path / "servers.json",
        {
            "everything": stdio("node", str(npm["everything"]), mark=mark),
            "reference": stdio(sys.executable, "-m", "mcp_pd", "serve", "--no-watch", mark=mark),
        },
    )
    async with connect(direct_params(stdio("node", str(npm["everything"]), mark=mark))) as client:
        direct = {t.name: t for t in (await client.list_tools()).tools}
    async with connect(gateway_params("--config", str(config))) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        # Minimal entries: the first sentence and an open schema (spec 3.1); the full schema on describe.
        assert listed["get-sum"].input_schema == {"type": "object", "additionalProperties": True}
        document = await describe(client, "get-sum", "calculate")
        want = direct["get-sum"].model_dump(mode="json", by_alias=True, exclude_none=True)
        assert document["get-sum"]["inputSchema"] == want["inputSchema"]
        assert document["get-sum"]["description"] == want["description"]
        # The reference server's own full definition (read by the gateway from its resource), not its minimal entry.
        assert document["calculate"]["inputSchema"]["required"] == ["expression"]
