"""What the core's checks share: what the first session learned about the server (`Discovery`), the tool the
suite may really invoke, and the names it reads by (a selection URI, a name the server does not have).

The scenarios themselves live one family per module: `_listing` (tools-list, spec 3.1), `_resource_listing`
(resource-listing, 4.1 and 4.2), `_reading` (resource-read, 4.3, 4.4 and 6.3) and `_missing` (missing-selection,
4.3 and 6.1); the session scenarios in `_sessions`, `_grants` and their neighbours.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ._probe import Exchange, short

__all__ = [
    "DESCRIPTION_LIMIT",
    "NO_EXTENSION",
    "NO_RESOURCE",
    "ONLY_OWN_TOOLS",
    "UNKNOWN_TOOL",
    "Discovery",
    "SafeTool",
    "selection_uri",
    "unfetched_tool_note",
    "unknown_name",
]

DESCRIPTION_LIMIT = 300
UNKNOWN_TOOL = "pd_conformance_no_such_tool"


def unknown_name(names: Collection[str]) -> str:
    """A tool name the server does not have: UNKNOWN_TOOL, unless it lists a tool by that very name."""
    return UNKNOWN_TOOL if UNKNOWN_TOOL not in names else UNKNOWN_TOOL + "_2"


NO_EXTENSION = "this server does not implement progressive disclosure (spec 4.1)"
NO_RESOURCE = "no tool_descriptions resource (see resource-listing/listed)"
ONLY_OWN_TOOLS = (
    "tools/list lists only the extension's own tools (catalog mode?), so there is no listed tool to read or call; "
    "--profile catalog checks such a server"
)


@dataclass(frozen=True)
class SafeTool:
    """The tool the suite may really invoke, the arguments it uses, and why it is considered safe."""

    name: str
    arguments: dict[str, Any]
    source: str


@dataclass
class Discovery:
    """What the first session learned about the server."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    # Listed tools of the extension itself (describe_tools and the like): never gated, never probed.
    meta: dict[str, str] = field(default_factory=dict)
    resource: dict[str, Any] | None = None
    base: str | None = None
    no_resource_reason: str = ""
    # The tool probed with an unfetched call (before anything is fetched) and its arguments.
    probe: str | None = None
    probe_arguments: dict[str, Any] = field(default_factory=dict)
    probe_source: str = ""
    # Annotations read from fetched definitions, when the listing had none (see _sessions.learn_hints).
    hints: dict[str, dict[str, Any]] = field(default_factory=dict)
    hints_problem: str = ""
    # The tool the suite may call after fetching it, with arguments learned from its description.
    safe: SafeTool | None = None
    safe_reason: str = "no tool was chosen"
    # Full definitions read during the run, by name (see _definitions.learn_definitions).
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The read each of `entries` came from (the report shows it with a problem found in that definition).
    read_from: dict[str, Exchange] = field(default_factory=dict)
    # Catalog mode: the tools behind call_tool, as browse_tools named them (see _browse.adopt_catalog).
    behind: list[dict[str, Any]] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The tools the extension discloses and gates: the listed ones (its own tools left out), then those behind
        catalog mode's call_tool."""
        return [t["name"] for t in self.callable_tools if isinstance(t.get("name"), str)]

    @property
    def gated_tools(self) -> list[dict[str, Any]]:
        """The listed tools the extension gates (what tools/list checks judge)."""
        return [t for t in self.tools if t["name"] not in self.meta]

    @property
    def callable_tools(self) -> list[dict[str, Any]]:
        """Every tool the suite may probe: the listed ones, then those behind call_tool."""
        return [*self.gated_tools, *self.behind]


def unfetched_tool_note(disc: Discovery) -> str:
    """One line for the report: which tool the suite really invoked, or why none."""
    if disc.safe is not None:
        return f"Tool invoked by the suite: {disc.safe.name} {short(disc.safe.arguments, 120)} ({disc.safe.source})."
    return f"No tool was invoked: {disc.safe_reason}."


def selection_uri(base: str, *names: str) -> str:
    """`<base>?tools=a,b`."""
    return f"{base}?tools={','.join(names)}"
