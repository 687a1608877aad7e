"""What a client can make the gateway hold, over HTTP (issue 39, items 1 and 7): nothing once it has gone or stalled.

Eight clients (one process) each ask for a 20 MiB answer, then vanish before it is ready (the process is killed: no
DELETE, no goodbye), or stop reading while it is written (the process is stopped with SIGSTOP: its sockets stay
open, full, unread). Whatever path the bytes take (the HTTP lane or `--no-lane`, the handshake era's SSE or the
2026-07-28 era's JSON body), the gateway's memory must come back to within 10% of what it held before, while
another client keeps being served. The baseline is taken after a whole 20 MiB answer has passed once (what the
allocator keeps of that is the gateway's steady state, not a leak).

Not held yet, both with `--no-lane` over SSE (the handshake era), where the SDK's own path writes the answer:
clients that stop reading (the write timeout cuts them off, but the gateway still held about 160 MiB, their eight
answers, 30 s later), and clients that hang up (on a quiet machine the gateway held 162-170 MiB over its baseline
of 104 MiB; in one run of session 17 at load 5 it let go, so the outcome depends on whether the call is cancelled
before its answer arrives). The cause, found in session 17 (a dump of the gateway's coroutines): the SDK's
`StreamableHTTPServerTransport.connect.message_router` routes each outgoing message in an `async for
session_message in ...` loop, and that loop variable keeps the last message routed (here the 20 MiB response,
20,992,393 bytes in each of the eight sessions) alive until the session sends something else or ends (the idle
timeout: 1800 s by default). The lane's path is not affected (the router then holds a placeholder). Those two paths
are left out below until that is fixed (issue 39 stays open on it; docs/STATUS.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from gateway.gwtest import PLAIN, connect, stdio, write_config
from gateway.test_streams import BIG, MIB, http_gateway
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio

CLIENTS = 8
ANSWER_MIB = 20

# The eight clients, in one process: connect, say "ready", wait for a line, send one `big` call each (as JSON
# arguments on argv), say "sent" once every call is on its way, then wait to be killed or stopped.
_CLIENTS = r"""
import contextlib, json, sys, anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

async def main():
    url, mode, count, arguments = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for _ in range(count):
            transport = streamable_http_client(url, max_sse_event_size=1 << 28)
            clients.append(await stack.enter_async_context(Client(transport, mode=mode, cache=None)))
        print("ready", flush=True)
        sys.stdin.readline()
        async with anyio.create_task_group() as tg:
            for client in clients:
                tg.start_soon(client.call_tool, "big", arguments)
            await anyio.sleep(0.5)
            print("sent", flush=True)
            await anyio.sleep(3600)

anyio.run(main)
"""


def _rss(pid: int) -> int:
    """What the process holds now (VmRSS), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


