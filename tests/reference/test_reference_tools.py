"""The reference server's real tools (tracker + utilities) and their tool_descriptions/ definitions.

Every tool call goes through the real client against a plain MCPServer, so argument validation,
structured output and error reporting are the SDK's own.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from jsonschema import Draft202012Validator, FormatChecker
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_pd._model import ToolDefinition
from mcp_pd.reference._tracker import Tracker, TrackerError, register_tracker_tools
from mcp_pd.reference._utilities import calculate_expression, register_utility_tools

DEFINITIONS = Path(__file__).resolve().parents[2] / "tool_descriptions"
NOW = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
CATEGORIES = {"projects", "tasks", "comments", "reports", "utilities"}
READ_ONLY = {
    "list_projects",
    "get_project",
    "get_task",
    "list_tasks",
    "search_tasks",
    "list_comments",
    "project_summary",
    "workload_report",
    "calculate",
    "convert_units",
    "text_stats",
    "hash_text",
}
DESTRUCTIVE = {"archive_project", "delete_task"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def fixed_clock() -> datetime:
    return NOW


def build(tracker: Tracker | None = None) -> tuple[MCPServer[Any], list[str]]:
    app: MCPServer[Any] = MCPServer("t")
    tracker = tracker if tracker is not None else Tracker(":memory:", clock=fixed_clock)
    return app, register_tracker_tools(app, tracker) + register_utility_tools(app)


def connect(app: MCPServer[Any]) -> Client:
    return Client(app, mode="legacy", cache=None)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    body: dict[str, Any] | None = result.structured_content
    assert body is not None
    return body


async def fail(client: Client, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, result.structured_content
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


def definitions() -> dict[str, dict[str, Any]]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(DEFINITIONS.glob("*.json"))}


def example_cases() -> list[Any]:
    return [
        pytest.param(name, example["input"], id=f"{name}-{index}")
        for name, body in definitions().items()
        for index, example in enumerate(body["examples"])
    ]


# -- registration ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_tools_are_registered_with_titles_annotations_and_schemas() -> None:
    app, names = build()
    async with connect(app) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == names
    assert 15 <= len(names) <= 20
    assert len(set(names)) == len(names)
    for name, tool in tools.items():
        assert NAME.fullmatch(name), name
        assert tool.title, name
        assert tool.description and tool.description.split("\n")[0].endswith("."), name
        assert tool.description == inspect.cleandoc(tool.description), name
        assert tool.output_schema is not None and tool.output_schema.get("type") == "object", name
        assert tool.annotations is not None, name
        assert tool.annotations.read_only_hint is (name in READ_ONLY), name
        assert tool.annotations.open_world_hint is False, name
        if name not in READ_ONLY:
            assert tool.annotations.destructive_hint is (name in DESTRUCTIVE), name
        for prop in tool.input_schema.get("properties", {}).values():
            assert prop.get("description"), (name, prop)


# -- the tracker itself ----------------------------------------------------------------------------


def test_seed_data_is_loaded_once_and_persists(tmp_path: Path) -> None:
    path = str(tmp_path / "tracker.db")
    with Tracker(path, clock=fixed_clock) as tracker:
        projects = tracker.list_projects(include_archived=True)
        assert [p.name for p in projects.projects] == [
            "Office move",
            "Support tooling",
            "Mobile app 2.0",
            "Website redesign",
        ]
        assert sum(p.total_tasks for p in projects.projects) == 15
        assert tracker.list_comments(4).total == 2
        created = tracker.create_task(1, "Survives a restart")
    with Tracker(path, clock=fixed_clock) as reopened:  # not seeded again, data kept
        assert reopened.list_projects(include_archived=True).total == 4
        assert reopened.get_task(created.id).title == "Survives a restart"
    with Tracker(":memory:", seed=False) as empty:
        assert empty.list_projects(include_archived=True).total == 0
        assert empty.list_tasks().total == 0


def test_tracker_is_safe_to_share_between_threads() -> None:
    tracker = Tracker(":memory:", clock=fixed_clock)
    project = tracker.create_project("Load test")
    created: list[int] = []
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(25):
                task = tracker.create_task(project.id, f"worker {n} task {i}", assignee=f"user{n}")
                tracker.add_comment(task.id, f"user{n}", "started")
                created.append(task.id)
                tracker.list_tasks(project_id=project.id, limit=5)
                tracker.workload_report(project.id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(created)) == 200
    assert tracker.get_project(project.id).total_tasks == 200
    report = tracker.workload_report(project.id)
    assert [(e.assignee, e.open) for e in report.people] == [(f"user{n}", 25) for n in range(8)]


def test_deleting_a_task_removes_its_comments() -> None:
    tracker = Tracker(":memory:", clock=fixed_clock)
    deleted = tracker.delete_task(4)
    assert deleted.comments_deleted == 2
    with pytest.raises(TrackerError, match="Task 4 not found"):
        tracker.list_comments(4)
    assert tracker._conn.execute("SELECT COUNT(*) FROM comments WHERE task_id = 4").fetchone()[0] == 0


# -- tracker tools through the client --------------------------------------------------------------


@pytest.mark.anyio
async def test_project_lifecycle() -> None:
    app, _ = build()
    async with connect(app) as client:
        created = await call(client, "create_project", {"name": "  Q1 security review ", "description": "Pen tests"})
        assert created["name"] == "Q1 security review"
        assert (created["status"], created["open_tasks"], created["total_tasks"]) == ("active", 0, 0)
        pid = created["id"]
        assert (await call(client, "get_project", {"project_id": pid}))["name"] == "Q1 security review"
        listed = await call(client, "list_projects", {})
        assert listed["projects"][0]["id"] == pid  # newest first
        assert "Office move" not in {p["name"] for p in listed["projects"]}
        error = await fail(client, "create_project", {"name": "q1 SECURITY review"})
        assert f"already exists (id {pid})" in error

        archived = await call(client, "archive_project", {"project_id": pid})
        assert archived["status"] == "archived" and archived["archived_at"] is not None
        again = await call(client, "archive_project", {"project_id": pid})  # idempotent
        assert again == archived
        assert pid not in {p["id"] for p in (await call(client, "list_projects", {}))["projects"]}
        everything = await call(client, "list_projects", {"include_archived": True})
        assert pid in {p["id"] for p in everything["projects"]}
        error = await fail(client, "create_task", {"project_id": pid, "title": "Too late"})
        assert f"Project {pid} ('Q1 security review') is archived" in error


@pytest.mark.anyio
async def test_task_lifecycle() -> None:
    app, _ = build()
    async with connect(app) as client:
        task = await call(
            client,
            "create_task",
            {
                "project_id": 1,
                "title": "Add cookie consent banner",
                "description": "Banner on every page; remember the choice.",
                "priority": "high",
                "assignee": "Carol",
                "due_date": "2026-03-20",
            },
        )
        tid = task["id"]
        assert task["assignee"] == "carol"  # handles are lower-cased
        assert (task["status"], task["priority"], task["due_date"], task["overdue"]) == (
            "todo",
            "high",
            "2026-03-20",
            False,
        )
        assert task["project_name"] == "Website redesign"
        assert await call(client, "get_task", {"task_id": tid}) == task

        updated = await call(client, "update_task", {"task_id": tid, "status": "in_progress", "due_date": "2026-03-01"})
        assert updated["status"] == "in_progress"
        assert updated["overdue"] is True  # due before NOW
        assert updated["title"] == task["title"]  # untouched fields stay
        assert updated["priority"] == "high"
        cleared = await call(client, "update_task", {"task_id": tid, "clear_due_date": True})
        assert cleared["due_date"] is None and cleared["overdue"] is False

        assert (await call(client, "assign_task", {"task_id": tid, "assignee": "dave"}))["assignee"] == "dave"
        assert (await call(client, "assign_task", {"task_id": tid, "assignee": None}))["assignee"] is None
        await call(client, "assign_task", {"task_id": tid, "assignee": "bob"})

        bobs = await call(client, "list_tasks", {"assignee": "bob", "status": "in_progress"})
        assert tid in {t["id"] for t in bobs["tasks"]}
        assert all(t["assignee"] == "bob" and t["status"] == "in_progress" for t in bobs["tasks"])

        comment = await call(client, "add_comment", {"task_id": tid, "author": "bob", "body": "Legal approved."})
        assert (comment["task_id"], comment["author"], comment["body"]) == (tid, "bob", "Legal approved.")
        await call(client, "add_comment", {"task_id": tid, "author": "alice", "body": "Ship it."})
        comments = await call(client, "list_comments", {"task_id": tid})
        assert [c["body"] for c in comments["comments"]] == ["Legal approved.", "Ship it."]
        assert (await call(client, "get_task", {"task_id": tid}))["comment_count"] == 2

        done = await call(client, "complete_task", {"task_id": tid})
        assert done["status"] == "done" and done["completed_at"] is not None
        error = await fail(client, "complete_task", {"task_id": tid})
        assert f"Task {tid} is already done" in error and "update_task" in error
        reopened = await call(client, "update_task", {"task_id": tid, "status": "todo"})
        assert reopened["completed_at"] is None

        summary = await call(client, "project_summary", {"project_id": 1})
        assert summary["by_status"] == {"todo": 4, "in_progress": 1, "blocked": 1, "done": 1}
        assert summary["project"]["total_tasks"] == 7

        deleted = await call(client, "delete_task", {"task_id": tid})
        assert deleted["deleted"] is True and deleted["comments_deleted"] == 2 and deleted["task"]["id"] == tid
        assert f"Task {tid} not found" in await fail(client, "get_task", {"task_id": tid})
        assert f"Task {tid} not found" in await fail(client, "list_comments", {"task_id": tid})
        assert (await call(client, "project_summary", {"project_id": 1}))["project"]["total_tasks"] == 6


@pytest.mark.anyio
async def test_list_tasks_filters_sorting_and_pagination() -> None:
    app, _ = build()
    async with connect(app) as client:
        everything = await call(client, "list_tasks", {"limit": 100})
        assert everything["total"] == 13  # the archived project's 2 tasks are left out
        assert everything["next_offset"] is None
        with_archived = await call(client, "list_tasks", {"include_archived": True, "limit": 100})
        assert with_archived["total"] == 15
        archived_only = await call(client, "list_tasks", {"project_id": 4})
        assert {t["id"] for t in archived_only["tasks"]} == {14, 15}

        open_tasks = await call(client, "list_tasks", {"project_id": 1, "status": "open"})
        assert {t["id"] for t in open_tasks["tasks"]} == {2, 3, 4, 5, 6}
        assert [t["priority"] for t in open_tasks["tasks"]] == ["urgent", "high", "high", "medium", "low"]

        overdue = await call(
            client, "list_tasks", {"status": "open", "due_before": "2026-03-10", "sort_by": "due_date"}
        )
        assert [t["id"] for t in overdue["tasks"]] == [8, 4, 9, 5]
        assert all(t["overdue"] for t in overdue["tasks"])

        urgent = await call(client, "list_tasks", {"priority": "urgent"})
        assert {t["id"] for t in urgent["tasks"]} == {4, 7, 9}

        first = await call(client, "list_tasks", {"limit": 5})
        second = await call(client, "list_tasks", {"limit": 5, "offset": first["next_offset"]})
        third = await call(client, "list_tasks", {"limit": 5, "offset": second["next_offset"]})
        assert (first["next_offset"], second["next_offset"], third["next_offset"]) == (5, 10, None)
        pages = [t["id"] for page in (first, second, third) for t in page["tasks"]]
        assert pages == [t["id"] for t in everything["tasks"]]

        newest = await call(client, "list_tasks", {"sort_by": "created_at", "limit": 1})
        assert newest["tasks"][0]["id"] == 13


@pytest.mark.anyio
async def test_search_tasks_ranks_title_matches_first() -> None:
    app, _ = build()
    async with connect(app) as client:
        token = await call(client, "search_tasks", {"query": "TOKEN"})
        assert [hit["id"] for hit in token["matches"]] == [9, 4]  # title match, then description match
        assert token["matches"][0]["score"] == 4 and token["matches"][1]["score"] == 1
        assert "token" in token["matches"][1]["snippet"].lower()

        both = await call(client, "search_tasks", {"query": "onboarding analytics"})
        assert [hit["id"] for hit in both["matches"]] == [11]
        either = await call(client, "search_tasks", {"query": "onboarding analytics", "match": "any"})
        assert {hit["id"] for hit in either["matches"]} == {10, 11}
        assert either["matches"][0]["id"] == 11  # both words in the title

        open_only = await call(client, "search_tasks", {"query": "onboarding", "include_done": False})
        assert 11 not in {hit["id"] for hit in open_only["matches"]}
        scoped = await call(client, "search_tasks", {"query": "token", "project_id": 2})
        assert [hit["id"] for hit in scoped["matches"]] == [9]
        assert (await call(client, "search_tasks", {"query": "10"}))["total"] == 1  # "top 10 ticket categories"
        literal = await call(client, "search_tasks", {"query": "10_"})  # '_' is no LIKE wildcard here
        assert literal["total"] == 0
        assert "has no words to search for" in await fail(client, "search_tasks", {"query": "?!"})
        umlaut = await call(client, "create_task", {"project_id": 3, "title": "Übersetzung der Makros prüfen"})
        found = await call(client, "search_tasks", {"query": "PRÜFEN übersetzung"})
        assert [hit["id"] for hit in found["matches"]] == [umlaut["id"]]


@pytest.mark.anyio
async def test_reports_on_the_demo_data() -> None:
    app, _ = build()
    async with connect(app) as client:
        summary = await call(client, "project_summary", {"project_id": 1})
        assert summary["as_of"] == "2026-03-10"
        assert summary["by_status"] == {"todo": 3, "in_progress": 1, "blocked": 1, "done": 1}
        assert summary["open_by_priority"] == {"low": 1, "medium": 1, "high": 2, "urgent": 1}
        assert summary["completion_percent"] == 16.7
        assert summary["overdue_count"] == 2
        assert [(t["id"], t["days_overdue"]) for t in summary["overdue_tasks"]] == [(4, 2), (5, 1)]
        assert summary["due_within_7_days"] == 1
        assert summary["unassigned_open"] == 1

        report = await call(client, "workload_report", {})
        assert (report["total_open"], report["unassigned_open"]) == (11, 2)
        rows = {e["assignee"]: e for e in report["people"]}
        assert [e["assignee"] for e in report["people"]] == ["alice", "bob", "dave", "carol", "erin"]
        assert rows["bob"] == {
            "assignee": "bob",
            "open": 2,
            "todo": 0,
            "in_progress": 1,
            "blocked": 1,
            "overdue": 1,
            "urgent_or_high": 2,
            "next_due_date": "2026-03-08",
        }
        mobile = await call(client, "workload_report", {"project_id": 2})
        assert mobile["total_open"] == 4 and mobile["unassigned_open"] == 1
        assert {e["assignee"] for e in mobile["people"]} == {"alice", "dave", "erin"}


@pytest.mark.anyio
async def test_archived_projects_are_read_only() -> None:
    app, _ = build()
    async with connect(app) as client:
        attempts: list[tuple[str, dict[str, Any]]] = [
            ("update_task", {"task_id": 14, "title": "Book movers again"}),
            ("assign_task", {"task_id": 14, "assignee": "alice"}),
            ("complete_task", {"task_id": 15}),
            ("delete_task", {"task_id": 15}),
            ("add_comment", {"task_id": 14, "author": "bob", "body": "Hello"}),
        ]
        for name, arguments in attempts:
            error = await fail(client, name, arguments)
            assert "archived project 4 ('Office move')" in error and "read-only" in error, (name, error)
        # reading still works
        assert (await call(client, "get_task", {"task_id": 14}))["project_name"] == "Office move"
        assert (await call(client, "project_summary", {"project_id": 4}))["completion_percent"] == 100.0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("get_project", {"project_id": 42}, ["Project 42 not found", "list_projects"]),
        ("create_task", {"project_id": 42, "title": "x"}, ["Project 42 not found", "list_projects"]),
        ("list_tasks", {"project_id": 42}, ["Project 42 not found"]),
        ("project_summary", {"project_id": 99}, ["Project 99 not found"]),
        ("get_task", {"task_id": 999}, ["Task 999 not found", "list_tasks", "search_tasks"]),
        ("add_comment", {"task_id": 999, "author": "bob", "body": "hi"}, ["Task 999 not found"]),
        ("update_task", {"task_id": 3}, ["Nothing to update for task 3", "title"]),
        (
            "update_task",
            {"task_id": 3, "due_date": "2026-04-01", "clear_due_date": True},
            ["either due_date or clear_due_date"],
        ),
        ("list_tasks", {"status": "finished"}, ["status", "'open'", "'todo'", "'done'"]),
        ("create_task", {"project_id": 1, "title": "x" * 201}, ["title", "at most 200 characters"]),
        ("create_task", {"project_id": 1, "title": "   "}, ["title", "at least 1 character"]),
        ("create_task", {"project_id": 1, "title": "x", "description": "d" * 10_001}, ["at most 10000"]),
        ("create_task", {"project_id": 1, "title": "x", "due_date": "next week"}, ["due_date", "date"]),
        ("assign_task", {"task_id": 3, "assignee": "bob smith"}, ["assignee", "pattern"]),
        ("list_tasks", {"limit": 1000}, ["limit", "less than or equal to 100"]),
        ("get_task", {"task_id": 0}, ["task_id", "greater than or equal to 1"]),
        ("get_task", {}, ["task_id", "Field required"]),
        ("add_comment", {"task_id": 3, "author": "bob", "body": "b" * 5001}, ["at most 5000"]),
        ("convert_units", {"value": 1, "from_unit": "parsec", "to_unit": "m"}, ["from_unit", "'km'"]),
        ("hash_text", {"text": "x", "algorithm": "crc32"}, ["algorithm", "'sha256'"]),
        ("hash_text", {"text": "x", "expected": "not-hex"}, ["expected", "pattern"]),
    ],
)
async def test_errors_name_the_bad_value_and_the_way_out(
    name: str, arguments: dict[str, Any], expected: list[str]
) -> None:
    app, _ = build()
    async with connect(app) as client:
        error = await fail(client, name, arguments)
    assert error.startswith(f"Error executing tool {name}: ")
    for fragment in expected:
        assert fragment in error, (fragment, error)


# -- utilities -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("-2 ** 2", -4),
        ("2 ** -1", 0.5),
        ("7 // 2", 3),
        ("-7 % 3", 2),
        ("7 / 2", 3.5),
        ("2 ** 64 - 1", 18446744073709551615),
        ("(1200 * 1.19) / 12", 119.0),
        ("sqrt(16) + abs(-3)", 7.0),
        ("max(1, 5, 3) - min(4, 2)", 3),
        ("round(pi, 2)", 3.14),
        ("log(8, 2)", 3.0),
        ("1e3 + 0.5", 1000.5),
        ("10 ** 3000 // 10 ** 2999", 10),
    ],
)
def test_calculate_evaluates_arithmetic(expression: str, result: float) -> None:
    value = calculate_expression(expression)
    assert value.result == pytest.approx(result)
    assert value.result_type == ("integer" if isinstance(result, int) else "float")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("__import__('os').system('true')", "this call is not allowed"),
        ("__import__('os')", "function '__import__' is not allowed"),
        ("().__class__", "attribute access"),
        ("x + 1", "unknown name 'x'"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("2 ** 10 ** 10", "exponent 10000000000 is too large"),
        ("9 ** 9 ** 9", "too large"),
        ("(10 ** 3000) ** 4", "exceed 10000 bits"),
        ("10 ** 3000 * 10 ** 3000 * 10 ** 3000 * 10 ** 3000", "exceed 10000 bits"),
        ("10.0 ** 400", "too large to represent"),
        ("exp(1000)", "too large"),
        ("sqrt(-1)", "undefined"),
        ("(-8) ** 0.5", "complex"),
        ("2 ^ 3", "write powers as a ** b"),
        ("'a' * 3", "is not a number"),
        ("True + 1", "is not a number"),
        ("1 < 2", "comparisons"),
        ("[1, 2]", "not allowed"),
        ("lambda: 1", "not allowed"),
        ("1 +", "Cannot parse"),
        ("round(1.5, 10 ** 6)", "between -100 and 100"),
        ("sqrt(1, 2)", "takes 1 argument, got 2"),
        ("(" * 240 + "1" + ")" * 240, "too many nested parentheses"),
        ("1+" * 300 + "1", "500"),
        ("-" * 450 + "1", "too many parts"),
    ],
)
async def test_calculate_refuses_unsafe_or_invalid_input(expression: str, expected: str) -> None:
    app, _ = build()
    async with connect(app) as client:
        error = await fail(client, "calculate", {"expression": expression})
    assert expected in error, error


@pytest.mark.anyio
async def test_convert_text_and_hash_tools() -> None:
    app, _ = build()
    async with connect(app) as client:
        miles = await call(client, "convert_units", {"value": 5, "from_unit": "km", "to_unit": "mi"})
        assert miles["result"] == pytest.approx(3.10685596119) and miles["dimension"] == "length"
        assert miles["text"] == "5 km = 3.10686 mi"
        body = await call(client, "convert_units", {"value": 98.6, "from_unit": "F", "to_unit": "C"})
        assert body["result"] == 37.0
        kelvin = await call(client, "convert_units", {"value": -40, "from_unit": "C", "to_unit": "F"})
        assert kelvin["result"] == -40.0
        data = await call(client, "convert_units", {"value": 1, "from_unit": "GiB", "to_unit": "MB"})
        assert data["result"] == 1073.741824
        assert (await call(client, "convert_units", {"value": 2, "from_unit": "h", "to_unit": "min"}))["result"] == 120
        assert (await call(client, "convert_units", {"value": 1, "from_unit": "lb", "to_unit": "g"}))[
            "result"
        ] == 453.59237
        error = await fail(client, "convert_units", {"value": 1, "from_unit": "kg", "to_unit": "m"})
        assert "Cannot convert 'kg' (mass) to 'm' (length)" in error and "mg, g, kg" in error
        assert "absolute zero" in await fail(client, "convert_units", {"value": -300, "from_unit": "C", "to_unit": "K"})

        text = "The new site launches in spring. Navigation is done!\n\nRedirects are next? Yes: the site's redirects."
        stats = await call(client, "text_stats", {"text": text, "top_words": 2})
        assert stats["characters"] == len(text)
        assert stats["words"] == 16
        assert stats["sentences"] == 4
        assert (stats["paragraphs"], stats["lines"]) == (2, 3)
        assert stats["top_words"] == [{"word": "redirects", "count": 2}, {"word": "new", "count": 1}]
        assert stats["reading_time"] == "5 s"
        empty = await call(client, "text_stats", {"text": ""})
        assert (empty["words"], empty["sentences"], empty["reading_time_seconds"]) == (0, 0, 0)
        long = await call(client, "text_stats", {"text": "word " * 600, "words_per_minute": 200})
        assert long["reading_time"] == "3 min 0 s"

        digest = await call(client, "hash_text", {"text": "hello world"})
        assert digest["hex_digest"] == hashlib.sha256(b"hello world").hexdigest()
        assert digest["matches"] is None and digest["input_bytes"] == 11
        unicode = await call(client, "hash_text", {"text": "grüße", "algorithm": "sha1"})
        assert unicode["hex_digest"] == hashlib.sha1("grüße".encode()).hexdigest() and unicode["input_bytes"] == 7
        checked = await call(
            client,
            "hash_text",
            {"text": "hello world", "algorithm": "md5", "expected": "5EB63BBBE01EEED093CB22BB8F5ACDC3"},
        )
        assert checked["matches"] is True
        wrong = await fail(client, "hash_text", {"text": "x", "algorithm": "md5", "expected": "ab" * 32})
        assert "expected has 64 hex digits but a md5 digest has 32" in wrong
        assert "at most 100000" in await fail(client, "hash_text", {"text": "x" * 100_001})


# -- tool_descriptions/ ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_every_tool_has_a_matching_definition_file_and_vice_versa() -> None:
    app, names = build()
    async with connect(app) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    files = definitions()
    assert set(files) == set(names)
    for name, body in files.items():
        ToolDefinition.model_validate(body)  # the library accepts it
        tool = tools[name]
        assert body["name"] == name
        assert body["title"] == tool.title
        schema = body["inputSchema"]
        assert schema["type"] == "object"
        assert set(schema["properties"]) == set(tool.input_schema["properties"]), name
        assert sorted(schema.get("required", [])) == sorted(tool.input_schema.get("required", [])), name
        Draft202012Validator.check_schema(schema)
        assert tool.annotations is not None
        assert body["annotations"] == tool.annotations.model_dump(by_alias=True, exclude_none=True), name
        assert body["category"] in CATEGORIES, name
        minimal = body["minimal_description"]
        assert len(minimal) <= 120 and minimal.endswith(".") and minimal.count(". ") == 0, name
        assert len(body["description"]) > len(minimal), name
        assert 1 <= len(body["examples"]) <= 3, name
        assert {"when_to_use", "when_not_to_use"} <= set(body["usage_guidance"]), name
        assert body["error_guidance"], name


def without_titles(schema: Any) -> Any:
    """A schema minus pydantic's generated `title` keywords (properties named title are kept)."""
    if isinstance(schema, list):
        return [without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: {name: without_titles(sub) for name, sub in value.items()}
        if key == "properties"
        else without_titles(value)
        for key, value in schema.items()
        if key != "title"
    }


@pytest.mark.anyio
async def test_definition_schemas_carry_the_registered_constraints() -> None:
    # The file's inputSchema is what clients are served, so it must not drift from the code's validation.
    app, _ = build()
    async with connect(app) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name, body in definitions().items():
        assert body["inputSchema"] == without_titles(tools[name].input_schema), f"regenerate {name}.json"


def test_definition_files_are_pretty_printed() -> None:
    for path in sorted(DEFINITIONS.glob("*.json")):
        text = path.read_text()
        assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n", path.name


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "arguments"), example_cases())
async def test_every_example_validates_and_runs_on_the_demo_data(name: str, arguments: dict[str, Any]) -> None:
    schema = definitions()[name]["inputSchema"]
    assert set(arguments) <= set(schema["properties"]), "an example uses an unknown argument"
    errors = [e.message for e in Draft202012Validator(schema, format_checker=FormatChecker()).iter_errors(arguments)]
    assert errors == []
    app, _ = build(Tracker(":memory:"))  # the real clock: examples must work on a fresh server today
    async with connect(app) as client:
        await call(client, name, arguments)
