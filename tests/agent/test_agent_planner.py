"""The offline planner runs every scripted task against the real reference server over stdio."""

from __future__ import annotations

import pytest
from mcp_pd_agent import TASKS, PlannerBackend, ServerSpec, check_run, connect, run_agent

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("task", TASKS, ids=[t.key for t in TASKS])
async def test_task_outcome_holds(task):
    async with connect(ServerSpec.reference()) as server:
        run = await run_agent(server, PlannerBackend(task.missteps), task.prompt)
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


async def test_task_set_covers_the_issue():
    assert len(TASKS) >= 10
    assert sum(len(t.tools) >= 2 for t in TASKS) >= 3
    provoked = {code for t in TASKS for code in t.expect_errors}
    assert provoked == {"TOOL_DESCRIPTION_REQUIRED", "MISSING_TOOL_SELECTION", "TOOL_NOT_FOUND"}
    assert len({t.key for t in TASKS}) == len(TASKS)


def test_planner_rejects_unknown_missteps():
    with pytest.raises(ValueError, match="unknown missteps"):
        PlannerBackend(["call_twice"])
