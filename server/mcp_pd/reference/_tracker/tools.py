"""The tracker's MCP tools: argument types, annotations and `register_tracker_tools`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import date
from typing import Annotated, Any, Literal

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from pydantic import Field, StringConstraints

from .models import (
    MAX_ID,
    Comment,
    CommentPage,
    DeletedTask,
    Priority,
    Project,
    ProjectList,
    ProjectSummary,
    SearchResult,
    SortKey,
    Status,
    StatusFilter,
    Task,
    TaskPage,
    WorkloadReport,
)
from .tracker import Tracker

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
