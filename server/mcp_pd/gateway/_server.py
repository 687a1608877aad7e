"""The gateway as an MCP server: a low-level `Server` whose tools are the upstreams' and whose calls go to the pool.

Progressive disclosure is then installed on it exactly as on any server (`build_gateway` is the one place that
constructs it): describe-before-call is enforced here, per client session, while the upstream sessions are shared.
Task-augmented calls are carried for the clients whose protocol has them (`_tasks.py`); what each upstream tells
its clients reaches the sessions that began before it was up (`_instructions.py`).

The gateway answers `initialize` while its upstreams start. By default every other request then waits for the
upstreams still on their first start (bounded by the start timeout), so the first listing is whole. Served while
starting (`while_starting`), requests are answered at once: each upstream joins the listing (and the instructions)
once it has listed, announced with `tools/list_changed`, and a name asked for meanwhile (to describe or call it)
waits for the upstreams still on their first start before it is called unknown.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.dispatcher import ProgressFnT

from mcp_pd._errors import ErrorCode, Refusal
from mcp_pd._extension import DESCRIBE_TOOL, ProgressiveDisclosure
from mcp_pd._metatools import META_TOOLS
from mcp_pd._model import tool_description_required
from mcp_pd._store import CATEGORY_META
from mcp_pd._version import VERSION

from ._bridge import handshake_era
from ._content import ContentRouter
from ._instructions import INSTRUCTIONS_WAIT, InstructionsDelivery, compose, delivery
from ._names import Route, name_tools
from ._pool import Upstream, UpstreamPool, UpstreamUnavailable
from ._tasks import TASKS_PROTOCOL, TaskRouter, task_only

__all__ = [
    "UPSTREAM_FIELDS",
    "UPSTREAM_UNAVAILABLE",
    "CachedServer",
    "Gateway",
    "build_gateway",
    "forwarded_meta",
    "hop_key",
]

logger = logging.getLogger("mcp_pd.gateway")

UPSTREAM_UNAVAILABLE = ErrorCode.UPSTREAM_UNAVAILABLE.value
_RESERVED_META = "io.modelcontextprotocol/"
# What waits for the upstreams' first start unless served while starting: every request but the handshake's own
# (`initialize` is the runner's, `server/discover` and `ping` are answered at once) and `subscriptions/listen`,
# which only registers a 2026-07-28 client for announcements: it is acknowledged at once, and the upstreams that
# list later are announced on it like any change (PDX-START-02).
_GATED: Final = (
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
)


# The fields of a tool its upstream owns: an exported file copies them, and once the upstream has started, what it
# lists wins over the copy (so does its description, unless the file's was written by hand).
UPSTREAM_FIELDS: Final = ("title", "inputSchema", "outputSchema", "annotations", "icons", "execution", "_meta")


@dataclass(frozen=True)
class CachedServer:
    """An upstream as exported earlier: its tools (named as the upstream names them), its instructions, and the
    tools whose cached description was written by hand (kept over the live one)."""

    tools: tuple[types.Tool, ...]
    instructions: str | None = None
    hand_written: frozenset[str] = frozenset()


def hop_key(key: str) -> bool:
    """A `_meta` key that belongs to the client's own hop (its progress token, the protocol's reserved keys)."""
    return key in ("progressToken", "progress_token") or key.startswith(_RESERVED_META)


def forwarded_meta(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The client's `_meta` minus what belongs to its own hop."""
    if not meta:
        return None
    kept = {k: v for k, v in meta.items() if not hop_key(k)}
    return kept or None


def _progress_forwarder(ctx: ServerRequestContext[Any, Any]) -> ProgressFnT | None:
    meta = ctx.meta or {}
    if meta.get("progressToken", meta.get("progress_token")) is None:
        return None

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        try:
            await ctx.session.report_progress(progress, total, message)
        except Exception as exc:  # the request already answered (input_required): its progress has nowhere to go
            logger.debug("progress not passed on: %s", exc)

    return forward


