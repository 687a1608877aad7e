"""An offline project tracker on SQLite (projects, tasks, comments, reports) and its MCP tools.

`Tracker` owns one SQLite connection shared by the server's worker threads; every operation holds a
lock and runs in one transaction. Errors a caller can fix are `TrackerError` (a `ToolError`), worded
so a model knows which value was wrong and which tool to call next.
"""

from __future__ import annotations

import inspect
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Final, Literal

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, StringConstraints

__all__ = [
    "Comment",
    "CommentPage",
    "DeletedTask",
    "Project",
    "ProjectList",
    "ProjectSummary",
    "SearchResult",
    "Task",
    "TaskPage",
    "Tracker",
    "TrackerError",
    "WorkloadReport",
    "register_tracker_tools",
]

Status = Literal["todo", "in_progress", "blocked", "done"]
StatusFilter = Literal["open", "todo", "in_progress", "blocked", "done"]
Priority = Literal["low", "medium", "high", "urgent"]
SortKey = Literal["priority", "due_date", "created_at", "updated_at"]
STATUSES: Final[tuple[Status, ...]] = ("todo", "in_progress", "blocked", "done")
PRIORITIES: Final[tuple[Priority, ...]] = ("low", "medium", "high", "urgent")
MAX_ID: Final = 2**31 - 1
OVERDUE_LISTED: Final = 20

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS projects (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    archived_at TEXT
);
CREATE TABLE IF NOT EXISTS tasks (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id   INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL DEFAULT 'todo' CHECK (status IN ('todo', 'in_progress', 'blocked', 'done')),
    priority     TEXT NOT NULL DEFAULT 'medium' CHECK (priority IN ('low', 'medium', 'high', 'urgent')),
    assignee     TEXT,
    due_date     TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    completed_at TEXT
);
CREATE INDEX IF NOT EXISTS tasks_by_project ON tasks(project_id, status);
CREATE INDEX IF NOT EXISTS tasks_by_assignee ON tasks(assignee, status);
CREATE TABLE IF NOT EXISTS comments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    author     TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS comments_by_task ON comments(task_id, id);
"""

_TASK_SELECT: Final = """
SELECT t.*, p.name AS project_name, p.status AS project_status,
       (SELECT COUNT(*) FROM comments c WHERE c.task_id = t.id) AS comment_count
FROM tasks t JOIN projects p ON p.id = t.project_id
"""
_PRIORITY_RANK: Final = "CASE t.priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END"
_ORDER_BY: Final[dict[str, str]] = {
    "priority": f"{_PRIORITY_RANK}, t.due_date IS NULL, t.due_date, t.id",
    "due_date": f"t.due_date IS NULL, t.due_date, {_PRIORITY_RANK}, t.id",
    "created_at": "t.created_at DESC, t.id DESC",
    "updated_at": "t.updated_at DESC, t.id DESC",
}
_WORD: Final = re.compile(r"\w+")


class TrackerError(ToolError):
    """A request the caller can fix: an unknown id, an archived project, a task already done, ..."""


# -- results ---------------------------------------------------------------------------------------


class Project(BaseModel):
    """A project with its task counts."""

    id: int = Field(description="Project id.")
    name: str = Field(description="Unique project name.")
    description: str = Field(description="What the project is about.")
    status: Literal["active", "archived"] = Field(description="Archived projects are read-only.")
    open_tasks: int = Field(description="Tasks not yet done.")
    total_tasks: int = Field(description="All tasks, done or not.")
    created_at: str = Field(description="UTC timestamp, ISO 8601.")
    updated_at: str = Field(description="UTC timestamp, ISO 8601.")
    archived_at: str | None = Field(default=None, description="When the project was archived, if it is.")


class ProjectList(BaseModel):
    """Projects, newest first."""

    projects: list[Project]
    total: int = Field(description="Number of projects returned.")
    include_archived: bool = Field(description="Whether archived projects were included.")


class Task(BaseModel):
    """A task with its project and comment count."""

    id: int = Field(description="Task id.")
    project_id: int = Field(description="Id of the project the task belongs to.")
    project_name: str = Field(description="Name of that project.")
    title: str
    description: str
    status: Status
    priority: Priority
    assignee: str | None = Field(description="Handle of the person responsible, or null when unassigned.")
    due_date: str | None = Field(description="Due date (YYYY-MM-DD), or null.")
    overdue: bool = Field(description="True when the due date has passed and the task is not done.")
    comment_count: int
    created_at: str = Field(description="UTC timestamp, ISO 8601.")
    updated_at: str = Field(description="UTC timestamp, ISO 8601.")
    completed_at: str | None = Field(description="When the task was marked done, or null.")


class TaskPage(BaseModel):
    """One page of tasks matching the filters."""

    tasks: list[Task]
    total: int = Field(description="Tasks matching the filters across all pages.")
    limit: int
    offset: int
    next_offset: int | None = Field(description="Offset of the next page, or null on the last page.")


class DeletedTask(BaseModel):
    """What a deletion removed."""

    deleted: bool
    task: Task = Field(description="The task as it was just before deletion.")
    comments_deleted: int = Field(description="Comments removed with the task.")


class Comment(BaseModel):
    """A comment on a task."""

    id: int
    task_id: int
    author: str
    body: str
    created_at: str = Field(description="UTC timestamp, ISO 8601.")


class CommentPage(BaseModel):
    """One page of a task's comments, oldest first."""

    task_id: int
    comments: list[Comment]
    total: int = Field(description="Comments on the task across all pages.")
    limit: int
    offset: int
    next_offset: int | None = Field(description="Offset of the next page, or null on the last page.")


