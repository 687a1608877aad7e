"""The stdio lane (gateway/_lane.py): admitted calls skip the SDK's request path, and nothing else changes.

The same calls through `mcp-pd proxy` with the lane and with `--no-lane` give byte-for-byte the same outcomes
(results, tool errors, structured content, the upstream's JSON-RPC errors), refusals still come from the extension,
a crash, a hang and a cancellation are handled as on the SDK path, and a 2026-07-28 client is served on the SDK path.
The gateway logs at exit (INFO) how many calls the lane answered, which is how these tests know it was used.
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
        params = gateway_params("--config", str(config), "--call-timeout", "2", "--log-level", "INFO", *args)
        async with Client(stdio_client(params, errlog=errlog), mode=mode, cache=None) as client:  # type: ignore[arg-type]
            yield client, log


def _lane_count(log: Path) -> int | None:
    for line in log.read_text().splitlines():
        if line.startswith("INFO mcp_pd.gateway: the stdio lane answered "):
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


async def test_a_progressive_upstream_that_forgot_its_grant_is_asked_again(tmp_path: Path, mark: str) -> None:
    # The upstream forgets the gateway's grants after 1 s idle: the next call comes back refused there, and the
    # gateway re-reads the definition and retries, on the lane as on the SDK path.
    upstream = stdio(sys.executable, str(Path(__file__).with_name("forgetful_server.py")), mark=mark)
    config = write_config(tmp_path / "servers.json", {"forgetful": upstream})
    outcomes: dict[str, list[dict[str, Any]]] = {}
    for variant, extra in (("lane", ()), ("sdk", ("--no-lane",))):
        log = tmp_path / f"{variant}.log"
        with log.open("w") as errlog:
            params = gateway_params("--config", str(config), "--log-level", "INFO", *extra)
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
                await describe(client, "shout")
                seen = [await _outcome(client, "shout", {"text": "one"})]  # the SDK path; the lane learns
                seen.append(await _outcome(client, "shout", {"text": "two"}))
                await anyio.sleep(1.6)  # the upstream's grant lapses
                seen.append(await _outcome(client, "shout", {"text": "three"}))
        outcomes[variant] = seen
        assert [o["content"][0]["text"] for o in seen] == ["ONE", "TWO", "THREE"], seen
    assert outcomes["lane"] == outcomes["sdk"]
    assert _lane_count(tmp_path / "lane.log") == 2


async def test_a_client_slow_to_read_still_gets_every_answer(tmp_path: Path, mark: str) -> None:
    # 60 answers of 20 kB each while the client reads nothing: the pipe fills, and the lane must wait to write
    # (the SDK's way) instead of piling answers up or losing any.
    config = write_config(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    params = gateway_params("--config", str(config), "--log-level", "INFO")
    proc = await anyio.open_process([params.command, *params.args], env=params.env)
    assert proc.stdin is not None
    assert proc.stdout is not None
    buffered = b""

    async def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        await proc.stdin.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def answer(request_id: int) -> dict[str, Any]:
        nonlocal buffered
        assert proc.stdout is not None
        while True:
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == request_id:
                    return dict(message)
            buffered += await proc.stdout.receive()

    client = {"name": "slow-reader", "version": "1"}
    try:
        with anyio.fail_after(60):
            await send(
                {
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client},
                }
            )
            await answer(1)
            await send({"method": "notifications/initialized"})
            await send(
                {
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "describe_tools", "arguments": {"tools": ["echo"]}},
                }
            )
            assert not (await answer(2))["result"].get("isError")
            await send({"id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "learn"}}})
            assert (await answer(3))["result"]["content"][0]["text"] == "learn"
            texts = {100 + i: f"{i:03d}" + "x" * 20_000 for i in range(60)}
            for request_id, text in texts.items():
                await send(
                    {"id": request_id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}
                )
            await anyio.sleep(1.0)  # nothing read meanwhile
            for request_id, text in texts.items():
                result = (await answer(request_id))["result"]
                assert result["content"][0]["text"] == text
    finally:
        await proc.stdin.aclose()
        with anyio.fail_after(15):
            await proc.wait()
    assert proc.stderr is not None
    stderr = (await proc.stderr.receive(1 << 20)).decode(errors="replace")
    assert "the stdio lane answered 60 call(s)" in stderr


async def test_a_2026_client_is_served_on_the_sdk_path(tmp_path: Path, mark: str) -> None:
    async with _gateway(tmp_path, mark, mode="2026-07-28") as (client, log):
        await describe(client, "echo")
        for text in ("one", "two", "three"):
            result = await client.call_tool("echo", {"text": text})
            assert not result.is_error
            assert result.content[0].text == text  # type: ignore[union-attr]
    assert _lane_count(log) == 0
