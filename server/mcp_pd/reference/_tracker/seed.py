"""Demo data: a small, realistic tracker (due dates relative to now)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Final

from .models import Priority, Status, _stamp

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
