"""The upstream pool: one MCP session per upstream, reused for every call, supervised for its whole life.

An upstream that works on its client's roots may also run a session of its own per client (`instance`s keyed
`<name>#<n>`, opened and retired by `_roots.py`'s policy); they list nothing to the gateway and serve one client.

A session is opened on first use (or at start-up), re-opened at once when an HTTP upstream forgets it, and
re-opened with exponential backoff when a stdio upstream dies or stops answering. A failing upstream fails only
its own calls, with an error that names it and says why (`_failures.py`). Every process is stopped on shutdown
(see `_process.py` for the crash case). An upstream that serves progressive disclosure itself is spoken to
through `_progressive.py`; this module knows nothing of the extension beyond that.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, Literal, TextIO

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_pd import __version__

from ._bridge import ClientBridge
from ._calls import UpstreamCalls
from ._coalesce import Coalesced
from ._config import UpstreamConfig
from ._failures import UpstreamUnavailable, explain, remember
from ._filters import filtered
from ._process import StdioProcess, Watchdog
from ._progressive import ProgressiveUpstream, progressive_settings
from ._sse import sse_failure

__all__ = ["Upstream", "UpstreamPool", "UpstreamUnavailable"]  # UpstreamUnavailable: re-exported from _failures

logger = logging.getLogger("mcp_pd.gateway")

BACKOFF_BASE: Final = 0.5
BACKOFF_MAX: Final = 60.0
# An upstream that stayed up this long starts its backoff from the beginning again after its next failure.
STABLE_AFTER: Final = 30.0
_LIST_PAGES: Final = 1000

State = Literal["idle", "starting", "ready", "failed", "closed"]
ChangeListener = Callable[["Upstream"], Awaitable[None]]


class Upstream:
    """One configured upstream server and its (single, shared) client session."""

    def __init__(self, config: UpstreamConfig, pool: UpstreamPool, *, key: str | None = None) -> None:
        self.config = config
        remember(config)  # its credentials are kept out of every reason, page and log line from now on
        self.pool = pool
        self.key = key or config.name  # which session: the shared one's is the name, a client's own `<name>#<n>`
        self.state: State = "idle"
        self.tools: tuple[types.Tool, ...] | None = None  # the last live listing
        self.instructions: str | None = None
        self.reason: str | None = None  # why it last failed
        self.failures = 0
        self.starts = 0
        self.retry_at = 0.0
        self.session: ClientSession | None = None
        self.process: StdioProcess | None = None
        self._pd: ProgressiveUpstream | None = None  # when the upstream serves progressive disclosure itself
        # An upstream that serves progressive disclosure itself: its full definitions (examples, guidance), by name.
        self.definitions: dict[str, dict[str, Any]] = {}
        self._supervised = False
        self.removed = anyio.Event()  # taken out of the config: stop for good (the pool stays)
        self._attempt = anyio.Event()
        self._recycle = anyio.Event()
        self._recycle_reason = ""
        self._reinit = False
        self.permanent = False  # its last failure will recur whatever the retries (an SSE endpoint as `url`)
        self.calls = UpstreamCalls(self)
        self.relists = Coalesced(
            functools.partial(_relist, self), f"re-listing upstream {config.name!r}"
        )  # list_changed floods: bounded

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.session is not None else None

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Start supervising (connect now, reconnect whenever needed) unless already done."""
        if not self._supervised and self.pool.task_group is not None and not self.pool.closing:
            self._supervised = True
            self.state = "starting"
            self._attempt = anyio.Event()  # what start_all() and ensure() wait on for this first attempt
            self.pool.task_group.start_soon(self._supervise, name=f"upstream {self.name}")

    async def ensure(self) -> ClientSession:
        """The live session, starting or waiting for it as needed; UpstreamUnavailable if there is none."""
        self.start()
        while True:
            session = self.session
            if self.state == "ready" and session is not None:
                return session
            if self.state == "closed" or self.pool.closing:
                raise UpstreamUnavailable(self.name, "is shut down (the gateway is stopping)")
            if self.state == "failed" and self.permanent:
                raise UpstreamUnavailable(self.name, f"is unavailable: {self.reason}")
            if self.state == "failed":
                wait = max(0.0, self.retry_at - time.monotonic())
                raise UpstreamUnavailable(
                    self.name,
                    f"is unavailable: {self.reason}; the gateway restarts it in {wait:.1f} s "
                    f"(failure {self.failures} in a row); retry then",
                    retry_in=wait,
                )
            attempt = self._attempt
            with anyio.move_on_after(self.pool.start_timeout + 1):
                await attempt.wait()
            if not attempt.is_set():
                raise UpstreamUnavailable(self.name, f"did not start within {self.pool.start_timeout:g} s")

    def recycle(self, reason: str, *, reinit: bool = False) -> None:
        """End the current session (the supervisor opens a new one: at once for `reinit`, else after backoff)."""
        if not self._recycle.is_set():
            self._recycle_reason, self._reinit = reason, reinit
            self._recycle.set()

    async def stop(self, why: str = "was removed from the gateway's config") -> None:
        """Stop this upstream for good (its process too) and wait until it has; bounded."""
        self.removed.set()
        self.recycle(why)
        with anyio.move_on_after(self.pool.start_timeout + 5):
            while self._supervised and self.state != "closed":
                await anyio.sleep(0.02)
        self.state = "closed"

    def _ending(self) -> bool:
        return self.pool.closing or self.removed.is_set()

    async def _supervise(self) -> None:
        while not self._ending():
            if self._attempt.is_set():
                self._attempt = anyio.Event()
            self.state = "starting"
            self.starts += 1
            reason, reinit, up_for = await self._connect_once()
            self.session = None
            if self._ending():
                break
            if reinit:
                logger.info("upstream %r: %s; opening a new session", self.name, reason)
                continue
            self.failures = 1 if up_for >= STABLE_AFTER else self.failures + 1
            # A permanent failure waits for the config to change (which stops or restarts this upstream).
            delay = math.inf if self.permanent else min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (self.failures - 1))
            self.reason, self.state = reason, "failed"
            self.retry_at = time.monotonic() + delay
            self._attempt.set()
            then = "" if self.permanent else f"; restarting in {delay:.1f} s (failure {self.failures})"
            logger.warning("upstream %r %s%s", self.name, reason, then)
            with anyio.move_on_after(delay):
                await _first_of(self.pool.closed, self.removed)
        self.state = "closed"
        self._attempt.set()

    async def _connect_once(self) -> tuple[str, bool, float]:
        """One session's life: (why it ended, whether to re-open at once, seconds it was up)."""
        self._recycle, self._reinit = anyio.Event(), False
        self.pool.bridge.roots.started(self.key)  # a new session holds nobody's roots, whoever the last one had
        process: StdioProcess | None = None
        ready_at: float | None = None
        try:
            # One scope around the whole session (a deadline until it is ready, none after): entering the client
            # inside a shorter-lived scope would leave its task groups nested wrongly.
            with anyio.CancelScope(deadline=anyio.current_time() + self.pool.start_timeout) as deadline:
                if self.pool.task_group is not None:
                    self.pool.task_group.start_soon(_abandon, deadline, self._attempt, self.pool.closed, self.removed)
                async with contextlib.AsyncExitStack() as stack:
                    config = self.config
                    if config.command is not None:
                        process = self.process = StdioProcess(config, self.pool.watchdog, errlog=self.pool.errlog)
                        transport: Any = process
                    else:
                        assert config.url is not None
                        http = await stack.enter_async_context(create_mcp_http_client(headers=_sent(config.headers)))
                        transport = streamable_http_client(config.url, http_client=http)
                    client = Client(
                        transport,
                        mode="legacy",  # the handshake era: one session, notifications on it, Mcp-Session-Id on HTTP
                        cache=None,
                        client_info=types.Implementation(name="mcp-pd-gateway", version=__version__),
                        **self.pool.bridge.client_options(self.key, self._on_message),  # what it asks of clients
                    )
                    await stack.enter_async_context(client)
                    session = client.session
                    settings = progressive_settings(session)
                    self._pd = ProgressiveUpstream(settings) if settings is not None else None
                    tools = await self._list(session)
                    deadline.deadline = math.inf
                    self.instructions = client.instructions
                    self.session, self.state, self.reason = session, "ready", None
                    ready_at = time.monotonic()
                    self._attempt.set()
                    await self.pool.tools_listed(self, tools)
                    await self._park(process)
                    return self._recycle_reason, self._reinit, time.monotonic() - ready_at
            reason = f"did not complete the MCP handshake and tools/list within {self.pool.start_timeout:g} s"
        except Exception as exc:
            reason = f"failed to start: {explain(exc)}" if ready_at is None else explain(exc)
            if ready_at is None and (sse := await sse_failure(self.config.url, self.config.headers)) is not None:
                reason, self.permanent = sse, True  # fails the same way every time: said, and not retried
        if process is not None and ready_at is None:
            with anyio.move_on_after(1.0):
                await process.exited.wait()
            if process.exited.is_set():
                reason = f"failed to start: {process.exit_reason()}"
        self.session = None
        return reason, False, 0.0 if ready_at is None else time.monotonic() - ready_at

    async def _park(self, process: StdioProcess | None) -> None:
        """Wait until something ends this session: shutdown, the process exiting, or `recycle()`."""
        async with anyio.create_task_group() as tg:

            async def closing() -> None:
                await _first_of(self.pool.closed, self.removed)
                self.recycle("is shutting down" if self.pool.closing else "was removed from the gateway's config")

            async def died() -> None:
                assert process is not None
                await process.exited.wait()
                self.recycle(process.exit_reason())

            tg.start_soon(closing)
            if process is not None:
                tg.start_soon(died)
            await self._recycle.wait()
            tg.cancel_scope.cancel()

    # -- listing -------------------------------------------------------------------------------------
    async def _list(self, session: ClientSession) -> tuple[types.Tool, ...]:
        tools = await _all_tools(session)
        if self._pd is None:
            return tuple(tools)
        listed, self.definitions = await self._pd.listing(session, tools)
        return listed

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.relists.request(self.pool.task_group)


