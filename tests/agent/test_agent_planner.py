"""The offline planner runs every scripted task against the real reference server over stdio, in both hosts.

resources: the host reads the tool_descriptions resource for the model (the synthetic reader function);
tools-only: the model can only call the server's tools, so it fetches with the server's describe tool.
"""

from __future__ import annotations

import sys

import pytest
from mcp_pd_agent import HOSTS, READ_FUNCTION, TASKS, PlannerBackend, ServerSpec, check_run, connect, run_agent

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("task", TASKS, ids=[t.key for t in TASKS])
async def test_task_outcome_holds(task, host):
    async with connect(ServerSpec.reference()) as server:
        assert server.describe_tool == "describe_tools"
        run = await run_agent(server, PlannerBackend(task.missteps), task.prompt, host=host)
    assert check_run(task, run) is None, [(s.kind, s.name, s.arguments, s.error_code) for s in run.steps]
    # every provoked error path was seen, then recovered from (the check above passed afterwards)
    for code in task.expect_errors:
        assert code in run.error_codes()
    if not task.expect_errors:
        assert run.error_codes() == []
    # the tools the task documents are the ones that were called successfully
    assert {s.name for s in run.calls(ok=True)} == set(task.tools)
    assert run.answer is not None
    assert run.answer.startswith("[offline planner, not a model]")
    # fetch before call: every successful call's tool was fetched by an earlier read of this run
    fetched: set[str] = set()
    for step in run.steps:
        if step.kind == "read" and isinstance(step.reply.data, dict):
            fetched |= {name for name, entry in step.reply.data.items() if "inputSchema" in entry}
        if step.kind == "call" and step.ok:
            assert step.name in fetched
    if task.key == "new-project":
        # the first read names every tool the task's steps need, at once (spec: ?tools=a,b,c)
        assert run.reads()[0].tools == ("create_project", "create_task", "complete_task")
    # each host fetches its own way: the resource through the reader, or the server's describe tool
    assert {s.name for s in run.reads()} == {READ_FUNCTION if host == "resources" else "describe_tools"}
    if task.key == "call-first":
        refused, recovery = run.steps[0], run.steps[1]
        assert refused.error_code == "TOOL_DESCRIPTION_REQUIRED"
        error = refused.reply.data["error"]
        assert error["describe_tool_call"] == {"name": "describe_tools", "arguments": {"tools": ["calculate"]}}
        if host == "tools-only":
            # the planner makes the call the error spells out, arguments as given
            assert (recovery.name, recovery.arguments) == ("describe_tools", error["describe_tool_call"]["arguments"])
        else:
            assert (recovery.name, recovery.tools) == (READ_FUNCTION, ("calculate",))


async def test_task_set_covers_the_issue():
    assert len(TASKS) >= 10
    assert sum(len(t.tools) >= 2 for t in TASKS) >= 3
    provoked = {code for t in TASKS for code in t.expect_errors}
    assert provoked == {"TOOL_DESCRIPTION_REQUIRED", "MISSING_TOOL_SELECTION", "TOOL_NOT_FOUND"}
    assert len({t.key for t in TASKS}) == len(TASKS)


def test_planner_rejects_unknown_missteps():
    with pytest.raises(ValueError, match="unknown missteps"):
        PlannerBackend(["call_twice"])


# The reference server with describe_tool=False, run over stdio like `mcp-pd serve` (a real server process).
_NO_DESCRIBE_TOOL = (
    "import anyio; from mcp_pd.reference import build_reference_server; "
    "app, pd = build_reference_server(describe_tool=False); anyio.run(app.run_stdio_async)"
)


async def test_tools_only_host_refuses_a_server_without_a_describe_tool():
    task = next(t for t in TASKS if t.key == "percent")
    async with connect(ServerSpec.stdio([sys.executable, "-c", _NO_DESCRIBE_TOOL])) as server:
        assert server.describe_tool is None and "describe_tools" not in server.tool_names
        with pytest.raises(ValueError, match="the tools-only host needs a describe tool"):
            await run_agent(server, PlannerBackend(), task.prompt, host="tools-only")
        # the resources host still works there: it reads the resource
        run = await run_agent(server, PlannerBackend(), task.prompt)
    assert check_run(task, run) is None
