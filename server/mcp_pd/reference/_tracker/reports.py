"""The tracker's reports: read-only aggregates over a project's tasks."""

from __future__ import annotations

from datetime import date, timedelta

from .db import TrackerBase
from .models import (
    OVERDUE_LISTED,
    OverdueTask,
    PriorityCounts,
    ProjectSummary,
    StatusCounts,
    WorkloadEntry,
    WorkloadReport,
)


class TrackerReports(TrackerBase):
    """Project summary and workload report."""

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
