"""The three modes as objects (interpretations I-14): what `tools/list` shows a caller, and where a call goes.

`EagerMode` lists full definitions and enforces nothing; `ProgressiveMode` lists one-liners and gates every call
on the caller's grants (spec v2.1); `CatalogMode` lists a fixed few meta-tools plus the pinned tools and owns the
search index behind them (I-16). A mode decides; `ProgressiveDisclosure` wraps the SDK's handlers and hands each
tools/list and tools/call to its mode. Decisions about a single tool (visible? granted?) stay in `Disclosure`.

Knows nothing about transports, the SDK's handler table, resources or paging cursors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal, Protocol, TypeAlias, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext

from ._advertise import EXTENSION_ID
from ._disclosure import Disclosure
from ._errors import Refusal, tool_result
from ._metatools import CALL_TOOL, META_TOOLS, SEARCH_TOOL, MetaTools
from ._policy import Caller
from ._selectors import selector_refusal
from ._store import Catalog

__all__ = ["CatalogMode", "DisclosureMode", "EagerMode", "Mode", "ModeServices", "ProgressiveMode", "make_mode"]

Mode: TypeAlias = Literal["eager", "progressive", "catalog"]
Context: TypeAlias = ServerRequestContext[Any, Any]

# tools/list entry fields an eager listing keeps from the full definition (the rest is ours, not MCP's).
_TOOL_FIELDS: Final = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "execution",
)


class ModeServices(Protocol):
    """What a mode uses of the extension that composes it (so a mode never reaches into its internals)."""

    catalog: Catalog
    disclosure: Disclosure
    describe_tool: str | None
    page_size: int

    def describe_tool_entry(self) -> dict[str, Any]: ...

    async def server_call(self, ctx: Context, params: types.CallToolRequestParams) -> Any:
        """The server's own tools/call handler."""
        ...

    async def describe_call(self, ctx: Context, caller: Caller, arguments: dict[str, Any]) -> types.CallToolResult:
        """describe_tools (the resource read's path, as a tool result)."""
        ...

    async def ensure(self, ctx: Context, names: list[str]) -> None:
        """Re-list the server's tools when a name is not in the catalog yet."""
        ...

    def session_required(self, ctx: Context, name: str) -> dict[str, Any]: ...


class DisclosureMode(Protocol):
    """One mode: its name, its tools/list entries for a caller, and its routing of tools/call."""

    name: Mode

    @property
    def metatools(self) -> MetaTools | None:
        """Catalog mode's meta-tools (None in the other modes)."""
        ...

    def listing(self, caller: Caller, start: int) -> tuple[list[dict[str, Any]], int | None]:
        """The entries of the page starting at catalog position `start`, and the next page's position (or None)."""
        ...

    async def call(self, ctx: Context, caller: Caller, params: types.CallToolRequestParams) -> Any: ...

    async def admits(self, caller: Caller, name: str) -> bool:
        """Whether `call` would hand a tools/call of `name` by `caller` to the server's own handler now, unchanged.

        No side effects; False whenever in doubt (the extension's own tools, names the catalog does not hold yet).
        """
        ...


