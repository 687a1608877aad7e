"""An offline project tracker on SQLite (projects, tasks, comments, reports) and its MCP tools.

`Tracker` owns one SQLite connection shared by the server's worker threads; every operation holds a
lock and runs in one transaction. Errors a caller can fix are `TrackerError` (a `ToolError`), worded
so a model knows which value was wrong and which tool to call next.
"""

from __future__ import annotations

from .models import (
    Comment,
    CommentPage,
    DeletedTask,
    Project,
    ProjectList,
    ProjectSummary,
    SearchResult,
    Task,
    TaskPage,
    TrackerError,
    WorkloadReport,
)
from .tools import register_tracker_tools
from .tracker import Tracker

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
