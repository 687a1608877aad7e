"""Speaking to an upstream that serves progressive disclosure itself.

Such an upstream lists minimal entries and refuses calls of tools its session has not described. The gateway reads
every full definition once per session (which also authorizes its one shared session there), lists those, never
passes the upstream's own describe tool on, and re-reads a definition when a call comes back refused (a grant that
expired, a definition that changed). Knows nothing about processes, supervision or the gateway's own callers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import mcp_types as types
from mcp.client.session import ClientSession

from mcp_pd import EXTENSION_ID, TOOL_DESCRIPTION_REQUIRED, selection_uri

__all__ = ["ProgressiveUpstream", "progressive_settings"]

DESCRIBE_CHUNK: Final = 50  # names per resource read
_DEFAULT_URI: Final = "resource:///tool_descriptions"
_FIELDS: Final = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "execution")


def progressive_settings(session: ClientSession) -> dict[str, Any] | None:
    """The upstream's own progressive-disclosure settings, if it enforces describe-before-call (progressive mode)."""
    caps = session.server_capabilities
    if caps is None:
        return None
    for table in (caps.experimental, caps.extensions):
        settings = (table or {}).get(EXTENSION_ID)
        if isinstance(settings, dict) and settings.get("mode", "progressive") == "progressive":
            return settings
    return None


class ProgressiveUpstream:
    """The describe-before-call side of one upstream session, from its advertised `settings`."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.base = str(settings.get("resourceUri") or _DEFAULT_URI)
        self.describe_tool = settings.get("describeTool")

    async def listing(
        self, session: ClientSession, tools: Sequence[types.Tool]
    ) -> tuple[tuple[types.Tool, ...], dict[str, dict[str, Any]]]:
        """The full tools behind a minimal listing (its describe tool left out), and their definitions by name."""
        listed = {t.name: t for t in tools if t.name != self.describe_tool}
        full = await self.describe(session, list(listed))
        return tuple(_tool(full[n], listed[n]) for n in listed if n in full), full

    async def describe(self, session: ClientSession, names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Read the definitions of `names` (which authorizes them in this session); those it served, by name."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(names), DESCRIBE_CHUNK):
            result = await session.read_resource(selection_uri(list(names[start : start + DESCRIBE_CHUNK]), self.base))
            for content in result.contents:
                text = getattr(content, "text", None)
                document = json.loads(text) if isinstance(text, str) else {}
                found.update({k: v for k, v in document.items() if isinstance(v, dict) and "inputSchema" in v})
        return found

    @staticmethod
    def refused(result: types.CallToolResult) -> bool:
        """Whether the upstream refused a call as undescribed (its grant there lapsed): describe, then retry once."""
        error = (result.structured_content or {}).get("error") if result.is_error else None
        return isinstance(error, dict) and error.get("code") == TOOL_DESCRIPTION_REQUIRED


def _tool(full: Mapping[str, Any], listed: types.Tool) -> types.Tool:
    wire = {k: full[k] for k in _FIELDS if k in full}
    if listed.meta:
        wire["_meta"] = listed.meta  # hosts read _meta from the listing
    return types.Tool.model_validate(wire)
