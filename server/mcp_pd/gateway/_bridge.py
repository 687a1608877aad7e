"""What upstreams ask of clients, and what clients tell upstreams: roots, sampling, elicitation and logging.

Each upstream has one session, shared by the gateway's clients (`_pool.py`). A request an upstream sends back
(`roots/list`, `sampling/createMessage`, `elicitation/create`) is passed to the client it must be for:

- the client whose call (tool, prompt or resource read) that upstream is serving now, on that call's own stream;
- with no call in flight, the one connected client (a gateway served over stdio has exactly one);
- otherwise nobody: when two clients' calls are in flight on the same upstream, or several clients are connected
  and none is calling, the gateway cannot tell whose request it is, so it answers with an error that says so
  rather than ask (or show one user's files to) the wrong person.

Roots are state of an upstream session, so an upstream that uses them runs each call on its own client's roots:
the shared session serves one client, and each other client gets a session of its own (`_roots.py`); what such a
session asks goes to its client's calls only. A client that speaks 2026-07-28 has no back-channel:
its call is answered `input_required` with the upstream's request inside, and the upstream call waits, parked,
for the client's retry with the answer (`_rounds.py`). A client that did not declare the capability is not asked:
the upstream gets the error the SDK gives a client without the capability, with the reason. Log messages of an
upstream go to the clients its calls are for (else to every connected client), named `<upstream>` or
`<upstream>/<logger>`;
`logging/setLevel` and `notifications/roots/list_changed` go to every ready upstream, and so does a roots change
when the first client that has roots connects (an upstream started before it asked nobody).

Knows nothing about tools, grants or modes.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final, Literal, TypeAlias

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ._roots import RootsKeeper, SessionHost
from ._rounds import Rounds

__all__ = ["ClientBridge", "handshake_era"]

logger = logging.getLogger("mcp_pd.gateway")

Context: TypeAlias = ServerRequestContext[Any, Any]
Sessions: TypeAlias = Callable[[], list[tuple[str, ClientSession]]]
Outcome: TypeAlias = Literal["answered", "refused", "unreached"]
# How long an upstream's request waits for a first client to connect: an upstream started with the gateway asks
# for roots before the client that launched the gateway has finished its handshake.
FIRST_CLIENT_WAIT: Final = 10.0
REQUEST_TIMEOUT: Final = 300.0


def _connection(ctx: Context) -> Any:
    return getattr(ctx.session, "_connection", None)


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
        self._wait = first_client_wait
        self._calls: dict[str, list[Context]] = {}
        self._connections: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self._joined = anyio.Event()
        self.level: types.LoggingLevel | None = None
        # Whose roots each upstream session holds: a call runs on its own client's roots, or not at all.
        self.roots = RootsKeeper(self._tell_one, pool)
        # Told of every notification an upstream sends (resource updates, list changes), after the pool saw it.
        self.listeners: list[Callable[[str, Any], Awaitable[None]]] = []

    # -- what the gateway tells the bridge ------------------------------------------------------------
    async def call(
        self,
        upstream: str,
        ctx: Context,
        params: types.InputResponseRequestParams,
        request: tuple[str, str, Any],
        work: Callable[[str], Awaitable[Any]],
    ) -> Any:
        """`work(key)` (the upstream side of `ctx`'s request, on the session `key` of `upstream`: the shared one,
        or the client's own) run while that session serves `ctx`'s client, so what the upstream asks meanwhile
        goes to that client; for a 2026-07-28 client that can be asked, its result or `input_required`
        (`request` = method, name or URI, arguments: what a retry repeats)."""

        self.seen(ctx)
        conn = _connection(ctx)
        modern = getattr(conn, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS
        key = self._client(ctx, conn)

        async def called() -> Any:
            async with self.roots.turn(upstream, key) as session:
                with self.calling(session, ctx):
                    await self.roots.give(session, key, can_answer=_capabilities(conn).roots is not None)
                    return await work(session)

        if modern:
            wanted = _capabilities(conn)
            if wanted.roots or wanted.sampling or wanted.elicitation:
                return await self.rounds.serve(ctx, params, request, called)
        return await called()

    @contextlib.contextmanager
    def calling(self, key: str, ctx: Context) -> Iterator[None]:
        """While the block runs, the upstream session `key` is serving a call of `ctx`'s client."""
        calls = self._calls.setdefault(key, [])
        calls.append(ctx)
        try:
            yield
        finally:
            calls.remove(ctx)
            if not calls and self._calls.get(key) is calls:
                del self._calls[key]

    def seen(self, ctx: Context) -> bool:
        """Remember a handshake-era client connection; True the first time it is seen."""
        conn = _connection(ctx)
        if conn is None or conn.protocol_version in MODERN_PROTOCOL_VERSIONS or conn in self._connections:
            return False
        self._connections[conn] = anyio.current_time()
        self._joined.set()
        # Told when it closes: the sessions it held are free at once, not when the collector gets to it.
        conn.exit_stack.callback(self.roots.left, conn)
        return True

    async def initialized(self, ctx: Context, params: Any) -> None:
        """`notifications/initialized`: a client joined; if it has roots, upstreams started before it re-ask."""
        if self.seen(ctx) and _capabilities(_connection(ctx)).roots is not None:
            await self.roots_changed(ctx, None)

    async def roots_changed(self, ctx: Context, params: Any) -> None:
        """`notifications/roots/list_changed`, passed to every ready upstream session but other clients' own (each
        asks for the roots again)."""
        self.seen(ctx)
        conn = _connection(ctx)
        for key, session in self._sessions():
            owner = self.roots.owner(key)
            if owner is None or owner is conn:
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
                    await listener(self.roots.upstream(upstream), notice)
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
            self.roots.asked(upstream)
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

    async def _target(self, key: str) -> tuple[Context | None, Any] | str:
        """(the call's context or None, its connection), or why there is nobody to ask."""
        upstream = self.roots.upstream(key)
        calls = self._calls.get(key, [])
        callers = {id(_connection(c)): c for c in calls}
        if len(callers) > 1:
            return (
                f"{len(callers)} clients have calls in flight on upstream '{upstream}', which shares one session "
                "among the gateway's clients, so the gateway cannot tell whose request this is"
            )
        if callers:
            ctx = next(iter(callers.values()))
            return ctx, _connection(ctx)
        if self.roots.is_own(key):  # a session of one client's own: its client is asked during its calls, given them
            return f"upstream '{upstream}' asked outside its client's calls (its client is asked at its next call)"
        if not self._connections:
            with anyio.move_on_after(self._wait):
                await self._joined.wait()
        live = list(self._connections)
        if len(live) == 1:
            return None, live[0]
        if not live:
            return f"no client is connected to the gateway to answer upstream '{upstream}'"
        return (
            f"{len(live)} clients are connected and none is calling upstream '{upstream}', which shares one "
            "session among them, so the gateway cannot tell whose request this is"
        )

    async def _ask(self, upstream: str, request: Any, result_type: type[Any], capability: str, label: str) -> Any:
        answer, outcome, key = await self._answer(upstream, request, result_type, capability, label)
        if capability == "roots":
            self.roots.ended(upstream, key if outcome == "answered" else None)
        return answer

    async def _answer(
        self, upstream: str, request: Any, result_type: type[Any], capability: str, label: str
    ) -> tuple[Any, Outcome, object | None]:
        """(the client's answer or an error for the upstream; which: `refused` for a client that cannot be asked
        or said -32600, `unreached` when nobody could be asked or the request failed on the way; and who was
        asked: the connection, or a 2026-07-28 client's call)."""
        target = await self._target(upstream)
        if isinstance(target, str):
            error = types.ErrorData(code=types.INVALID_REQUEST, message=f"{label} not available: {target}.")
            return error, "unreached", None
        ctx, conn = target
        if getattr(_capabilities(conn), capability) is None:
            message = f"{label} not supported: the client did not declare it."
            return types.ErrorData(code=types.INVALID_REQUEST, message=message), "refused", conn
        era = getattr(conn, "protocol_version", None)
        if era in MODERN_PROTOCOL_VERSIONS:
            return (*await self._ask_in_rounds(ctx, request, result_type, capability, label), self._client(ctx, conn))
        return (*await self._send(ctx, conn, request, result_type, capability, label), conn)

    async def _send(
        self, ctx: Context | None, conn: Any, request: Any, result_type: type[Any], capability: str, label: str
    ) -> tuple[Any, Outcome]:
        """Ask a handshake-era client: on its call's own stream if the request belongs to one."""
        try:
            if ctx is not None and ctx.request_id is not None:
                # On the call's own stream: over HTTP that is the response stream of the client's request.
                metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
                sent: Awaitable[Any] = ctx.session.send_request(
                    request, result_type, request_read_timeout_seconds=REQUEST_TIMEOUT, metadata=metadata
                )
            else:
                sent = conn.send_request(request, opts={"timeout": REQUEST_TIMEOUT})
            return await sent, "answered"
        except MCPError as exc:
            return exc.error, "refused" if exc.error.code == types.INVALID_REQUEST else "unreached"
        except Exception as exc:
            logger.info("passing on a %s request to a client failed: %s", capability, exc)
            failed = types.ErrorData(code=types.INTERNAL_ERROR, message=f"{label} failed through the gateway: {exc}")
            return failed, "unreached"

    async def _ask_in_rounds(
        self, ctx: Context | None, request: Any, result_type: type[Any], capability: str, label: str
    ) -> tuple[Any, Outcome]:
        """Ask a 2026-07-28 client through its call's next `input_required` round."""
        exchange = None if ctx is None else self.rounds.exchange(ctx)
        if exchange is None:  # not inside one of its calls (a completion, say): there is no round to ask in
            message = f"{label} not available: the client speaks 2026-07-28 and is asked only during its calls."
            return types.ErrorData(code=types.INVALID_REQUEST, message=message), "unreached"
        answer = await exchange.ask(capability, request)
        if isinstance(answer, types.ErrorData):
            return answer, "refused" if answer.code == types.INVALID_REQUEST else "unreached"
        try:  # the client's answer was read as any input response: hold it to the one this request expects
            return result_type.model_validate(answer.model_dump(by_alias=True, exclude_none=True)), "answered"
        except ValidationError as exc:
            message = f"The client's answer is not a {capability} result: {exc.errors()[0]['msg']}."
            return types.ErrorData(code=types.INVALID_PARAMS, message=message), "refused"

    async def _log(self, key: str, params: types.LoggingMessageNotificationParams) -> None:
        upstream = self.roots.upstream(key)
        name = upstream if not params.logger else f"{upstream}/{params.logger}"
        calls = self._calls.get(key, [])
        conns = {id(c): c for c in (_connection(ctx) for ctx in calls) if c is not None}
        if not conns and self.roots.is_own(key):  # outside calls: a client's own session logs to that client only
            owner = self.roots.owner(key)
            conns = {id(owner): owner} if owner in self._connections else {}
        elif not conns:  # and a shared session to every client
            conns = {id(c): c for c in self._connections}
        for conn in conns.values():
            if conn.protocol_version in MODERN_PROTOCOL_VERSIONS:
                continue  # 2026-07-28 logs ride the request's own stream, by the request's opt-in
            try:
                with handshake_era():
                    await conn.log(params.level, params.data, logger=name)
            except Exception as exc:  # a client that just left must not stop the others hearing
                logger.debug("could not pass on a log message of %r: %s", upstream, exc)

    def _client(self, ctx: Context | None, conn: Any) -> object:
        """Who a client is, for whose roots an upstream holds: its connection (handshake era), else its principal
        (2026-07-28 has no connection; anonymous clients are one, as they are for grants)."""
        if conn is not None and getattr(conn, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
            return conn
        principal = None if ctx is None else self.rounds.principal(ctx)
        return f"principal:{principal or ''}"

    async def _tell_one(self, key: str) -> bool:
        session = dict(self._sessions()).get(key)
        return session is not None and await _tell_roots_changed(key, session)

    async def notify_clients(self, method: str) -> None:
        """A parameterless notification (a list change) to every handshake-era client connected."""
        for conn in list(self._connections):
            try:
                await conn.notify(method, None)
            except Exception as exc:  # a client that just left must not stop the others hearing
                logger.debug("could not pass on %s: %s", method, exc)

    def connection(self, ctx: Context) -> Any:
        """`ctx`'s handshake-era connection (remembered), or None."""
        self.seen(ctx)
        conn = _connection(ctx)
        return conn if conn in self._connections else None


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


def _capabilities(conn: Any) -> types.ClientCapabilities:
    return getattr(conn, "client_capabilities", None) or types.ClientCapabilities()
