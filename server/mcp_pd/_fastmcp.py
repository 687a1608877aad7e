"""FastMCP 4 servers (PyPI `fastmcp`): the one module that knows FastMCP.

A FastMCP 4 server runs on the `mcp` SDK's low-level `Server` (a subclass FastMCP builds in its constructor) and
registers its protocol handlers in that server's public handler table, running its own middleware chain inside
them. So the extension installs on that low-level server as on any other: FastMCP's middleware, providers, mounted
servers, auth and transports all stay behind the handlers it wraps, and tools added later are found by re-listing.
FastMCP keeps that server in the private `_mcp_server` (its own in-process client transport reads it the same
way), read here only, by `lowlevel_server` (which refuses a FastMCP whose layout it does not know) and `fastmcp_of`
(the way back, for an install on `app._mcp_server` itself).

What FastMCP shows a caller is decided per request: enabled or disabled (tags, `Visibility`), a session's own
visibility, each tool's `auth`, `AuthMiddleware`. `FastMCPScope` makes that the extension's permission for the
request: a tool FastMCP would not list to this caller is neither listed, described nor called through us.

fastmcp is imported only once a FastMCP object reaches `install` (it stays an optional dependency).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeGuard, cast

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server

from ._policy import Caller
from ._uri import is_descriptions_uri

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.middleware import CallNext, MiddlewareContext
    from fastmcp.tools import Tool
    from fastmcp.utilities.versions import VersionSpec

    from ._disclosure import Disclosure

__all__ = [
    "SUPPORTED_MAJOR",
    "FastMCPScope",
    "FastMCPServer",
    "fastmcp_of",
    "is_fastmcp",
    "lowlevel_server",
    "show_warnings",
]

SUPPORTED_MAJOR: Final = 4
"""The FastMCP major version whose layout `lowlevel_server` knows (tests/test_fastmcp_install.py pins it)."""

FastMCPServer: TypeAlias = "FastMCP[Any]"
"""A `fastmcp.FastMCP` server, named without importing fastmcp."""
Context: TypeAlias = ServerRequestContext[Any, Any]
Handler: TypeAlias = Callable[[Context, Any], Awaitable[HandlerResult]]


def is_fastmcp(server: object) -> TypeGuard[FastMCPServer]:
    """Whether `server` is a `fastmcp.FastMCP`, without importing fastmcp (no FastMCP exists before it is imported)."""
    module = sys.modules.get("fastmcp")
    cls = getattr(module, "FastMCP", None) if module is not None else None
    return isinstance(cls, type) and isinstance(server, cls)


def lowlevel_server(server: object) -> Server[Any]:
    """The `mcp` low-level `Server` a FastMCP 4 server answers on: its private `_mcp_server`, checked.

    That server holds a reference back to the FastMCP that built it; both are checked, so a FastMCP that moved or
    replaced it fails here, loudly, rather than being installed on something that is not its wire surface. Anything
    but a FastMCP is refused with what `install()` takes.
    """
    if not is_fastmcp(server):
        raise TypeError(
            f"install() takes an mcp MCPServer, a low-level Server or a FastMCP server, not {type(server).__name__}"
        )
    version = _version()
    if version.partition(".")[0] != str(SUPPORTED_MAJOR):
        raise TypeError(
            f"mcp-pd installs on FastMCP {SUPPORTED_MAJOR}.x servers; this is fastmcp {version}. "
            f"Install fastmcp>={SUPPORTED_MAJOR},<{SUPPORTED_MAJOR + 1}, or an mcp-pd release that supports it."
        )
    inner = getattr(server, "_mcp_server", None)
    if not isinstance(inner, Server) or getattr(inner, "fastmcp", None) is not server:
        raise TypeError(f"fastmcp {version} does not keep its low-level mcp Server where 4.x does; please report it")
    return inner


def fastmcp_of(lowlevel: Server[Any]) -> FastMCPServer | None:
    """The FastMCP 4 server that built `lowlevel` (`LowLevelServer.fastmcp`), or None: so `install` on a FastMCP's
    low-level server itself (`app._mcp_server`, as some found it before) scopes it just the same."""
    try:
        app = getattr(lowlevel, "fastmcp", None)
    except RuntimeError:  # its FastMCP is gone: nothing decides visibility any more
        return None
    if not is_fastmcp(app) or getattr(app, "_mcp_server", None) is not lowlevel:
        return None
    return app if _version().partition(".")[0] == str(SUPPORTED_MAJOR) else None


def _version() -> str:
    return str(getattr(sys.modules.get("fastmcp"), "__version__", "unknown"))


class _Sight:
    """What FastMCP shows the caller of one request, learnt as the request needs it.

    `names`: the whole listing, once made (a tools/list's own listing when `collecting`, else one made for us);
    until then `shown` holds the names looked up one at a time through FastMCP's own per-name path.
    """

    __slots__ = ("collecting", "ctx", "names", "shown")

    def __init__(self, ctx: Context, *, collecting: bool = False) -> None:
        self.ctx = ctx
        self.collecting = collecting
        self.names: set[str] | frozenset[str] | None = set() if collecting else None
        self.shown: dict[str, bool] = {}

    def sees(self, name: str) -> bool:
        return name in self.names if self.names is not None else self.shown.get(name, False)


_SIGHT: ContextVar[_Sight | None] = ContextVar("mcp_pd_fastmcp_sight", default=None)
# In a tools/call: the tools the gate found by name, each handed once to FastMCP's own lookup of that name (its
# tools/call, or `AuthMiddleware` before it) in the same request, rather than found twice.
_FOUND: ContextVar[dict[str, Tool | None] | None] = ContextVar("mcp_pd_fastmcp_found", default=None)


class FastMCPScope:
    """FastMCP's per-request visibility as the extension's permission.

    `install` (once the extension has wrapped the handlers) wraps the extension's tools/list, tools/call and
    descriptions reads, so each knows whose request it is before the extension decides anything, and FastMCP's
    own tools/list as the extension calls it, so a tools/list takes what the caller sees from the listing it makes
    anyway. A call or a read asks FastMCP about the names it touches, one at a time, through the path FastMCP's own
    tools/call takes (`get_tool`: enabled, session visibility, the tool's `auth`), plus `AuthMiddleware`'s check on
    that tool: its cost does not grow with the catalog. Only what needs every name (a "not found" answer with its
    suggestions, catalog mode's search and browse, a later tools/list page) and a tool of a mounted server with
    middleware of its own (which filters the parent's listing, and has no per-name counterpart) list everything.
    """

    def __init__(self, app: FastMCPServer, lowlevel: Server[Any]) -> None:
        self.app = app
        self.lowlevel = lowlevel

    def install(self, originals: MutableMapping[str, Handler | None], disclosure: Disclosure) -> None:
        """Scope the extension's handlers on the low-level server; `originals`: the server's own handlers as the
        extension calls them. The disclosure's permission becomes FastMCP's visibility, then its own hook (if any)."""
        listing = originals["tools/list"]
        assert listing is not None  # install() refuses a server without one
        originals["tools/list"] = _recording(listing)
        for method in ("tools/list", "tools/call", "resources/read"):
            entry = self.lowlevel.get_request_handler(method)
            assert entry is not None  # the extension has just installed it
            scoped = self._scoped(method, entry.handler, disclosure.resource_uri)
            self.lowlevel.add_request_handler(method, entry.params_type, scoped)
        permission = disclosure.permission
        show_warnings()

        def visible(caller: Caller, name: str) -> bool:
            sight = _SIGHT.get()
            # No sight (a path that did not ask FastMCP), or a name nobody asked FastMCP about: hidden.
            if sight is None or not sight.sees(name):
                return False
            return permission is None or permission(caller, name)

        disclosure.permission = visible
        disclosure.look = self.look
        self._share_lookups()

    def _share_lookups(self) -> None:
        """FastMCP finds a tool by name in time that grows with its catalog (its local provider scans every
        component), and its tools/call finds the tool the gate has just found: `get_tool` on this server answers a
        lookup the gate made in the same tools/call request with the gate's answer, once, so a call finds its tool
        once, as without the extension. Any other lookup (another request, another version, a second time) is
        FastMCP's own."""
        lookup = self.app.get_tool

        async def get_tool(name: str, version: VersionSpec | None = None) -> Tool | None:
            found = _FOUND.get()
            if found is not None and version is None and name in found:
                return found.pop(name)
            return await lookup(name, version)

        setattr(self.app, "get_tool", get_tool)  # noqa: B010 - on this instance only: mypy refuses assigning a method

    def _scoped(self, method: str, handler: Handler, resource_uri: str) -> Handler:
        async def scoped(ctx: Context, params: Any) -> HandlerResult:
            if method == "resources/read" and not is_descriptions_uri(params.uri, resource_uri):
                return await handler(ctx, params)  # FastMCP's own resource: FastMCP decides
            sight = _Sight(ctx, collecting=method == "tools/list" and params.cursor is None)
            if method == "tools/list" and not sight.collecting:
                sight.names = await self.listed(ctx)  # a later page: every name of it is asked about
            token = _SIGHT.set(sight)
            found = _FOUND.set({} if method == "tools/call" else None)
            try:
                return await handler(ctx, params)
            finally:
                _FOUND.reset(found)
                _SIGHT.reset(token)

        return scoped

    async def look(self, names: Sequence[str] | None) -> None:
        """Learn what FastMCP shows this request's caller of `names` (None: of every name) before it is asked."""
        sight = _SIGHT.get()
        if sight is None or sight.names is not None:
            return
        if names is not None:
            for name in names:
                if name in sight.shown:
                    continue
                shown = await self.shows(sight.ctx, name)
                if shown is None:
                    break  # no per-name answer for this one: the listing decides
                sight.shown[name] = shown
            else:
                return
        sight.names = await self.listed(sight.ctx)

    async def shows(self, ctx: Context, name: str) -> bool | None:
        """Whether FastMCP shows `name` to this request's caller, asked of that name alone, as FastMCP's tools/call
        finds a tool (`get_tool` under the request's FastMCP context: enabled after the session's own visibility, the
        tool's `auth`) and then `AuthMiddleware` decides; None when that is not the whole answer (a mounted server's
        own middleware filters its tools in the listing only)."""
        from fastmcp.server.context import Context as FastMCPContext
        from fastmcp.server.dependencies import bind_request_context

        with bind_request_context(ctx):
            async with FastMCPContext(fastmcp=self.app):
                tool = await self.app.get_tool(name)
                if tool is None or not await self._authorized(tool):
                    return False
        found = _FOUND.get()
        if found is not None:
            found[name] = tool
        return None if _mounted_with_middleware(tool) else True

    async def _authorized(self, tool: Tool) -> bool:
        from fastmcp.server.middleware import AuthMiddleware, MiddlewareContext

        for middleware in self.app.middleware:
            if isinstance(middleware, AuthMiddleware):
                # FastMCP's own filter, run as its tools/list runs it (it knows stdio, where it lets all by), on
                # this tool alone: it judges each tool by itself.
                context = MiddlewareContext(message=types.ListToolsRequest(method="tools/list"), method="tools/list")
                if not await middleware.on_list_tools(context, _returning([tool])):
                    return False
        return True

    async def listed(self, ctx: Context) -> frozenset[str]:
        """The names FastMCP lists to this request's caller: enabled, visible to its session, allowed by each tool's
        `auth` and by the server's `AuthMiddleware`. FastMCP's other middleware is not run: a listing made for us
        must not count against a rate limit or show in a log as if the client had asked for it."""
        from fastmcp.server.dependencies import bind_request_context
        from fastmcp.server.middleware import AuthMiddleware, MiddlewareContext

        with bind_request_context(ctx):
            tools = await self.app.list_tools(run_middleware=False)
            for middleware in self.app.middleware:
                if isinstance(middleware, AuthMiddleware):
                    context = MiddlewareContext(
                        message=types.ListToolsRequest(method="tools/list"), method="tools/list"
                    )
                    tools = await middleware.on_list_tools(context, _returning(tools))
        return frozenset(tool.name for tool in tools)


def _mounted_with_middleware(tool: Tool) -> bool:
    """Whether `tool` comes from a mounted FastMCP server that has middleware (besides FastMCP's schema
    dereferencing, which changes no listing's names): that server's listing runs it, its `get_tool` does not."""
    from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware
    from fastmcp.server.providers.fastmcp_provider import FastMCPProviderTool

    if not isinstance(tool, FastMCPProviderTool):
        return False
    # A wrapper keeps only the server it delegates to; a deeper mount is that server's own mounted tool.
    servers = [tool._server]
    while servers:
        server = servers.pop()
        if any(not isinstance(m, DereferenceRefsMiddleware) for m in getattr(server, "middleware", ())):
            return True
        servers.extend(_mounted_servers(server))
    return False


def _mounted_servers(server: Any) -> list[Any]:
    from fastmcp.server.providers.fastmcp_provider import FastMCPProvider

    found = []
    for provider in getattr(server, "providers", ()):
        inner = provider
        while not isinstance(inner, FastMCPProvider) and hasattr(inner, "_inner"):
            inner = inner._inner  # a namespaced mount wraps its provider (once per transform)
        if isinstance(inner, FastMCPProvider):
            found.append(inner.server)
    return found


def show_warnings() -> None:
    """Let the extension's warnings (a definition file's problems, above all) reach the author of a FastMCP server.

    FastMCP logs through its own handler and never through the root logger, so its authors rarely configure the root
    one, or configure it as FastMCP's docs show (`logging.basicConfig(level=logging.ERROR)`), which silences every
    warning of ours: a broken definition file then goes unsaid. Unless the author configured `mcp_pd` (or the root
    logger shows warnings somewhere), ours get a stderr handler of their own, as FastMCP's have.
    """
    settings = getattr(sys.modules.get("fastmcp"), "settings", None)
    if getattr(settings, "log_enabled", True) is False:
        return  # the author turned FastMCP's logging off: ours stays as the root logger has it
    ours = logging.getLogger("mcp_pd")
    if ours.handlers or ours.level != logging.NOTSET:
        return  # the author's choice
    if ours.hasHandlers() and ours.getEffectiveLevel() <= logging.WARNING:
        return  # the root logger shows warnings already
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    ours.addHandler(handler)
    ours.setLevel(logging.WARNING)
    ours.propagate = False  # said once, not again by a root handler that lets everything through


def _recording(handler: Handler) -> Handler:
    """FastMCP's tools/list handler, noting the names it lists in the current request's collecting sight."""

    async def listed(ctx: Context, params: Any) -> HandlerResult:
        result = await handler(ctx, params)
        sight = _SIGHT.get()
        if sight is not None and sight.collecting and isinstance(sight.names, set):
            sight.names.update(_names(result))
        return result

    return listed


def _returning(tools: Sequence[Tool]) -> CallNext[types.ListToolsRequest, Sequence[Tool]]:
    async def call_next(context: MiddlewareContext[types.ListToolsRequest]) -> Sequence[Tool]:
        return tools

    # mypy does not match a function against CallNext's generic `__call__` (its type variables have defaults).
    return cast("CallNext[types.ListToolsRequest, Sequence[Tool]]", call_next)


def _names(result: HandlerResult) -> list[str]:
    if isinstance(result, types.ListToolsResult):
        return [tool.name for tool in result.tools]
    tools = result.get("tools") if isinstance(result, dict) else None
    return [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)] if tools else []
