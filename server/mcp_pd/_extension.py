"""The SDK glue: installs progressive disclosure on an `MCPServer` or a low-level `Server`.

It wraps the server's own request handlers (tools/list, tools/call, resources/*, server/discover)
rather than answering in middleware, so every result still passes the SDK's validation and gets
each protocol era's envelope. One data path: store -> catalog -> minimal/full views -> grants -> gate.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any, Final, Self, TypeAlias

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourceUpdated,
    SubscriptionBus,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._grants import GrantStore, MemoryGrantStore
from ._guidance import RESOURCE_NAME, resource_description, system_prompt_guidance
from ._model import (
    AVAILABLE_TOOLS_LIMIT,
    DEFAULT_RESOURCE_URI,
    RATE_LIMITED,
    SESSION_REQUIRED,
    missing_tool_selection,
    tool_description_required,
    tool_not_found,
)
from ._policy import Caller, FetchRateLimiter, RateLimit, ToolPermission
from ._sessions import SessionKeyHook, SessionlessPolicy, SessionPolicy, SessionResolver, is_http
from ._store import Catalog, DescriptionStore, ListedTool, listed_name
from ._uri import SelectionError, is_descriptions_uri, parse_selection

__all__ = ["EXTENSION_ID", "ProgressiveDisclosure"]

logger = logging.getLogger("mcp_pd")

EXTENSION_ID: Final = "io.github.mcp-pd/progressive-disclosure"
_RESOURCE_KEY: Final = "tool_descriptions"
# A name missing from the catalog triggers a re-listing at most this often (tools added at run time).
_REFRESH_INTERVAL: Final = 1.0

Handler: TypeAlias = Callable[[ServerRequestContext[Any, Any], Any], Awaitable[HandlerResult]]
AnyServer: TypeAlias = "MCPServer[Any] | Server[Any]"


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


def _split_page(result: HandlerResult) -> tuple[dict[str, Any], list[ListedTool]]:
    """A tools/list page without its tools, and the tools as listed.

    A typed result keeps its `Tool` models: dumping a large listing on every call was most of the
    cost of tools/list at 10k tools (benchmarks/README.md), and the catalog needs only changed tools dumped.
    """
    if isinstance(result, types.ListToolsResult):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"tools"}), list(result.tools)
    page = _dump(result)
    tools = page.pop("tools", None)
    return page, list(tools) if isinstance(tools, list) else []


def _error_result(document: dict[str, Any]) -> types.CallToolResult:
    """A tool-execution error the model can read and act on (spec/interpretations.md I-1)."""
    text = json.dumps(document, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=document, is_error=True
    )


def _read_error(code: str, message: str, **extra: Any) -> MCPError:
    """A refused read: JSON-RPC -32602 whose data is an error document (I-2)."""
    return MCPError(types.INVALID_PARAMS, message, {"error": {"code": code, "message": message, **extra}})


class ProgressiveDisclosure:
    """Spec v2.1 progressive disclosure for a server built on the official `mcp` SDK.

    >>> pd = ProgressiveDisclosure("tool_descriptions").install(server)

    `descriptions`: directory of `<tool>.json` files enriching (or, in simulation, defining) tools;
    a tool without a file is described from its registered schema. `permission`: the primary
    authorization hook. `fetch_rate`: per-session limit on resource reads (None: unlimited).
    `sessionless` / `session_key`: what to do where the transport has no session (spec/sessions.md).
    `list_annotations`: keep `title` and `annotations` in `tools/list` entries, for hosts that ask for
    consent from the listed hints; off by default, they stay in the fetched definition (I-5).
    """

    def __init__(
        self,
        descriptions: str | Path | None = None,
        *,
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
    ) -> None:
        if "?" in resource_uri or "#" in resource_uri:
            raise ValueError("resource_uri is the base URI, without a query or fragment")
        if sessionless not in ("downgrade", "reject"):
            raise ValueError("sessionless must be 'downgrade' or 'reject'")
        self.resource_uri = resource_uri
        self.store = DescriptionStore(descriptions)
        self.catalog = Catalog(self.store, list_annotations=list_annotations)
        self.grants: GrantStore = grants if grants is not None else MemoryGrantStore(session_idle_timeout)
        self.sessions = SessionResolver(SessionPolicy(sessionless, session_key), self.grants.forget)
        self.permission = permission
        self.rate_limiter = FetchRateLimiter(fetch_rate) if fetch_rate is not None else None
        self.max_tools_per_read = max_tools_per_read
        self.watch = watch and descriptions is not None
        self.add_instructions = instructions
        self._original: dict[str, Handler | None] = {}
        self._server: Server[Any] | None = None
        self._bus: SubscriptionBus | None = None
        self._listeners: weakref.WeakSet[Any] = weakref.WeakSet()
        self._watch_task: asyncio.Task[None] | None = None
        self.store.add_listener(self._announce)

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
            "server/discover": (types.RequestParams, self._discover),
        }
        for method, (params_type, wrapper) in wrappers.items():
            entry = lowlevel.get_request_handler(method)
            self._original[method] = entry.handler if entry is not None else None
            lowlevel.add_request_handler(method, params_type, wrapper)
        if isinstance(server, MCPServer):
            # 2026-07-28 change events travel over MCPServer's subscription bus.
            self._bus = getattr(server, "_subscriptions", None)
        if self._bus is None and lowlevel.get_request_handler("subscriptions/listen") is None:
            self._bus = InMemorySubscriptionBus()
            lowlevel.add_request_handler(
                "subscriptions/listen", types.SubscriptionsListenRequestParams, ListenHandler(self._bus)
            )
        lowlevel.extensions[EXTENSION_ID] = {"resourceUri": self.resource_uri}
        if self.add_instructions:
            guidance = system_prompt_guidance(self.resource_uri)
            lowlevel.instructions = f"{lowlevel.instructions}\n\n{guidance}" if lowlevel.instructions else guidance
        for problem in self.store.problems:
            logger.warning("tool definition problem: %s", problem)
        return self

    # -- the catalog -------------------------------------------------------------------------------
    async def _list_all(self, ctx: ServerRequestContext[Any, Any]) -> list[ListedTool]:
        handler = self._original["tools/list"]
        assert handler is not None
        tools: list[ListedTool] = []
        cursor: str | None = None
        for _ in range(10_000):  # a server whose cursors never end must not hang us
            page, listed = _split_page(await handler(ctx, types.PaginatedRequestParams(cursor=cursor)))
            tools.extend(listed)
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return tools

    async def refresh(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Re-read the server's tool list into the catalog."""
        self.catalog.update(await self._list_all(ctx), complete=True)

    async def _ensure_catalog(self, ctx: ServerRequestContext[Any, Any], names: Iterable[str]) -> None:
        if not self.catalog.complete or (
            any(name not in self.catalog for name in names)
            and time.monotonic() - self.catalog.refreshed_at > _REFRESH_INTERVAL
        ):
            await self.refresh(ctx)

    # -- per-request helpers -----------------------------------------------------------------------
    def _caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        self._on_request(ctx)
        request = ctx.request
        headers = getattr(request, "headers", None) if request is not None else None
        return Caller(self.sessions.resolve(ctx), ctx.protocol_version, headers, ctx)

    def _visible(self, caller: Caller, name: str) -> bool:
        return self.permission is None or bool(self.permission(caller, name))

    def _on_request(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ensure_watching()
        conn = getattr(ctx.session, "_connection", None)
        if (
            conn is not None
            and getattr(conn, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS
            and getattr(conn, "has_standalone_channel", False)
            # Membership first: WeakSet.add builds a new weakref with a callback on every call.
            and conn not in self._listeners
        ):
            # Handshake-era clients hear about changed definitions on their own connection.
            self._listeners.add(conn)

    # -- handlers ----------------------------------------------------------------------------------
    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        handler = self._original["tools/list"]
        assert handler is not None
        caller = self._caller(ctx)
        page, tools = _split_page(await handler(ctx, params))
        self.catalog.update(tools, complete=params.cursor is None and not page.get("nextCursor"))
        minimal: list[dict[str, Any]] = []
        for tool in tools:
            name = listed_name(tool)
            if name is not None and self._visible(caller, name):
                entry = self.catalog.minimal(name)
                if entry is not None:
                    minimal.append(entry)
        page["tools"] = minimal
        return page

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        handler = self._original["tools/call"]
        assert handler is not None
        caller = self._caller(ctx)
        name = params.name
        if not self._visible(caller, name):
            # Hidden means unknown (spec 10.2): the same answer as for a tool that does not exist.
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True
            )
        await self._ensure_catalog(ctx, (name,))
        if name not in self.catalog:
            return await handler(ctx, params)  # the server's own unknown-tool answer
        if caller.session is None:
            return _error_result(self._session_required(ctx, name))
        if not self.grants.allowed(caller.session, name):
            return _error_result(tool_description_required(name, self.resource_uri))
        return await handler(ctx, params)

    def _session_required(self, ctx: ServerRequestContext[Any, Any], name: str) -> dict[str, Any]:
        where = "this request arrived without an MCP session (the sessionless 2026-07-28 protocol or stateless HTTP)"
        return {
            "error": {
                "code": SESSION_REQUIRED,
                "message": f"Tool '{name}' cannot be authorized: {where}, so fetched descriptions cannot be "
                "remembered between requests.",
                "hint": "Connect with the 2025-11-25 handshake so the server issues a session "
                "(Python SDK: mcp.Client(target, mode='legacy')), or ask the operator to configure a session key.",
                "protocol_version": ctx.protocol_version,
            }
        }

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
        return page

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        return await self._listing("resources/list", "resources", ctx, params)

    async def _list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        return await self._listing("resources/templates/list", "resourceTemplates", ctx, params)

    async def _discover(self, ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> HandlerResult:
        if self.sessions.policy.sessionless == "downgrade" and is_http(ctx) and self.sessions.resolve(ctx) is None:
            # No session identity on sessionless HTTP: steer auto-negotiating clients to the handshake era,
            # where Mcp-Session-Id keys authorization (spec/sessions.md).
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", "server/discover")
        handler = self._original["server/discover"]
        assert handler is not None
        return await handler(ctx, params)

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
        if self.rate_limiter is not None:
            wait = self.rate_limiter.acquire(caller.session or _client_address(ctx))
            if wait:
                message = f"Too many tool description reads; retry in {wait:g} s."
                raise MCPError(
                    -32000,
                    message,
                    {"error": {"code": RATE_LIMITED, "message": message, "retry_after_seconds": wait}},
                )
        try:
            names = parse_selection(uri, self.resource_uri, self.max_tools_per_read)
        except SelectionError as exc:
            raise _read_error(exc.code, exc.message) from None
        if not names:
            document = missing_tool_selection(self.resource_uri)
            raise MCPError(types.INVALID_PARAMS, document["error"]["message"], document)
        await self._ensure_catalog(ctx, names)
        # The body is `json.dumps({name: entry, ...})`, assembled from each definition's cached text.
        parts: list[str] = []
        versions: dict[str, str] = {}
        visible_names: list[str] | None = None
        for name in names:
            full = self.catalog.full(name) if self._visible(caller, name) else None
            if full is not None:
                parts.append(f"{json.dumps(name, ensure_ascii=False)}: {self.catalog.full_text(name)}")
                versions[name] = full["version"]
                continue
            if visible_names is None:
                visible_names = sorted(n for n in self.catalog.names() if self._visible(caller, n))
            missing = tool_not_found(name, _suggest(name, visible_names), len(visible_names))
            parts.append(f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(missing, ensure_ascii=False)}")
        if versions and caller.session is not None:
            self.grants.grant(caller.session, list(versions))
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri,
                    mime_type="application/json",
                    text="{" + ", ".join(parts) + "}",
                    _meta={EXTENSION_ID: {"versions": versions}},
                )
            ]
        )

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

    async def _announce(self, changed: frozenset[str]) -> None:
        logger.info("tool definitions changed: %s", ", ".join(sorted(changed)))
        for conn in list(self._listeners):
            await conn.notify("notifications/tools/list_changed", None)
            await conn.notify("notifications/resources/updated", {"uri": self.resource_uri})
        if self._bus is not None:
            await self._bus.publish(ToolsListChanged())
            await self._bus.publish(ResourceUpdated(uri=self.resource_uri))


def _client_address(ctx: ServerRequestContext[Any, Any]) -> str:
    """The bucket for a read without a session: its HTTP peer (never used to authorize anything)."""
    client = getattr(ctx.request, "client", None)
    host = getattr(client, "host", None)
    return f"address:{host}" if host else "(no session)"


def _suggest(name: str, candidates: list[str]) -> list[str]:
    """Close matches first, then the rest alphabetically, bounded (spec 6.3, I-4)."""
    if len(candidates) <= AVAILABLE_TOOLS_LIMIT:
        close = difflib.get_close_matches(name, candidates, n=AVAILABLE_TOOLS_LIMIT, cutoff=0.5)
        return close + [c for c in candidates if c not in close]
    lowered = name.lower()
    close = [c for c in candidates if lowered and (lowered in c.lower() or c.lower() in lowered)]
    close += difflib.get_close_matches(name, candidates, n=AVAILABLE_TOOLS_LIMIT, cutoff=0.6)
    result = list(dict.fromkeys(close))[:AVAILABLE_TOOLS_LIMIT]
    for candidate in candidates:
        if len(result) >= AVAILABLE_TOOLS_LIMIT:
            break
        if candidate not in result:
            result.append(candidate)
    return result
