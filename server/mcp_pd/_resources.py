"""Resource routing: the descriptions resource answered here, every other URI handed to the server's own handlers.

resources/list and resources/templates/list gain the descriptions resource (and its `{?tools}` template) in front
of the server's own; resources/read, subscribe and unsubscribe of a descriptions URI are ours, anything else is
the server's (or an unknown resource when it has none).

Knows nothing about modes, grants or the catalog: reading a selection is a callable it is given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeAlias

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._advertise import EXTENSION_ID
from ._announce import Announcer
from ._disclosure import Described
from ._errors import Refusal
from ._guidance import RESOURCE_NAME, resource_description
from ._uri import SelectionError, is_descriptions_uri, parse_selection

__all__ = ["ResourceRouter", "dump_result"]

Context: TypeAlias = ServerRequestContext[Any, Any]
Handler: TypeAlias = Callable[[Context, Any], Awaitable[HandlerResult]]
_RESOURCE_KEY: Final = "tool_descriptions"


def dump_result(result: HandlerResult) -> dict[str, Any]:
    """A handler's result as the wire dict (a typed result dumped by alias, None as an empty result)."""
    if result is None:
        return {}
    if isinstance(result, dict):
        return dict(result)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


class ResourceRouter:
    """The resources/* handlers of the extension.

    `originals`: the server's own handlers by method (None where it has none). `read`: describes the selection
    parsed from a descriptions URI for this request (raising `Refusal`). `on_request` is called once per request
    that is ours; `cache_hints` adds the listing's cache directives.
    """

    def __init__(
        self,
        resource_uri: str,
        max_tools_per_read: int,
        announcer: Announcer,
        originals: Mapping[str, Handler | None],
        *,
        read: Callable[[Context, Callable[[], list[str]]], Awaitable[Described]],
        on_request: Callable[[Context], None],
        cache_hints: Callable[[Context, dict[str, Any]], dict[str, Any]],
    ) -> None:
        self.resource_uri = resource_uri
        self.max_tools_per_read = max_tools_per_read
        self.announcer = announcer
        self._originals = originals
        self._read = read
        self._on_request = on_request
        self._cache_hints = cache_hints

    def handlers(self) -> dict[str, tuple[type[Any], Handler]]:
        """The wrappers to install, by method, with their params model."""
        return {
            "resources/list": (types.PaginatedRequestParams, self.list_resources),
            "resources/templates/list": (types.PaginatedRequestParams, self.list_templates),
            "resources/read": (types.ReadResourceRequestParams, self.read_resource),
            "resources/subscribe": (types.SubscribeRequestParams, self.subscribe),
            "resources/unsubscribe": (types.UnsubscribeRequestParams, self.unsubscribe),
        }

    def selected_by(self, uri: str) -> list[str] | None:
        """The tools a subscribed descriptions URI covers (None: the base URI, every tool)."""
        try:
            names = parse_selection(uri, self.resource_uri, self.max_tools_per_read)
        except SelectionError:
            return []
        return names or None

    # -- read ------------------------------------------------------------------------------------------
    async def read_resource(self, ctx: Context, params: types.ReadResourceRequestParams) -> HandlerResult:
        uri = str(params.uri)
        if not is_descriptions_uri(uri, self.resource_uri):
            return await self._theirs("resources/read", ctx, params, uri)
        try:
            described = await self._read(ctx, lambda: parse_selection(uri, self.resource_uri, self.max_tools_per_read))
        except Refusal as refusal:
            # I-2: a refused read is a JSON-RPC error whose data is the error document.
            raise refusal.rpc_error() from None
        result = types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri,
                    mime_type="application/json",
                    text=described.text(),
                    _meta={EXTENSION_ID: {"versions": described.versions}},
                )
            ]
        )
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # A read grants as a side effect, so it must reach the server every time: never served from a cache.
            result = result.model_copy(update={"ttl_ms": 0, "cache_scope": "private"})
        return result

    # -- listings --------------------------------------------------------------------------------------
    def entry(self, *, template: bool) -> dict[str, Any]:
        """The descriptions resource (or its template) as resources/list shows it."""
        entry: dict[str, Any] = (
            {"uriTemplate": self.resource_uri + "{?tools}"} if template else {"uri": self.resource_uri}
        )
        entry.update(
            name=_RESOURCE_KEY,
            title=RESOURCE_NAME,
            description=resource_description(self.resource_uri),
            mimeType="application/json",
        )
        return entry

    async def list_resources(self, ctx: Context, params: types.PaginatedRequestParams) -> dict[str, Any]:
        return await self._listing("resources/list", "resources", ctx, params)

    async def list_templates(self, ctx: Context, params: types.PaginatedRequestParams) -> dict[str, Any]:
        return await self._listing("resources/templates/list", "resourceTemplates", ctx, params)

    async def _listing(
        self, method: str, key: str, ctx: Context, params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        self._on_request(ctx)
        handler = self._originals.get(method)
        if handler is not None:
            page = dump_result(await handler(ctx, params))
        else:
            # A server without resources of its own: an empty result of the right model, so each era's
            # required fields are filled in by the SDK.
            empty = (
                types.ListResourcesResult(resources=[])
                if key == "resources"
                else types.ListResourceTemplatesResult(resource_templates=[])
            )
            page = dump_result(empty)
        if params.cursor is None:
            page[key] = [self.entry(template=key == "resourceTemplates"), *page.get(key, [])]
        return self._cache_hints(ctx, page)

    # -- subscriptions ---------------------------------------------------------------------------------
    async def subscribe(self, ctx: Context, params: types.SubscribeRequestParams) -> HandlerResult:
        return await self._subscription("resources/subscribe", ctx, params, self.announcer.subscribe)

    async def unsubscribe(self, ctx: Context, params: types.UnsubscribeRequestParams) -> HandlerResult:
        return await self._subscription("resources/unsubscribe", ctx, params, self.announcer.unsubscribe)

    async def _subscription(
        self,
        method: str,
        ctx: Context,
        params: types.SubscribeRequestParams | types.UnsubscribeRequestParams,
        record: Callable[[Context, str], None],
    ) -> HandlerResult:
        uri = str(params.uri)
        if not is_descriptions_uri(uri, self.resource_uri):
            return await self._theirs(method, ctx, params, uri)
        self._on_request(ctx)
        record(ctx, uri)
        return types.EmptyResult()

    async def _theirs(self, method: str, ctx: Context, params: Any, uri: str) -> HandlerResult:
        handler = self._originals.get(method)
        if handler is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
        return await handler(ctx, params)