@contextmanager
def _clients(url: str, mode: str, arguments: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", _CLIENTS, url, mode, str(CLIENTS), arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        process.stdin.write("go\n")
        process.stdin.flush()
        assert process.stdout.readline().strip() == "sent"
        yield process
    finally:
        os.kill(process.pid, signal.SIGKILL)  # a stopped process too
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _baseline(url: str, gateway: int, b: Client) -> int:
    """The gateway's memory once a whole answer of the size at stake has passed, and it has settled."""
    async with Client(streamable_http_client(url, max_sse_event_size=1 << 28), mode="legacy", cache=None) as a:
        assert len(_text(await a.call_tool("big", {"mb": ANSWER_MIB}))) == ANSWER_MIB * MIB
    for n in range(20):
        assert _text(await b.call_tool("echo", {"text": f"warm {n}"})) == f"warm {n}"
    await anyio.sleep(1)
    return _rss(gateway)


async def _settles(gateway: int, b: Client, bound: int, seconds: float) -> list[int]:
    """The gateway's memory, every half second for up to `seconds`, until it is within `bound`; B echoes
    meanwhile (the gateway serves on)."""
    seen: list[int] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert _text(await b.call_tool("echo", {"text": "meanwhile"})) == "meanwhile"
        seen.append(_rss(gateway))
        if seen[-1] <= bound:
            break
        await anyio.sleep(0.5)
    return seen


def _config(tmp_path: Path, mark: str) -> Path:
    done = tmp_path / "answered"
    return write_config(
        tmp_path / "servers.json",
        {
            "big": stdio(sys.executable, str(BIG), mark=mark, env={"BIG_DONE_FILE": str(done)}),
            "plain": stdio(sys.executable, str(PLAIN), mark=mark),
        },
    )


def _answered(tmp_path: Path) -> int:
    try:
        return len((tmp_path / "answered").read_text().splitlines())
    except FileNotFoundError:
        return 0


_CUT_OFF = "read nothing of its response for 2 s"  # the gateway's log line for a client it disconnects

PATHS = [
    pytest.param([], "legacy", id="lane-sse"),
    pytest.param([], "auto", id="lane-json"),
    pytest.param(["--no-lane"], "legacy", id="nolane-sse"),
    pytest.param(["--no-lane"], "auto", id="nolane-json"),
]


@pytest.mark.req("PDX-HOLD-01")
@pytest.mark.parametrize(("flags", "mode"), [p for p in PATHS if p.id != "nolane-sse"])  # see the module doc
async def test_clients_that_hang_up_before_their_big_answers_leave_nothing_held(
    tmp_path: Path, mark: str, flags: list[str], mode: str
) -> None:
    config = _config(tmp_path, mark)
    args = ("--config", str(config), "--mode", "eager", *flags)
    with http_gateway(tmp_path / "gateway.log", *args) as (url, gateway):
        async with connect(url) as b:
            baseline = await _baseline(url, gateway.pid, b)
            first = _answered(tmp_path)
            # Each answer takes 3 s to be ready: the clients are gone long before.
            with _clients(url, mode, f'{{"mb": {ANSWER_MIB}, "delay": 3}}'):
                pass
            if mode == "legacy":
                # The handshake era: the calls run on in the client's session, and the answers reach the gateway.
                deadline = time.monotonic() + 120
                while _answered(tmp_path) < first + CLIENTS and time.monotonic() < deadline:
                    assert _text(await b.call_tool("echo", {"text": "waiting"})) == "waiting"
                    await anyio.sleep(0.2)
                assert _answered(tmp_path) == first + CLIENTS, "the upstream never answered the calls"
            else:
                # 2026-07-28: a request is its HTTP exchange; closing it cancels the call, up to the upstream, which
                # then never builds the answer.
                await anyio.sleep(6)
                assert _answered(tmp_path) == first, "calls whose clients hung up were not cancelled upstream"
            seen = await _settles(gateway.pid, b, int(baseline * 1.10), 30)
            assert seen[-1] <= baseline * 1.10, (
                f"the gateway holds {(seen[-1] - baseline) / MIB:.0f} MiB more than its baseline of "
                f"{baseline / MIB:.0f} MiB after {CLIENTS} clients hung up (seen: {[s // MIB for s in seen]} MiB)"
            )


@pytest.mark.req("PDX-HOLD-02")
@pytest.mark.parametrize(("flags", "mode"), PATHS[:2])  # the lane's paths: see the module doc for --no-lane
async def test_clients_that_stop_reading_their_big_answers_are_cut_off_and_leave_nothing_held(
    tmp_path: Path, mark: str, flags: list[str], mode: str
) -> None:
    config = _config(tmp_path, mark)
    args = ("--config", str(config), "--mode", "eager", "--write-timeout", "2", *flags)
    with http_gateway(tmp_path / "gateway.log", *args) as (url, gateway):
        async with connect(url) as b:
            baseline = await _baseline(url, gateway.pid, b)
            first = _answered(tmp_path)
            # The answers are ready after 1 s; by then the clients' process is stopped, its sockets open and unread.
            with _clients(url, mode, f'{{"mb": {ANSWER_MIB}, "delay": 1}}') as clients:
                os.kill(clients.pid, signal.SIGSTOP)
                deadline = time.monotonic() + 120
                while _answered(tmp_path) < first + CLIENTS and time.monotonic() < deadline:
                    assert _text(await b.call_tool("echo", {"text": "waiting"})) == "waiting"
                    await anyio.sleep(0.2)
                assert _answered(tmp_path) == first + CLIENTS, "the upstream never answered the calls"
                # Still stopped, still connected: the write timeout (2 s) is what lets their answers go. Measured
                # once every client was cut off: the upstream has written the answers some time before the gateway
                # has read them, and memory measured in between says nothing.
                log = tmp_path / "gateway.log"
                deadline = time.monotonic() + 60
                while log.read_text().count(_CUT_OFF) < CLIENTS and time.monotonic() < deadline:
                    assert _text(await b.call_tool("echo", {"text": "waiting"})) == "waiting"
                    await anyio.sleep(0.2)
                assert log.read_text().count(_CUT_OFF) == CLIENTS, log.read_text()[-2000:]
                seen = await _settles(gateway.pid, b, int(baseline * 1.10), 30)
                assert clients.poll() is None
            assert seen[-1] <= baseline * 1.10, (
                f"the gateway holds {(seen[-1] - baseline) / MIB:.0f} MiB more than its baseline of "
                f"{baseline / MIB:.0f} MiB while {CLIENTS} clients read nothing (seen: {[s // MIB for s in seen]} MiB)"
            )
