"""The tracker's vocabulary: statuses, priorities, limits, the results its tools return, its error."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

Status = Literal["todo", "in_progress", "blocked", "done"]
StatusFilter = Literal["open", "todo", "in_progress", "blocked", "done"]
Priority = Literal["low", "medium", "high", "urgent"]
SortKey = Literal["priority", "due_date", "created_at", "updated_at"]
STATUSES: Final[tuple[Status, ...]] = ("todo", "in_progress", "blocked", "done")
PRIORITIES: Final[tuple[Priority, ...]] = ("low", "medium", "high", "urgent")
MAX_ID: Final = 2**31 - 1
OVERDUE_LISTED: Final = 20


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


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