class Gateway:
    """The merged tool listing of every upstream (live, else cached) and the route of each served name."""

    def __init__(
        self,
        pool: UpstreamPool,
        *,
        cached: Mapping[str, CachedServer] | None = None,
        reserved: frozenset[str],
        categories: bool = False,
    ) -> None:
        self.pool = pool
        self.cached = dict(cached or {})
        self.reserved = reserved
        self.categories = categories
        self.routes: dict[str, Route] = {}
        self.listing: list[types.Tool] = []
        self.name_notes: tuple[str, ...] = ()  # tools served under another name than usual, and why (`_names`)
        self.task_notes: tuple[str, ...] = ()  # tools that only a task-augmented call runs (`_tasks.py`)
        # Under a policy (`--policy`) the instructions every client gets name no tool: some clients may not see it.
        self.private_names = False
        self.pd: ProgressiveDisclosure | None = None
        self.told: InstructionsDelivery | None = None  # what each upstream tells clients, and who has received it
        self.tasks: TaskRouter | None = None  # task-augmented calls and the tasks they created, per client
        # What upstreams ask of clients (roots, sampling, elicitation, logs), and their resources and prompts.
        self.bridge = pool.bridge
        self.content = ContentRouter(pool, self.bridge)
        # Told of every call the extension let through, before it runs (the stdio lane learns its caller there).
        self.call_observers: list[Callable[[ServerRequestContext[Any, Any], str], None]] = []
        self._told: set[tuple[str, str]] = set()  # hand-written cached descriptions already reported
        self.rebuild()
        pool.listeners.append(self._upstream_changed)
        pool.listeners.append(self._cache_superseded)

    def _sources(self) -> dict[str, tuple[types.Tool, ...]]:
        sources: dict[str, tuple[types.Tool, ...]] = {}
        notes = []
        for name, upstream in self.pool.upstreams.items():
            tools = upstream.tools if upstream.tools is not None else self.cached.get(name, CachedServer(())).tools
            required = [t.name for t in tools if task_only(t)]
            if required:  # carried (`_tasks.py`), but not for every client: the operator page says so
                runs = "runs" if len(required) == 1 else "run"
                notes.append(
                    f"upstream '{name}': {', '.join(required)} {runs} only as a task: listed to clients on MCP "
                    f"{TASKS_PROTOCOL}, which call it task-augmented; clients of other protocol versions are told "
                    "why they cannot run it"
                )
            sources[name] = tools
        for note in notes:  # each once while it holds: some clients cannot run these tools
            if note not in self.task_notes:
                logger.warning("%s", note)
        self.task_notes = tuple(notes)
        return sources

    def rebuild(self) -> frozenset[str]:
        """Recompute names and routes; returns the served names that were added, removed or changed."""
        sources = self._sources()
        prefixes = {n: u.config.prefix for n, u in self.pool.upstreams.items() if u.config.prefix}
        naming = name_tools({s: [t.name for t in tools] for s, tools in sources.items()}, prefixes, self.reserved)
        for note in naming.notes:  # each once while it holds: a tool served under a name its upstream did not give
            if note not in self.name_notes:
                logger.warning("%s", note)
        routes, self.name_notes = naming.routes, naming.notes
        by_route = {(s, t.name): t for s, tools in sources.items() for t in tools}
        listing = []
        for served, route in routes.items():
            tool = by_route[(route.server, route.tool)]
            update: dict[str, Any] = {}
            if served != tool.name:
                # Namespaced because another upstream lists the same name (two instances of one server, say):
                # the listed line says which instance, or the model has identical lines to choose between.
                label = self.pool.upstreams[route.server].config.label
                update = {"name": served, "description": f"({label}) {tool.description or route.tool}"}
            if self.categories:
                # Catalog mode browses by upstream (or the config's category). Only there: in the other modes
                # `_meta` rides in every listed entry, and the category would cost tokens for nothing.
                category = self.pool.upstreams[route.server].config.category or route.server
                update["meta"] = {**(tool.meta or {}), CATEGORY_META: category}
            listing.append(tool.model_copy(update=update) if update else tool)
        before = {t.name: t for t in self.listing}
        after = {t.name: t for t in listing}
        changed = frozenset(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
        if changed or len(listing) != len(self.listing):
            self.routes, self.listing = routes, listing
        return changed

    async def _upstream_changed(self, upstream: Upstream) -> None:
        changed = self.rebuild()
        if not changed or self.pd is None:
            return
        logger.info("tools of upstream %r changed: %s", upstream.name, ", ".join(sorted(changed)))
        # The catalog first (a call that comes before the next listing must see the change), then the clients.
        self.pd.catalog.update(self.listing, complete=True)
        await self.pd.announcer.announce(changed)

    def instructions(self) -> str:
        """The gateway's instructions: which upstream serves which tools, then each upstream's own text as best
        known now (`_instructions.py`)."""
        if self.told is not None:
            texts = self.told.texts()
        else:
            known = {
                n: u.instructions or self.cached.get(n, CachedServer(())).instructions
                for n, u in self.pool.upstreams.items()
            }
            texts = {n: t.strip() for n, t in known.items() if t and t.strip()}
        return compose(self.pool, self.routes, texts, private=self.private_names)

    # -- handlers ------------------------------------------------------------------------------------
    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if getattr(ctx, "method", "tools/list") != "tools/list" and self.pool.first_starting():
            # The extension re-lists for a name it does not know (a describe or a call): while upstreams are on
            # their first start it may be one of theirs, so wait for them rather than call it unknown. A client's
            # own tools/list is answered at once with what is up; the rest is announced as it arrives.
            await self.pool.first_listings()
        # The same list object while nothing changed: the catalog recognizes an unchanged listing at once.
        return types.ListToolsResult(tools=self.listing)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        for observe in self.call_observers:
            observe(ctx, params.name)
        if self.tasks is not None and self.tasks.asked() is None and params.name in self.tasks.required():
            raise self.tasks.refusal(params.name, ctx)  # a plain call of a task-only tool: say why, not "not found"
        meta = forwarded_meta(cast(Mapping[str, Any] | None, params.meta))
        route = self.routes.get(params.name)
        if route is None:
            return await self.run(params.name, params.arguments, meta=meta)

        admitted = self._version(params.name)  # what the extension let the call through for (`run` checks it)

        async def work(session: str) -> types.CallToolResult:
            progress = _progress_forwarder(ctx)
            return await self.run(
                params.name, params.arguments, meta=meta, progress=progress, session=session, admitted=admitted
            )

        # The upstream's own requests meanwhile (roots, sampling, elicitation) are for this client.
        request = ("tools/call", params.name, params.arguments)
        result: types.CallToolResult | types.InputRequiredResult
        result = await self.bridge.call(route.server, ctx, params, request, work)
        return result

    def route(self, name: str) -> tuple[Upstream, str] | None:
        """The upstream that serves `name`, and the tool's name there."""
        route = self.routes.get(name)
        return None if route is None else (self.pool[route.server], route.tool)

    async def run(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        meta: Mapping[str, Any] | None = None,
        progress: ProgressFnT | None = None,
        session: str | None = None,
        admitted: str | None = None,
    ) -> types.CallToolResult:
        """An admitted call of the served `name`: its upstream's result, or a refusal saying why there is none.
        `session`: the upstream session to call on (a client's own, `_roots.py`), else the shared one. `admitted`:
        the version of `name` the call was let through for (default: the one served now).

        Raises MCPError when the upstream answered with a JSON-RPC error (passed on as it is).
        """
        found = self.route(name)
        if found is None and self.pool.first_starting():
            await self.pool.first_listings()  # eager mode's unknown name: maybe a tool of an upstream still starting
            found = self.route(name)
        if admitted is None:
            admitted = self._version(name)
        if found is None:
            message = f"Tool '{name}' is not served by any upstream."
            return Refusal(ErrorCode.TOOL_NOT_FOUND, message).tool_result()
        upstream, tool = found
        if session is not None:
            try:
                upstream = self.pool.instance(session)
            except UpstreamUnavailable as exc:  # a client's own session that was stopped: never the shared one
                return _unavailable(name, exc)
        refused = await self._still_admitted(name, upstream, admitted)
        if refused is not None:
            return refused
        if self.tasks is not None and self.tasks.asked() is not None:  # a task-augmented call (`_tasks.py`)
            return await self.outcome(name, self.tasks.create(upstream, tool, arguments, meta), upstream.name)
        return await self.outcome(
            name, upstream.calls.call(tool, arguments, meta=meta, progress=progress), upstream.name
        )

    # -- the cache: served until an upstream starts, then the live definition decides --------------------------
    def _version(self, name: str) -> str | None:
        """The version of `name`'s definition as served now (the one a grant is bound to)."""
        full = self.pd.catalog.full(name) if self.pd is not None else None
        return None if full is None else str(full.get("version"))

    async def _still_admitted(self, name: str, upstream: Upstream, admitted: str | None) -> types.CallToolResult | None:
        """None when the call may run: its upstream is started first if it was not (a lazy start from the cache,
        a restart), and then the definition it lists must still be the version the call was let through for.
        Otherwise the refusal: a grant for another version is asked again and the live tool is not run."""
        if self.pd is None or self.pd.mode == "eager":
            return None  # no grants to keep to a version: the listing is the client's contract
        started = upstream.state != "ready" and upstream.key == upstream.name
        if started:
            try:
                await upstream.ensure()
            except UpstreamUnavailable as exc:
                return _unavailable(name, exc)
            await self._upstream_changed(upstream)  # nothing to do once the pool's own notice has run
        now = self._version(name)
        if now == admitted:
            return None
        when = "when its upstream started (a cached copy was served until then)" if started else "meanwhile"
        document = tool_description_required(name, self.pd.disclosure.resource_uri, self.pd.disclosure.describe_tool)
        document["error"]["reason"] = (
            f"the definition of '{name}' changed {when}: {admitted} -> {now}. Nothing was run; fetch it again"
            if now is not None
            else f"'{name}' is no longer served: its upstream no longer lists it ({when}). Nothing was run"
        )
        logger.info("call of %r refused: its definition changed %s", name, when)
        return Refusal.of(document).tool_result()

    def listed_wins(self, name: str) -> tuple[str, ...]:
        """The fields in which the live tool `name` wins over its file in the cache (`Catalog.listed_wins`): what
        its upstream owns, and its description unless the file's was written by hand."""
        route = self.routes.get(name)
        cached = self.cached.get(route.server) if route is not None else None
        if route is None or cached is None:
            return ()
        return UPSTREAM_FIELDS if route.tool in cached.hand_written else ("description", *UPSTREAM_FIELDS)

    async def _cache_superseded(self, upstream: Upstream) -> None:
        """Once an upstream served from the cache lists live: say which hand-written descriptions are kept over a
        live description that differs (the operator may want to take the upstream's)."""
        cached = self.cached.get(upstream.name)
        if cached is None or upstream.tools is None or upstream.key != upstream.name:
            return
        live = {t.name: t.description for t in upstream.tools}
        for tool in cached.tools:
            key = (upstream.name, tool.name)
            if tool.name not in cached.hand_written or live.get(tool.name, tool.description) == tool.description:
                continue
            if key not in self._told:
                self._told.add(key)
                logger.warning(
                    "upstream %r: the cached description of %r was written by hand and is served, not the one the "
                    "upstream now gives (%.120r); to serve the upstream's, delete the description from its file and "
                    "export again",
                    upstream.name,
                    tool.name,
                    live[tool.name],
                )

    async def outcome(self, name: str, call: Awaitable[types.CallToolResult], upstream: str) -> types.CallToolResult:
        """The result of `call` (`upstream`'s `call` or `settle` for the served `name`) with its resource links
        served, or the refusal that says why there is none."""
        try:
            return self.content.tool_result(upstream, await call)
        except UpstreamUnavailable as exc:
            return _unavailable(name, exc)


def _unavailable(name: str, exc: UpstreamUnavailable) -> types.CallToolResult:
    """The refusal of a call of the served `name` whose upstream could not answer, saying why."""
    wait: dict[str, Any] = {} if exc.retry_in is None else {"retry_after_seconds": round(exc.retry_in, 1)}
    return Refusal(
        UPSTREAM_UNAVAILABLE,
        f"Tool '{name}' could not be run: {exc}.",
        server=exc.server,
        tool=name,
        reason=exc.reason,
        retryable=True,
        **wait,
    ).tool_result()


def build_gateway(
    pool: UpstreamPool,
    *,
    descriptions: str | Path | None = None,
    mode: str = "progressive",
    cached: Mapping[str, CachedServer] | None = None,
    name: str = "mcp-pd-gateway",
    while_starting: bool = False,
    remember_instructions: bool = False,
    instructions_wait: float = INSTRUCTIONS_WAIT,
    **options: Any,
) -> tuple[Server[Any], ProgressiveDisclosure, Gateway]:
    """The gateway server with progressive disclosure installed (`options` go to ProgressiveDisclosure).

    Upstreams may still be starting: each joins the listing and the instructions once it has listed. Requests other
    than the handshake wait for their first start unless `while_starting` (then they are answered with what is up).
    The handshake waits up to `instructions_wait` seconds for upstreams whose instructions are unknown; with
    `remember_instructions`, what each upstream said at its last start counts as known (`_instructions.py`).
    """
    # The gateway's own tools in this mode: an upstream tool of the same name is served namespaced.
    if mode == "catalog":
        reserved = frozenset({DESCRIBE_TOOL, *META_TOOLS})
    elif mode == "progressive" and options.get("describe_tool", True):
        reserved = frozenset({DESCRIBE_TOOL})
    else:
        reserved = frozenset()
    gateway = Gateway(pool, cached=cached, reserved=reserved, categories=mode == "catalog")
    told = gateway.told = delivery(
        pool,
        cached={n: c.instructions for n, c in (cached or {}).items()},
        routes=lambda served: route.server if (route := gateway.routes.get(served)) is not None else None,
        remember=remember_instructions,
        wait=instructions_wait,
    )
    gateway.tasks = TaskRouter(
        pool,
        listing=lambda: gateway.listing,
        cached=lambda: [t for n, c in (cached or {}).items() if pool.upstreams[n].tools is None for t in c.tools],
        results=gateway.content.tool_result,
        remembered=told.tasks,
    )
    gateway.private_names = told.private = options.get("permission") is not None
    content, bridge = gateway.content, gateway.bridge
    with handshake_era():  # a gateway carries the roots and logging its clients and upstreams use
        server: Server[Any] = Server(
            name,
            version=VERSION,
            instructions=gateway.instructions(),
            on_list_tools=gateway.list_tools,
            on_call_tool=gateway.call_tool,
            on_list_resources=content.list_resources,
            on_list_resource_templates=content.list_templates,
            on_read_resource=content.read_resource,
            on_subscribe_resource=content.subscribe,
            on_unsubscribe_resource=content.unsubscribe,
            on_list_prompts=content.list_prompts,
            on_get_prompt=content.get_prompt,
            on_completion=content.complete,
            on_set_logging_level=bridge.set_level,
            on_roots_list_changed=bridge.roots_changed,
        )
    server.add_notification_handler("notifications/initialized", types.NotificationParams, bridge.initialized)
    if mode != "progressive":
        options["mode"] = mode
    pd = ProgressiveDisclosure(descriptions, **options).install(server)
    gateway.pd = pd
    if cached:  # the cache files copy the upstreams: once one has started, what it lists wins (`listed_wins`)
        pd.catalog.listed_wins = gateway.listed_wins
    content.bus = pd.announcer.bus
    # A parked call resumes only for the caller it was parked for (the extension's session key: bearer or session),
    # and which client a request comes from is the extension's answer too (one home: `mcp_pd._sessions`).
    bridge.rounds.principal = lambda ctx: pd.caller(ctx).session
    bridge.use_sessions(pd.sessions)
    pd.catalog.update(gateway.listing, complete=True)

    async def instructions_changed(_upstream: Upstream) -> None:
        # Sessions that start later hear of every upstream up by then, and of its own instructions. The gateway's
        # text is the "author's" part of what the extension advertises.
        pd.advertiser.set_author_instructions(gateway.instructions())

    pool.listeners.append(told.upstream_listed)
    pool.listeners.append(instructions_changed)
    pd.advertiser.set_author_instructions(gateway.instructions())  # with what is remembered
    if not while_starting:
        _gate(server, pool)
    # Outside the gate: a description the gate held answers with the instructions as they are once it ran.
    told.install(
        server,
        pd.sessions.client,
        describe_tool=pd.disclosure.describe_tool,
        resource_uri=pd.disclosure.resource_uri,
        max_tools=pd.max_tools_per_read,
    )
    pd.sessions.listeners.append(told.left)
    gateway.tasks.install(server, pd.sessions.client)  # inside the handshake's wait: `tasks` as known after it
    pd.sessions.listeners.append(gateway.tasks.left)
    return server, pd, gateway


def _gate(server: Server[Any], pool: UpstreamPool) -> None:
    """Make every request but the handshake wait (bounded) for the upstreams on their first start now: answered at
    once, `initialize` keeps a host's connect timeout; the requests after it see every upstream that came up. Only
    these: one a config reload adds later holds up no client."""
    initial = pool.first_starting()
    for method in _GATED:
        entry = server.get_request_handler(method)
        if entry is None or not initial:
            continue

        async def gated(ctx: Any, params: Any, handler: Any = entry.handler) -> Any:
            if pool.first_starting(initial):
                await pool.first_listings(initial)
            return await handler(ctx, params)

        server.add_request_handler(method, entry.params_type, gated)
