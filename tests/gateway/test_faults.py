"""Faults: an upstream killed mid-call, hanging, answering garbage, failing to start, forgetting its HTTP session,
and the gateway itself killed. The gateway keeps serving the others, says which upstream failed and why, and
leaves no upstream process behind (the `mark` fixture asserts it after every test)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway.gwtest import (
    GARBAGE,
    PLAIN,
    connect,
    describe,
    error_of,
    eventually,
    gateway_params,
    http_gateway,
    marked_pids,
    stdio,
    wait_for_no_pids,
    write_config,
)
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from pdtest import _wait_for_port, free_port

pytestmark = pytest.mark.anyio


async def _ignore_progress(value: float, total: float | None, message: str | None) -> None:
    pass


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_killed_mid_call_is_reported_and_restarted_while_others_serve(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    config = write_config(
        tmp_path / "servers.json",
        {
            "plain": stdio(sys.executable, str(PLAIN), mark=mark),
            "memory": stdio("node", str(npm["memory"]), mark=mark, env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}),
        },
    )
    async with connect(gateway_params("--config", str(config), "--call-timeout", "3")) as client:
        await describe(client, "slow", "pid", "add", "hang", "read_graph")
        first = int(_text(await client.call_tool("pid", {})))
        outcome: dict[str, types.CallToolResult] = {}

        async def slow_call() -> None:
            outcome["slow"] = await client.call_tool("slow", {"seconds": 30})

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call)
            await anyio.sleep(1.0)
            os.kill(first, signal.SIGKILL)
        error = error_of(outcome["slow"])
        assert error["code"] == "UPSTREAM_UNAVAILABLE" and error["server"] == "plain"
        assert "went away during the call to 'slow'" in error["message"]
        assert "killed by signal 9" in error["message"]
        # The other upstream never noticed.
        assert not (await client.call_tool("read_graph", {})).is_error

        async def restarted() -> int | None:
            result = await client.call_tool("pid", {})
            return None if result.is_error else int(_text(result))

        second = await eventually(restarted)
        assert second != first
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"sum": 3}

        # A hanging call times out with a clear error; the same upstream keeps answering other calls meanwhile.
        async def hang_call() -> None:
            outcome["hang"] = await client.call_tool("hang", {})

        async with anyio.create_task_group() as tg:
            tg.start_soon(hang_call)
            await anyio.sleep(0.5)
            assert (await client.call_tool("add", {"a": 2, "b": 2})).structured_content == {"sum": 4}
        error = error_of(outcome["hang"])
        assert error["server"] == "plain" and "did not answer 'hang' within 3 s" in error["message"]
        # It still answers pings, so it is not restarted for one hung call.
        assert int(_text(await client.call_tool("pid", {}))) == second


async def test_garbage_progress_cancellation_and_list_changed(tmp_path: Path, mark: str) -> None:
    config = write_config(
        tmp_path / "servers.json",
        {
            "plain": stdio(sys.executable, str(PLAIN), mark=mark),
            "garbage": stdio(sys.executable, str(GARBAGE), mark=mark),
        },
    )
    notifications: list[Any] = []

    async def on_message(message: Any) -> None:
        notifications.append(message)

    async with connect(gateway_params("--config", str(config)), message_handler=on_message) as client:
        await describe(client, "garbage", "noise", "both", "ok", "slow", "add_tool")
        error = error_of(await client.call_tool("garbage", {}))
        assert error["server"] == "garbage" and "not a valid tools/call result" in error["message"]
        assert _text(await client.call_tool("noise", {})) == "fine"  # a stray stdout line costs nothing
        # An answer with an error beside its result is taken as the error, on the pipe's path (the lane's and the
        # pool's) and on the SDK's (a call that reports progress), and the upstream keeps serving.
        for progress_callback in (None, _ignore_progress):
            with pytest.raises(MCPError) as both:
                await client.call_tool("both", {}, progress_callback=progress_callback)
            assert "both an error and a result" in both.value.message
            assert _text(await client.call_tool("ok", {})) == "ok"

        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        result = await client.call_tool("slow", {"seconds": 0.5}, progress_callback=on_progress)
        assert _text(result) == "slept 0.5"
        assert progress[0] == (1, 5, "step 1") and len(progress) == 5

        marker = tmp_path / "cancelled.txt"
        with anyio.move_on_after(1.5):
            await client.call_tool("slow", {"seconds": 30, "marker": str(marker)})

        async def cancelled_upstream() -> bool:
            return marker.exists() and marker.read_text() == "cancelled"

        await eventually(cancelled_upstream, timeout=10)

        assert _text(await client.call_tool("add_tool", {"name": "late_tool"})) == "added"

        async def announced() -> bool:
            return any(isinstance(n, types.ToolListChangedNotification) for n in notifications)

        await eventually(announced, timeout=10)
        assert "late_tool" in {t.name for t in (await client.list_tools()).tools}
        await describe(client, "late_tool")
        assert _text(await client.call_tool("late_tool", {})) == "late_tool ran"


async def test_failing_upstreams_cost_only_their_own_tools(tmp_path: Path, mark: str) -> None:
    config = write_config(
        tmp_path / "servers.json",
        {
            "plain": stdio(sys.executable, str(PLAIN), mark=mark),
            "missing": stdio("definitely-not-a-command-mcp-pd", mark=mark),
            "dies": stdio(sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)", mark=mark),
        },
    )
    log = tmp_path / "gateway.log"
    with log.open("w") as errlog:
        async with Client(
            stdio_client(gateway_params("--config", str(config), "--start-timeout", "20"), errlog=errlog),
            mode="legacy",
            cache=None,
        ) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"add", "echo", "describe_tools"} <= names
            await describe(client, "add")
            assert (await client.call_tool("add", {"a": 20, "b": 22})).structured_content == {"sum": 42}
    text = log.read_text()
    assert "upstream 'missing' failed to start: command not found: definitely-not-a-command-mcp-pd" in text
    assert "upstream 'dies' failed to start: the process exited with code 3" in text
    # Its stderr is the operator's: in the log, never in the reason clients are given (issue 31.3).
    assert "upstream 'dies': the process exited with code 3; its last stderr lines: boom" in text


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_no_upstream_outlives_the_gateway(tmp_path: Path, npm: dict[str, Path], mark: str, how: int) -> None:
    # A process tree (sh -> node) like npx's, and a Python upstream.
    config = write_config(
        tmp_path / "servers.json",
        {
            "tree": stdio("sh", "-c", f"node {npm['memory']}; true", mark=mark),
            "plain": stdio(sys.executable, str(PLAIN), mark=mark),
        },
    )
    params = gateway_params("--config", str(config))
    gateway = subprocess.Popen(
        [params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=params.env
    )
    try:
        for _ in range(600):
            if len(marked_pids(mark)) >= 3:
                break
            time.sleep(0.05)
        assert len(marked_pids(mark)) >= 3, marked_pids(mark)
        gateway.send_signal(how)
        assert not wait_for_no_pids(mark, timeout=10)
        assert gateway.wait(timeout=10) == (-signal.SIGKILL if how == signal.SIGKILL else 0)
    finally:
        gateway.kill()
        gateway.wait()
        for stream in (gateway.stdin, gateway.stdout):
            if stream is not None:
                stream.close()


async def test_http_upstream_that_forgets_the_session_is_reinitialized(tmp_path: Path, mark: str) -> None:
    port = free_port()
    env = {**os.environ, "MCP_PD_GATEWAY_TEST_MARK": mark}

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, str(PLAIN), "--http", str(port)], env=env, stderr=subprocess.DEVNULL)

    upstream = start()
    try:
        _wait_for_port(port, upstream)
        url = f"http://127.0.0.1:{port}/mcp"
        async with connect(gateway_params("--upstream-url", f"plain={url}")) as client:
            await describe(client, "add", "pid")
            first = _text(await client.call_tool("pid", {}))
            upstream.terminate()
            upstream.wait(timeout=10)
            upstream = start()  # a new process on the same port: it has never heard of our session
            _wait_for_port(port, upstream)
            assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"sum": 2}
            assert _text(await client.call_tool("pid", {})) != first
    finally:
        upstream.terminate()
        upstream.wait(timeout=10)


@pytest.mark.req("PDX-UPSTREAM-01")
async def test_an_answer_that_is_not_utf8_fails_its_call_at_once(tmp_path: Path, mark: str) -> None:
    config = write_config(tmp_path / "servers.json", {"garbage": stdio(sys.executable, str(GARBAGE), mark=mark)})
    # The call timeout is the default (300 s): a dropped answer would keep each call waiting that long.
    async with connect(gateway_params("--config", str(config))) as client:
        await describe(client, "latin1", "ok")
        # On the pipe's path (the lane's and the pool's) and on the SDK's (a call that reports progress).
        for progress_callback in (None, _ignore_progress):
            began = time.monotonic()
            with anyio.fail_after(30), pytest.raises(MCPError) as failed:
                await client.call_tool("latin1", {}, progress_callback=progress_callback)
            assert time.monotonic() - began < 10
            message = failed.value.message
            assert "upstream 'garbage'" in message and "is not valid UTF-8 (byte 0xe9 at offset" in message, message
            assert _text(await client.call_tool("ok", {})) == "ok"  # and it keeps serving


@pytest.mark.req("PDX-UPSTREAM-02")
async def test_a_flood_of_list_changed_costs_a_bounded_number_of_relists_and_announcements(
    tmp_path: Path, mark: str
) -> None:
    config = write_config(tmp_path / "servers.json", {"garbage": stdio(sys.executable, str(GARBAGE), mark=mark)})
    heard: dict[str, int] = {"alice": 0, "bob": 0}

    def counter(who: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                heard[who] += 1

        return on_message

    async with (
        http_gateway(config, tmp_path / "gateway.log", "--mode", "eager") as url,
        Client(url, mode="legacy", cache=None, message_handler=counter("alice")) as alice,
        Client(url, mode="legacy", cache=None, message_handler=counter("bob")) as bob,
    ):
        for client in (alice, bob):  # each connection seen by the gateway: both hear its announcements
            assert "counted" in {t.name for t in (await client.list_tools()).tools}
        assert _text(await alice.call_tool("flood", {"n": 2000})) == "flooded"
        await anyio.sleep(3.0)  # the notices are read and handled; a few re-listings at most

        async def settled() -> bool:  # no notice is lost: the listing served is the upstream's latest
            listings = int(_text(await bob.call_tool("lists", {})))
            tools = {t.name: t.description for t in (await bob.list_tools()).tools}
            return tools["counted"] == f"Listing {listings}."

        await eventually(settled, "the last listing to be served")
        listings = int(_text(await bob.call_tool("lists", {})))
        assert listings <= 10, f"{listings} listings for one burst of 2000 notices"
        assert heard["alice"] <= 10 and heard["bob"] <= 10, heard
        assert heard["alice"] >= 1 and heard["bob"] >= 1, heard  # the change was announced
