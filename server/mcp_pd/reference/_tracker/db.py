"""The tracker's SQLite layer: schema, one connection shared by threads, one transaction per operation, row
lookups and row-to-model conversion."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from typing import Final, Self

from .models import Project, Task, TrackerError, _utc_now
from .seed import _seed

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


def _lower(text: str | None) -> str | None:
    return text.lower() if text is not None else None


def _page_end(offset: int, count: int, total: int) -> int | None:
    return offset + count if offset + count < total else None


class TrackerBase:
    """The connection, its lock and transactions, and the lookups every operation shares."""

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

    def __enter__(self) -> Self:
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