class _Paged:
    """Eager and progressive list the catalog itself, page by page, skipping what the caller may not see."""

    def __init__(self, services: ModeServices) -> None:
        self.services = services
        self.metatools: MetaTools | None = None

    def entry(self, name: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def listing(self, caller: Caller, start: int) -> tuple[list[dict[str, Any]], int | None]:
        s = self.services
        names = s.catalog.names()
        entries: list[dict[str, Any]] = []
        if start == 0 and s.describe_tool:
            entries.append(s.describe_tool_entry())
        position = start
        while position < len(names) and len(entries) < s.page_size:
            name = names[position]
            position += 1
            if s.disclosure.visible(caller, name):
                entry = self.entry(name)
                if entry is not None:
                    entries.append(entry)
        return entries, position if position < len(names) else None


class EagerMode(_Paged):
    """Full definitions listed, nothing enforced: the baseline and the escape hatch."""

    name: Mode = "eager"

    def entry(self, name: str) -> dict[str, Any] | None:
        catalog = self.services.catalog
        full = catalog.full(name)
        if full is None:
            return None
        definition = catalog.get(name)
        meta = {"_meta": definition.meta} if definition is not None and definition.meta else {}
        return {k: full[k] for k in _TOOL_FIELDS if k in full} | meta

    async def call(self, ctx: Context, caller: Caller, params: types.CallToolRequestParams) -> Any:
        s = self.services
        # Nothing is enforced, but what the permission hook hides stays unknown.
        await s.disclosure.look_up([params.name])
        if not s.disclosure.visible(caller, params.name):
            return (await s.disclosure.not_found_call(caller, params.name)).tool_result()
        return await s.server_call(ctx, params)

    async def admits(self, caller: Caller, name: str) -> bool:
        disclosure = self.services.disclosure
        if name in disclosure.own_tools:
            return False
        await disclosure.look_up([name])
        return disclosure.visible(caller, name)


class ProgressiveMode(_Paged):
    """Spec v2.1: one-liners listed; a call runs only once this caller has fetched the tool's definition."""

    name: Mode = "progressive"

    def entry(self, name: str) -> dict[str, Any] | None:
        return self.services.catalog.minimal(name)

    async def call(self, ctx: Context, caller: Caller, params: types.CallToolRequestParams) -> Any:
        if params.name == self.services.describe_tool:
            return await self.services.describe_call(ctx, caller, params.arguments or {})
        return await self.gated_call(ctx, caller, params)

    async def gated_call(
        self,
        ctx: Context,
        caller: Caller,
        params: types.CallToolRequestParams,
        check_arguments: Callable[[], Refusal | None] | None = None,
    ) -> Any:
        """One real tool: describe-before-call (then `check_arguments`, for call_tool), then the server's own
        handler."""
        s = self.services
        await s.ensure(ctx, [params.name])
        refusal = await s.disclosure.gate(caller, params.name, lambda: s.session_required(ctx, params.name))
        if refusal is None and params.name not in s.disclosure.own_tools:
            # Described is the listed implementation: a `_meta` selector reaching another one is another tool (I-42).
            definition = s.catalog.get(params.name)
            described = definition.meta if definition is not None else None
            refusal = selector_refusal(params.name, described, cast("Mapping[str, Any] | None", params.meta))
        if refusal is None and check_arguments is not None:
            refusal = check_arguments()
        if refusal is not None:
            return refusal.tool_result()
        return await s.server_call(ctx, params)

    async def admits(self, caller: Caller, name: str) -> bool:
        disclosure = self.services.disclosure
        # Checked here, not left to the gate: its refusals for these build documents (suggestions, SESSION_REQUIRED)
        # that a yes-or-no question does not need.
        if caller.session is None or name in disclosure.own_tools or name not in disclosure.catalog:
            return False
        return await disclosure.gate(caller, name, dict) is None


class CatalogMode(ProgressiveMode):
    """A fixed tools/list (search_tools, browse_tools, describe_tools, call_tool) plus the pinned tools, still
    gated; owns the meta-tools and the search index behind them (I-16)."""

    name: Mode = "catalog"

    def __init__(self, services: ModeServices, metatools: MetaTools, pinned: Sequence[str]) -> None:
        super().__init__(services)
        self.metatools: MetaTools = metatools
        self.pinned = tuple(pinned)
        self._index_started = False

    def start_index(self) -> Awaitable[Any] | None:
        """Build the search index in the background from the first request on (once the catalog is complete)."""
        if self._index_started or not self.services.catalog.complete:
            return None
        self._index_started = True
        return self.metatools.index.ready()

    def listing(self, caller: Caller, start: int) -> tuple[list[dict[str, Any]], int | None]:
        s = self.services
        search, browse, call = self.metatools.entries(s.describe_tool or "")
        entries = [search, browse, s.describe_tool_entry(), call]
        for name in self.pinned:
            if name in s.catalog and s.disclosure.visible(caller, name):
                entry = s.catalog.minimal(name)
                if entry is not None:
                    entries.append(entry)
        return entries, None

    async def call(self, ctx: Context, caller: Caller, params: types.CallToolRequestParams) -> Any:
        if params.name in META_TOOLS:
            return await self._meta_call(ctx, caller, params)
        return await super().call(ctx, caller, params)

    async def _meta_call(self, ctx: Context, caller: Caller, params: types.CallToolRequestParams) -> Any:
        """search_tools, browse_tools, call_tool."""
        s, metatools = self.services, self.metatools
        arguments = params.arguments or {}
        if params.name == CALL_TOOL:
            unwrapped = metatools.unwrap(arguments)
            if isinstance(unwrapped, Refusal):
                return unwrapped.tool_result()
            name, inner = unwrapped
            inner_params = params.model_copy(update={"name": name, "arguments": inner})
            if name == s.describe_tool:
                return await s.describe_call(ctx, caller, inner)
            if name in META_TOOLS:
                return await self._meta_call(ctx, caller, inner_params)
            return await self.gated_call(ctx, caller, inner_params, lambda: metatools.check_arguments(name, inner))
        await s.ensure(ctx, [])
        try:
            if params.name != SEARCH_TOOL:
                return tool_result(await metatools.browse(caller, arguments), error=False)
            result = tool_result(await metatools.search(caller, arguments), error=False)
        except Refusal as refusal:
            return refusal.tool_result()
        # Which ranking answered (hybrid, or lexical and why): for clients and operators, not the model.
        return result.model_copy(update={"meta": {EXTENSION_ID: metatools.index.ranking}})


def make_mode(
    name: Mode, services: ModeServices, metatools: Callable[[], MetaTools], pinned: Sequence[str] = ()
) -> DisclosureMode:
    """The mode object for `name`; `metatools` is only called for catalog mode."""
    if name == "eager":
        return EagerMode(services)
    if name == "progressive":
        return ProgressiveMode(services)
    if name == "catalog":
        return CatalogMode(services, metatools(), pinned)
    raise ValueError(f"mode must be 'eager', 'progressive' or 'catalog', not {name!r}")
