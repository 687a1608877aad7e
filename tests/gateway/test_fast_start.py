"""Issue 34.4: the gateway answers `initialize` at once while its upstreams start (stdio and HTTP).

An upstream that starts late (tests/gateway/late_server.py, which answers nothing until the test creates its
readiness file) must not hold up the handshake. By default the requests after it wait for the upstreams' first
start, so the first listing is whole; with --serve-while-starting `tools/list` shows what is up (and what the cache
holds), the late upstream's tools are announced with `tools/list_changed` when it has listed, and a name of its
asked for meanwhile waits for it. Either way the gateway says on stderr what it starts and how long each took.

Issue 41.3 and 41.4: the session that begins at once still receives every upstream's instructions (remembered, a
bounded wait, or with the first description of its tools), and a subscribing 2026-07-28 client is acknowledged at
once while an upstream takes 5 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway.gwtest import PLAIN, describe, eventually, gateway_params, http_gateway, stdio, write_config
from gateway.late_server import INSTRUCTIONS, instructions_of
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ToolsListChanged

LATE = Path(__file__).resolve().parent / "late_server.py"
# The bound: hosts with a short connect timeout give up on a slower first answer.
FIRST_ANSWER = 2.0
# Generous bounds for what does not measure the gateway (a Python process starting on a busy machine).
SPAWN = 60.0
WHOLE = 120.0


def _servers(tmp_path: Path, mark: str) -> tuple[dict[str, Any], Path, Path]:
    ready, waiting = tmp_path / "late.ready", tmp_path / "late.waiting"
    servers = {
        "plain": stdio(sys.executable, str(PLAIN), mark=mark),
        "late": stdio(sys.executable, str(LATE), str(ready), str(waiting), mark=mark),
    }
    return servers, ready, waiting


def _names(listed: types.ListToolsResult) -> set[str]:
    return {t.name for t in listed.tools}


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


class Heard:
    """How many `tools/list_changed` notifications a client received."""

    def __init__(self) -> None:
        self.changed = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changed += 1


@asynccontextmanager
async def _stdio_gateway(
    config: Path, log: Path, *extra: str, env: dict[str, str] | None = None, mode: str = "legacy", **options: Any
) -> AsyncIterator[Client]:
    """A client of `mcp-pd proxy --config CONFIG` over stdio (stderr to `log`; `env` added to the gateway's), once
    it has connected (`initialize`, or a 2026-07-28 client's `server/discover`), which must be within the issue's
    bound of the gateway saying what it starts (it serves right after; what comes before is the interpreter's own
    start-up). Bounded as a whole: a gateway that waits for its upstreams before answering never gets past it."""
    seen: dict[str, float] = {}
    params = gateway_params("--config", str(config), *extra)
    if env:
        params = params.model_copy(update={"env": {**(params.env or {}), **env}})
    with log.open("w") as errlog, anyio.fail_after(WHOLE):
        async with anyio.create_task_group() as watcher:
            watcher.start_soon(_watch_start, log, seen)
            async with Client(stdio_client(params, errlog=errlog), mode=mode, cache=None, **options) as client:
                answered = seen["answered"] = time.monotonic()
                assert answered - seen.get("starting", answered) < FIRST_ANSWER, seen
                yield client


async def _watch_start(log: Path, seen: dict[str, float]) -> None:
    """Note in `seen` when the gateway said what it starts (unless the client was answered first)."""
    while "starting" not in seen and "answered" not in seen:
        if "mcp-pd proxy: starting " in log.read_text():
            seen["starting"] = time.monotonic()
        await anyio.sleep(0.02)


async def _ready_after(log: Path, ready: Path, delay: float) -> None:
    """Let a late upstream answer `delay` seconds after the gateway said it starts its upstreams."""
    seen: dict[str, float] = {}
    await _watch_start(log, seen)
    await anyio.sleep(delay)
    ready.touch()


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-START-01")
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")  # ping: a handshake-era request
async def test_stdio_initialize_at_once_and_the_first_listing_waits_for_the_upstreams(
    tmp_path: Path, mark: str
) -> None:
    servers, ready, _ = _servers(tmp_path, mark)
    config = write_config(tmp_path / "servers.json", servers)
    log = tmp_path / "gateway.log"
    async with _stdio_gateway(config, log) as client:
        assert not ready.exists()  # so the late upstream has not answered its own `initialize`
        listed: list[set[str]] = []

        async def list_tools() -> None:
            listed.append(_names(await client.list_tools()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(list_tools)
            await client.send_ping()  # answered at once, after the gateway has read the tools/list sent before it
            assert not listed  # that one waits for the upstreams on their first start
            ready.touch()
        assert {"late_echo", "echo", "describe_tools"} <= listed[0]  # whole at its first answer
        await describe(client, "late_echo")
        assert _text(await client.call_tool("late_echo", {"text": "hi"})) == "late: hi"
    said = log.read_text()
    assert "mcp-pd proxy: starting 2 upstream(s): plain, late" in said, said
    assert _matches(r"tools from 2 upstream\(s\), 2 running \(ready after .*late \d+\.\d s", said), said


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-START-01")
async def test_stdio_served_while_starting_lists_what_is_up_and_announces_the_rest(tmp_path: Path, mark: str) -> None:
    servers, ready, _ = _servers(tmp_path, mark)
    config = write_config(tmp_path / "servers.json", servers)
    log = tmp_path / "gateway.log"
    heard = Heard()
    async with _stdio_gateway(config, log, "--serve-while-starting", message_handler=heard) as client:
        assert not ready.exists()  # so the late upstream has not answered its own `initialize`
        listed = _names(await client.list_tools())
        assert "late_echo" not in listed and "describe_tools" in listed  # answered now, with what is up

        # A name of the late upstream asked for meanwhile waits for it rather than being called unknown.
        described: dict[str, Any] = {}

        async def describe_late() -> None:
            result = await client.call_tool("describe_tools", {"tools": ["late_echo"]})
            described.update(result.structured_content or {})  # the document (instructions may follow it)

        async with anyio.create_task_group() as tg:
            tg.start_soon(describe_late)
            # Answered while that describe waits: a listing never waits for an upstream.
            assert "late_echo" not in _names(await client.list_tools())
            assert not described
            ready.touch()  # now the late upstream answers its initialize
        assert "inputSchema" in described["late_echo"], described

        # Announced once it has listed, and then listed and callable.
        await eventually(lambda: _true(heard.changed > 0), "tools/list_changed", timeout=SPAWN)
        assert "late_echo" in _names(await client.list_tools())
        assert _text(await client.call_tool("late_echo", {"text": "hi"})) == "late: hi"
        await eventually(lambda: _has_tool(client, "echo"), "the plain upstream's tools", timeout=SPAWN)
    said = log.read_text()
    assert "mcp-pd proxy: starting 2 upstream(s): plain, late" in said, said
    assert _matches(r"upstream 'late' ready after \d+\.\d s \(1 tool\(s\)\)", said), said
    assert _matches(r"upstream 'plain' ready after \d+\.\d s", said), said
    assert _matches(r"tools from 2 upstream\(s\), 2 running \(ready after .*late \d+\.\d s", said), said


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-START-01")
async def test_http_serves_the_cache_at_once_and_a_call_waits_for_its_upstream(tmp_path: Path, mark: str) -> None:
    servers, ready, waiting = _servers(tmp_path, mark)
    # The plain upstream's definitions exported earlier: with --cache they are listed without starting it.
    export = [sys.executable, "-m", "mcp_pd", "export", "--quiet-upstreams"]
    plain_only = write_config(tmp_path / "plain.json", {"plain": servers["plain"]})
    cache = tmp_path / "defs"
    done = subprocess.run(
        [*export, "--config", str(plain_only), "--out", str(cache)], capture_output=True, text=True, timeout=SPAWN
    )
    assert done.returncode == 0, done.stderr
    config = write_config(tmp_path / "servers.json", servers)
    log = tmp_path / "gateway.log"
    heard = Heard()
    async with http_gateway(config, log, "--serve-while-starting", "--cache", str(cache), "--mode", "eager") as url:
        began = time.monotonic()
        async with Client(url, mode="legacy", cache=None, message_handler=heard) as client:
            assert time.monotonic() - began < FIRST_ANSWER  # initialize, from a gateway already listening
            assert not ready.exists()
            # The cached upstream's own instructions at once; the late one is named, starting.
            assert "## plain\nA plain SDK server used in tests." in (client.instructions or "")
            assert "- late: was still starting when this was written" in (
                client.instructions or ""
            ) and "## late" not in (client.instructions or "")
            listed = _names(await client.list_tools())
            assert "echo" in listed and "late_echo" not in listed  # the cache's entries, at once
            assert _text(await client.call_tool("echo", {"text": "cached"})) == "cached"  # plain starts on its call

            # A call of the late upstream's tool, made while it starts, waits for it (eager mode: no describe).
            called: list[types.CallToolResult] = []

            async def call_late() -> None:
                called.append(await client.call_tool("late_echo", {"text": "waited"}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_late)
                assert "late_echo" not in _names(await client.list_tools())  # the listing does not wait
                assert not called
                await eventually(lambda: _true(waiting.exists()), "the late upstream's process", timeout=SPAWN)
                ready.touch()
            assert not called[0].is_error, called
            assert _text(called[0]) == "late: waited"
            assert "late_echo" in _names(await client.list_tools())
        async with Client(url, mode="legacy", cache=None) as later:  # a session opened once it is up: its instructions
            assert f"## late\n{INSTRUCTIONS}" in (later.instructions or "") and "- late: late_echo" in (
                later.instructions or ""
            )
    said = log.read_text()
    assert "starting 1 upstream(s): late" in said, said  # the cached one starts on its first call
    assert _matches(r"upstream 'late' ready after \d+\.\d s", said), said


# How long each attempt of an upstream that never answers may take, in the test below.
HANGING_START = 6.0


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-START-01")
async def test_only_the_first_start_is_waited_for_not_the_retries_of_an_upstream_that_failed_it(
    tmp_path: Path, mark: str
) -> None:
    servers = {
        "plain": stdio(sys.executable, str(PLAIN), mark=mark),
        "hang": stdio(sys.executable, "-c", "import time; time.sleep(1000)", mark=mark),  # never answers
    }
    config = write_config(tmp_path / "servers.json", servers)
    log = tmp_path / "gateway.log"
    start_timeout = ("--start-timeout", str(HANGING_START))
    async with _stdio_gateway(config, log, *start_timeout) as client:
        assert "echo" in _names(await client.list_tools())  # after hang's first start timed out
        await eventually(lambda: _true("(failure 1)" in log.read_text()), "the first failure", timeout=SPAWN)
        # The gateway retries it with backoff, each attempt as long as the first: no request waits on those. The
        # window covers the whole next attempt (its failure is logged inside it).
        worst, until = 0.0, time.monotonic() + 2 * HANGING_START
        while time.monotonic() < until or "(failure 2)" not in log.read_text():
            began = time.monotonic()
            assert "echo" in _names(await client.list_tools())
            worst = max(worst, time.monotonic() - began)
            await anyio.sleep(0.1)
            assert time.monotonic() < until + SPAWN, "no second attempt was made"
        # A request gated on the retry would wait for most of an attempt.
        assert worst < HANGING_START / 2, f"a tools/list waited {worst:.1f} s during a retry"


async def _true(value: bool) -> bool:
    return value


async def _has_tool(client: Client, name: str) -> bool:
    return name in _names(await client.list_tools())


def _matches(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


# Issue 41.3: the upstreams of the issue, nearly up (0.5 s) and slow (3 s), by the clock of the gateway's start.
QUICK, SLOW = 0.5, 3.0


def _late(tmp_path: Path, name: str, mark: str) -> tuple[dict[str, Any], Path]:
    ready = tmp_path / f"{name}.ready"
    return stdio(sys.executable, str(LATE), str(ready), mark=mark, env={"LATE_SERVER_NAME": name}), ready


def _blocks(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-INSTR-02")
@pytest.mark.req("PDX-INSTR-03")
async def test_the_first_session_receives_every_upstreams_instructions(tmp_path: Path, mark: str) -> None:
    quick, quick_ready = _late(tmp_path, "quick", mark)
    slow, slow_ready = _late(tmp_path, "slow", mark)
    config = write_config(tmp_path / "servers.json", {"quick": quick, "slow": slow})
    env = {"MCP_PD_CACHE_DIR": str(tmp_path / "user-cache")}  # nothing remembered: the gateway's first start
    log = tmp_path / "gateway.log"
    log.write_text("")
    async with anyio.create_task_group() as upstreams:
        upstreams.start_soon(_ready_after, log, quick_ready, QUICK)
        upstreams.start_soon(_ready_after, log, slow_ready, SLOW)
        async with _stdio_gateway(config, log, env=env) as client:  # answered within FIRST_ANSWER: not after 3 s
            at_start = client.instructions or ""
            assert not slow_ready.exists()  # so the slow upstream was not up when the session began
            assert "## slow" not in at_start
            assert "- slow: was still starting when this was written" in at_start, at_start
            # The one nearly up is waited for (bounded), so its instructions are the session's from the start; if a
            # loaded machine made it miss the wait, they must come with its first description below instead.
            quick_at_start = f"## quick\n{instructions_of('quick')}" in at_start

            # The slow upstream's instructions come with the first description of its tools, once.
            first = _blocks(await client.call_tool("describe_tools", {"tools": ["slow_echo", "quick_echo"]}))
            assert "inputSchema" in json.loads(first[0])["slow_echo"]  # the document itself is unchanged
            told = "\n".join(first[1:])
            assert "Instructions of the MCP server 'slow'" in told and instructions_of("slow") in told, first
            assert (instructions_of("quick") in told) is not quick_at_start, (quick_at_start, first)
            again = _blocks(await client.call_tool("describe_tools", {"tools": ["slow_echo"]}))
            assert len(again) == 1, again  # given once per session
            assert _text(await client.call_tool("slow_echo", {"text": "hi"})) == "slow: hi"

    # The next start remembers both: the session that begins before either is up has them at once.
    quick_ready.unlink()
    slow_ready.unlink()
    log.write_text("")
    async with anyio.create_task_group() as upstreams:
        upstreams.start_soon(_ready_after, log, quick_ready, QUICK)
        upstreams.start_soon(_ready_after, log, slow_ready, SLOW)
        async with _stdio_gateway(config, log, env=env) as client:
            assert not slow_ready.exists()
            at_start = client.instructions or ""
            for name in ("quick", "slow"):
                assert f"## {name}\n{instructions_of(name)}" in at_start, at_start
            # Already given: the description carries the document alone.
            assert len(_blocks(await client.call_tool("describe_tools", {"tools": ["slow_echo"]}))) == 1
    memory = json.loads((tmp_path / "user-cache" / "gateway-instructions.json").read_text())
    assert mark not in json.dumps(memory)  # keyed by a digest: the config entry's env never reaches the file


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-START-02")
async def test_a_subscribing_2026_client_connects_while_an_upstream_takes_5_s(tmp_path: Path, mark: str) -> None:
    late, ready = _late(tmp_path, "late", mark)
    config = write_config(
        tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark), "late": late}
    )
    log = tmp_path / "gateway.log"
    log.write_text("")
    seen: dict[str, float] = {}
    async with anyio.create_task_group() as upstreams:
        upstreams.start_soon(_ready_after, log, ready, 5.0)
        upstreams.start_soon(_watch_start, log, seen)
        async with _stdio_gateway(config, log, mode="auto") as client:
            assert client.protocol_version == "2026-07-28", client.protocol_version
            async with client.listen(tools_list_changed=True) as events:
                subscribed = time.monotonic() - seen["starting"]
                assert subscribed < FIRST_ANSWER, f"subscribed {subscribed:.1f} s after the start"
                assert not ready.exists()  # the late upstream is not up yet
                # Registered: the late upstream's tools are announced on the stream once it has listed (the plain
                # upstream, if it lists after the subscription, is announced too: read until the late one's tools).
                with anyio.fail_after(SPAWN):
                    async for event in events:
                        if isinstance(event, ToolsListChanged) and "late_echo" in _names(await client.list_tools()):
                            break
                assert ready.exists()
            assert {"late_echo", "echo"} <= _names(await client.list_tools())
