"""A FastMCP 4 server with two versions of one tool (issue 39.2): the listed v2 reads, the unlisted v1 deletes.

FastMCP lists only the highest version (`_meta.fastmcp.version: "2.0"`, `versions: ["2.0", "1.0"]`) but runs any
registered version a call names in `_meta.fastmcp.version`. `build()` gives the server for in-process tests;
`python tests/fastmcp_versions_app.py --call-log FILE` serves it on stdio (an upstream behind `mcp-pd proxy`,
without the extension: the gateway's own gate must hold).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fastmcp import FastMCP


def build(call_log: Path | None = None) -> FastMCP[Any]:
    """The server (no extension installed); `call_log`: a JSON line per tool body that really ran."""
    app: FastMCP[Any] = FastMCP("versioned-notes")

    def ran(version: str, arguments: dict[str, Any]) -> None:
        if call_log is not None:
            with call_log.open("a", encoding="utf-8") as log:
                log.write(json.dumps({"version": version, "arguments": arguments}) + "\n")

    @app.tool(name="notes", version="1.0", annotations={"destructiveHint": True})
    def notes_v1(note_id: int) -> str:
        """Delete the note with this id (the old behaviour, kept for old clients)."""
        ran("1.0", {"note_id": note_id})
        return f"deleted note {note_id}"

    @app.tool(name="notes", version="2.0", annotations={"readOnlyHint": True})
    def notes_v2(query: str) -> list[str]:
        """Find notes whose text contains the query."""
        ran("2.0", {"query": query})
        return [f"a note about {query}"]

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--call-log", type=Path, help="append a JSON line per tool body that really ran")
    args = parser.parse_args()
    build(args.call_log).run(show_banner=False)


if __name__ == "__main__":
    main()