class SearchHit(BaseModel):
    """A task matching a search, with where it matched."""

    id: int
    project_id: int
    project_name: str
    title: str
    status: Status
    priority: Priority
    assignee: str | None
    score: int = Field(description="Relevance: 3 per term found in the title, 1 per term found in the description.")
    snippet: str = Field(description="The part of the description around the first match (or its start).")


class SearchResult(BaseModel):
    """Tasks matching a keyword search, best first."""

    query: str
    terms: list[str] = Field(description="The lower-cased words the query was split into.")
    match: Literal["all", "any"]
    matches: list[SearchHit]
    total: int = Field(description="Matches found (before the limit).")


class StatusCounts(BaseModel):
    """Task counts per status."""

    todo: int = 0
    in_progress: int = 0
    blocked: int = 0
    done: int = 0


class PriorityCounts(BaseModel):
    """Task counts per priority."""

    low: int = 0
    medium: int = 0
    high: int = 0
    urgent: int = 0


class OverdueTask(BaseModel):
    """An open task past its due date."""

    id: int
    title: str
    status: Status
    priority: Priority
    assignee: str | None
    due_date: str
    days_overdue: int


class ProjectSummary(BaseModel):
    """A project's health at a glance."""

    project: Project
    as_of: str = Field(description="The date (UTC) the report was computed for.")
    by_status: StatusCounts
    open_by_priority: PriorityCounts = Field(description="Open (not done) tasks per priority.")
    completion_percent: float = Field(description="Done tasks as a percentage of all tasks (0 when empty).")
    overdue_count: int
    overdue_tasks: list[OverdueTask] = Field(description=f"Most overdue first, at most {OVERDUE_LISTED}.")
    due_within_7_days: int = Field(description="Open tasks due today or in the next 7 days.")
    unassigned_open: int = Field(description="Open tasks with nobody assigned.")


class WorkloadEntry(BaseModel):
    """One person's open work."""

    assignee: str
    open: int = Field(description="Tasks not done.")
    todo: int
    in_progress: int
    blocked: int
    overdue: int
    urgent_or_high: int = Field(description="Open tasks with priority urgent or high.")
    next_due_date: str | None = Field(description="Earliest due date among the open tasks, or null.")


class WorkloadReport(BaseModel):
    """Open tasks per assignee, busiest first."""

    as_of: str = Field(description="The date (UTC) the report was computed for.")
    project_id: int | None = Field(description="The project reported on, or null for all active projects.")
    people: list[WorkloadEntry]
    unassigned_open: int = Field(description="Open tasks with nobody assigned.")
    total_open: int


# -- the tracker -----------------------------------------------------------------------------------


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _lower(text: str | None) -> str | None:
    return text.lower() if text is not None else None


def _page_end(offset: int, count: int, total: int) -> int | None:
    return offset + count if offset + count < total else None


