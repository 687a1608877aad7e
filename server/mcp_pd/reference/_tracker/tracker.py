"""`Tracker`: projects, tasks, comments and search, each operation one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import date
from typing import Any, Literal

from .db import _ORDER_BY, _TASK_SELECT, _WORD, _page_end
from .models import (
    PRIORITIES,
    Comment,
    CommentPage,
    DeletedTask,
    Priority,
    Project,
    ProjectList,
    SearchHit,
    SearchResult,
    SortKey,
    Status,
    StatusFilter,
    Task,
    TaskPage,
    TrackerError,
    _stamp,
)
from .reports import TrackerReports


class Tracker(TrackerReports):
    """A project tracker stored in SQLite (`":memory:"` or a file path), safe to share between threads."""

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
