"""Issue 41.5: task-augmented calls carried through the gateway (MCP 2025-11-25 tasks), each client's tasks its own.

The upstream is the npm reference `server-everything`, whose `simulate-research-query` runs only as a task
(`execution.taskSupport: "required"`: four stages of a second each). Two clients of one HTTP gateway share its one
upstream session; neither may see, poll, fetch or cancel the other's task. A client on another protocol version
(2026-07-28 here) is not listed the tool and is told why when it calls it.

The `mcp` 2.3 client validates a `tools/call` result as a CallToolResult, which a CreateTaskResult is not, and has
no `tasks/*` methods: the requests below go through the real client's own dispatcher as raw JSON-RPC (`_raw`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway.gwtest import MARK, connect, describe, eventually, gateway_params, http_gateway, stdio, write_config
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_pd.gateway._tasks import PER_CLIENT
from pdtest import _wait_for_port, free_port, stop_process

TOOL = "simulate-research-query"
# Generous: the tool's four stages take 4 s on an idle machine.
DONE_WITHIN = 60.0


async def _raw(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """`method` sent by `client` as raw JSON-RPC (see the module's docstring)."""
    answer: dict[str, Any] = await client.session._dispatcher.send_raw_request(method, params, {"timeout": 120})
    return answer


async def _create(client: Client, topic: str) -> str:
    created = await _raw(client, "tools/call", {"name": TOOL, "arguments": {"topic": topic}, "task": {"ttl": 60000}})
    task = created["task"]
    assert task["status"] == "working", created
    assert isinstance(task["taskId"], str) and len(task["taskId"]) >= 20, created  # the gateway's own, unguessable
    return str(task["taskId"])


async def _refused(client: Client, method: str, task_id: str) -> str:
    with pytest.raises(MCPError) as refused:
        await _raw(client, method, {"taskId": task_id})
    assert refused.value.code == types.INVALID_PARAMS, refused.value
    return refused.value.message


@contextmanager
def _everything(npm: dict[str, Path], mark: str, transport: str, log: Path) -> Iterator[dict[str, Any]]:
    """The config entry of the everything server: a stdio command, or a Streamable HTTP server on a free port."""
    if transport == "stdio":
        yield stdio("node", str(npm["everything"]), mark=mark)
        return
    port = free_port()
    env = {**os.environ, MARK: mark, "PORT": str(port)}
    with log.open("wb") as err:
        proc = subprocess.Popen(["node", str(npm["everything"]), "streamableHttp"], stdout=err, stderr=err, env=env)
        try:
            _wait_for_port(port, proc)
            yield {"url": f"http://localhost:{port}/mcp"}
        finally:
            stop_process(proc)


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-TASK-01")
@pytest.mark.req("PDX-TASK-02")
@pytest.mark.parametrize("upstream", ["stdio", "http"])
async def test_a_task_runs_through_the_gateway_and_each_client_sees_only_its_own(
    tmp_path: Path, npm: dict[str, Path], mark: str, upstream: str
) -> None:
    log = tmp_path / "gateway.log"
    with _everything(npm, mark, upstream, tmp_path / "everything.log") as entry:
        config = write_config(tmp_path / "servers.json", {"everything": entry})
        await _two_clients(config, log)


async def _two_clients(config: Path, log: Path) -> None:
    async with (
        http_gateway(config, log) as url,
        Client(url, mode="legacy", cache=None) as alice,
        Client(url, mode="legacy", cache=None) as bob,
    ):
        assert alice.protocol_version == "2025-11-25"
        # Declared, because the upstream runs task-augmented tool calls.
        tasks = alice.server_capabilities.tasks
        assert tasks is not None and tasks.requests is not None and tasks.requests.tools is not None, tasks
        listed = {t.name: t for t in (await alice.list_tools()).tools}
        assert TOOL in listed  # listed to a client whose protocol has tasks
        await describe(alice, TOOL)
        await describe(bob, TOOL)

        # A plain call of it is refused with why, not "not found".
        with pytest.raises(MCPError) as plain:
            await alice.call_tool(TOOL, {"topic": "plain"})
        assert plain.value.code == types.METHOD_NOT_FOUND and "runs only as a task" in plain.value.message, plain.value
        assert "not found" not in plain.value.message.lower()

        mine = await _create(alice, "gateways")
        theirs = await _create(bob, "tasks")
        assert mine != theirs

        # Each client lists only its own task, though both live in the one upstream session.
        assert [t["taskId"] for t in (await _raw(alice, "tasks/list", {}))["tasks"]] == [mine]
        assert [t["taskId"] for t in (await _raw(bob, "tasks/list", {}))["tasks"]] == [theirs]
        # Another client's task id is "not found", exactly like one never given: no get, result or cancel.
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            message = await _refused(bob, method, mine)
            assert message == (await _refused(bob, method, "never-given")).replace("never-given", mine)
        status = await _raw(alice, "tasks/get", {"taskId": mine})
        assert status["taskId"] == mine and status["status"] in ("working", "completed"), status

        # Bob cancels his own while it runs; Alice's list never showed it, and still does not.
        cancelled = await _raw(bob, "tasks/cancel", {"taskId": theirs})
        assert cancelled["taskId"] == theirs and cancelled["status"] == "cancelled", cancelled
        assert (await _raw(bob, "tasks/get", {"taskId": theirs}))["status"] == "cancelled"

        # The result, once done, is the upstream's (its related-task names our id, never the upstream's).
        with anyio.fail_after(DONE_WITHIN):
            result = await _raw(alice, "tasks/result", {"taskId": mine})
        report = types.CallToolResult.model_validate(result)
        assert not report.is_error, result
        text = "\n".join(b.text for b in report.content if isinstance(b, types.TextContent))
        assert "# Research Report: gateways" in text, text
        related = (result.get("_meta") or {}).get("io.modelcontextprotocol/related-task")
        assert related is None or related["taskId"] == mine, result
        assert (await _raw(alice, "tasks/get", {"taskId": mine}))["status"] == "completed"
        assert theirs not in json.dumps(await _raw(alice, "tasks/list", {}))


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-TASK-03")
async def test_a_client_without_tasks_is_told_why_a_task_only_tool_is_not_its(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    config = write_config(tmp_path / "servers.json", {"everything": stdio("node", str(npm["everything"]), mark=mark)})
    log = tmp_path / "gateway.log"
    async with http_gateway(config, log, "--mode", "eager") as url, Client(url, cache=None) as modern:
        assert modern.protocol_version == "2026-07-28"
        names = {t.name for t in (await modern.list_tools()).tools}
        assert "echo" in names and TOOL not in names  # not listed: this client cannot run it
        with pytest.raises(MCPError) as refused:
            await modern.call_tool(TOOL, {"topic": "x"})
        message = refused.value.message
        assert refused.value.code == types.METHOD_NOT_FOUND, refused.value
        assert "runs only as a task" in message and "2026-07-28" in message, message
        assert "not found" not in message.lower() and "not served" not in message.lower()


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-TASK-02")
async def test_what_a_client_holds_is_bounded_and_let_go_when_it_leaves(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    config = write_config(tmp_path / "servers.json", {"everything": stdio("node", str(npm["everything"]), mark=mark)})
    log = tmp_path / "gateway.log"
    async with (
        http_gateway(config, log, "--mode", "eager", "--log-level", "INFO") as url,
        Client(url, mode="legacy", cache=None) as keeper,
    ):
        kept = await _create(keeper, "kept")
        async with Client(url, mode="legacy", cache=None) as greedy:
            held = [await _create(greedy, f"topic {n}") for n in range(PER_CLIENT)]
            with pytest.raises(MCPError) as refused:
                await _create(greedy, "one more")
            assert "Too many tasks held (64 for one client)" in refused.value.message, refused.value
            # The bound is the greedy client's: another client still creates tasks.
            other = await _create(keeper, "still mine")
            assert {t["taskId"] for t in (await _raw(greedy, "tasks/list", {}))["tasks"]} == set(held)
        # The greedy client has gone: its tasks are forgotten and cancelled upstream; the keeper's are untouched.
        await eventually(lambda: _said(log, f"its {PER_CLIENT} task(s) are forgotten and cancelled upstream"))
        assert {t["taskId"] for t in (await _raw(keeper, "tasks/list", {}))["tasks"]} == {kept, other}
        for task_id in held[:3]:  # and nobody can reach them any more
            await _refused(keeper, "tasks/get", task_id)


async def _said(log: Path, text: str) -> bool:
    return text in log.read_text()


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.req("PDX-TASK-01")
@pytest.mark.req("PDX-TASK-03")
async def test_over_stdio_a_plain_call_is_told_why_and_a_task_call_runs(
    tmp_path: Path, npm: dict[str, Path], mark: str
) -> None:
    # Over stdio the gateway's fast lane takes admitted plain calls: a task-only tool's must still be told why.
    config = write_config(tmp_path / "servers.json", {"everything": stdio("node", str(npm["everything"]), mark=mark)})
    async with connect(gateway_params("--config", str(config))) as client:
        await describe(client, TOOL, "echo")
        assert _texts(await client.call_tool("echo", {"message": "lane"})) == "Echo: lane"  # the lane is in use
        with pytest.raises(MCPError) as plain:
            await client.call_tool(TOOL, {"topic": "plain"})
        assert plain.value.code == types.METHOD_NOT_FOUND and "runs only as a task" in plain.value.message
        mine = await _create(client, "stdio")
        with anyio.fail_after(DONE_WITHIN):
            result = types.CallToolResult.model_validate(await _raw(client, "tasks/result", {"taskId": mine}))
        assert "# Research Report: stdio" in _texts(result)


def _texts(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
