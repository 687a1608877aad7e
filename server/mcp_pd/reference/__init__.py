"""The reference server: a real, offline project tracker and utilities, with progressive disclosure.

Also hosts simulation mode, which serves any directory of definitions (e.g. a real catalog) with
tools that validate their arguments and echo them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

from mcp_pd._display import printable
from mcp_pd._extension import ProgressiveDisclosure
from mcp_pd._version import VERSION

from ._simulate import SimulatedListing, build_simulated_server

__all__ = [
    "DEFAULT_DESCRIPTIONS",
    "SimulatedListing",
    "build_reference_server",
    "build_simulated_server",
    "serve_simulation",
    "shared_names",
]

logger = logging.getLogger("mcp_pd.reference")


def _default_descriptions() -> Path:
    """The copy of tool_descriptions/ a wheel ships beside this module, else the checkout's own.

    A checkout or an editable install has no copy here (only a wheel build maps the folder in), so it reads the
    repository's files, and editing them hot-reloads the running server.
    """
    here = Path(__file__).resolve().parent
    shipped = here / "tool_descriptions"
    return shipped if shipped.is_dir() else here.parents[2] / "tool_descriptions"


DEFAULT_DESCRIPTIONS = _default_descriptions()

INSTRUCTIONS = (
    "A project tracker (projects, tasks, comments, reports) on a local SQLite database, plus a few "
    "offline utilities (arithmetic, unit conversion, text statistics, hashing)."
)


def build_reference_server(
    descriptions: str | Path | None = None,
    *,
    database: str = ":memory:",
    seed: bool = True,
    **options: Any,
) -> tuple[MCPServer[Any], ProgressiveDisclosure]:
    """The reference MCPServer with its real tools and the extension installed.

    `descriptions` defaults to the repository's tool_descriptions/; `options` go to ProgressiveDisclosure.
    """
    # Imported here so simulation mode never loads the tracker.
    from ._tracker import Tracker, register_tracker_tools
    from ._utilities import register_utility_tools

    directory = Path(descriptions) if descriptions is not None else DEFAULT_DESCRIPTIONS
    if not directory.is_dir():
        logger.warning(
            "no descriptions directory at %s: describing tools from their registered schemas", printable(directory)
        )
    app: MCPServer[Any] = MCPServer("mcp-pd-reference", instructions=INSTRUCTIONS, version=VERSION)
    register_tracker_tools(app, Tracker(database, seed=seed))
    register_utility_tools(app)
    pd = ProgressiveDisclosure(directory if directory.is_dir() else None, **options).install(app)
    return app, pd


def shared_names(descriptions: str | Path) -> dict[str, list[str]]:
    """Tool names that more than one category folder of `descriptions` defines: name -> the folders, in order.

    One name is one tool (the store serves the first folder's file and reports the others), so a folder of several
    servers' definitions cannot serve two tools that share a name; the gateway can (it namespaces them)."""
    folders: dict[str, list[str]] = {}
    root = Path(descriptions)
    if root.is_dir():
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            for name in sorted({f.stem for f in folder.glob("*.json") if not f.name.startswith((".", "#", "~"))}):
                folders.setdefault(name, []).append(folder.name)
    return {name: where for name, where in folders.items() if len(where) > 1}


def _say_shared(descriptions: str | Path) -> None:
    for name, folders in shared_names(descriptions).items():
        gateway = " ".join(
            f'--upstream-stdio "{f}=mcp-pd serve --simulate --descriptions {Path(descriptions) / f}"' for f in folders
        )
        logger.warning(
            "simulation: tool %r is defined in %s: one name is one tool, so only %s/%s.json is served and %s not; "
            "to serve each under its own name, give the folders to the gateway, which names a tool two servers "
            "share <folder>__%s: mcp-pd proxy %s",
            name,
            " and ".join(f"{f}/" for f in folders),
            folders[0],
            name,
            ", ".join(f"{f}/{name}.json" for f in folders[1:]),
            name,
            gateway,
        )


def serve_simulation(descriptions: str | Path, **options: Any) -> tuple[Server[Any], ProgressiveDisclosure]:
    """A simulated server for every definition in `descriptions`, with the extension installed. A tool name that
    several category folders define is served once (the first folder's), and a warning says which and how to serve
    them all (`shared_names`)."""
    _say_shared(descriptions)
    pd = ProgressiveDisclosure(descriptions, **options)
    listing = SimulatedListing(pd.store)
    server = build_simulated_server(pd.store, listing=listing)
    pd.install(server)
    # Merged now from the very objects tools/list will return, so even the first listing finds every entry current,
    # and again on every reload: a read that comes before the next listing must not merge a new file with the
    # tool as it was listed before the edit.

    async def remerge(changed: frozenset[str]) -> None:
        pd.catalog.update(listing().tools, complete=True)

    pd.catalog.update(listing().tools, complete=True)
    pd.store.add_listener(remerge, first=True)  # before clients are told to re-read
    return server, pd
