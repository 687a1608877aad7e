"""The describe path: reading the descriptions resource and calling `describe_tools` share it (rate limit,
selection, catalog, describe and grant), so a model gets the same document and the same refusals either way (I-13).

Knows nothing about the SDK's handler table, modes or resource routing: it is handed a caller and a selection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import mcp_types as types
from mcp.server.context import ServerRequestContext

from ._advertise import EXTENSION_ID
from ._disclosure import Described, Disclosure
from ._errors import ErrorCode, Refusal, tool_result
from ._guidance import describe_tool_description
from ._model import missing_tool_selection, session_required
from ._policy import Caller
from ._sessions import client_address
from ._uri import SelectionError, select_names

__all__ = ["Describer"]

Context: TypeAlias = ServerRequestContext[Any, Any]


class Describer:
    """Describe a selection for a caller; `ensure(ctx, names)` re-lists the server's tools for unknown names.

    `grants_kept`: describing grants (every mode but eager), so a caller that cannot keep a grant is refused.
    """

    def __init__(
        self,
        disclosure: Disclosure,
        *,
        resource_uri: str,
        max_tools_per_read: int,
        describe_tool: str | None,
        grants_kept: bool,
        ensure: Callable[[Context, list[str]], Awaitable[None]],
    ) -> None:
        self.disclosure = disclosure
        self.resource_uri = resource_uri
        self.max_tools_per_read = max_tools_per_read
        self.describe_tool = describe_tool
        self.grants_kept = grants_kept
        self._ensure = ensure

    def tool_entry(self) -> dict[str, Any]:
        """The describe tool as tools/list shows it."""
        return {
            "name": self.describe_tool,
            "description": describe_tool_description(self.resource_uri, self.max_tools_per_read),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "tools": {"type": "array", "items": {"type": "string"}, "maxItems": self.max_tools_per_read}
                },
                "required": ["tools"],
            },
            "annotations": {"readOnlyHint": True},
        }

    async def describe(self, ctx: Context, caller: Caller, select: Callable[[], list[str]]) -> Described:
        """Rate limit, selection, catalog, describe: the one path behind the resource read and describe_tools."""
        await self.disclosure.check_rate(caller, caller.session or client_address(ctx))
        try:
            names = select()
        except SelectionError as exc:
            raise Refusal(exc.code, exc.message) from None
        if not names:
            raise Refusal.of(missing_tool_selection(self.resource_uri))
        await self._ensure(ctx, names)
        return await self.disclosure.describe(caller, names)

    async def tool_call(self, ctx: Context, caller: Caller, arguments: dict[str, Any]) -> types.CallToolResult:
        """describe_tools: the resource read's document, errors, limits and grants, as a tool result (I-13)."""

        def select() -> list[str]:
            requested = arguments.get("tools")
            if isinstance(requested, str):
                requested = [requested]  # a model that passes one name as a string means that name
            if not isinstance(requested, list) or not all(isinstance(n, str) for n in requested):
                raise SelectionError(
                    ErrorCode.INVALID_ARGUMENTS,
                    f'{self.describe_tool} takes {{"tools": ["tool_name", ...]}}: a list of tool names as tools/list '
                    "shows them.",
                )
            return select_names(requested, self.max_tools_per_read)

        try:
            described = await self.describe(ctx, caller, select)
        except Refusal as refusal:
            return refusal.tool_result()
        described_names = [name for name, full, _ in described.entries if full is not None]
        if caller.session is None and self.grants_kept and described_names:
            # Nothing can hold the grant (no session, no principal): answering "described" would be a lie that
            # every later call exposes with SESSION_REQUIRED. Refuse now, saying why and how to fix it.
            names = ", ".join(described_names)
            document = session_required(names, ctx.protocol_version, describing=True)
            return Refusal.of(document).tool_result()
        result = tool_result(described.document(), error=False)
        # The JSON text is the resource's own, byte for byte, assembled from the cached definitions.
        result.content = [types.TextContent(type="text", text=described.text())]
        result.meta = {EXTENSION_ID: {"versions": described.versions}}
        return result
