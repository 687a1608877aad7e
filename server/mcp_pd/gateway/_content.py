"""The upstreams' resources, resource templates and prompts, served through the gateway.

Listings are merged live from every upstream that declares the capability (started if need be, so a client sees
what it would see direct). URIs, templates and prompt names are served as the upstream gives them, and
namespaced only where two upstreams collide, as tool names are (`_names.py`): a prompt becomes `<upstream>__name`,
a URI `<upstream>+<uri>`. A read, a prompt or a completion goes back to the upstream that owns the name: one
listed, a namespaced one, one matching a single upstream's template, or the only upstream that serves resources
at all (a URI none of them knows makes the gateway list the upstreams' resources once, until one says its list
changed). Resource links and embedded resources in what an upstream returns (tool results, prompts, reads) are
served the same way, so a link an upstream returned resolves when the client reads it, and resolves to that
upstream: a link keeps its bare URI only where the gateway knows the URI is that upstream's alone (it lists it or
its template matches, and no other upstream's does) or there is no other upstream; any other link is namespaced.
A link is therefore never a claim: an upstream that returns a link to another upstream's URI cannot make another
client's read of that URI reach it.
An upstream's `resources/list_changed` and `prompts/list_changed` reach every client: handshake-era connections
as notifications, 2026-07-28 clients on their `subscriptions/listen` streams. What an upstream on its clients'
roots lists or completes for a client comes from the session holding that client's roots (`_roots.py`), never
from another client's.

Knows nothing about grants, modes or transports: it asks `ClientBridge` to mark which client a call is for.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeAlias

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ServerEvent, SubscriptionBus
from mcp.shared.exceptions import MCPError

from ._bridge import ClientBridge, handshake_era
from ._listings import Listings, session_of
from ._names import Route, assign_names
from ._pool import UpstreamPool

__all__ = ["NAMESPACE", "ContentRouter"]

logger = logging.getLogger("mcp_pd.gateway")

Context: TypeAlias = ServerRequestContext[Any, Any]
NAMESPACE: Final = "+"  # a namespaced URI: "<upstream>+<the upstream's uri>"
RESOURCE_NOT_FOUND: Final = -32002  # what MCP servers answer for an unknown resource


class ContentRouter:
    """resources/*, prompts/* and completion/complete for the gateway's server (see the module's docstring)."""

    def __init__(self, pool: UpstreamPool, bridge: ClientBridge) -> None:
        self.pool = pool
        self.bridge = bridge
        self._owners: dict[str, set[str]] = {}  # a listed URI or template -> the upstreams listing it
        self._served: dict[str, tuple[str, str]] = {}  # served URI or template -> (upstream, its own)
        self._learned = False  # every upstream's resources listed for routing since the last list change
        self._templates: list[tuple[str, str, re.Pattern[str]]] = []  # (upstream, template, its pattern)
        self._prompts: dict[str, Route] = {}
        # (upstream session, served URI) -> the connections subscribed there: an update of one client's own session
        # reaches that client's subscriptions only.
        self._subscribers: dict[tuple[str, str], weakref.WeakSet[Any]] = {}
        # The 2026-07-28 clients' listen streams (`build_gateway` sets it to the server's bus).
        self.bus: SubscriptionBus | None = None
        # Under a policy (`--policy`): whether a request's principal may see an upstream at all. One it may not is
        # left out of listings and refused like an unknown name, so its resources and prompts never surface.
        self.allowed: Callable[[Context, str], bool] | None = None
        self.upstreams = Listings(pool, bridge)  # one listing gathered across the upstreams that declare it
        bridge.listeners.append(self._notified)

    # -- resources ------------------------------------------------------------------------------------
    async def list_resources(self, ctx: Context, params: types.PaginatedRequestParams | None) -> Any:
        async def page(session: ClientSession, cursor: str | None) -> tuple[list[types.Resource], str | None]:
            got = await session.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
            return list(got.resources), got.next_cursor

        listed = await self.upstreams.gather("resources", page, ctx)
        await self._list_templates()  # what each upstream could serve: links that two could resolve are namespaced
        served = self._serve({n: [r.uri for r in items] for n, items in listed.items()})
        resources = [
            r.model_copy(update={"uri": served[(name, r.uri)]})
            for name, items in listed.items()
            if self._may(ctx, name)
            for r in items
        ]
        return types.ListResourcesResult(resources=resources)

    async def list_templates(self, ctx: Context, params: types.PaginatedRequestParams | None) -> Any:
        listed = await self._list_templates(ctx)
        served = self._serve({n: [t.uri_template for t in items] for n, items in listed.items()})
        templates = [
            t.model_copy(update={"uri_template": served[(name, t.uri_template)]})
            for name, items in listed.items()
            if self._may(ctx, name)
            for t in items
        ]
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def _list_templates(self, ctx: Context | None = None) -> dict[str, list[types.ResourceTemplate]]:
        async def page(session: ClientSession, cursor: str | None) -> tuple[list[types.ResourceTemplate], str | None]:
            got = await session.list_resource_templates(params=types.PaginatedRequestParams(cursor=cursor))
            return list(got.resource_templates), got.next_cursor

        listed = await self.upstreams.gather("resources", page, ctx)
        self._templates = [
            (name, t.uri_template, _pattern(t.uri_template)) for name, items in listed.items() for t in items
        ]
        return listed

    def _serve(self, listed: dict[str, list[str]]) -> dict[tuple[str, str], str]:
        """(upstream, its URI) -> the URI served for it, namespaced where two upstreams list the same one."""
        owners: dict[str, set[str]] = {}
        for name, uris in listed.items():
            for uri in uris:
                owners.setdefault(uri, set()).add(name)
        served: dict[tuple[str, str], str] = {}
        for name, uris in listed.items():
            for uri in uris:
                shown = uri if len(owners[uri]) == 1 else f"{name}{NAMESPACE}{uri}"
                served[(name, uri)] = shown
                self._served[shown] = (name, uri)
        for uri, names in owners.items():
            self._owners.setdefault(uri, set()).update(names)
        return served

    def _may(self, ctx: Context | None, upstream: str) -> bool:
        return ctx is None or self.allowed is None or self.allowed(ctx, upstream)

    async def read_resource(self, ctx: Context, params: types.ReadResourceRequestParams) -> Any:
        uri = params.uri
        route = await self._resource_route(uri)
        if route is None or not self._may(ctx, route[0]):
            raise MCPError(
                RESOURCE_NOT_FOUND,
                f"Resource {uri} is not served by any upstream of this gateway (list them with resources/list; "
                f"a URI one of two upstreams both serve is namespaced as '<upstream>{NAMESPACE}<uri>').",
                {"uri": uri},
            )
        name, own = route

        async def read(key: str) -> types.ReadResourceResult:
            return await (await session_of(self.pool, key)).read_resource(own)

        result = await self.bridge.call(name, ctx, params, ("resources/read", uri, None), read)
        if isinstance(result, types.InputRequiredResult):
            return result
        contents = [
            c.model_copy(update={"uri": uri if c.uri == own else self.served_uri(name, c.uri)}) for c in result.contents
        ]
        return result.model_copy(update={"contents": contents})

    async def _resource_route(self, uri: str) -> tuple[str, str] | None:
        if uri in self._served:
            return self._served[uri]
        head, sep, rest = uri.partition(NAMESPACE)
        if sep and rest and head in self.pool.upstreams:
            return head, rest
        if not self._learned:  # a URI no listing has shown yet: learn who lists what, once
            await self._learn()
            if uri in self._served:
                return self._served[uri]
        if uri in self._owners:
            return None  # listed by two upstreams: only its namespaced forms are served
        if not self._templates:
            await self._list_templates()
        matched = {name for name, _, pattern in self._templates if pattern.fullmatch(uri)}
        if len(matched) == 1:
            return matched.pop(), uri
        serving = {u.name for u, _ in await self.upstreams.serving("resources")}
        if len(serving) == 1:
            return serving.pop(), uri
        return None

    async def _learn(self) -> None:
        """Every upstream's resources listed (their shared sessions) for routing, until one says its list changed."""
        self._learned = True

        async def page(session: ClientSession, cursor: str | None) -> tuple[list[types.Resource], str | None]:
            got = await session.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
            return list(got.resources), got.next_cursor

        listed = await self.upstreams.gather("resources", page)
        self._serve({n: [r.uri for r in items] for n, items in listed.items()})

    def served_uri(self, upstream: str, uri: str) -> str:
        """The URI a client reads for `upstream`'s `uri` in what it returned: bare only where the gateway knows
        the URI is `upstream`'s alone (or there is no other upstream), else namespaced, which always routes back
        to `upstream`. Never a claim on the bare URI: another client's read of it goes where listings say."""
        owners = set(self._owners.get(uri, ())) | {n for n, _, pattern in self._templates if pattern.fullmatch(uri)}
        alone = set(self.pool.upstreams) <= {upstream}
        return uri if alone or owners == {upstream} else f"{upstream}{NAMESPACE}{uri}"

    def rewrite(self, upstream: str, blocks: Sequence[Any]) -> list[Any] | None:
        """`blocks` with their resource links and embedded resources served (None when nothing changed)."""
        out: list[Any] = []
        changed = False
        for block in blocks:
            if isinstance(block, types.ResourceLink):
                shown = self.served_uri(upstream, block.uri)
                block = block.model_copy(update={"uri": shown}) if shown != block.uri else block
            elif isinstance(block, types.EmbeddedResource):
                shown = self.served_uri(upstream, block.resource.uri)
                if shown != block.resource.uri:
                    block = block.model_copy(update={"resource": block.resource.model_copy(update={"uri": shown})})
            changed = changed or block is not blocks[len(out)]
            out.append(block)
        return out if changed else None

    def tool_result(self, upstream: str, result: types.CallToolResult) -> types.CallToolResult:
        """A tool's result with its links served (the same object when it has none)."""
        if not any(isinstance(b, (types.ResourceLink, types.EmbeddedResource)) for b in result.content):
            return result
        content = self.rewrite(upstream, result.content)
        return result if content is None else result.model_copy(update={"content": content})

    # -- subscriptions --------------------------------------------------------------------------------
    async def subscribe(self, ctx: Context, params: types.SubscribeRequestParams) -> Any:
        await self._subscription(ctx, params.uri, subscribe=True)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Context, params: types.UnsubscribeRequestParams) -> Any:
        await self._subscription(ctx, params.uri, subscribe=False)
        return types.EmptyResult()

    async def _subscription(self, ctx: Context, uri: str, *, subscribe: bool) -> None:
        route = await self._resource_route(uri)
        if route is None or not self._may(ctx, route[0]):
            raise MCPError(RESOURCE_NOT_FOUND, f"Resource {uri} is not served by any upstream of this gateway.")
        name, own = route
        conn = self.bridge.connection(ctx)

        async def apply(key: str) -> None:
            session = await session_of(self.pool, key)
            subscribers = self._subscribers.setdefault((key, uri), weakref.WeakSet())
            if conn is not None:
                (subscribers.add if subscribe else subscribers.discard)(conn)
            # The upstream keeps one subscription for the session's clients: the last to leave ends it.
            if not subscribers:
                self._subscribers.pop((key, uri), None)  # nothing kept for a subscription nobody holds
            if subscribe or not subscribers:
                with handshake_era():  # resources/subscribe is handshake-era only (2026-07-28 listens)
                    await (session.subscribe_resource if subscribe else session.unsubscribe_resource)(own)

        if self.bridge.roots.uses_roots(name):  # on the session holding the caller's roots, as its reads are
            await self.bridge.call(name, ctx, None, ("resources/subscribe", uri, None), apply)
        else:
            await apply(name)

    async def _notified(self, key: str, notice: Any) -> None:
        upstream = self.bridge.roots.upstream(key)
        if isinstance(notice, types.ResourceListChangedNotification):
            self._templates, self._learned = [], False  # listed again when a read next needs them
            await self._list_changed(notice.method, ResourcesListChanged())
        elif isinstance(notice, types.PromptListChangedNotification):
            await self._list_changed(notice.method, PromptsListChanged())
        elif isinstance(notice, types.ResourceUpdatedNotification):
            # The session `key` is the upstream's: a subscription made on it, by the bare URI or the namespaced
            # one, is to this resource. Each subscriber hears the URI it subscribed to.
            uri = notice.params.uri
            for shown in dict.fromkeys((uri, f"{upstream}{NAMESPACE}{uri}")):
                for conn in list(self._subscribers.get((key, shown), ())):
                    try:
                        await conn.send_resource_updated(shown)
                    except Exception as exc:  # a client that just left must not stop the others hearing
                        logger.debug("could not pass on a resource update: %s", exc)

    async def _list_changed(self, method: str, event: ServerEvent) -> None:
        await self.bridge.notify_clients(method)
        if self.bus is not None:
            await self.bus.publish(event)

    # -- prompts --------------------------------------------------------------------------------------
    async def list_prompts(self, ctx: Context, params: types.PaginatedRequestParams | None) -> Any:
        prompts = await self._list_prompts(ctx)
        return types.ListPromptsResult(
            prompts=[p for p in prompts if (r := self._prompts.get(p.name)) is not None and self._may(ctx, r.server)]
        )

    async def _list_prompts(self, ctx: Context | None = None) -> list[types.Prompt]:
        async def page(session: ClientSession, cursor: str | None) -> tuple[list[types.Prompt], str | None]:
            got = await session.list_prompts(params=types.PaginatedRequestParams(cursor=cursor))
            return list(got.prompts), got.next_cursor

        listed = await self.upstreams.gather("prompts", page, ctx)
        prefixes = {n: u.config.prefix for n, u in self.pool.upstreams.items() if u.config.prefix}
        self._prompts = assign_names({n: [p.name for p in items] for n, items in listed.items()}, prefixes)
        by_route = {(n, p.name): p for n, items in listed.items() for p in items}
        return [by_route[(r.server, r.tool)].model_copy(update={"name": served}) for served, r in self._prompts.items()]

    async def _prompt_route(self, name: str, ctx: Context | None = None) -> Route:
        if name not in self._prompts:
            await self._list_prompts()
        route = self._prompts.get(name)
        if route is None or not self._may(ctx, route.server):
            raise MCPError(
                types.INVALID_PARAMS, f"Unknown prompt: '{name}' is not served by any upstream of this gateway."
            )
        return route

    async def get_prompt(self, ctx: Context, params: types.GetPromptRequestParams) -> Any:
        route = await self._prompt_route(params.name, ctx)
        request = ("prompts/get", params.name, params.arguments)

        async def get(key: str) -> types.GetPromptResult:
            return await (await session_of(self.pool, key)).get_prompt(route.tool, params.arguments)

        result = await self.bridge.call(route.server, ctx, params, request, get)
        if isinstance(result, types.InputRequiredResult):
            return result
        messages = []
        for message in result.messages:
            content = self.rewrite(route.server, [message.content])
            messages.append(message if content is None else message.model_copy(update={"content": content[0]}))
        return result.model_copy(update={"messages": messages})

    async def complete(self, ctx: Context, params: types.CompleteRequestParams) -> Any:
        ref = params.ref
        own_ref: types.PromptReference | types.ResourceTemplateReference
        if isinstance(ref, types.PromptReference):
            route = await self._prompt_route(ref.name, ctx)
            name, own_ref = route.server, ref.model_copy(update={"name": route.tool})
        else:
            if ref.uri not in self._served:
                await self.list_templates(ctx, None)
            found = await self._resource_route(ref.uri)
            if found is None or not self._may(ctx, found[0]):
                raise MCPError(types.INVALID_PARAMS, f"Unknown resource template: {ref.uri}")
            name, own_ref = found[0], ref.model_copy(update={"uri": found[1]})
        context = params.context.arguments if params.context is not None else None
        argument = params.argument.model_dump(by_alias=True)

        async def complete(key: str) -> types.CompleteResult:
            return await (await session_of(self.pool, key)).complete(own_ref, argument, context)

        # On the caller's own session: an upstream on its clients' roots completes from that client's folders.
        result: types.CompleteResult = await self.bridge.call(name, ctx, None, ("completion", name, None), complete)
        return result


def _pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 template as a pattern of the URIs it expands to (levels 1-3, enough to route by)."""
    out: list[str] = []
    for literal, expression in re.findall(r"([^{]*)(?:\{([^}]*)\})?", template):
        out.append(re.escape(literal))
        if not expression:
            continue
        operator = expression[0]
        if operator in "?&":
            out.append(r"(?:[?&][^#]*)?")
        elif operator in "+#":
            out.append(r".*")
        else:
            out.append(r"[^/?#]*")
    return re.compile("".join(out))
