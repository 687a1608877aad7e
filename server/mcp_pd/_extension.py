"""The SDK glue: installs progressive disclosure on an `MCPServer` or a low-level `Server`.

It wraps the server's own request handlers (tools/list, tools/call, resources/*, server/discover)
rather than answering in middleware, so every result still passes the SDK's validation and gets
each protocol era's envelope. One data path: store -> catalog -> minimal/full views -> describe -> grants
-> gate (`_disclosure.py` makes those two decisions; this module only maps them onto MCP messages).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Final, Literal, Self, TypeAlias

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._advertise import EXTENSION_ID, Advertiser
from ._announce import Announcer
from ._disclosure import Described, Disclosure, Refused
from ._errors import ErrorCode
from ._grants import GrantStore, MemoryGrantStore
from ._guidance import (
    RESOURCE_NAME,
    describe_tool_description,
    resource_description,
)
from ._index import CatalogIndex, Semantic
from ._metatools import CALL_TOOL, META_TOOLS, SEARCH_TOOL, MetaTools
from ._model import DEFAULT_RESOURCE_URI, SESSION_REQUIRED, missing_tool_selection
from ._paging import decode_cursor, encode_cursor
from ._policy import Caller, FetchLimiter, FetchRateLimiter, RateLimit, ToolPermission
from ._search.store import VectorStore
from ._sessions import SessionKeyHook, SessionlessPolicy, SessionPolicy, SessionResolver, client_address, is_http
from ._store import Catalog, DescriptionStore, ListedTool
from ._uri import SelectionError, is_descriptions_uri, parse_selection, select_names

__all__ = ["DESCRIBE_TOOL", "EXTENSION_ID", "Mode", "ProgressiveDisclosure", "tool_result"]

logger = logging.getLogger("mcp_pd")

DESCRIBE_TOOL: Final = "describe_tools"
_RESOURCE_KEY: Final = "tool_descriptions"

Mode: TypeAlias = Literal["eager", "progressive", "catalog"]
Handler: TypeAlias = Callable[[ServerRequestContext[Any, Any], Any], Awaitable[HandlerResult]]
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


def _lowlevel(server: MCPServer[Any] | Server[Any]) -> Server[Any]:
    if isinstance(server, Server):
        return server
    if isinstance(server, MCPServer):
        # MCPServer keeps its low-level Server private; its handlers are what we wrap.
        inner = getattr(server, "_lowlevel_server", None)
        if isinstance(inner, Server):
            return inner
        raise TypeError("this mcp version's MCPServer does not expose its low-level Server; please report it")
    raise TypeError(f"install() takes an mcp MCPServer or low-level Server, not {type(server).__name__}")


def _dump(result: HandlerResult) -> dict[str, Any]:
    if result is None:
        return {}
    if isinstance(result, dict):
        return dict(result)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def _split_page(result: HandlerResult) -> tuple[dict[str, Any], list[Any]]:
    """A tools/list page without its tools, and the tools as listed (the handler's own list, not a copy).

    A typed result keeps its `Tool` models: dumping a large listing on every call was most of the
    cost of tools/list at 10k tools (benchmarks/README.md), and the catalog needs only changed tools dumped.
    """
    if isinstance(result, types.ListToolsResult):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"tools"}), result.tools
    page = _dump(result)
    tools = page.pop("tools", None)
    return page, tools if isinstance(tools, list) else []


def tool_result(document: dict[str, Any], *, error: bool) -> types.CallToolResult:
    """A tool result carrying `document` as structured content and as JSON text (I-1); the gateway's too."""
    text = json.dumps(document, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=document, is_error=error
    )


def _decode_cursor(cursor: str) -> int:
    position = decode_cursor("tools/list", cursor)
    if position is None:
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor: list again without a cursor.", {"cursor": cursor[:100]})
    return position


class ProgressiveDisclosure:
    """Spec v2.1 progressive disclosure for a server built on the official `mcp` SDK.

    >>> pd = ProgressiveDisclosure("tool_descriptions").install(server)

    `descriptions`: directory of `<tool>.json` files enriching (or, in simulation, defining) tools;
    a tool without a file is described from its registered schema. `mode`: "progressive" (spec v2.1, the
    default), "eager" (full definitions listed, nothing enforced: the baseline and the escape hatch) or
    "catalog" (a fixed tools/list of search_tools, browse_tools, describe_tools and call_tool, plus the `pinned`
    tools; `semantic` picks the search model: "auto", "off" or an Embedder; `vector_cache`: where its vectors are kept
    across processes, "default" for the user's cache directory, None for memory only). `describe_tool`: also serve the
    `describe_tools` tool, for hosts whose model
    cannot read resources (interpretations I-13). `permission`: the primary authorization hook. `fetch_rate`:
    per-session limit on reads (None: unlimited); `rate_limiter` replaces the in-process one (e.g. Redis, shared by
    replicas). `grants`: where grants live (default in memory). `principal_keys`: key grants on the SDK's
    authenticated principal when there is one (spec/sessions.md). `sessionless` / `session_key`: what to do where
    the transport has no session (spec/sessions.md). `redis`: a Redis URL holding grants and the fetch limit, shared
    by replicas and kept across restarts (the `mcp-pd[redis]` extra; keys start with `redis_prefix`).
    `list_annotations`: keep `title` and `annotations` in `tools/list` entries (I-5). `page_size`: tools per
    `tools/list` page (cursor pagination).
    """

    def __init__(
        self,
        descriptions: str | Path | None = None,
        *,
        mode: Mode = "progressive",
        describe_tool: bool = True,
        resource_uri: str = DEFAULT_RESOURCE_URI,
        permission: ToolPermission | None = None,
        fetch_rate: RateLimit | None = RateLimit(),  # noqa: B008 - frozen value object
        session_idle_timeout: float = 1800.0,
        sessionless: SessionlessPolicy = "downgrade",
        session_key: SessionKeyHook | None = None,
        max_tools_per_read: int = 64,
        watch: bool = True,
        instructions: bool = True,
        grants: GrantStore | None = None,
        list_annotations: bool = False,
        page_size: int = 1000,
        pinned: Sequence[str] = (),
        semantic: Semantic = "auto",
        vector_cache: str | Path | None = "default",
        rate_limiter: FetchLimiter | None = None,
        principal_keys: bool = True,
        redis: str | None = None,
        redis_prefix: str = "mcp-pd:",
    ) -> None:
        if "?" in resource_uri or "#" in resource_uri:
            raise ValueError("resource_uri is the base URI, without a query or fragment")
        if sessionless not in ("downgrade", "reject"):
            raise ValueError("sessionless must be 'downgrade' or 'reject'")
        if mode not in ("eager", "progressive", "catalog"):
            raise ValueError(f"mode must be 'eager', 'progressive' or 'catalog', not {mode!r}")
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.mode: Mode = mode
        self.resource_uri = resource_uri
        # Catalog mode always has a describe tool: its tools/list names no tool a model could read a resource for.
        self.describe_tool = DESCRIBE_TOOL if (describe_tool and mode == "progressive") or mode == "catalog" else None
        self.pinned = tuple(pinned)
        self.store = DescriptionStore(descriptions)
        self.catalog = Catalog(self.store, list_annotations=list_annotations)
        if redis is not None:
            if grants is not None or rate_limiter is not None:
                raise ValueError("redis= builds the grant store and the rate limiter: pass it or grants=/rate_limiter=")
            from ._redis import RedisGrantStore  # the mcp-pd[redis] extra, imported only when asked for

            grants = RedisGrantStore.from_url(redis, prefix=redis_prefix, idle_timeout=session_idle_timeout)
            rate_limiter = grants.fetch_limiter(fetch_rate) if fetch_rate is not None else None
        self.grants: GrantStore = grants if grants is not None else MemoryGrantStore(session_idle_timeout)
        self.sessions = SessionResolver(SessionPolicy(sessionless, session_key, principal_keys), self.grants.forget)
        if rate_limiter is None and fetch_rate is not None:
            rate_limiter = FetchRateLimiter(fetch_rate)
        self.disclosure = Disclosure(
            self.catalog,
            self.grants,
            resource_uri=resource_uri,
            permission=permission,
            rate_limiter=rate_limiter,
            describe_tool=self.describe_tool,
            own_tools=frozenset(META_TOOLS) if mode == "catalog" else frozenset(),
        )
        self.metatools: MetaTools | None = None
        if mode == "catalog":
            store = VectorStore.resolve(vector_cache) if semantic != "off" else None
            index = CatalogIndex(
                self.catalog, semantic=semantic, exclude=self.disclosure.own_tools.__contains__, store=store
            )
            self.metatools = MetaTools(self.catalog, self.disclosure, index)
        self.max_tools_per_read = max_tools_per_read
        self.page_size = page_size
        self.watch = watch and descriptions is not None
        self.advertiser = Advertiser(
            self.catalog,
            resource_uri=resource_uri,
            mode=mode,
            describe_tool=self.describe_tool,
            instructions=instructions,
        )
        self.announcer = Announcer(resource_uri, self._selected_by)
        self._original: dict[str, Handler | None] = {}
        self._server: Server[Any] | None = None
        self._page_fields: dict[str, Any] = {}
        self._shadow_reported = False
        self._index_started = False
        self._index_task: asyncio.Future[Any] | None = None
        self._watch_task: asyncio.Task[None] | None = None
        self.store.add_listener(self.announcer.announce)

    @property
    def permission(self) -> ToolPermission | None:
        return self.disclosure.permission

    @property
    def rate_limiter(self) -> FetchLimiter | None:
        return self.disclosure.rate_limiter

    # -- installation ------------------------------------------------------------------------------
    def install(self, server: MCPServer[Any] | Server[Any]) -> Self:
        """Wrap `server`'s handlers. Returns self, so `pd = ProgressiveDisclosure(...).install(app)`."""
        lowlevel = _lowlevel(server)
        if self._server is not None:
            raise RuntimeError("this ProgressiveDisclosure is already installed on a server")
        if EXTENSION_ID in lowlevel.extensions:
            raise RuntimeError("progressive disclosure is already installed on this server")
        if lowlevel.get_request_handler("tools/list") is None or lowlevel.get_request_handler("tools/call") is None:
            raise ValueError("the server has no tools/list or tools/call handler: register its tools first")
        self._server = lowlevel
        wrappers: dict[str, tuple[type[Any], Handler]] = {
            "tools/list": (types.PaginatedRequestParams, self._list_tools),
            "tools/call": (types.CallToolRequestParams, self._call_tool),
            "resources/list": (types.PaginatedRequestParams, self._list_resources),
            "resources/templates/list": (types.PaginatedRequestParams, self._list_templates),
            "resources/read": (types.ReadResourceRequestParams, self._read_resource),
            "resources/subscribe": (types.SubscribeRequestParams, self._subscribe),
            "resources/unsubscribe": (types.UnsubscribeRequestParams, self._unsubscribe),
            "server/discover": (types.RequestParams, self._discover),
        }
        for method, (params_type, wrapper) in wrappers.items():
            entry = lowlevel.get_request_handler(method)
            self._original[method] = entry.handler if entry is not None else None
            lowlevel.add_request_handler(method, params_type, wrapper)
        if isinstance(server, MCPServer):
            # 2026-07-28 change events travel over MCPServer's subscription bus.
            self.announcer.bus = getattr(server, "_subscriptions", None)
        if self.announcer.bus is None and lowlevel.get_request_handler("subscriptions/listen") is None:
            bus = InMemorySubscriptionBus()
            self.announcer.bus = bus
            lowlevel.add_request_handler(
                "subscriptions/listen", types.SubscriptionsListenRequestParams, ListenHandler(bus)
            )
        self.advertiser.install(lowlevel, server)
        return self

    # -- the catalog -------------------------------------------------------------------------------
    async def _list_all(self, ctx: ServerRequestContext[Any, Any]) -> list[ListedTool]:
        handler = self._original["tools/list"]
        assert handler is not None
        tools: list[ListedTool] | None = None
        cursor: str | None = None
        for _ in range(10_000):  # a server whose cursors never end must not hang us
            page, listed = _split_page(await handler(ctx, types.PaginatedRequestParams(cursor=cursor)))
            if cursor is None and "_meta" in page:
                self._page_fields["_meta"] = page["_meta"]  # the server's own page metadata carries over
            cursor = page.get("nextCursor")
            # One page is passed on as the server returned it, so an unchanged listing is recognized at once.
            tools = listed if tools is None and not cursor else [*(tools or []), *listed]
            if not cursor:
                break
        return tools or []

    async def refresh(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Re-read the server's tool list into the catalog."""
        self.catalog.update(await self._list_all(ctx), complete=True)
        shadowed = sorted(n for n in self.disclosure.own_tools if n in self.catalog)
        if shadowed and not self._shadow_reported:
            self._shadow_reported = True
            logger.error(
                "the server's own tools %s are shadowed by the extension's tools of the same names: rename them "
                "(or pass ProgressiveDisclosure(describe_tool=False) in progressive mode)",
                ", ".join(shadowed),
            )

    async def _ensure(self, ctx: ServerRequestContext[Any, Any], names: list[str]) -> None:
        await self.disclosure.ensure_known(names, lambda: self.refresh(ctx))

    # -- per-request helpers -----------------------------------------------------------------------
    def _caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        self._on_request(ctx)
        request = ctx.request
        headers = getattr(request, "headers", None) if request is not None else None
        return Caller(self.sessions.resolve(ctx), ctx.protocol_version, headers, ctx)

    def _on_request(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ensure_watching()
        if self.metatools is not None and not self._index_started and self.catalog.complete:
            # Catalog mode: build the search index in the background from the first request on.
            self._index_started = True
            self._index_task = asyncio.ensure_future(self.metatools.index.ready())
        self.announcer.seen(ctx)

    def _cache_hints(self, ctx: ServerRequestContext[Any, Any], page: dict[str, Any]) -> dict[str, Any]:
        """2026-07-28 cache directives, truthful: listings change only on reload (and are announced), and
        differ per caller only when a permission hook filters them."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            page["ttlMs"] = 300_000 if self.watch else 3_600_000
            page["cacheScope"] = "private" if self.permission is not None else "public"
        return page

    # -- tools/list ----------------------------------------------------------------------------------
    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        caller = self._caller(ctx)
        if params.cursor is None:
            await self.refresh(ctx)
            start = 0
        else:
            start = _decode_cursor(params.cursor)
            if not self.catalog.complete:
                await self.refresh(ctx)
        if self.metatools is not None:
            return self._cache_hints(ctx, self._catalog_listing(caller))
        names = self.catalog.names()
        entries: list[dict[str, Any]] = []
        if start == 0 and self.describe_tool:
            entries.append(self._describe_tool_entry())
        position = start
        while position < len(names) and len(entries) < self.page_size:
            name = names[position]
            position += 1
            if self.disclosure.visible(caller, name):
                entry = self._listed_entry(name)
                if entry is not None:
                    entries.append(entry)
        # An empty result of the right model first, so each era's required fields are filled in by the SDK.
        page = {**_dump(types.ListToolsResult(tools=[])), **self._page_fields, "tools": entries}
        if position < len(names):
            page["nextCursor"] = encode_cursor("tools/list", position)
        return self._cache_hints(ctx, page)

    def _catalog_listing(self, caller: Caller) -> dict[str, Any]:
        """Catalog mode: the same few entries whatever the catalog's size, plus the pinned tools (still gated)."""
        assert self.metatools is not None
        assert self.describe_tool is not None
        search, browse, call = self.metatools.entries(self.describe_tool)
        entries = [search, browse, self._describe_tool_entry(), call]
        for name in self.pinned:
            if name in self.catalog and self.disclosure.visible(caller, name):
                entry = self.catalog.minimal(name)
                if entry is not None:
                    entries.append(entry)
        return {**_dump(types.ListToolsResult(tools=[])), **self._page_fields, "tools": entries}

    def _listed_entry(self, name: str) -> dict[str, Any] | None:
        if self.mode == "eager":
            full = self.catalog.full(name)
            if full is None:
                return None
            return {k: full[k] for k in _TOOL_FIELDS if k in full} | self._meta_of(name)
        return self.catalog.minimal(name)

    def _meta_of(self, name: str) -> dict[str, Any]:
        definition = self.catalog.get(name)
        return {"_meta": definition.meta} if definition is not None and definition.meta else {}

    def _describe_tool_entry(self) -> dict[str, Any]:
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

    # -- tools/call ----------------------------------------------------------------------------------
    async def _call_tool(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        handler = self._original["tools/call"]
        assert handler is not None
        caller = self._caller(ctx)
        if params.name == self.describe_tool:
            return await self._describe_call(ctx, caller, params.arguments or {})
        if self.metatools is not None and params.name in META_TOOLS:
            return await self._meta_call(ctx, caller, params)
        if self.mode == "eager":
            # The escape hatch: nothing is enforced, but what the permission hook hides stays unknown.
            if not self.disclosure.visible(caller, params.name):
                return tool_result(await self.disclosure.not_found_call(caller, params.name), error=True)
            return await handler(ctx, params)
        return await self._gated_call(ctx, caller, params)

    async def _gated_call(
        self,
        ctx: ServerRequestContext[Any, Any],
        caller: Caller,
        params: types.CallToolRequestParams,
        *,
        check_arguments: bool = False,
    ) -> Any:
        """One real tool, called by name or through call_tool: describe-before-call (and, for call_tool, the
        argument check), then the server's own handler."""
        await self._ensure(ctx, [params.name])
        refusal = await self.disclosure.gate(caller, params.name, lambda: self._session_required(ctx, params.name))
        if refusal is None and check_arguments:
            assert self.metatools is not None
            refusal = self.metatools.check_arguments(params.name, params.arguments or {})
        if refusal is not None:
            return tool_result(refusal, error=True)
        handler = self._original["tools/call"]
        assert handler is not None
        return await handler(ctx, params)

    async def _meta_call(
        self, ctx: ServerRequestContext[Any, Any], caller: Caller, params: types.CallToolRequestParams
    ) -> Any:
        """search_tools, browse_tools, call_tool (catalog mode, I-16)."""
        assert self.metatools is not None
        arguments = params.arguments or {}
        if params.name == CALL_TOOL:
            unwrapped = self.metatools.unwrap(arguments)
            if isinstance(unwrapped, dict):
                return tool_result(unwrapped, error=True)
            name, inner = unwrapped
            if name == self.describe_tool:
                return await self._describe_call(ctx, caller, inner)
            if name in META_TOOLS:
                return await self._meta_call(ctx, caller, params.model_copy(update={"name": name, "arguments": inner}))
            inner_params = params.model_copy(update={"name": name, "arguments": inner})
            return await self._gated_call(ctx, caller, inner_params, check_arguments=True)
        await self._ensure(ctx, [])
        if params.name == SEARCH_TOOL:
            document, error = await self.metatools.search(caller, arguments)
        else:
            document, error = await self.metatools.browse(caller, arguments)
        result = tool_result(document, error=error)
        if params.name == SEARCH_TOOL and not error:
            # Which ranking answered (hybrid, or lexical and why): for clients and operators, not the model.
            result = result.model_copy(update={"meta": {EXTENSION_ID: self.metatools.index.ranking}})
        return result

    def _session_required(
        self, ctx: ServerRequestContext[Any, Any], name: str, *, describing: bool = False
    ) -> dict[str, Any]:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            where = "this request came without an MCP session (the sessionless 2026-07-28 protocol)"
            hint = (
                "Connect with the 2025-11-25 handshake so the server issues a session "
                "(Python SDK: mcp.Client(target, mode='legacy')), or ask the operator to authenticate clients "
                "(grants are then kept per principal) or to key authorization on something the server controls "
                "(ProgressiveDisclosure(session_key=...))."
            )
        else:
            where = "the server runs stateless HTTP, so no request carries a session"
            hint = (
                "This cannot be fixed by the client: the operator must serve HTTP with sessions (mcp-pd serve "
                "without --stateless; streamable_http_app(stateless_http=False)), authenticate clients (grants are "
                "then kept per principal) or configure a session key (ProgressiveDisclosure(session_key=...))."
            )
        return {
            "error": {
                "code": SESSION_REQUIRED,
                "message": (
                    f"Not described: {name}. Here {where}, so a description cannot be remembered until the "
                    "call, which would be refused."
                    if describing
                    else f"Tool '{name}' cannot be authorized: {where}, so fetched descriptions cannot be "
                    "remembered between requests."
                ),
                "hint": hint,
                "protocol_version": ctx.protocol_version,
            }
        }

    # -- describe: the resource and the tool -----------------------------------------------------------
    async def _describe(
        self, ctx: ServerRequestContext[Any, Any], caller: Caller, select: Callable[[], list[str]]
    ) -> Described:
        """Rate limit, selection, catalog, describe: the one path behind the resource read and describe_tools."""
        await self.disclosure.check_rate(caller, caller.session or client_address(ctx))
        try:
            names = select()
        except SelectionError as exc:
            raise Refused(exc.code, exc.message, types.INVALID_PARAMS) from None
        if not names:
            document = missing_tool_selection(self.resource_uri)
            raise Refused(
                document["error"]["code"],
                document["error"]["message"],
                types.INVALID_PARAMS,
                examples=document["error"]["examples"],
            )
        await self._ensure(ctx, names)
        return await self.disclosure.describe(caller, names)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> HandlerResult:
        uri = str(params.uri)
        if not is_descriptions_uri(uri, self.resource_uri):
            handler = self._original["resources/read"]
            if handler is None:
                raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
            return await handler(ctx, params)
        caller = self._caller(ctx)
        try:
            described = await self._describe(
                ctx, caller, lambda: parse_selection(uri, self.resource_uri, self.max_tools_per_read)
            )
        except Refused as refused:
            # I-2: a refused read is a JSON-RPC error whose data is the error document.
            raise MCPError(refused.rpc_code, refused.message, refused.document()) from None
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

    async def _describe_call(
        self, ctx: ServerRequestContext[Any, Any], caller: Caller, arguments: dict[str, Any]
    ) -> types.CallToolResult:
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
            described = await self._describe(ctx, caller, select)
        except Refused as refused:
            return tool_result(refused.document(), error=True)
        described_names = [name for name, full, _ in described.entries if full is not None]
        if caller.session is None and self.mode != "eager" and described_names:
            # Nothing can hold the grant (no session, no principal): answering "described" would be a lie that
            # every later call exposes with SESSION_REQUIRED. Refuse now, saying why and how to fix it.
            refusal = self._session_required(ctx, ", ".join(described_names), describing=True)
            return tool_result(refusal, error=True)
        document = described.document()
        result = tool_result(document, error=False)
        # The JSON text is the resource's own, byte for byte, assembled from the cached definitions.
        result.content = [types.TextContent(type="text", text=described.text())]
        result.meta = {EXTENSION_ID: {"versions": described.versions}}
        return result

    # -- resource listings and subscriptions ---------------------------------------------------------
    def _resource_entry(self, *, template: bool) -> dict[str, Any]:
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

    async def _listing(
        self, method: str, key: str, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        self._on_request(ctx)
        handler = self._original[method]
        if handler is not None:
            page = _dump(await handler(ctx, params))
        else:
            # A server without resources of its own: an empty result of the right model, so each era's
            # required fields are filled in by the SDK.
            empty = (
                types.ListResourcesResult(resources=[])
                if key == "resources"
                else types.ListResourceTemplatesResult(resource_templates=[])
            )
            page = _dump(empty)
        if params.cursor is None:
            page[key] = [self._resource_entry(template=key == "resourceTemplates"), *page.get(key, [])]
        return self._cache_hints(ctx, page)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        return await self._listing("resources/list", "resources", ctx, params)

    async def _list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        return await self._listing("resources/templates/list", "resourceTemplates", ctx, params)

    def _selected_by(self, uri: str) -> list[str] | None:
        """The tools a subscribed descriptions URI covers (None: the base URI, every tool)."""
        try:
            names = parse_selection(uri, self.resource_uri, self.max_tools_per_read)
        except SelectionError:
            return []
        return names or None

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> HandlerResult:
        return await self._subscription("resources/subscribe", ctx, params, self.announcer.subscribe)

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> HandlerResult:
        return await self._subscription("resources/unsubscribe", ctx, params, self.announcer.unsubscribe)

    async def _subscription(
        self,
        method: str,
        ctx: ServerRequestContext[Any, Any],
        params: types.SubscribeRequestParams | types.UnsubscribeRequestParams,
        record: Callable[[ServerRequestContext[Any, Any], str], None],
    ) -> HandlerResult:
        uri = str(params.uri)
        if is_descriptions_uri(uri, self.resource_uri):
            self._on_request(ctx)
            record(ctx, uri)
            return types.EmptyResult()
        handler = self._original[method]
        if handler is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
        return await handler(ctx, params)

    # -- server/discover -----------------------------------------------------------------------------
    async def _discover(self, ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> HandlerResult:
        if (
            self.mode != "eager"
            and self.sessions.policy.sessionless == "downgrade"
            and is_http(ctx)
            and self.sessions.resolve(ctx) is None
        ):
            # No session identity on sessionless HTTP: steer auto-negotiating clients to the handshake era, where
            # Mcp-Session-Id keys authorization (spec/sessions.md). -32601 is what makes them fall back; the
            # message and data say why, for clients pinned to 2026-07-28 that cannot.
            raise MCPError(
                types.METHOD_NOT_FOUND,
                "server/discover is not offered: this server authorizes tools per session "
                "(MCP progressive disclosure), and over HTTP a session needs the 2025-11-25 initialize handshake. "
                "Connect with protocol version 2025-11-25 (initialize, then Mcp-Session-Id).",
                {
                    "reason": ErrorCode.SESSION_REQUIRED.value,
                    "extension": EXTENSION_ID,
                    "supportedProtocolVersions": ["2025-11-25"],
                    "howToConnect": "Send initialize with protocolVersion 2025-11-25 and keep the Mcp-Session-Id "
                    "header the server returns (Python SDK: mcp.Client(url, mode='legacy')).",
                },
            )
        handler = self._original["server/discover"]
        assert handler is not None
        self.advertiser.refresh()
        return await handler(ctx, params)

    # -- change announcements ----------------------------------------------------------------------
    def start_watching(self) -> None:
        """Start reloading changed definition files now (otherwise the first request starts it)."""
        self._ensure_watching()

    def _ensure_watching(self) -> None:
        if not self.watch:
            return
        task = self._watch_task
        loop = asyncio.get_running_loop()
        if task is not None and not task.done() and task.get_loop() is loop:
            return
        self._watch_task = loop.create_task(self.store.watch(), name="mcp-pd description watcher")

    async def aclose(self) -> None:
        """Stop watching files (the server's shutdown does this implicitly)."""
        task, self._watch_task = self._watch_task, None
        if task is not None and not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
