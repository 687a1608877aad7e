"""Config reload (issue 21.4): editing the gateway's config adds, removes or restarts exactly the upstreams that
changed; every client's grants on the others are kept; a broken edit keeps the last good config and says why.
A real `mcp-pd proxy` over HTTP, real upstreams (the SDK plain server and the npm memory server), the real client."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
import pytest
from gateway.gwtest import gateway_params, stdio, write_config
from mcp import Client
from pdtest import _wait_for_port, free_port, stop_process

pytestmark = pytest.mark.anyio
PLAIN = Path(__file__).parent / "plain_server.py"


async def _until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.1)


async def test_an_edit_restarts_only_what_changed_and_keeps_grants(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    def servers(memory_file: str) -> dict[str, object]:
        return {
            "plain": stdio(sys.executable, str(PLAIN), mark=mark),
            "mem": stdio("node", str(npm["memory"]), mark=mark, env={"MEMORY_FILE_PATH": str(tmp_path / memory_file)}),
        }

    config = write_config(tmp_path / "servers.json", servers("one.jsonl"))
    port = free_port()
    params = gateway_params("--config", str(config), "--transport", "http", "--port", str(port))
    log = tmp_path / "gateway.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([params.command, *params.args], stdout=subprocess.DEVNULL, stderr=err, env=params.env)
        try:
            _wait_for_port(port, proc)
            said = lambda: log.read_text()  # noqa: E731
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as client:
                assert not (await client.call_tool("describe_tools", {"tools": ["echo", "pid"]})).is_error
                assert not (await client.call_tool("echo", {"text": "before"})).is_error
                pid = (await client.call_tool("pid", {})).content[0].text  # type: ignore[union-attr]
                assert pid.isdigit(), pid

                # Restart one upstream (its memory file changed); the other keeps its session and our grant.
                write_config(config, servers("two.jsonl"))
                await _until(lambda: "reloaded: restarted mem" in said(), "the reload")
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"echo", "read_graph"} <= names
                kept = await client.call_tool("echo", {"text": "after"})
                assert not kept.is_error, kept  # no TOOL_DESCRIPTION_REQUIRED: the grant survived the reload
                again = (await client.call_tool("pid", {})).content[0].text  # type: ignore[union-attr]
                assert again == pid  # the same process: untouched

                # A broken edit changes nothing and says why.
                config.write_text("{ not json")
                await _until(lambda: "not reloaded, still serving its last good version" in said(), "the refusal")
                page = httpx2.get(f"http://127.0.0.1:{port}/admin", timeout=10).text
                assert "not reloaded, still serving its last good version" in page  # the operator page says so too
                assert not (await client.call_tool("echo", {"text": "still"})).is_error

                # One entry edited into a shape no host accepts keeps its last good version serving (the rest of the
                # file is applied): the same process, the same grant.
                broken = servers("two.jsonl")
                broken["plain"] = {"command": 42}
                write_config(config, broken)
                await _until(lambda: "still serves its last good version" in said(), "the kept entry")
                assert not (await client.call_tool("echo", {"text": "kept"})).is_error
                assert (await client.call_tool("pid", {})).content[0].text == pid  # type: ignore[union-attr]

                # Removing an upstream removes its tools (and only its tools).
                write_config(config, {"plain": servers("two.jsonl")["plain"]})
                await _until(lambda: "reloaded: removed mem" in said(), "the removal")
                names = {t.name for t in (await client.list_tools()).tools}
                assert "read_graph" not in names and "echo" in names
                assert not (await client.call_tool("echo", {"text": "last"})).is_error
        finally:
            stop_process(proc, close_stderr=False)
    assert "restarted plain" not in log.read_text()
