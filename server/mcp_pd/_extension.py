"""The SDK glue: installs progressive disclosure on an `MCPServer`, a low-level `Server` or a FastMCP 4 server.

It wraps the server's own request handlers (tools/list, tools/call, resources/*, server/discover)
rather than answering in middleware, so every result still passes the SDK's validation and gets
each protocol era's envelope. One data path: store -> catalog -> minimal/full views -> describe -> grants
-> gate (`_disclosure.py` makes those two decisions; this module only maps them onto MCP messages).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Final, Self, TypeAlias

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError

from ._advertise import EXTENSION_ID, Advertiser, cache_hints, discover_refusal
from ._announce import Announcer
from ._churn import SessionChurn
from ._describing import Describer
from ._disclosure import Described, Disclosure
from ._errors import tool_result
from ._fastmcp import FastMCPScope, FastMCPServer, fastmcp_of, lowlevel_server
from ._grants import GrantStore, MemoryGrantStore
from ._index import CatalogIndex, Semantic
from ._metatools import META_TOOLS, MetaTools
from ._model import DEFAULT_RESOURCE_URI, session_required
from ._modes import CatalogMode, DisclosureMode, Mode, make_mode
from ._paging import decode_cursor, encode_cursor
from ._policy import Caller, FetchLimiter, FetchRateLimiter, RateLimit, ToolPermission
from ._resources import ResourceRouter, dump_result
from ._search.store import VectorStore
from ._sessions import SessionKeyHook, SessionlessPolicy, SessionPolicy, SessionResolver, is_http
from ._store import Catalog, DescriptionStore, ListedTool

__all__ = ["DESCRIBE_TOOL", "EXTENSION_ID", "Mode", "ProgressiveDisclosure", "tool_result"]

logger = logging.getLogger("mcp_pd")

DESCRIBE_TOOL: Final = "describe_tools"

Handler: TypeAlias = Callable[[ServerRequestContext[Any, Any], Any], Awaitable[HandlerResult]]


def _lowlevel(server: MCPServer[Any] | Server[Any] | FastMCPServer) -> Server[Any]:
    if isinstance(server, Server):
        return server
    if isinstance(server, MCPServer):
        inner = getattr(server, "_lowlevel_server", None)  # kept private by MCPServer; its handlers we wrap
        if isinstance(inner, Server):
            return inner
        raise TypeError("this mcp version's MCPServer does not expose its low-level Server; please report it")
    return lowlevel_server(server)  # a FastMCP 4 server's, else a TypeError saying what install() takes


def _split_page(result: HandlerResult) -> tuple[dict[str, Any], list[Any]]:
    """A tools/list page without its tools, and the tools as listed (the handler's own list, not a copy).

    A typed result keeps its `Tool` models: dumping a large listing on every call was most of the
    cost of tools/list at 10k tools (benchmarks/README.md), and the catalog needs only changed tools dumped.
    """
    if isinstance(result, types.ListToolsResult):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"tools"}), result.tools
    page = dump_result(result)
    tools = page.pop("tools", None)
    return page, tools if isinstance(tools, list) else []


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
    tools; `semantic` picks the search model: "auto", "off" or an Embedder, such as
    `mcp_pd._search.remote.OpenAIEmbedder(url, model)` for a model server; `vector_cache`: where its vectors are kept
    across processes, "default" for the user's cache directory, None for memory only). `describe_tool`: also serve the
    `describe_tools` tool, for hosts whose model cannot read resources (interpretations I-13). `permission`: the
    primary authorization hook. `fetch_rate`: per-session limit on reads (None: unlimited); `rate_limiter` replaces
    the in-process one (e.g. Redis, shared by replicas). `grants`: where grants live (default in memory).
    `principal_keys`: key grants on the SDK's authenticated principal when there is one (spec/sessions.md).
    `sessionless` / `session_key`: what to do where the transport has no session (spec/sessions.md). `redis`: a
    Redis URL holding grants and the fetch limit, shared by replicas and kept across restarts (the `mcp-pd[redis]`
    extra; keys start with `redis_prefix`). `list_annotations`: keep `title` and `annotations` in `tools/list`
    entries (I-5). `page_size`: tools per `tools/list` page (cursor pagination).
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
            churn=SessionChurn(),  # a client that opens a session per request is told why its grants never hold
        )
        self.max_tools_per_read, self.page_size = max_tools_per_read, page_size
        self.watch = watch and descriptions is not None
        self.advertiser = Advertiser(
            self.catalog,
            resource_uri=resource_uri,
            mode=mode,
            describe_tool=self.describe_tool,
            instructions=instructions,
            private_names=permission is not None,  # instructions are the same for all: name no tool some may not see
        )
        self._original: dict[str, Handler | None] = {}
        self.describer = Describer(
            self.disclosure,
            resource_uri=resource_uri,
            max_tools_per_read=max_tools_per_read,
            describe_tool=self.describe_tool,
            grants_kept=mode != "eager",
            ensure=self.ensure,
        )
        self.announcer = Announcer(resource_uri, lambda uri: self.resources.selected_by(uri))
        self.resources = ResourceRouter(
            resource_uri,
            max_tools_per_read,
            self.announcer,
            self._original,
            read=self._read_descriptions,
            on_request=self._on_request,
            cache_hints=self._cache_hints,
        )

        def metatools() -> MetaTools:
            store = VectorStore.resolve(vector_cache) if semantic != "off" else None
            exclude = self.disclosure.own_tools.__contains__
            index = CatalogIndex(self.catalog, semantic=semantic, exclude=exclude, store=store)
            return MetaTools(self.catalog, self.disclosure, index)

        # What tools/list shows and where a call goes: the one place the mode is consulted (`_modes.py`).
        self.behaviour: DisclosureMode = make_mode(mode, self, metatools, pinned)
        self._server: Server[Any] | None = None
        self._page_fields: dict[str, Any] = {}
        self._shadow_reported = False
        self._index_task: asyncio.Future[Any] | None = None
        self._watch_task: asyncio.Task[None] | None = None
        self.store.add_listener(self.announcer.announce)

    @property
    def metatools(self) -> MetaTools | None:
        """Catalog mode's meta-tools and search index (None in the other modes)."""
        return self.behaviour.metatools

    @property
    def permission(self) -> ToolPermission | None:
        return self.disclosure.permission

    @property
    def rate_limiter(self) -> FetchLimiter | None:
        return self.disclosure.rate_limiter

    # -- installation ------------------------------------------------------------------------------
    def install(self, server: MCPServer[Any] | Server[Any] | FastMCPServer) -> Self:
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
            **self.resources.handlers(),
            "server/discover": (types.RequestParams, self._discover),
        }
        for method, (params_type, wrapper) in wrappers.items():
            entry = lowlevel.get_request_handler(method)
            self._original[method] = entry.handler if entry is not None else None
            lowlevel.add_request_handler(method, params_type, wrapper)
        # 2026-07-28 change events travel over MCPServer's subscription bus, else over one of our own.
        self.announcer.bus = getattr(server, "_subscriptions", None) if isinstance(server, MCPServer) else None
        if self.announcer.bus is None and lowlevel.get_request_handler("subscriptions/listen") is None:
            self.announcer.bus = bus = InMemorySubscriptionBus()
            lowlevel.add_request_handler(
                "subscriptions/listen", types.SubscriptionsListenRequestParams, ListenHandler(bus)
            )
        self.advertiser.install(lowlevel, server if isinstance(server, MCPServer) else lowlevel)
        if (app := fastmcp_of(lowlevel)) is not None:  # what FastMCP shows a caller is all it sees here
            FastMCPScope(app, lowlevel).install(self._original, self.disclosure)
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

    async def ensure(self, ctx: ServerRequestContext[Any, Any], names: list[str]) -> None:
        """Re-list the server's tools when one of `names` is not in the catalog yet."""
        await self.disclosure.ensure_known(names, lambda: self.refresh(ctx))

    # -- per-request helpers -----------------------------------------------------------------------
    def _caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        self._on_request(ctx)
        request = ctx.request
        headers = getattr(request, "headers", None) if request is not None else None
        return Caller(self.sessions.resolve(ctx), ctx.protocol_version, headers, ctx)

    def _on_request(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ensure_watching()
        if isinstance(self.behaviour, CatalogMode):
            building = self.behaviour.start_index()
            if building is not None:
                self._index_task = asyncio.ensure_future(building)
        self.announcer.seen(ctx)

    def _cache_hints(self, ctx: ServerRequestContext[Any, Any], page: dict[str, Any]) -> dict[str, Any]:
        return cache_hints(page, ctx.protocol_version, reloading=self.watch, per_caller=self.permission is not None)

    def session_required(self, ctx: ServerRequestContext[Any, Any], name: str) -> dict[str, Any]:
        """SESSION_REQUIRED for a call of `name` in this request's era."""
        return session_required(name, ctx.protocol_version)

    # -- tools/list and tools/call: the mode decides ------------------------------------------------------
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
        entries, following = self.behaviour.listing(caller, start)
        # An empty result of the right model first, so each era's required fields are filled in by the SDK.
        page = {**dump_result(types.ListToolsResult(tools=[])), **self._page_fields, "tools": entries}
        if following is not None:
            page["nextCursor"] = encode_cursor("tools/list", following)
        return self._cache_hints(ctx, page)

    def describe_tool_entry(self) -> dict[str, Any]:
        return self.describer.tool_entry()

    async def describe_call(
        self, ctx: ServerRequestContext[Any, Any], caller: Caller, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        return await self.describer.tool_call(ctx, caller, arguments)

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        """Who sent this request, as the mode and the permission hook see it (its session key included)."""
        return self._caller(ctx)

    async def admits(self, caller: Caller, name: str) -> bool:
        """Whether a tools/call of `name` by `caller` would reach the server's own handler now, unchanged: the
        mode's decision, without side effects (for the gateway's stdio lane, which then skips the SDK's path)."""
        return await self.behaviour.admits(caller, name)

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        return await self.behaviour.call(ctx, self._caller(ctx), params)

    async def server_call(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        """The server's own tools/call handler (after the mode has let the call through)."""
        handler = self._original["tools/call"]
        assert handler is not None
        return await handler(ctx, params)

    async def _read_descriptions(
        self, ctx: ServerRequestContext[Any, Any], select: Callable[[], list[str]]
    ) -> Described:
        """The resource read's path (resources/read of a descriptions URI, routed by `ResourceRouter`)."""
        return await self.describer.describe(ctx, self._caller(ctx), select)

    # -- server/discover -----------------------------------------------------------------------------
    async def _discover(self, ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> HandlerResult:
        if (
            self.mode != "eager"
            and self.sessions.policy.sessionless == "downgrade"
            and is_http(ctx)
            and self.sessions.resolve(ctx) is None
        ):
            # No session identity on sessionless HTTP: steer auto-negotiating clients to the handshake era, where
            # Mcp-Session-Id keys authorization (spec/sessions.md).
            raise discover_refusal()
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
