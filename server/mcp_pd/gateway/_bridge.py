"""What upstreams ask of clients, and what clients tell upstreams: roots, sampling, elicitation and logging.

Every message an upstream sends a client is routed by what it relates to, never guessed and never broadcast:

- during a call (tool, prompt, resource read or listing) of one client on that upstream session, to that client,
  on that call's own stream (a 2026-07-28 client through the call's `input_required` rounds, `_rounds.py`);
- outside calls, to the one client that session serves (`_roots.py`: a client's own session, or the client whose
  roots a shared session holds) when that client can be reached outside a call (a handshake-era connection), and
  on a gateway served over stdio to its one client;
- otherwise to nobody: the upstream gets an error that says why and the operator's log gets the message (a log
  line, or what was asked). Except a roots request of a session that holds no client's roots and serves no call
  (an upstream asking at start-up, before any client): its roots are those of no client, so it is answered with an
  empty list (a note in the operator's log, not an error the upstream reports as a failure), and told
  `roots/list_changed` once a client's roots are known. Which client a request comes from is
  `mcp_pd._sessions.ClientId`: the handshake session, else the principal, else the request alone.

An upstream that asks its clients anything is *bound* (`_roots.py`): each of its sessions then serves one client's
calls at a time, so what it asks during a call has one client it can be for. A client that did not declare the
capability is not asked: the upstream gets the error the SDK gives a client without the capability, with the
reason. `logging/setLevel` goes to every ready upstream; `notifications/roots/list_changed` to the sessions
holding that client's roots; a roots change when the first client that has roots connects, to the upstreams
started before it (they asked nobody).

Knows nothing about tools, grants or modes.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final, TypeAlias

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp_pd._sessions import ClientId, SessionPolicy, SessionResolver
from mcp_pd._sessions import connection as _connection

from ._asking import ClientAsker, Outcome, client_capabilities, modern
from ._roots import RootsKeeper, SessionHost
from ._rounds import Rounds

__all__ = ["ClientBridge", "handshake_era"]

logger = logging.getLogger("mcp_pd.gateway")

Context: TypeAlias = ServerRequestContext[Any, Any]
Sessions: TypeAlias = Callable[[], list[tuple[str, ClientSession]]]
# How long an upstream's request waits for a first client to connect: an upstream started with the gateway asks
# for roots before the client that launched the gateway has finished its handshake.
FIRST_CLIENT_WAIT: Final = 10.0


class ClientBridge:
    """Routes upstream-to-client requests and client-to-upstream notices (see the module's docstring)."""

    def __init__(
        self,
        sessions: Sessions,
        *,
        task_group: Callable[[], TaskGroup | None] = lambda: None,
        pool: SessionHost | None = None,
        first_client_wait: float = FIRST_CLIENT_WAIT,
    ) -> None:
        # `sessions()`: (key, ready session) for every upstream session live now; `task_group()`: where a
        # 2026-07-28 client's upstream call waits for its input between rounds; `pool`: opens and stops sessions.
        self._sessions = sessions
        self.rounds = Rounds(task_group)
        self.asker = ClientAsker(self.rounds)  # the one client chosen for a request, asked it
        self._wait = first_client_wait
        # Served over stdio, the gateway has one client: what no call explains is for it (set by the CLI).
        self.single_client = False
        self._calls: dict[str, list[tuple[Context, ClientId]]] = {}
        self._conns: dict[str, Any] = {}  # handshake-era clients connected now: client key -> connection
        self._joined = anyio.Event()
        self.level: types.LoggingLevel | None = None
        # Whose roots each upstream session holds: a call runs on its own client's roots, or not at all.
        self.roots = RootsKeeper(self._tell_one, pool)
        # Told of every notification an upstream session sends (resource updates, list changes), with that
        # session's key, after the pool saw it.
        self.listeners: list[Callable[[str, Any], Awaitable[None]]] = []
        self.identify: Callable[[Context], ClientId] = lambda ctx: ClientId("")
        self.use_sessions(SessionResolver(SessionPolicy(), lambda key: None))

    def use_sessions(self, resolver: SessionResolver) -> None:
        """Tell clients apart as `resolver` does (`build_gateway` passes the extension's), and let go of what a
        client held when its session ends."""
        self.identify = resolver.client
        resolver.listeners.append(self._left)

    def _left(self, client: str) -> None:
        self._conns.pop(client, None)
        self.roots.left(client)

    # -- what the gateway tells the bridge ------------------------------------------------------------
    async def call(
        self,
        upstream: str,
        ctx: Context,
        params: types.InputResponseRequestParams | None,
        request: tuple[str, str, Any],
        work: Callable[[str], Awaitable[Any]],
    ) -> Any:
        """`work(key)` (the upstream side of `ctx`'s request, on the session `key` of `upstream`: the shared one,
        or the client's own) run while that session serves `ctx`'s client, so what the upstream asks meanwhile
        goes to that client; for a 2026-07-28 client that can be asked, its result or `input_required`
        (`request` = method, name or URI, arguments: what a retry repeats). `params` None: a request that cannot
        be answered `input_required` (a listing): a 2026-07-28 client is then not asked."""
        client = self.seen(ctx)
        conn = _connection(ctx)
        wanted = client_capabilities(conn)

        async def called() -> Any:
            async with self.roots.turn(upstream, client) as session:
                with self.calling(session, ctx, client):
                    await self.roots.give(session, client, can_answer=wanted.roots is not None)
                    return await work(session)

        if params is not None and modern(conn) and (wanted.roots or wanted.sampling or wanted.elicitation):
            return await self.rounds.serve(ctx, params, request, called, client)
        return await called()

    @contextlib.contextmanager
    def calling(self, key: str, ctx: Context, client: ClientId) -> Iterator[None]:
        """While the block runs, the upstream session `key` is serving a call of `ctx`'s client."""
        calls = self._calls.setdefault(key, [])
        entry = (ctx, client)
        calls.append(entry)
        try:
            yield
        finally:
            calls.remove(entry)
            if not calls and self._calls.get(key) is calls:
                del self._calls[key]

    def seen(self, ctx: Context) -> ClientId:
        """Which client `ctx` comes from; a handshake-era connection is remembered until its session ends."""
        client = self.identify(ctx)
        conn = _connection(ctx)
        if client.lasting and conn is not None and not modern(conn) and client.key not in self._conns:
            self._conns[client.key] = conn
            self._joined.set()
        elif client.lasting and self.single_client:
            self._joined.set()  # a 2026-07-28 client over stdio: joined, though never asked outside its calls
        return client

    async def initialized(self, ctx: Context, params: Any) -> None:
        """`notifications/initialized`: a client joined. Served over stdio, upstreams started before their one
        client connected asked nobody for roots: they ask again now (over HTTP a call gives its client's roots)."""
        known = self.identify(ctx).key in self._conns
        self.seen(ctx)
        if not known and self.single_client and client_capabilities(_connection(ctx)).roots is not None:
            for key, session in self._sessions():
                if self.roots.holder(key) is None:
                    await _tell_roots_changed(key, session)

    async def roots_changed(self, ctx: Context, params: Any) -> None:
        """`notifications/roots/list_changed`: each upstream session holding this client's roots is told (it asks
        again, and the answer reaches this client); one that cannot ask in time is given them at the next call."""
        client = self.seen(ctx)
        live = dict(self._sessions())
        for key in self.roots.changed(client.key):
            session = live.get(key)
            if session is not None:
                await _tell_roots_changed(key, session)
        if self.single_client:  # its one client: upstreams that hold nobody's roots yet may ask now
            for key, session in live.items():
                if self.roots.holder(key) is None:
                    await _tell_roots_changed(key, session)

    async def set_level(self, ctx: Context, params: types.SetLevelRequestParams) -> types.EmptyResult:
        """`logging/setLevel`, passed to every ready upstream that logs (and to each that starts later)."""
        self.seen(ctx)
        self.level = params.level
        for name, session in self._sessions():
            capabilities = session.server_capabilities
            if capabilities is None or capabilities.logging is None:
                continue
            try:
                with handshake_era():
                    await session.set_logging_level(params.level)
            except Exception as exc:
                logger.info("upstream %r: could not set its log level: %s", name, exc)
        return types.EmptyResult()

    # -- what upstreams ask ---------------------------------------------------------------------------
    def client_options(self, upstream: str, on_message: Callable[[Any], Awaitable[None]]) -> dict[str, Any]:
        """The callbacks of the client of upstream session `upstream` (a key: its name, or a client's own), so the
        gateway declares roots, sampling and elicitation to it; `on_message` is the pool's own handler of the
        upstream's notifications."""

        async def message(notice: Any) -> None:
            await on_message(notice)
            for listener in self.listeners:
                try:
                    await listener(upstream, notice)
                except Exception:
                    logger.exception("a listener of upstream %r's notifications failed", upstream)

        async def sampling(
            context: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult | types.ErrorData:
            request = types.CreateMessageRequest(params=params)
            answer: types.CreateMessageResult | types.ErrorData
            answer = await self._ask(upstream, request, types.CreateMessageResult, "sampling", "Sampling")
            return answer

        async def elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
            request = types.ElicitRequest(params=params)
            return await self._ask(upstream, request, types.ElicitResult, "elicitation", "Elicitation")

        async def roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
            answer: types.ListRootsResult | types.ErrorData
            answer = await self._ask(upstream, types.ListRootsRequest(), types.ListRootsResult, "roots", "Roots")
            return answer

        async def log(params: types.LoggingMessageNotificationParams) -> None:
            await self._log(upstream, params)

        return {
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "list_roots_callback": roots,
            "logging_callback": log,
            "log_level": self.level,
            "message_handler": message,
        }

    async def _target(self, key: str) -> tuple[Context | None, Any, ClientId] | str:
        """(the call's context or None, the connection to ask, the client), or why there is nobody to ask."""
        upstream = self.roots.upstream(key)
        callers: dict[str, tuple[Context, ClientId]] = {}
        for ctx, client in self._calls.get(key, []):
            # Of one client's calls, one whose upstream side is not itself waiting for an answer is the asker.
            if client.key not in callers or self._waiting(callers[client.key][0]):
                callers[client.key] = ctx, client
        if len(callers) > 1:
            return (
                f"{len(callers)} clients have calls in flight on upstream '{upstream}', which shares one session "
                "among them, so the gateway cannot tell whose request this is"
            )
        if callers:
            ctx, caller = next(iter(callers.values()))
            return ctx, _connection(ctx), caller
        holder = self.roots.holder(key)
        if holder is not None:  # the one client this session serves, when it can be reached outside a call
            conn = self._conns.get(holder)
            if conn is not None:
                return None, conn, ClientId(holder)
            return (
                f"upstream '{upstream}' asked outside its client's calls, and that client can be asked only during them"
            )
        if not self.single_client:
            return (
                f"upstream '{upstream}' asked outside any client's call, and the gateway serves several clients, so "
                "it cannot tell whose request this is"
            )
        if not self._conns:
            with anyio.move_on_after(self._wait):
                await self._joined.wait()
        if not self._conns:
            if self._joined.is_set():
                return f"the gateway's client speaks 2026-07-28 and is asked only during its calls ('{upstream}')"
            return f"no client is connected to the gateway to answer upstream '{upstream}'"
        only, conn = next(iter(self._conns.items()))
        return None, conn, ClientId(only)

    def _unheld(self, key: str) -> bool:
        """Whether session `key` serves no call and holds no client's roots (its roots are nobody's: none)."""
        return not self._calls.get(key) and self.roots.holder(key) is None

    def _waiting(self, ctx: Context) -> bool:
        exchange = self.rounds.exchange(ctx)
        return exchange is not None and exchange.waiting

    async def _ask(self, upstream: str, request: Any, result_type: type[Any], capability: str, label: str) -> Any:
        self.roots.asked(upstream, capability)
        answer, outcome, client = await self._answer(upstream, request, result_type, capability, label)
        if capability == "roots":
            self.roots.ended(upstream, client if outcome == "answered" else None)
        return answer

    async def _answer(
        self, upstream: str, request: Any, result_type: type[Any], capability: str, label: str
    ) -> tuple[Any, Outcome, str | None]:
        """(the client's answer or an error for the upstream; which: `refused` for a client that cannot be asked
        or said -32600, `unreached` when nobody could be asked or the request failed on the way; and the key of
        the client asked)."""
        target = await self._target(upstream)
        if isinstance(target, str) and capability == "roots" and self._unheld(upstream):
            # Not an error: a session that holds nobody's roots has none. It is told when a client's are known
            # (`initialized` over stdio, the client's first call over HTTP: `RootsKeeper.give`).
            logger.info("upstream session %r asked for roots before a client could answer: none given yet", upstream)
            return types.ListRootsResult(roots=[]), "unreached", None
        if isinstance(target, str):
            logger.warning("%s request of upstream session %r not passed on: %s", label, upstream, target)
            error = types.ErrorData(code=types.INVALID_REQUEST, message=f"{label} not available: {target}.")
            return error, "unreached", None
        ctx, conn, client = target
        return await self.asker.ask(ctx, conn, client, request, result_type, capability, label)

    async def _log(self, key: str, params: types.LoggingMessageNotificationParams) -> None:
        """A log message of session `key`, to the client it relates to (see the module's docstring), else only to
        the operator's log."""
        upstream = self.roots.upstream(key)
        name = upstream if not params.logger else f"{upstream}/{params.logger}"
        calls = self._calls.get(key, [])
        clients = {client.key: _connection(ctx) for ctx, client in calls}
        if not clients:
            holder = self.roots.holder(key)
            if holder is not None:
                clients = {holder: self._conns.get(holder)}
            elif self.single_client:
                clients = dict(self._conns)
        if len(clients) != 1:
            why = "several clients' calls" if clients else "no client's call"
            logger.info("log of upstream %r (during %s, not passed on): %s", name, why, params.data)
            return
        conn = next(iter(clients.values()))
        if conn is None or modern(conn):  # gone, or a 2026-07-28 client: nothing carries it to them from here
            logger.info("log of upstream %r (its client cannot be sent it, not passed on): %s", name, params.data)
            return
        try:
            with handshake_era():
                await conn.log(params.level, params.data, logger=name)
        except Exception as exc:  # a client that just left must not stop the others hearing
            logger.debug("could not pass on a log message of %r: %s", upstream, exc)

    async def _tell_one(self, key: str) -> bool:
        session = dict(self._sessions()).get(key)
        return session is not None and await _tell_roots_changed(key, session)

    async def notify_clients(self, method: str) -> None:
        """A parameterless notification (a list change) to every handshake-era client connected."""
        for conn in list(self._conns.values()):
            try:
                await conn.notify(method, None)
            except Exception as exc:  # a client that just left must not stop the others hearing
                logger.debug("could not pass on %s: %s", method, exc)

    def connection(self, ctx: Context) -> Any:
        """`ctx`'s handshake-era connection (remembered), or None."""
        client = self.seen(ctx)
        return self._conns.get(client.key)


async def _tell_roots_changed(upstream: str, session: ClientSession) -> bool:
    """Send `notifications/roots/list_changed` to one upstream; False (logged) when it could not be sent."""
    try:
        with handshake_era():
            await session.send_roots_list_changed()
    except Exception as exc:  # one upstream gone must not keep the others from hearing
        logger.info("upstream %r: could not pass on a roots change: %s", upstream, exc)
        return False
    return True


@contextlib.contextmanager
def handshake_era() -> Iterator[None]:
    """Roots, sampling and logging are deprecated as of 2026-07-28 (SEP-2577); handshake-era peers use them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield
