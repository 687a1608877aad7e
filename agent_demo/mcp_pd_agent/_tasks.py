"""The scripted task set: natural-language tasks for the reference server's real tools, each with a check.

Every task runs in a fresh session against a fresh reference server (in-memory database seeded with the
demo data: projects 1-3 active, 4 archived; tasks 1-15; comments on tasks 2, 4, 7, 9), so a new task gets
id 16. Checks look at what the tools returned in the run, so they hold for any back-end that did the work.
Some tasks need two or three tools; three provoke one error path each (for the offline planner through a
scripted misstep; for a model, the prompt invites the same mistake).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._loop import Run

__all__ = ["CATALOG_TASKS", "TASKS", "Task", "check_run"]

Check = Callable[[Run], str | None]


@dataclass(frozen=True)
class Task:
    """A prompt, what it should exercise, and how to tell it worked."""

    key: str
    prompt: str
    check: Check
    tools: tuple[str, ...]  # tools a correct run calls (for the docs; checks do not depend on the order)
    missteps: tuple[str, ...] = ()  # scripted planner missteps
    expect_errors: tuple[str, ...] = ()  # error codes this task exists to provoke (planner runs)
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _close(value: Any, target: float, tolerance: float = 1e-6) -> bool:
    return isinstance(value, (int, float)) and abs(float(value) - target) <= tolerance * max(1.0, abs(target))


def _field(run: Run, tool: str, key: str) -> Any:
    data = run.result(tool)
    return data.get(key) if isinstance(data, dict) else None


def _need(condition: bool, message: str) -> str | None:
    return None if condition else message


def _calc_percent(run: Run) -> str | None:
    return _need(_close(_field(run, "calculate", "result"), 397.8), "calculate did not give 397.8")


def _calc_power(run: Run) -> str | None:
    return _need(_field(run, "calculate", "result") == 2**64 - 1, "calculate did not give 2**64 - 1")


def _convert_marathon(run: Run) -> str | None:
    data = run.result("convert_units") or {}
    ok = data.get("from_unit") == "mi" and data.get("to_unit") == "km" and _close(data.get("result"), 42.16481, 1e-5)
    return _need(ok, "convert_units did not turn 26.2 mi into 42.16 km")


def _convert_fever(run: Run) -> str | None:
    data = run.result("convert_units") or {}
    ok = data.get("from_unit") == "F" and data.get("to_unit") == "C" and _close(data.get("result"), 37.7778, 1e-4)
    return _need(ok, "convert_units did not turn 100 F into 37.78 C")


def _convert_5k(run: Run) -> str | None:
    data = run.result("convert_units") or {}
    ok = data.get("from_unit") == "km" and data.get("to_unit") == "mi" and _close(data.get("result"), 3.10686, 1e-5)
    return _need(ok, "convert_units did not turn 5 km into 3.107 mi")


def _hash(run: Run) -> str | None:
    expected = hashlib.sha256(b"hello world").hexdigest()
    data = run.result("hash_text") or {}
    return _need(data.get("hex_digest") == expected, "hash_text did not return the SHA-256 of 'hello world'")


def _words(run: Run) -> str | None:
    return _need(_field(run, "text_stats", "words") == 9, "text_stats did not count 9 words")


def _projects(run: Run) -> str | None:
    data = run.result("list_projects") or {}
    names = {p.get("name") for p in data.get("projects", [])}
    ok = names == {"Website redesign", "Mobile app 2.0", "Support tooling"}
    return _need(ok, "list_projects did not return the three active projects")


def _alice(run: Run) -> str | None:
    data = run.result("list_tasks") or {}
    tasks = data.get("tasks", [])
    ok = bool(tasks) and all(t.get("assignee") == "alice" and t.get("status") != "done" for t in tasks)
    return _need(ok and data.get("total") == 2, "list_tasks did not return alice's 2 open tasks")


def _workload(run: Run) -> str | None:
    data = run.result("workload_report") or {}
    return _need(data.get("total_open") == 11 and bool(data.get("people")), "workload_report did not cover 11 tasks")


def _summary(run: Run) -> str | None:
    data = run.result("project_summary") or {}
    project = data.get("project") or {}
    return _need(project.get("name") == "Mobile app 2.0", "project_summary was not for 'Mobile app 2.0'")


def _create_assign(run: Run) -> str | None:
    created = run.result("create_task") or {}
    assigned = run.result("assign_task") or {}
    ok = (
        created.get("title") == "Write release notes"
        and created.get("project_name") == "Website redesign"
        and created.get("priority") == "high"
        and assigned.get("id") == created.get("id")
        and assigned.get("assignee") == "carol"
    )
    return _need(ok, "no high-priority 'Write release notes' task in Website redesign assigned to carol")


def _comment(run: Run) -> str | None:
    hits = (run.result("search_tasks") or {}).get("matches", [])
    comment = run.result("add_comment") or {}
    ok = (
        bool(hits)
        and hits[0].get("id") == 9
        and comment.get("task_id") == 9
        and comment.get("author") == "dave"
        and comment.get("body") == "Fix verified on Android 14."
    )
    return _need(ok, "dave's comment did not land on task 9 (the refresh-token crash)")


def _project_task_done(run: Run) -> str | None:
    project = run.result("create_project") or {}
    task = run.result("complete_task") or {}
    ok = (
        project.get("name") == "Hiring pipeline"
        and task.get("project_id") == project.get("id")
        and task.get("title") == "Draft job ad"
        and task.get("status") == "done"
    )
    return _need(ok, "no done 'Draft job ad' task in a new 'Hiring pipeline' project")


TASKS: tuple[Task, ...] = (
    Task("percent", "Calculate 17% of 2,340.", _calc_percent, ("calculate",)),
    Task("marathon", "Convert 26.2 mi to km.", _convert_marathon, ("convert_units",)),
    Task("sha256", "Compute the SHA-256 hash of 'hello world'.", _hash, ("hash_text",)),
    Task("words", "Count the words in 'The quick brown fox jumps over the lazy dog'.", _words, ("text_stats",)),
    Task("projects", "List the active projects.", _projects, ("list_projects",)),
    Task("alice", "List the open tasks assigned to @alice.", _alice, ("list_tasks",)),
    Task("workload", "Show the workload report: who has how much open work?", _workload, ("workload_report",)),
    Task(
        "summary",
        "How is the Mobile app 2.0 project going? Give me its project summary.",
        _summary,
        ("list_projects", "project_summary"),
        note="two tools: the project id is looked up by name",
    ),
    Task(
        "create-assign",
        "Create a task 'Write release notes' in the Website redesign project with priority high, "
        "then assign it to @carol.",
        _create_assign,
        ("list_projects", "create_task", "assign_task"),
        note="three tools",
    ),
    Task(
        "comment",
        "Search for tasks mentioning 'refresh token', then add a comment to the first one as @dave "
        "saying 'Fix verified on Android 14.'",
        _comment,
        ("search_tasks", "add_comment"),
        note="two tools: the comment goes on the first search hit",
    ),
    Task(
        "new-project",
        "Create a project named 'Hiring pipeline', then create a task titled 'Draft job ad' in it, "
        "then mark that task done.",
        _project_task_done,
        ("create_project", "create_task", "complete_task"),
        note="three tools, each using the previous result's id",
    ),
    Task(
        "call-first",
        "Call calculate straight away, before reading its description: what is 2 ** 64 - 1?",
        _calc_power,
        ("calculate",),
        missteps=("call_before_fetch",),
        expect_errors=("TOOL_DESCRIPTION_REQUIRED",),
        note="error path: calling before fetching",
    ),
    Task(
        "bare-read",
        "First read the tool descriptions without naming any tool, then convert 100 F to C.",
        _convert_fever,
        ("convert_units",),
        missteps=("read_without_tools",),
        expect_errors=("MISSING_TOOL_SELECTION",),
        note="error path: a read without ?tools=",
    ),
    Task(
        "unknown-name",
        "Use the `unit_converter` tool to convert 5 km to mi.",
        _convert_5k,
        ("convert_units",),
        expect_errors=("TOOL_NOT_FOUND",),
        note="error path: a tool name that does not exist",
    ),
)


def check_run(task: Task, run: Run) -> str | None:
    """The task's own check, plus the workflow every run must follow. None when all holds."""
    if run.stopped != "answer":
        return "the agent did not finish (turn limit)"
    authorized: set[str] = set()
    for step in run.steps:
        if step.kind == "read":
            authorized |= set(run_fetched(step))
        elif step.kind == "call" and step.ok and step.name not in authorized:
            return f"{step.name} succeeded without its description having been read in this run"
    return task.check(run)


def run_fetched(step: Any) -> list[str]:
    data = step.reply.data if step.reply is not None else None
    if not isinstance(data, dict):
        return []
    return [n for n, e in data.items() if isinstance(e, dict) and "inputSchema" in e]


# -- the 322-tool combined catalog, served in simulation mode ---------------------------------------------


def _simulated(*tools: str) -> Check:
    def check(run: Run) -> str | None:
        for tool in tools:
            calls = run.calls(tool, ok=True)
            if not calls or not isinstance(calls[-1].reply and calls[-1].reply.data, dict):
                return f"{tool} was not called successfully"
        return None

    return check


CATALOG_TASKS: tuple[Task, ...] = (
    Task(
        "fs-read",
        "Read the text file /var/log/syslog.",
        _simulated("read_text_file"),
        ("read_text_file",),
    ),
    Task(
        "browser",
        "Navigate the browser to https://example.com, then take a browser screenshot of the page.",
        _simulated("browser_navigate", "browser_take_screenshot"),
        ("browser_navigate", "browser_take_screenshot"),
    ),
    Task(
        "k8s-pods",
        "List the pods in namespace 'kube-system'.",
        _simulated("pods_list_in_namespace"),
        ("pods_list_in_namespace",),
    ),
    Task(
        "github-issues",
        "Search GitHub issues for 'memory leak'.",
        _simulated("search_issues"),
        ("search_issues",),
    ),
    Task(
        "memory-search",
        "Search the knowledge graph nodes for 'Berlin office'.",
        _simulated("search_nodes"),
        ("search_nodes",),
    ),
)
