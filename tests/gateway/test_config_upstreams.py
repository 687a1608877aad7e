"""The smaller points of issue 41.6, each against real processes: a `url` that is really an SSE endpoint is said
plainly and not retried; the per-message cap is a flag and a config key; a client without roots makes no upstream
print "Failed to request roots"; SIGTERM while an upstream is still starting stops without a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from gateway.gwtest import HERE, PLAIN, connect, gateway_params, stdio, wait_for_no_pids, write_config
from mcp import Client, MCPError
from mcp.client.stdio import stdio_client
from pdtest import _wait_for_port, free_port, stop_process

pytestmark = pytest.mark.anyio


@pytest.fixture
def sse_url(npm: dict[str, Path], tmp_path: Path) -> Iterator[str]:
    """The npm `everything` server on the old HTTP+SSE transport: its endpoint is /sse."""
    port = free_port()
    with (tmp_path / "sse.log").open("wb") as err:
        env = {**os.environ, "PORT": str(port)}
        proc = subprocess.Popen(["node", str(npm["everything"]), "sse"], stdout=err, stderr=err, env=env)
        try:
            _wait_for_port(port, proc)
            yield f"http://127.0.0.1:{port}/sse"
        finally:
            stop_process(proc)


@pytest.mark.req("PDX-CONFIG-03")
async def test_a_url_that_is_an_sse_endpoint_is_said_plainly_and_not_retried(
    tmp_path: Path, mark: str, sse_url: str
) -> None:
    config = write_config(
        tmp_path / "servers.json", {"legacy": {"url": sse_url}, "plain": stdio(sys.executable, str(PLAIN), mark=mark)}
    )
    log = tmp_path / "gateway.log"
    with log.open("w") as errlog:
        async with Client(
            stdio_client(gateway_params("--config", str(config)), errlog=errlog), mode="legacy"
        ) as client:
            assert "echo" in {t.name for t in (await client.list_tools()).tools}  # the other entry is served
            await anyio.sleep(4)  # long enough for several retries at 0.5, 1 and 2 s, had there been any
    said = log.read_text()
    failures = [line for line in said.splitlines() if "upstream 'legacy'" in line]
    assert len(failures) == 2, said  # the supervisor's warning and the start-up report: one attempt, said once
    assert all(f"{sse_url} looks like an SSE endpoint" in line for line in failures), said
    assert "first event is 'endpoint'" in failures[0] and "not retried until the config changes" in failures[0]
    assert "restarting in" not in said and "error -32601" not in said, said


@pytest.mark.req("PDX-CONFIG-04")
async def test_the_message_cap_is_a_flag_and_a_config_key(tmp_path: Path, mark: str) -> None:
    big = stdio(sys.executable, str(HERE / "big_server.py"), mark=mark)
    config = write_config(tmp_path / "servers.json", {"small": big, "large": {**big, "maxMessageMiB": 8}})
    async with connect(gateway_params("--config", str(config), "--mode", "eager", "--max-message-mib", "2")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"small__big", "large__big"} <= names
        with pytest.raises(MCPError, match=r"over the limit of 2\.0 MiB per message"):
            await client.call_tool("small__big", {"mb": 3})
        passed = await client.call_tool("large__big", {"mb": 3})  # its own maxMessageMiB: 8
        assert not passed.is_error and passed.content[0].text.endswith("END")  # type: ignore[union-attr]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"mcpServers": {"x": {"command": "x", "maxMessageMiB": 0}}}))
    from mcp_pd.gateway._config import read_host_config

    assert "maxMessageMiB must be a whole number of MiB from 1 to 1024" in read_host_config(path).skipped[0][1]
    done = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "proxy", "--config", str(config), "--max-message-mib", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--max-message-mib must be from 1 to 1024" in done.stderr


@pytest.mark.req("PDX-HOST-02")
async def test_a_client_without_roots_makes_no_upstream_fail_to_request_them(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    config = write_config(
        tmp_path / "servers.json", {"fs": stdio("node", str(npm["filesystem"]), str(folder), mark=mark)}
    )
    params = gateway_params("--config", str(config), "--mode", "eager")
    params = params.model_copy(update={"args": [a for a in params.args if a != "--quiet-upstreams"]})
    log = tmp_path / "gateway.log"
    with log.open("w") as errlog:
        # No roots callback: the client declares no roots, and connects before the upstream has started.
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:
            listed = await client.call_tool("list_allowed_directories", {})
            assert str(folder) in listed.content[0].text  # type: ignore[union-attr]  # its own folder, kept
            await anyio.sleep(1)
    said = log.read_text()
    assert "Failed to request" not in said and "Roots not supported" not in said, said


@pytest.mark.req("PDX-CONFIG-05")
@pytest.mark.parametrize("attempt", [1, 2, 3])  # the traceback came from a race: each run is one more chance
def test_sigterm_while_an_upstream_is_still_starting_stops_without_a_traceback(
    tmp_path: Path, mark: str, attempt: int
) -> None:
    started = tmp_path / "started"
    late = stdio(sys.executable, str(HERE / "late_server.py"), str(tmp_path / "never"), str(started), mark=mark)
    config = write_config(tmp_path / "servers.json", {"late": late})
    port = free_port()
    params = gateway_params("--config", str(config), "--transport", "http", "--port", str(port))
    log = tmp_path / "gateway.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([params.command, *params.args], stdout=subprocess.DEVNULL, stderr=err, env=params.env)
        try:
            _wait_for_port(port, proc)
            deadline = time.monotonic() + 60
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert started.exists(), log.read_text()  # the upstream is running, and not up: start-up goes on
            time.sleep(1 + attempt)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            stop_process(proc)
    said = log.read_text()
    assert "Traceback" not in said and "CancelledError" not in said, said
    assert not wait_for_no_pids(mark), "upstreams left behind"