async def _relist(upstream: Upstream) -> None:
    """An upstream's tools listed again after it said they changed (`Coalesced`: a flood costs a bounded number)."""
    session = upstream.session
    if session is None:
        return
    try:
        tools = await upstream._list(session)
    except Exception as exc:
        # A re-list still pending when the gateway stops meets a closed session: nothing went wrong.
        (logger.debug if upstream._ending() or upstream.state == "closed" else logger.warning)(
            "upstream %r announced changed tools but re-listing failed: %s", upstream.name, explain(exc)
        )
        return
    await upstream.pool.tools_listed(upstream, tools)


class UpstreamPool:
    """Every configured upstream, their supervisor tasks and the watchdog; `async with` owns their lifetime."""

    def __init__(
        self,
        configs: Iterable[UpstreamConfig],
        *,
        call_timeout: float = 300.0,
        start_timeout: float = 60.0,
        errlog: TextIO | None = None,
    ) -> None:
        self.upstreams = {config.name: Upstream(config, self) for config in configs}
        self.own: dict[str, Upstream] = {}  # sessions of one client each, by key (see the module's docstring)
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self.errlog = errlog
        self.watchdog = Watchdog()
        self.task_group: TaskGroup | None = None
        self.closing = False
        self.closed = anyio.Event()
        self.listeners: list[ChangeListener] = []
        self.config_note = ""  # what the last config reload did, or why it was refused (the operator page shows it)
        self._filter_notes: dict[str, str] = {}  # what each upstream's tool filter last left out, as said
        # Requests an upstream sends back (roots, sampling, elicitation) and its logs: passed to the right client.
        self.bridge = ClientBridge(self.sessions, task_group=lambda: self.task_group, pool=self)
        self._stack: contextlib.AsyncExitStack | None = None

    def __getitem__(self, name: str) -> Upstream:
        return self.upstreams[name]

    def client_sessions(self, name: str) -> int:
        """How many clients may each have a session of upstream `name` of their own (`_roots.py`)."""
        upstream = self.upstreams.get(name)
        return 0 if upstream is None else upstream.config.client_sessions

    def instance(self, key: str) -> Upstream:
        """The session `key` names: an upstream's shared one (its name) or one client's own. UpstreamUnavailable
        when it is gone (a client's own session is never swapped for another's)."""
        found = self.own.get(key) or self.upstreams.get(key)
        if found is None:
            raise UpstreamUnavailable(
                self.bridge.roots.upstream(key),
                "has no session for this client any more (the server was removed or restarted, or the gateway is "
                "stopping); retry",
            )
        return found

    def sessions(self) -> list[tuple[str, ClientSession]]:
        """(key, session) of every upstream session that is live now, clients' own included."""
        return [(u.key, u.session) for u in self._every() if u.state == "ready" and u.session is not None]

    def _every(self) -> list[Upstream]:
        """Every session's upstream object: the shared ones and clients' own."""
        return [*self.upstreams.values(), *self.own.values()]

    def client_sessions_live(self, name: str) -> int:
        """How many sessions of upstream `name` of one client's own are ready now."""
        return sum(u.name == name and u.state == "ready" for u in self.own.values())

    async def spawn(self, name: str, key: str) -> None:
        """A new session (and process) of upstream `name` for one client, keyed `key`; returns once it is ready or
        has failed once (its calls then say why)."""
        shared = self.upstreams.get(name)
        if shared is None or shared.removed.is_set() or self.closing:
            return  # its call is refused (`instance` finds no session)
        upstream = self.own[key] = Upstream(shared.config, self, key=key)
        upstream.start()
        if not upstream._supervised:
            return
        with anyio.move_on_after(self.start_timeout + 1):
            await upstream._attempt.wait()

    async def retire(self, key: str) -> None:
        """Stop one client's own session (its client has gone, or it sat idle)."""
        upstream = self.own.pop(key, None)
        if upstream is not None:
            await upstream.stop("is no longer needed (its client has gone or it sat idle)")

    async def __aenter__(self) -> UpstreamPool:
        self.watchdog.start()
        stack = contextlib.AsyncExitStack()
        self.task_group = await stack.enter_async_context(anyio.create_task_group())
        self._stack = stack
        return self

    async def aclose(self) -> None:
        """Stop every upstream (from any task) and wait until each has stopped; bounded, shielded."""
        self.closing = True
        self.closed.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(30):
            while any(u._supervised and u.state != "closed" for u in self._every()):
                await anyio.sleep(0.02)

    async def __aexit__(self, *exc_info: object) -> None:
        # Shielded and bounded inside aclose(): a cancelled gateway still stops every upstream first.
        await self.aclose()
        try:
            assert self._stack is not None
            assert self.task_group is not None
            self.task_group.cancel_scope.cancel()  # what is left: re-listings and probes
            await self._stack.aclose()
        finally:
            self.task_group = None
            self.watchdog.close()

    async def renew(self, key: str) -> None:
        """A new session (and process) in place of session `key`, returning once it is ready or could not start."""
        upstream = self.instance(key)
        old = upstream.session
        upstream.recycle("a new session was needed (the client whose roots it held has gone)", reinit=True)
        with anyio.move_on_after(self.start_timeout):
            while upstream.session is old or upstream.state != "ready":
                if upstream.state in ("failed", "closed"):
                    return
                await anyio.sleep(0.02)

    def start(self, names: Iterable[str] | None = None) -> list[Upstream]:
        """Start the named upstreams (default: all) in the background; they join the listing as each lists."""
        chosen = [self.upstreams[n] for n in (names if names is not None else self.upstreams)]
        for upstream in chosen:
            upstream.start()
        return chosen

    async def start_all(self, names: Iterable[str] | None = None) -> None:
        """Start the named upstreams (default: all) and wait until each is ready or has failed once."""
        chosen = self.start(names)
        with anyio.move_on_after(self.start_timeout + 2):
            for upstream in chosen:
                await upstream._attempt.wait()

    async def started(self, upstream: Upstream) -> bool:
        """Wait until `upstream`'s start under way has ended (bounded by the start timeout); True when it is ready."""
        with anyio.move_on_after(self.start_timeout + 1):
            await upstream._attempt.wait()
        return upstream.state == "ready" and upstream.session is not None

    def first_starting(self, among: Iterable[Upstream] | None = None) -> list[Upstream]:
        """The upstreams (default: all; else those of `among` still configured) starting that have never listed:
        their tools are not known yet. Only a first attempt counts: an upstream that failed it is retried with
        backoff for as long as the gateway runs, and no client waits on those retries."""
        chosen = self.upstreams.values() if among is None else [u for u in among if self.upstreams.get(u.name) is u]
        return [u for u in chosen if u.state == "starting" and u.tools is None and u.starts <= 1]

    async def first_listings(self, among: Iterable[Upstream] | None = None) -> None:
        """Wait until every upstream of `first_starting(among)` has listed or failed (bounded by the start timeout)."""
        with anyio.move_on_after(self.start_timeout + 1):
            for upstream in self.first_starting(among):
                await upstream._attempt.wait()

    async def reconfigure(self, configs: Iterable[UpstreamConfig]) -> dict[str, list[str]]:
        """Apply an edited config: stop the upstreams that left or changed, start the new and changed ones, leave
        the rest (their sessions, and every client's grants on their tools) alone. Returns what it did."""
        wanted = {config.name: config for config in configs}
        removed = [n for n in self.upstreams if n not in wanted]
        restarted = [n for n in self.upstreams if n in wanted and wanted[n] != self.upstreams[n].config]
        added = [n for n in wanted if n not in self.upstreams]
        gone = [self.upstreams[n] for n in removed + restarted]
        for upstream in gone:  # first, before any wait: no new call opens a session of theirs for a client
            upstream.removed.set()
            self.bridge.roots.forget(upstream.name)
        for upstream in gone:
            await upstream.stop()
        while own := [k for k, u in self.own.items() if u.name in removed + restarted]:
            for key in own:
                await self.retire(key)
        kept = {n: u for n, u in self.upstreams.items() if n not in removed and n not in restarted}
        self.upstreams = {n: kept[n] if n in kept else Upstream(wanted[n], self) for n in wanted}
        for upstream in gone:  # their tools leave the listing now; the new ones join when they have listed
            await self._notify(upstream)
        await self.start_all(restarted + added)
        return {"added": added, "removed": removed, "restarted": restarted}

    async def _notify(self, upstream: Upstream) -> None:
        for listener in self.listeners:
            try:
                await listener(upstream)
            except Exception:
                logger.exception("tool change listener failed")

    async def tools_listed(self, upstream: Upstream, tools: tuple[types.Tool, ...]) -> None:
        # Without what the host's config excludes (`_filters.py`), before anything else sees the listing; what it
        # left out said once while it holds, by the shared session (a client's own session lists the same).
        shared = upstream.key == upstream.name
        said = self._filter_notes.get(upstream.name, "") if shared else None
        kept, note = filtered(upstream.config.tools, upstream.name, list(tools), said)
        if shared:
            self._filter_notes[upstream.name] = note
        tools = tuple(kept)
        changed = upstream.tools != tools
        upstream.tools = tools
        if changed and upstream.key == upstream.name:  # a client's own session lists nothing to the gateway
            await self._notify(upstream)


async def _all_tools(session: ClientSession) -> list[types.Tool]:
    """Every page of an upstream's tools/list (at most `_LIST_PAGES` pages)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGES):
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def _first_of(*events: anyio.Event) -> None:
    """Return when any of `events` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


async def _abandon(start: anyio.CancelScope, attempt: anyio.Event, *ending: anyio.Event) -> None:
    """Give up a start under way (`start`, the attempt `attempt`) once one of `ending` is set first (the gateway
    stops, the upstream was removed): the gateway serves while upstreams start, so it may stop while one still is."""
    await _first_of(attempt, *ending)
    if not attempt.is_set():
        start.cancel()


def _sent(headers: Mapping[str, str]) -> dict[str, str]:
    """Header values as sent: leading and trailing blanks are not part of a value (RFC 9110 5.5), and a pasted
    token often ends with one, which HTTP libraries refuse outright (quoting the value)."""
    return {key: value.strip() for key, value in headers.items()}
