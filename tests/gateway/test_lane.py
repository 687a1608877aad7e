"""The stdio lane (gateway/_lane.py): admitted calls skip the SDK's request path, and nothing else changes.

The same calls through `mcp-pd proxy` with the lane and with `--no-lane` give byte-for-byte the same outcomes
(results, tool errors, structured content, the upstream's JSON-RPC errors), refusals still come from the extension,
a crash, a hang and a cancellation are handled as on the SDK path, and a 2026-07-28 client is served on the SDK path.
The gateway says at exit how many calls the lane answered, which is how these tests know it was used.
"""

from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway.gwtest import PLAIN, describe, error_of, gateway_params, stdio, write_config
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "through the lane"}),
    ("add", {"a": 2, "b": 40}),
    ("fail", {"message": "a tool error"}),
    ("reject", {}),
    ("echo", {"text": 'ünïcödé ✓ and a "quote"\n'}),
    ("add", {"a": "not a number", "b": 1}),  # the upstream fails inside the tool: its JSON-RPC error
    ("echo", {}),
]


@asynccontextmanager
async def _gateway(tmp_path: Path, mark: str, *args: str, mode: str = "legacy") -> Any:
    config = write_config(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    log = tmp_path / f"gateway{len(list(tmp_path.glob('gateway*.log')))}.log"
    with log.open("w") as errlog:
        params = gateway_params("--config", str(config), "--call-timeout", "2", *args)
        async with Client(stdio_client(params, errlog=errlog), mode=mode, cache=None) as client:  # type: ignore[arg-type]
            yield client, log


def _lane_count(log: Path) -> int | None:
    for line in log.read_text().splitlines():
        if line.startswith("mcp-pd proxy: the stdio lane answered "):
            return int(line.split()[6])
    return None


async def _outcome(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        result = await client.session.send_request(
            types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments)),
            types.CallToolResult,
        )
    except MCPError as exc:
        return {"jsonrpc_error": {"code": exc.code, "message": exc.message, "data": exc.data}}
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _run_calls(client: Client) -> list[dict[str, Any]]:
    await describe(client, "echo", "add", "fail", "reject")
    return [await _outcome(client, name, arguments) for name, arguments in CALLS]


async def test_the_lane_answers_as_the_sdk_path_does(tmp_path: Path, mark: str) -> None:
    async with _gateway(tmp_path, mark) as (client, lane_log):
        through_lane = await _run_calls(client)
    async with _gateway(tmp_path, mark, "--no-lane") as (client, sdk_log):
        through_sdk = await _run_calls(client)
    assert through_lane == through_sdk
    assert [json.dumps(o, sort_keys=True) for o in through_lane] == [json.dumps(o, sort_keys=True) for o in through_sdk]
    # The first call teaches the lane who the client is; the rest were the lane's.
    assert _lane_count(lane_log) == len(CALLS) - 1
    assert _lane_count(sdk_log) is None
    kinds = {next(iter(o)) for o in through_lane}
    assert {"content", "jsonrpc_error"} <= kinds
    assert any(o.get("structuredContent") == {"sum": 42} for o in through_lane)
    assert any(o.get("isError") for o in through_lane)


async def test_refusals_still_come_from_the_extension(tmp_path: Path, mark: str) -> None:
    async with _gateway(tmp_path, mark) as (client, log):
        await describe(client, "echo")
        assert not (await client.call_tool("echo", {"text": "learn"})).is_error  # the SDK path; the lane learns
        assert not (await client.call_tool("echo", {"text": "lane"})).is_error  # the lane
        refused = error_of(await client.call_tool("add", {"a": 1, "b": 2}))  # never described
        assert refused["code"] == "TOOL_DESCRIPTION_REQUIRED"
        unknown = error_of(await client.call_tool("no_such_tool", {}))
        assert unknown["code"] in ("TOOL_NOT_FOUND", "TOOL_DESCRIPTION_REQUIRED")
    assert _lane_count(log) == 1


async def test_a_hang_a_crash_and_a_cancellation_on_the_lane(tmp_path: Path, mark: str) -> None:
    marker = tmp_path / "cancelled.txt"
    async with _gateway(tmp_path, mark) as (client, log):
        await describe(client, "echo", "hang", "crash", "slow", "pid")
        first = await client.call_tool("pid", {})
        assert not first.is_error
        # A hang: the call timeout (2 s here) answers with the gateway's refusal, and the upstream is told.
        hung = error_of(await client.call_tool("hang", {}))
        assert hung["code"] == "UPSTREAM_UNAVAILABLE"
        assert "did not answer 'hang' within 2 s" in hung["message"]
        # A cancellation by the client reaches the upstream's tool.
        with anyio.move_on_after(1.0):
            await client.call_tool("slow", {"seconds": 30, "marker": str(marker)})
        with anyio.fail_after(10):
            while not (marker.exists() and marker.read_text() == "cancelled"):
                await anyio.sleep(0.1)
        # A crash mid-call: a refusal that says so, then the restarted upstream serves again.
        crashed = error_of(await client.call_tool("crash", {}))
        assert crashed["code"] == "UPSTREAM_UNAVAILABLE"
        assert "went away during the call to 'crash'" in crashed["message"]
        with anyio.fail_after(20):
            while (again := await client.call_tool("echo", {"text": "back"})).is_error:
                await anyio.sleep(0.2)
        assert again.content[0].text == "back"  # type: ignore[union-attr]
    count = _lane_count(log)
    assert count is not None
    assert count >= 3  # hang, slow, crash at least


async def test_a_2026_client_is_served_on_the_sdk_path(tmp_path: Path, mark: str) -> None:
    async with _gateway(tmp_path, mark, mode="2026-07-28") as (client, log):
        await describe(client, "echo")
        for text in ("one", "two", "three"):
            result = await client.call_tool("echo", {"text": text})
            assert not result.is_error
            assert result.content[0].text == text  # type: ignore[union-attr]
    assert _lane_count(log) == 0