class Tracker:
    """A project tracker stored in SQLite (`":memory:"` or a file path), safe to share between threads."""

    def __init__(self, path: str = ":memory:", *, seed: bool = True, clock: Callable[[], datetime] = _utc_now) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        # SQLite's lower() only folds ASCII; search needs the same folding as Python's.
        self._conn.create_function("py_lower", 1, _lower, deterministic=True)
        with self._lock:
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.executescript(SCHEMA)
        if seed:
            with self._transaction() as db:
                if db.execute("SELECT COUNT(*) FROM projects").fetchone()[0] == 0:
                    _seed(db, self._clock())

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _today(self) -> date:
        return self._clock().astimezone(UTC).date()

    # -- lookups (inside a transaction) --------------------------------------------------------
    def _project_row(self, db: sqlite3.Connection, project_id: int) -> sqlite3.Row:
        row: sqlite3.Row | None = db.execute("SELECT * FROM projects WHERE id = ?", (project_id,)).fetchone()
        if row is None:
            raise TrackerError(
                f"Project {project_id} not found; call list_projects (include_archived=true) to see valid ids."
            )
        return row

    def _active_project_row(self, db: sqlite3.Connection, project_id: int) -> sqlite3.Row:
        row = self._project_row(db, project_id)
        if row["status"] == "archived":
            raise TrackerError(
                f"Project {project_id} ({row['name']!r}) is archived, so it and its tasks are read-only; "
                "pick an active project from list_projects or create a new one with create_project."
            )
        return row

    def _project(self, db: sqlite3.Connection, project_id: int) -> Project:
        row = self._project_row(db, project_id)
        return self._project_from(db, row)

    def _project_from(self, db: sqlite3.Connection, row: sqlite3.Row) -> Project:
        total, done = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(status = 'done'), 0) FROM tasks WHERE project_id = ?", (row["id"],)
        ).fetchone()
        return Project(
            id=row["id"],
            name=row["name"],
            description=row["description"],
            status=row["status"],
            open_tasks=total - done,
            total_tasks=total,
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            archived_at=row["archived_at"],
        )

    def _task_row(self, db: sqlite3.Connection, task_id: int) -> sqlite3.Row:
        row: sqlite3.Row | None = db.execute(_TASK_SELECT + " WHERE t.id = ?", (task_id,)).fetchone()
        if row is None:
            raise TrackerError(f"Task {task_id} not found; call list_tasks or search_tasks to find valid task ids.")
        return row

    def _editable_task_row(self, db: sqlite3.Connection, task_id: int) -> sqlite3.Row:
        row = self._task_row(db, task_id)
        if row["project_status"] == "archived":
            raise TrackerError(
                f"Task {task_id} belongs to archived project {row['project_id']} ({row['project_name']!r}) "
                "and is read-only; archived projects cannot be changed."
            )
        return row

    def _task_from(self, row: sqlite3.Row, today: date) -> Task:
        due: str | None = row["due_date"]
        return Task(
            id=row["id"],
            project_id=row["project_id"],
            project_name=row["project_name"],
            title=row["title"],
            description=row["description"],
            status=row["status"],
            priority=row["priority"],
            assignee=row["assignee"],
            due_date=due,
            overdue=due is not None and row["status"] != "done" and due < today.isoformat(),
            comment_count=row["comment_count"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            completed_at=row["completed_at"],
        )

    def _task(self, db: sqlite3.Connection, task_id: int) -> Task:
        return self._task_from(self._task_row(db, task_id), self._today())

    # -- projects ------------------------------------------------------------------------------
    def create_project(self, name: str, description: str = "") -> Project:
        """Create an active project; names are unique, ignoring case."""
        now = _stamp(self._clock())
        with self._transaction() as db:
            clash = db.execute("SELECT id, name FROM projects WHERE name = ?", (name,)).fetchone()
            if clash is not None:
                raise TrackerError(
                    f"A project named {clash['name']!r} already exists (id {clash['id']}); "
                    f"choose a different name or add tasks to project {clash['id']}."
                )
            cursor = db.execute(
                "INSERT INTO projects (name, description, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (name, description, now, now),
            )
            assert cursor.lastrowid is not None
            return self._project(db, cursor.lastrowid)

    def list_projects(self, include_archived: bool = False) -> ProjectList:
        """Projects, newest first; archived ones only when asked."""
        with self._transaction() as db:
            where = "" if include_archived else "WHERE status = 'active'"
            rows = db.execute(f"SELECT * FROM projects {where} ORDER BY created_at DESC, id DESC").fetchall()
            projects = [self._project_from(db, row) for row in rows]
        return ProjectList(projects=projects, total=len(projects), include_archived=include_archived)

    def get_project(self, project_id: int) -> Project:
        """One project with its task counts."""
        with self._transaction() as db:
            return self._project(db, project_id)

    def archive_project(self, project_id: int) -> Project:
        """Archive a project (idempotent): it and its tasks become read-only."""
        now = _stamp(self._clock())
        with self._transaction() as db:
            row = self._project_row(db, project_id)
            if row["status"] != "archived":
                db.execute(
                    "UPDATE projects SET status = 'archived', archived_at = ?, updated_at = ? WHERE id = ?",
                    (now, now, project_id),
                )
            return self._project(db, project_id)

    # -- tasks ---------------------------------------------------------------------------------
    def create_task(
        self,
        project_id: int,
        title: str,
        description: str = "",
        *,
        status: Status = "todo",
        priority: Priority = "medium",
        assignee: str | None = None,
        due_date: date | None = None,
    ) -> Task:
        """Create a task in an active project."""
        now = _stamp(self._clock())
        with self._transaction() as db:
            self._active_project_row(db, project_id)
            cursor = db.execute(
                "INSERT INTO tasks (project_id, title, description, status, priority, assignee, due_date,"
                " created_at, updated_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    project_id,
                    title,
                    description,
                    status,
                    priority,
                    assignee,
                    due_date.isoformat() if due_date else None,
                    now,
                    now,
                    now if status == "done" else None,
                ),
            )
            assert cursor.lastrowid is not None
            return self._task(db, cursor.lastrowid)

    def get_task(self, task_id: int) -> Task:
        """One task."""
        with self._transaction() as db:
            return self._task(db, task_id)

    def list_tasks(
        self,
        *,
        project_id: int | None = None,
        status: StatusFilter | None = None,
        assignee: str | None = None,
        priority: Priority | None = None,
        due_before: date | None = None,
        include_archived: bool = False,
        sort_by: SortKey = "priority",
        limit: int = 20,
        offset: int = 0,
    ) -> TaskPage:
        """Tasks matching every given filter, one page at a time."""
        clauses: list[str] = []
        params: list[Any] = []
        if project_id is not None:
            clauses.append("t.project_id = ?")
            params.append(project_id)
        elif not include_archived:
            clauses.append("p.status = 'active'")
        if status == "open":
            clauses.append("t.status != 'done'")
        elif status is not None:
            clauses.append("t.status = ?")
            params.append(status)
        if assignee is not None:
            clauses.append("t.assignee = ?")
            params.append(assignee)
        if priority is not None:
            clauses.append("t.priority = ?")
            params.append(priority)
        if due_before is not None:
            clauses.append("t.due_date IS NOT NULL AND t.due_date < ?")
            params.append(due_before.isoformat())
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._transaction() as db:
            if project_id is not None:
                self._project_row(db, project_id)
            count_sql = f"SELECT COUNT(*) FROM tasks t JOIN projects p ON p.id = t.project_id{where}"
            total: int = db.execute(count_sql, params).fetchone()[0]
            rows = db.execute(
                f"{_TASK_SELECT}{where} ORDER BY {_ORDER_BY[sort_by]} LIMIT ? OFFSET ?", [*params, limit, offset]
            ).fetchall()
            today = self._today()
            tasks = [self._task_from(row, today) for row in rows]
        return TaskPage(
            tasks=tasks, total=total, limit=limit, offset=offset, next_offset=_page_end(offset, len(tasks), total)
        )

    def update_task(
        self,
        task_id: int,
        *,
        title: str | None = None,
        description: str | None = None,
        status: Status | None = None,
        priority: Priority | None = None,
        due_date: date | None = None,
        clear_due_date: bool = False,
    ) -> Task:
        """Change only the given fields; moving a task out of `done` reopens it."""
        if due_date is not None and clear_due_date:
            raise TrackerError("Pass either due_date or clear_due_date=true, not both.")
        changes: dict[str, Any] = {
            key: value
            for key, value in (
                ("title", title),
                ("description", description),
                ("status", status),
                ("priority", priority),
            )
            if value is not None
        }
        if due_date is not None:
            changes["due_date"] = due_date.isoformat()
        if clear_due_date:
            changes["due_date"] = None
        if not changes:
            raise TrackerError(
                f"Nothing to update for task {task_id}: pass at least one of title, description, status, "
                "priority, due_date or clear_due_date=true."
            )
        now = _stamp(self._clock())
        with self._transaction() as db:
            row = self._editable_task_row(db, task_id)
            if status is not None and status != row["status"]:
                changes["completed_at"] = now if status == "done" else None
            changes["updated_at"] = now
            assignments = ", ".join(f"{column} = ?" for column in changes)
            db.execute(f"UPDATE tasks SET {assignments} WHERE id = ?", [*changes.values(), task_id])
            return self._task(db, task_id)

    def assign_task(self, task_id: int, assignee: str | None) -> Task:
        """Set or clear (None) who is responsible for a task."""
        now = _stamp(self._clock())
        with self._transaction() as db:
            self._editable_task_row(db, task_id)
            db.execute("UPDATE tasks SET assignee = ?, updated_at = ? WHERE id = ?", (assignee, now, task_id))
            return self._task(db, task_id)

    def complete_task(self, task_id: int) -> Task:
        """Mark an open task done."""
        now = _stamp(self._clock())
        with self._transaction() as db:
            row = self._editable_task_row(db, task_id)
            if row["status"] == "done":
                raise TrackerError(
                    f"Task {task_id} is already done (completed {row['completed_at']}); nothing changed. "
                    "To reopen it, call update_task with status 'todo' or 'in_progress'."
                )
            db.execute(
                "UPDATE tasks SET status = 'done', completed_at = ?, updated_at = ? WHERE id = ?", (now, now, task_id)
            )
            return self._task(db, task_id)

    def delete_task(self, task_id: int) -> DeletedTask:
        """Delete a task and its comments for good."""
        with self._transaction() as db:
            row = self._editable_task_row(db, task_id)
            task = self._task_from(row, self._today())
            db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
        return DeletedTask(deleted=True, task=task, comments_deleted=task.comment_count)

    def search_tasks(
        self,
        query: str,
        *,
        project_id: int | None = None,
        match: Literal["all", "any"] = "all",
        include_done: bool = True,
        limit: int = 20,
    ) -> SearchResult:
        """Tasks whose title or description contain the query's words (case-insensitive), best first."""
        terms = list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))[:10]
        if not terms:
            raise TrackerError(f"The query {query!r} has no words to search for; use letters or digits.")
        clauses: list[str] = []
        params: list[Any] = []
        if project_id is not None:
            clauses.append("t.project_id = ?")
            params.append(project_id)
        if not include_done:
            clauses.append("t.status != 'done'")
        found = ["instr(py_lower(t.title || ' ' || t.description), ?) > 0" for _ in terms]
        clauses.append(f"({(' AND ' if match == 'all' else ' OR ').join(found)})")
        params.extend(terms)
        with self._transaction() as db:
            if project_id is not None:
                self._project_row(db, project_id)
            rows = db.execute(f"{_TASK_SELECT} WHERE {' AND '.join(clauses)}", params).fetchall()
        hits = [_search_hit(row, terms) for row in rows]
        hits.sort(key=lambda hit: (-hit.score, PRIORITIES[::-1].index(hit.priority), hit.id))
        return SearchResult(query=query, terms=terms, match=match, matches=hits[:limit], total=len(hits))

    # -- comments ------------------------------------------------------------------------------
    def add_comment(self, task_id: int, author: str, body: str) -> Comment:
        """Append a comment to a task."""
        now = _stamp(self._clock())
        with self._transaction() as db:
            self._editable_task_row(db, task_id)
            cursor = db.execute(
                "INSERT INTO comments (task_id, author, body, created_at) VALUES (?, ?, ?, ?)",
                (task_id, author, body, now),
            )
            row = db.execute("SELECT * FROM comments WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return Comment(**dict(row))

    def list_comments(self, task_id: int, *, limit: int = 20, offset: int = 0) -> CommentPage:
        """A task's comments, oldest first."""
        with self._transaction() as db:
            self._task_row(db, task_id)
            total: int = db.execute("SELECT COUNT(*) FROM comments WHERE task_id = ?", (task_id,)).fetchone()[0]
            rows = db.execute(
                "SELECT * FROM comments WHERE task_id = ? ORDER BY id LIMIT ? OFFSET ?", (task_id, limit, offset)
            ).fetchall()
        comments = [Comment(**dict(row)) for row in rows]
        return CommentPage(
            task_id=task_id,
            comments=comments,
            total=total,
            limit=limit,
            offset=offset,
            next_offset=_page_end(offset, len(comments), total),
        )

    # -- reports -------------------------------------------------------------------------------
    def project_summary(self, project_id: int) -> ProjectSummary:
        """Counts by status and priority, completion, overdue and soon-due work for one project."""
        today = self._today()
        with self._transaction() as db:
            project = self._project(db, project_id)
            rows = db.execute(
                "SELECT id, title, status, priority, assignee, due_date FROM tasks WHERE project_id = ?", (project_id,)
            ).fetchall()
        by_status = StatusCounts()
        open_by_priority = PriorityCounts()
        overdue: list[OverdueTask] = []
        soon = unassigned = 0
        week_ahead = (today + timedelta(days=7)).isoformat()
        for row in rows:
            setattr(by_status, row["status"], getattr(by_status, row["status"]) + 1)
            if row["status"] == "done":
                continue
            setattr(open_by_priority, row["priority"], getattr(open_by_priority, row["priority"]) + 1)
            unassigned += row["assignee"] is None
            due: str | None = row["due_date"]
            if due is not None and due < today.isoformat():
                overdue.append(
                    OverdueTask(
                        id=row["id"],
                        title=row["title"],
                        status=row["status"],
                        priority=row["priority"],
                        assignee=row["assignee"],
                        due_date=due,
                        days_overdue=(today - date.fromisoformat(due)).days,
                    )
                )
            elif due is not None and due <= week_ahead:
                soon += 1
        overdue.sort(key=lambda task: (-task.days_overdue, task.id))
        return ProjectSummary(
            project=project,
            as_of=today.isoformat(),
            by_status=by_status,
            open_by_priority=open_by_priority,
            completion_percent=round(100 * by_status.done / len(rows), 1) if rows else 0.0,
            overdue_count=len(overdue),
            overdue_tasks=overdue[:OVERDUE_LISTED],
            due_within_7_days=soon,
            unassigned_open=unassigned,
        )

    def workload_report(self, project_id: int | None = None) -> WorkloadReport:
        """Open tasks per assignee (one project, or every active project)."""
        today = self._today().isoformat()
        with self._transaction() as db:
            if project_id is not None:
                self._project_row(db, project_id)
                scope, params = "t.project_id = ?", [project_id]
            else:
                scope, params = "p.status = 'active'", []
            rows = db.execute(
                "SELECT t.status, t.priority, t.assignee, t.due_date"
                f" FROM tasks t JOIN projects p ON p.id = t.project_id WHERE t.status != 'done' AND {scope}",
                params,
            ).fetchall()
        people: dict[str, WorkloadEntry] = {}
        unassigned = 0
        for row in rows:
            if row["assignee"] is None:
                unassigned += 1
                continue
            entry = people.setdefault(
                row["assignee"],
                WorkloadEntry(
                    assignee=row["assignee"],
                    open=0,
                    todo=0,
                    in_progress=0,
                    blocked=0,
                    overdue=0,
                    urgent_or_high=0,
                    next_due_date=None,
                ),
            )
            entry.open += 1
            setattr(entry, row["status"], getattr(entry, row["status"]) + 1)
            entry.urgent_or_high += row["priority"] in ("urgent", "high")
            due: str | None = row["due_date"]
            if due is not None:
                entry.overdue += due < today
                entry.next_due_date = min(due, entry.next_due_date or due)
        ranked = sorted(people.values(), key=lambda e: (-e.open, -e.overdue, e.assignee))
        return WorkloadReport(
            as_of=today, project_id=project_id, people=ranked, unassigned_open=unassigned, total_open=len(rows)
        )


def _search_hit(row: sqlite3.Row, terms: Sequence[str]) -> SearchHit:
    title = str(row["title"]).lower()
    description: str = row["description"]
    lowered = description.lower()
    score = sum(3 * (term in title) + (term in lowered) for term in terms)
    positions = [lowered.find(term) for term in terms if term in lowered]
    first = min(positions) if positions else 0
    start = max(0, first - 60)
    if start > 0:  # start on a word boundary
        space = description.find(" ", start, first)
        start = space + 1 if space != -1 else first
    snippet = description[start : start + 160].strip()
    if start > 0:
        snippet = "…" + snippet
    if start + 160 < len(description):
        snippet += "…"
    return SearchHit(
        id=row["id"],
        project_id=row["project_id"],
        project_name=row["project_name"],
        title=row["title"],
        status=row["status"],
        priority=row["priority"],
        assignee=row["assignee"],
        score=score,
        snippet=snippet,
    )


# -- demo data -------------------------------------------------------------------------------------

_SEED_PROJECTS: Final = (
    ("Website redesign", "Rebuild the marketing site on the new design system before the spring launch."),
    ("Mobile app 2.0", "Offline mode, push notifications and a new onboarding flow for the iOS and Android apps."),
    ("Support tooling", "Make the support team faster: macros, reporting and a cleaner escalation path."),
    ("Office move", "Move the Berlin team to the new office on Torstrasse. Finished; kept for reference."),
)
# (project, title, description, status, priority, assignee, due in days from today or None)
# fmt: off
_SEED_TASKS: Final[tuple[tuple[int, str, str, Status, Priority, str | None, int | None], ...]] = (
    (1, "Audit current site content", "List every page, its owner and whether it survives the redesign.",
     "done", "medium", "alice", -20),
    (1, "Build responsive navigation component", "Header and mobile menu from the design system, keyboard "
     "accessible, with the new search entry point.", "in_progress", "high", "bob", 3),
    (1, "Migrate blog posts to the new CMS", "Move the 240 existing posts, keep their URLs and featured images, "
     "and tag them with the new categories.", "todo", "medium", "carol", 10),
    (1, "Fix contrast issues from the accessibility review", "Buttons and links on the pricing page fail WCAG AA "
     "contrast. Needs the updated color tokens from design.", "blocked", "urgent", "bob", -2),
    (1, "Set up redirects for retired URLs", "Map the 35 retired URLs from the content audit to their new pages "
     "with 301 redirects.", "todo", "high", None, -1),
    (1, "Write launch announcement", "Blog post and newsletter copy announcing the new site.",
     "todo", "low", "dave", 21),
    (2, "Design offline sync conflict resolution", "Decide how edits made offline on two devices are merged when "
     "they sync, and document it for the API team.", "in_progress", "urgent", "erin", 5),
    (2, "Implement push notification opt-in screen", "Ask for permission after the first completed action, not at "
     "launch; respect the system settings on Android 13+.", "todo", "high", "dave", -4),
    (2, "Crash on login with expired refresh token", "The app crashes instead of showing the login screen when the "
     "refresh token has expired (Android and iOS).", "in_progress", "urgent", "alice", -1),
    (2, "Update onboarding illustrations", "Replace the four onboarding illustrations with the new brand style.",
     "todo", "low", None, None),
    (2, "Add analytics events to onboarding flow", "Track step views and drop-offs so we can measure the new "
     "onboarding.", "done", "medium", "erin", -10),
    (3, "Macros for the top 10 ticket categories", "Write reply macros for the ten most common ticket categories "
     "from last quarter's report.", "todo", "medium", "carol", 14),
    (3, "Export weekly CSAT report", "A CSV export of customer satisfaction scores per agent, mailed every Monday.",
     "in_progress", "medium", "alice", 2),
    (4, "Book movers", "Get three quotes and book the movers for the last weekend of the month.",
     "done", "high", "bob", -60),
    (4, "Set up meeting room displays", "Mount and configure the displays in both meeting rooms.",
     "done", "low", "dave", -45),
)
# fmt: on
_SEED_COMMENTS: Final = (
    (2, "bob", "Desktop layout is done; mobile breakpoints next."),
    (4, "bob", "Waiting on the updated color tokens from design before I can fix the remaining buttons."),
    (4, "carol", "The tokens are in review; expect them by Thursday."),
    (7, "erin", "Draft proposal: last-writer-wins per field, with a conflict banner on notes."),
    (7, "dave", "Looks good. Let's make sure deletes win over edits."),
    (9, "alice", "Reproduced on Android 14 with a refresh token older than 30 days; stack trace in SUP-2291."),
)


def _seed(db: sqlite3.Connection, now: datetime) -> None:
    """Fill an empty database with a small, realistic data set (due dates relative to `now`)."""
    today = now.astimezone(UTC).date()
    start = now - timedelta(days=90)
    for index, (name, description) in enumerate(_SEED_PROJECTS):
        created = _stamp(start + timedelta(days=index))
        archived = _stamp(now - timedelta(days=30)) if name == "Office move" else None
        db.execute(
            "INSERT INTO projects (name, description, status, created_at, updated_at, archived_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (name, description, "archived" if archived else "active", created, archived or created, archived),
        )
    for index, (project, title, description, status, priority, assignee, due_in) in enumerate(_SEED_TASKS):
        created = _stamp(start + timedelta(days=5 + index, hours=index))
        due = (today + timedelta(days=due_in)).isoformat() if due_in is not None else None
        completed = _stamp(now - timedelta(days=abs(due_in or 0) + 1)) if status == "done" else None
        db.execute(
            "INSERT INTO tasks (project_id, title, description, status, priority, assignee, due_date,"
            " created_at, updated_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (project, title, description, status, priority, assignee, due, created, completed or created, completed),
        )
    for index, (task, author, body) in enumerate(_SEED_COMMENTS):
        db.execute(
            "INSERT INTO comments (task_id, author, body, created_at) VALUES (?, ?, ?, ?)",
            (task, author, body, _stamp(now - timedelta(days=len(_SEED_COMMENTS) - index))),
        )


# -- MCP tools -------------------------------------------------------------------------------------

ProjectIdArg = Annotated[int, Field(ge=1, le=MAX_ID, description="Id of the project (list_projects shows the ids).")]
TaskIdArg = Annotated[
    int, Field(ge=1, le=MAX_ID, description="Id of the task (list_tasks or search_tasks show the ids).")
]
Handle = Annotated[
    str,
    StringConstraints(strip_whitespace=True, to_lower=True, max_length=40, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$"),
]
TitleText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
DescriptionText = Annotated[str, StringConstraints(strip_whitespace=True, max_length=10_000)]
LimitArg = Annotated[int, Field(ge=1, le=100, description="Page size: how many items to return (1-100).")]
OffsetArg = Annotated[
    int, Field(ge=0, le=1_000_000, description="How many matching items to skip (use next_offset from the last page).")
]

_READ = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_CREATE = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
_EDIT = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_DESTROY = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


def register_tracker_tools(app: MCPServer[Any], tracker: Tracker) -> list[str]:
    """Register the tracker's tools on `app`; returns their names in registration order."""
    names: list[str] = []

    def add(fn: Callable[..., Any], title: str, annotations: types.ToolAnnotations) -> None:
        # The SDK publishes __doc__ verbatim; cleandoc drops the source indentation.
        app.add_tool(fn, title=title, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations)
        names.append(fn.__name__)

    # -- projects --------------------------------------------------------------------------------
    def create_project(
        name: Annotated[
            str,
            StringConstraints(strip_whitespace=True, min_length=1, max_length=100),
            Field(description="Project name, unique ignoring case (1-100 characters)."),
        ],
        description: Annotated[
            str,
            StringConstraints(strip_whitespace=True, max_length=2_000),
            Field(description="What the project is for (up to 2000 characters)."),
        ] = "",
    ) -> Project:
        """Create a new, active project to hold tasks.

        Returns the project with its id, which create_task needs. Fails if a project with the same
        name (ignoring case) already exists.
        """
        return tracker.create_project(name, description)

    def list_projects(
        include_archived: Annotated[
            bool, Field(description="Also list archived (read-only) projects. Default false.")
        ] = False,
    ) -> ProjectList:
        """List projects with their open and total task counts, newest first.

        Use it to find project ids. Archived projects are left out unless include_archived is true.
        """
        return tracker.list_projects(include_archived)

    def get_project(project_id: ProjectIdArg) -> Project:
        """Get one project by id, with its status and task counts."""
        return tracker.get_project(project_id)

    def archive_project(project_id: ProjectIdArg) -> Project:
        """Archive a project, making it and all its tasks read-only.

        There is no unarchive tool: archived projects can no longer get new tasks, edits, assignments,
        completions or comments. Archiving an already archived project changes nothing.
        """
        return tracker.archive_project(project_id)

    add(create_project, "Create project", _CREATE)
    add(list_projects, "List projects", _READ)
    add(get_project, "Get project", _READ)
    add(archive_project, "Archive project", _DESTROY)

    # -- tasks -----------------------------------------------------------------------------------
    def create_task(
        project_id: ProjectIdArg,
        title: Annotated[TitleText, Field(description="Short summary of the work (1-200 characters).")],
        description: Annotated[
            DescriptionText, Field(description="Details, acceptance criteria, links (up to 10000 characters).")
        ] = "",
        priority: Annotated[Priority, Field(description="How urgent the task is. Default medium.")] = "medium",
        assignee: Annotated[
            Handle | None,
            Field(description="Handle of the person responsible (e.g. 'alice'); omit to leave it unassigned."),
        ] = None,
        due_date: Annotated[date | None, Field(description="Due date as YYYY-MM-DD; omit for none.")] = None,
        status: Annotated[Status, Field(description="Initial status. Default todo.")] = "todo",
    ) -> Task:
        """Create a task in an active project.

        Returns the new task with its id. The project must exist and not be archived.
        """
        return tracker.create_task(
            project_id, title, description, status=status, priority=priority, assignee=assignee, due_date=due_date
        )

    def get_task(task_id: TaskIdArg) -> Task:
        """Get one task by id with all its fields, whether it is overdue, and its comment count."""
        return tracker.get_task(task_id)

    def list_tasks(
        project_id: Annotated[
            int | None, Field(ge=1, le=MAX_ID, description="Only tasks of this project (archived projects too).")
        ] = None,
        status: Annotated[
            StatusFilter | None, Field(description="Only tasks with this status; 'open' means any status but done.")
        ] = None,
        assignee: Annotated[Handle | None, Field(description="Only tasks assigned to this handle.")] = None,
        priority: Annotated[Priority | None, Field(description="Only tasks with this priority.")] = None,
        due_before: Annotated[
            date | None, Field(description="Only tasks due strictly before this date (YYYY-MM-DD).")
        ] = None,
        include_archived: Annotated[
            bool, Field(description="Without project_id, also include tasks of archived projects. Default false.")
        ] = False,
        sort_by: Annotated[
            SortKey,
            Field(description="priority (urgent first), due_date (soonest first), created_at or updated_at (newest)."),
        ] = "priority",
        limit: LimitArg = 20,
        offset: OffsetArg = 0,
    ) -> TaskPage:
        """List tasks matching all the given filters, one page at a time.

        Filters combine with AND; with none, every task of every active project is listed. The result
        carries the total match count and next_offset for the following page.
        """
        return tracker.list_tasks(
            project_id=project_id,
            status=status,
            assignee=assignee,
            priority=priority,
            due_before=due_before,
            include_archived=include_archived,
            sort_by=sort_by,
            limit=limit,
            offset=offset,
        )

    def update_task(
        task_id: TaskIdArg,
        title: Annotated[TitleText | None, Field(description="New title (1-200 characters).")] = None,
        description: Annotated[
            DescriptionText | None, Field(description="New description; replaces the old one entirely.")
        ] = None,
        status: Annotated[
            Status | None, Field(description="New status; setting a done task to another status reopens it.")
        ] = None,
        priority: Annotated[Priority | None, Field(description="New priority.")] = None,
        due_date: Annotated[date | None, Field(description="New due date (YYYY-MM-DD).")] = None,
        clear_due_date: Annotated[bool, Field(description="Remove the due date. Default false.")] = False,
    ) -> Task:
        """Change some fields of a task, leaving the others as they are.

        Pass only what should change; at least one field is required. Use assign_task to change the
        assignee. Returns the updated task.
        """
        return tracker.update_task(
            task_id,
            title=title,
            description=description,
            status=status,
            priority=priority,
            due_date=due_date,
            clear_due_date=clear_due_date,
        )

    def assign_task(
        task_id: TaskIdArg,
        assignee: Annotated[
            Handle | None,
            Field(description="Handle of the new assignee (e.g. 'bob'), or null to unassign the task."),
        ],
    ) -> Task:
        """Assign a task to a person, or unassign it with null.

        Handles are case-insensitive and stored in lower case. Returns the updated task.
        """
        return tracker.assign_task(task_id, assignee)

    def complete_task(task_id: TaskIdArg) -> Task:
        """Mark a task as done and record when it was completed.

        Fails if the task is already done (reopen it with update_task first if that was a mistake).
        """
        return tracker.complete_task(task_id)

    def delete_task(task_id: TaskIdArg) -> DeletedTask:
        """Permanently delete a task and all its comments.

        This cannot be undone; to close finished work keep the history with complete_task instead.
        Returns the deleted task as it was.
        """
        return tracker.delete_task(task_id)

    def search_tasks(
        query: Annotated[
            str,
            StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
            Field(description="Words to look for in task titles and descriptions (case-insensitive)."),
        ],
        project_id: Annotated[int | None, Field(ge=1, le=MAX_ID, description="Only search this project.")] = None,
        match: Annotated[
            Literal["all", "any"], Field(description="'all': every word must appear (default); 'any': at least one.")
        ] = "all",
        include_done: Annotated[bool, Field(description="Also return done tasks. Default true.")] = True,
        limit: Annotated[int, Field(ge=1, le=50, description="Maximum matches to return (1-50).")] = 10,
    ) -> SearchResult:
        """Search tasks by keywords in their title and description, best matches first.

        The query is split into words; title matches rank above description matches. Each hit has a
        snippet of the description around the match.
        """
        return tracker.search_tasks(query, project_id=project_id, match=match, include_done=include_done, limit=limit)

    add(create_task, "Create task", _CREATE)
    add(get_task, "Get task", _READ)
    add(list_tasks, "List tasks", _READ)
    add(update_task, "Update task", _EDIT)
    add(assign_task, "Assign task", _EDIT)
    add(complete_task, "Complete task", _EDIT)
    add(delete_task, "Delete task", _DESTROY)
    add(search_tasks, "Search tasks", _READ)

    # -- comments --------------------------------------------------------------------------------
    def add_comment(
        task_id: TaskIdArg,
        author: Annotated[Handle, Field(description="Handle of the person writing the comment (e.g. 'carol').")],
        body: Annotated[
            str,
            StringConstraints(strip_whitespace=True, min_length=1, max_length=5_000),
            Field(description="The comment text (1-5000 characters)."),
        ],
    ) -> Comment:
        """Add a comment to a task, e.g. a status update, question or decision.

        Comments are append-only. The task's project must not be archived.
        """
        return tracker.add_comment(task_id, author, body)

    def list_comments(task_id: TaskIdArg, limit: LimitArg = 20, offset: OffsetArg = 0) -> CommentPage:
        """List a task's comments, oldest first, one page at a time."""
        return tracker.list_comments(task_id, limit=limit, offset=offset)

    add(add_comment, "Add comment", _CREATE)
    add(list_comments, "List comments", _READ)

    # -- reports ---------------------------------------------------------------------------------
    def project_summary(project_id: ProjectIdArg) -> ProjectSummary:
        """Summarize a project: task counts by status and priority, completion, overdue and soon-due work.

        Overdue means past its due date and not done; dates are UTC.
        """
        return tracker.project_summary(project_id)

    def workload_report(
        project_id: Annotated[
            int | None, Field(ge=1, le=MAX_ID, description="Only this project; omit for all active projects.")
        ] = None,
    ) -> WorkloadReport:
        """Report open tasks per assignee (todo, in progress, blocked, overdue), busiest first.

        Use it to balance work or find who is overloaded; unassigned open tasks are counted separately.
        """
        return tracker.workload_report(project_id)

    add(project_summary, "Project summary", _READ)
    add(workload_report, "Workload report", _READ)
    return names
