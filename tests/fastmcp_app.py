"""A FastMCP 4 server as its authors write one, with `ProgressiveDisclosure().install(app)` (issue 32.1).

Notes kept in memory; a read-only tool without arguments (`list_notes`, so the suite can verify the gate), a
write and a destructive one, a tool hidden by its tag, a sub-server mounted under `files_`, one tool added after
install. `python tests/fastmcp_app.py` serves stdio with `app.run()`; `--http PORT` serves Streamable HTTP with
`app.run(transport="http")`; `--auth` puts FastMCP's bearer auth in front (tokens in `TOKENS`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.server.auth import StaticTokenVerifier
from mcp_pd import ProgressiveDisclosure
from pydantic import Field

# Two users of one OAuth client (the subject tells them apart) and a second client.
TOKENS: dict[str, dict[str, Any]] = {
    "alice-token": {"client_id": "notes-app", "sub": "alice", "scopes": ["notes"]},
    "bob-token": {"client_id": "notes-app", "sub": "bob", "scopes": ["notes"]},
    "ci-token": {"client_id": "ci", "scopes": ["notes"]},
}
READ_ONLY = {"readOnlyHint": True}


def build(
    *, auth: bool = False, call_log: Path | None = None, descriptions: Path | None = None
) -> tuple[FastMCP[Any], ProgressiveDisclosure]:
    """The server, installed (over `descriptions`, a definitions folder, if given); `call_log`: a JSON line per tool
    body that really ran."""
    notes: dict[int, str] = {}

    def ran(name: str, arguments: dict[str, Any]) -> None:
        if call_log is not None:
            with call_log.open("a", encoding="utf-8") as log:
                log.write(json.dumps({"tool": name, "arguments": arguments}) + "\n")

    app: FastMCP[Any] = FastMCP(
        "fastmcp-notes",
        instructions="Keeps short notes.",
        auth=StaticTokenVerifier(tokens=TOKENS) if auth else None,
    )

    @app.tool(annotations=READ_ONLY)
    def list_notes(limit: Annotated[int | None, Field(ge=1)] = None) -> list[str]:
        """List the notes, oldest first (all of them, or the first `limit`)."""
        ran("list_notes", {} if limit is None else {"limit": limit})
        return [notes[key] for key in sorted(notes)][:limit]

    @app.tool
    def add_note(text: Annotated[str, Field(min_length=1, max_length=200)]) -> int:
        """Store a note and return its id."""
        ran("add_note", {"text": text})
        key = len(notes) + 1
        notes[key] = text
        return key

    @app.tool(annotations={"destructiveHint": True})
    def delete_note(note_id: Annotated[int, Field(ge=1)]) -> bool:
        """Delete one note by id."""
        ran("delete_note", {"note_id": note_id})
        return notes.pop(note_id, None) is not None

    @app.tool(tags={"internal"})
    def dump_state() -> dict[str, Any]:
        """Internal: the whole state, for debugging."""
        ran("dump_state", {})
        return {"notes": notes}

    app.disable(tags={"internal"})

    files: FastMCP[Any] = FastMCP("files")

    @files.tool(annotations=READ_ONLY)
    def count(text: str) -> int:
        """Count the characters of a text."""
        ran("files_count", {"text": text})
        return len(text)

    app.mount(files, namespace="files")
    pd = ProgressiveDisclosure(descriptions).install(app)

    @app.tool(annotations=READ_ONLY)
    def note_count() -> int:
        """How many notes are stored (registered after install)."""
        ran("note_count", {})
        return len(notes)

    return app, pd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument("--auth", action="store_true", help="FastMCP bearer auth (HTTP only)")
    parser.add_argument("--call-log", type=Path, help="append a JSON line per tool that really ran")
    parser.add_argument("--descriptions", type=Path, help="a folder of definition files (overlays) to install with")
    args = parser.parse_args()
    app, _ = build(auth=args.auth, call_log=args.call_log, descriptions=args.descriptions)
    if args.http is None:
        app.run(show_banner=False)
    else:
        app.run(transport="http", host="127.0.0.1", port=args.http, show_banner=False, log_level="warning")


if __name__ == "__main__":
    main()
