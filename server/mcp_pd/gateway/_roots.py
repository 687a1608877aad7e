"""Whose upstream session a call runs on: a call runs on its own client's roots, and what an upstream asks during
a call reaches that call's client, never another's.

An upstream session is shared by the gateway's clients (`_pool.py`) until the upstream asks its client something.
From then on the upstream is *bound*: each of its sessions serves one client's calls at a time, so whatever it
asks (roots, sampling, elicitation) or logs has exactly one client it can be for. Roots are more: they are state
of the session (a server such as `@modelcontextprotocol/server-filesystem` allows exactly the folders of the
last roots answer it got, and applies a new answer asynchronously), so an upstream that asks for roots keeps one
client per session for good:

- the shared session belongs to the first client that gives it roots: that client's calls run on it (together),
  and its roots changes reach the upstream as usual (`stale`: its next call gives them again if the upstream
  could not ask in between);
- another client gets a session (a process) of its own, opened at its first call and given its roots then; it is
  stopped once its client has gone (the connection closed), after `OWN_IDLE` seconds without a call, or, when
  another client needs a session and `maxClientSessions` (config, default 16) are taken, the least recently used
  one that is not serving a call is stopped for it (fair shares: one session per client per upstream, and an idle
  one never locks a working client out). With none to be had, a call is refused with why, never run on another
  client's folders;
- when the shared session's client has gone, or has been silent for the idle timeout while another client needs
  the session, the next client's call restarts it first, so nothing of the old client's roots outlives it;
- a call whose client cannot give roots while the session holds another client's is refused too. An upstream no
  client ever gave roots runs on its own configuration.

An upstream bound only by sampling or elicitation holds nothing of a client between calls: another client's call
gets a session of its own while a call (running, or parked waiting for its client's input) holds the shared one,
and with none to be had it shares the session (what the upstream asks while two clients' calls overlap is refused
as unattributable, `_bridge.py`): a parked call never holds another client up.

Clients are `ClientId`s (`mcp_pd._sessions`): a handshake session, an authenticated principal, or an anonymous
sessionless request alone. A request alone never gets a session of its own (that would be a process per request)
and never gives roots: on an upstream that uses roots it runs only on a session that holds nobody's.

Knows nothing about tools, grants, modes or transports.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Final, Protocol

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.shared.exceptions import MCPError

from mcp_pd._sessions import ClientId

from ._config import SESSION_SUFFIX as _OWN_KEY  # how a client's own session's key ends: no configured name does
from ._own_sessions import OWN_IDLE, OwnSessions

__all__ = ["CLIENT_IDLE", "OWN_IDLE", "ROOTS_WAIT", "RootsKeeper", "SessionHost"]

logger = logging.getLogger("mcp_pd.gateway")

ROOTS_WAIT: Final = 5.0
ROOTS_SETTLE: Final = 0.25  # how long after a roots answer a call waits, so the upstream has applied it
CLIENT_IDLE: Final = 1800.0  # a client silent this long counts as gone when another needs its session
SWEEP_EVERY: Final = 5.0
GONE: Final = ""  # the client of a session whose client has gone


class _Turn:
    """The calls running on one shared session now, by client."""

    def __init__(self) -> None:
        self.changed = anyio.Event()
        self.clients: Counter[str] = Counter()

    def others(self, client: str) -> bool:
        """Whether a call of another client runs there now."""
        return any(other != client for other in self.clients)

    async def enter(self, client: str) -> None:
        """Join once no other client's call runs there."""
        while self.others(client):
            await self.changed.wait()
        self.join(client)

    def join(self, client: str) -> None:
        self.clients[client] += 1

    def leave(self, client: str) -> None:
        self.clients[client] -= 1
        if not self.clients[client]:
            del self.clients[client]
            self.changed.set()
            self.changed = anyio.Event()


@contextlib.contextmanager
def _joined(turn: _Turn, client: str, *, entered: bool = False) -> Iterator[None]:
    """Count `client`'s call on `turn` while the block runs (`entered`: `enter` has counted it already)."""
    if not entered:
        turn.join(client)
    try:
        yield
    finally:
        turn.leave(client)


class SessionHost(Protocol):
    """What the keeper needs of the pool: sessions renewed, opened for one client, and stopped."""

    @property
    def task_group(self) -> TaskGroup | None: ...

    def client_sessions(self, upstream: str) -> int: ...

    async def renew(self, key: str) -> None: ...

    async def spawn(self, upstream: str, key: str) -> None: ...

    async def retire(self, key: str) -> None: ...


class RootsKeeper:
    """Per bound upstream: which client each of its sessions serves and whose roots it holds (see the module's
    docstring). Sessions are named by key: an upstream's shared one by its name, a client's own by `<name>#<n>` (a
    configured name never ends so: `_config.py`); clients by their `ClientId.key`."""

    def __init__(
        self, tell: Callable[[str], Awaitable[bool]], sessions: SessionHost | None, *, idle: float = CLIENT_IDLE
    ) -> None:
        # `tell(key)`: send that session `notifications/roots/list_changed` (False when that could not be sent).
        self._tell = tell
        self._sessions = sessions
        self.idle = idle
        self._users: set[str] = set()  # upstreams that asked for roots
        self._bound: set[str] = set()  # upstreams that asked their client anything (roots among them)
        self._held: dict[str, str] = {}  # session -> the client whose roots it got (GONE: that client has gone)
        self._stale: set[str] = set()  # sessions whose client said its roots changed since it gave them
        self._settled: dict[str, anyio.Event] = {}  # set when a roots request of that session ends
        self._answered: dict[str, float] = {}  # when each session last got a client's roots
        self._turns: dict[str, _Turn] = {}
        self._owns = OwnSessions(sessions, self._drop)
        self._own = self._owns.by_key  # clients' own sessions, by key, until they are stopped
        self._seen: dict[str, float] = {}  # client -> when its last call on a bound upstream began or ended
        self._active: Counter[str] = Counter()  # client -> its calls running on bound upstreams now
        self._sweeping = False

    def _live(self, key: str) -> bool:
        """Whether `key` is a shared session or a client's own not yet stopped (a late message of a stopped one
        must not bring its entries back)."""
        return key in self._own or not self.is_own(key)

    def asked(self, key: str, capability: str = "roots") -> None:
        """Session `key` sent a request for `capability`: from now on its upstream is bound (and, for roots, its
        calls run on their own client's roots)."""
        if self._live(key):
            self._bound.add(self.upstream(key))
            if capability == "roots":
                self._users.add(self.upstream(key))

    def bound(self, upstream: str) -> bool:
        """Whether `upstream` has asked its clients anything (each session then serves one client at a time)."""
        return upstream in self._bound

    def uses_roots(self, upstream: str) -> bool:
        return upstream in self._users

    def ended(self, key: str, answered_by: str | None) -> None:
        """A roots request of session `key` ended: answered by the client `answered_by`, or (None) not answered."""
        if answered_by is not None and self._live(key):
            self._held[key] = answered_by
            self._answered[key] = time.monotonic()
            self._seen[answered_by] = time.monotonic()  # so its silence is measured from here (idle counts as gone)
            self._stale.discard(key)
        settled = self._settled.pop(key, None)
        if settled is not None:
            settled.set()

    def started(self, key: str) -> None:
        """Session `key` is a new one (first start or a restart): it holds nobody's roots yet."""
        self._held.pop(key, None)
        self._answered.pop(key, None)
        self._stale.discard(key)

    def left(self, client: str) -> None:
        """`client` has gone (its connection closed): its own sessions stop within `SWEEP_EVERY` seconds, and the
        next client's call renews a shared session it held."""
        for key, held in list(self._held.items()):
            if held == client:
                self._held[key] = GONE
        for own in self._own.values():
            if own.client == client:
                own.client = GONE
        self._seen.pop(client, None)

    def changed(self, client: str) -> list[str]:
        """`client` said its roots changed: the sessions holding its roots (each to be told, and each given them
        again before its next call if the upstream did not ask in between)."""
        keys = [key for key, held in self._held.items() if held == client]
        self._stale.update(keys)
        return keys

    def holds(self, key: str, client: str) -> bool:
        return bool(client) and self._held.get(key) == client and key not in self._stale

    def holder(self, key: str) -> str | None:
        """The one client session `key` serves outside calls: a client's own session's client, or whose roots a
        shared session holds (None: nobody, or its client has gone)."""
        own = self._own.get(key)
        client = own.client if own is not None else self._held.get(key)
        return client or None

    def upstream(self, key: str) -> str:
        """The upstream a session key belongs to."""
        own = self._own.get(key)
        return own.upstream if own is not None else _OWN_KEY.sub("", key)

    def owner(self, key: str) -> str | None:
        """The client a session of its own serves (None for a shared session, or when that client has gone)."""
        own = self._own.get(key)
        return None if own is None else own.client or None

    @staticmethod
    def is_own(key: str) -> bool:
        """Whether `key` names (or named) a session of one client's own."""
        return _OWN_KEY.search(key) is not None

    def forget(self, upstream: str) -> None:
        """`upstream` left the config or is restarted: nothing of its sessions' roots is kept (the pool stops its
        clients' own sessions)."""
        self._users.discard(upstream)
        self._bound.discard(upstream)
        for key in [upstream, *(key for key, own in self._own.items() if own.upstream == upstream)]:
            self._drop(key)

    def _drop(self, key: str) -> None:
        self._own.pop(key, None)
        self._stale.discard(key)
        for table in (self._held, self._answered, self._turns, self._settled):
            table.pop(key, None)

    def _alive(self, client: str) -> bool:
        """Whether `client` still counts: not gone, and calling now or heard from within the idle timeout."""
        if not client:
            return False
        seen = self._seen.get(client)
        return self._active[client] > 0 or seen is None or time.monotonic() - seen < self.idle

    @contextlib.asynccontextmanager
    async def turn(self, upstream: str, client: ClientId) -> AsyncIterator[str]:
        """The key of the session `client`'s call runs on: while the block runs, only `client`'s calls run there
        (on a bound upstream). A session of the client's own is claimed here and opened by `give`, inside the
        call, so what it asks as it starts (its first roots request) reaches that call."""
        if upstream not in self._bound:  # counted all the same: once it asks, the calls already running count
            with _joined(self._turns.setdefault(upstream, _Turn()), client.key):
                yield upstream
            return
        who = client.key
        self._active[who] += 1
        self._seen[who] = time.monotonic()
        self._start_sweep()  # forgets, in time, the clients it remembers here
        try:
            async with self._turn(upstream, client) as key:
                yield key
        finally:
            self._active[who] -= 1
            if not self._active[who]:
                del self._active[who]
            if client.lasting:
                self._seen[who] = time.monotonic()
            else:  # a request alone: nothing to remember it by
                self._seen.pop(who, None)

    def _holds_any(self, client: str) -> bool:
        return client in self._held.values() or any(own.client == client for own in self._own.values())

    @contextlib.asynccontextmanager
    async def _turn(self, upstream: str, client: ClientId) -> AsyncIterator[str]:
        who = client.key
        if not client.lasting:  # a request alone: the shared session or nothing, and never a wait behind another
            if upstream in self._users and not self._shared_free(upstream, who):
                raise MCPError(
                    types.INVALID_REQUEST,
                    f"Upstream '{upstream}' works on each client's roots and is serving another client now, and a "
                    "request without a session or credential is never given a session of its own. Retry, send a "
                    "bearer token (--bearer-tokens) or open a session (the 2025 handshake).",
                )
            with _joined(self._turns.setdefault(upstream, _Turn()), who):
                yield upstream
            return
        while True:
            own = self._owns.of(upstream, who)
            if own is not None:
                own.running += 1
            elif not self._shared_free(upstream, who):
                own = await self._owns.claim(upstream, who)  # counted as running from its claim: never another's victim
                if own is not None:
                    self._start_sweep()  # from the claim on: an opening cut short is stopped too
            if own is not None:
                try:
                    yield own.key
                finally:
                    own.running -= 1
                    own.used = time.monotonic()
                return
            turn = self._turns.setdefault(upstream, _Turn())
            if upstream not in self._users and not self._shared_free(upstream, who):
                # Nothing of a client is kept there, and no session of its own to be had: the call shares the
                # session rather than wait behind another client's (perhaps parked) call.
                with _joined(turn, who):
                    yield upstream
                return
            held = self._held.get(upstream)
            if held and self._alive(held) and held != who:
                break  # held by another client and no room for one more: `give` refuses at once, without waiting
            if turn.others(who):  # another client's call (perhaps parked for minutes) and no room: never wait on it
                raise MCPError(
                    types.INVALID_REQUEST,
                    f"Upstream '{upstream}' works on each client's roots and is serving another client's call now, "
                    "and no session of this client's own can be opened (maxClientSessions). Try again shortly, or "
                    "raise maxClientSessions.",
                )
            await turn.enter(who)
            if self._shared_free(upstream, who) or not self._owns.room(upstream):
                with _joined(turn, who, entered=True):
                    yield upstream
                return
            turn.leave(who)  # another client took the shared session while this one waited: it gets its own
        with _joined(self._turns.setdefault(upstream, _Turn()), who):
            yield upstream

    def _shared_free(self, upstream: str, client: str) -> bool:
        """Whether `client` may use the shared session: nobody else holds it (or its holder has gone or fell
        silent), and no other client's call runs there now (its first call may be giving it roots, or parked)."""
        held = self._held.get(upstream)
        turn = self._turns.get(upstream)
        if turn is not None and turn.others(client):
            return False
        return held is None or held == client or not self._alive(held)

    def _start_sweep(self) -> None:
        if not self._sweeping and (sessions := self._sessions) is not None and sessions.task_group is not None:
            self._sweeping = True
            sessions.task_group.start_soon(self._sweep, name="clients' own upstream sessions")

    async def _sweep(self) -> None:
        """Stop clients' own sessions whose client has gone or that sat idle for `OWN_IDLE` seconds."""
        assert self._sessions is not None
        try:
            while self._own or self._seen:
                await anyio.sleep(SWEEP_EVERY)
                now = time.monotonic()
                await self._owns.stop_idle(now)
                for client, seen in list(self._seen.items()):  # forget clients that hold nothing any more
                    if now - seen > self.idle and not self._active[client] and not self._holds_any(client):
                        del self._seen[client]
        finally:
            self._sweeping = False

    async def give(self, key: str, client: ClientId, *, can_answer: bool) -> None:
        """Inside `turn` (and with the call registered, so the request reaches `client`): open session `key` if
        it is the client's own, and make it hold `client`'s roots if its upstream uses them. Raises MCPError when
        it holds, or may still hold, another client's."""
        await self._owns.open(key)
        if self.upstream(key) not in self._users:
            return
        if not client.lasting:
            if can_answer:
                raise MCPError(
                    types.INVALID_REQUEST,
                    f"Upstream '{self.upstream(key)}' works on each client's roots, and this request has no session "
                    "or credential to tell its client by: the gateway would need a new upstream process for every "
                    "such request. Send a bearer token (--bearer-tokens) or open a session (the 2025 handshake).",
                )
            can_answer = False
        if not self.holds(key, client.key):
            try:
                await self._take(key, client.key, can_answer)
            finally:
                self._settled.pop(key, None)
        # The upstream applies a roots answer after it has sent its next message, perhaps (the filesystem server
        # checks every folder first): a call right behind the answer could still meet the old folders.
        answered = self._answered.get(key)
        if answered is not None:
            await anyio.sleep(max(0.0, answered + ROOTS_SETTLE - time.monotonic()))

    async def _take(self, key: str, client: str, can_answer: bool) -> None:
        held = self._held.get(key)
        if held and held != client and self._alive(held):
            limit = 0 if self._sessions is None else self._sessions.client_sessions(self.upstream(key))
            raise MCPError(
                types.INVALID_REQUEST,
                f"Upstream '{self.upstream(key)}' works on its client's roots and is serving another client, and "
                + (
                    f"all {limit} sessions it may open for other clients are serving calls (maxClientSessions)"
                    if limit
                    else "its config allows no session per client (maxClientSessions is 0)"
                )
                + ". Try again later, give the server its directories in the gateway's config, or raise "
                "maxClientSessions.",
            )
        if held is not None and held != client:  # its client has gone: a new session, so none of its folders outlive it
            del self._held[key]
            if self._sessions is None:
                raise MCPError(types.INTERNAL_ERROR, f"Upstream '{key}' cannot be restarted here.")
            await self._sessions.renew(key)
        if can_answer:
            with anyio.move_on_after(ROOTS_WAIT):
                for _ in range(2):  # a second time when the first request to end was another one (or refused)
                    if self.holds(key, client):
                        break
                    settled = self._settled.setdefault(key, anyio.Event())
                    if not await self._tell(key):
                        break
                    await settled.wait()
        if key in self._held and not self.holds(key, client):
            why = "gave it none in time" if can_answer else "did not declare roots"
            raise MCPError(
                types.INVALID_REQUEST,
                f"Upstream '{self.upstream(key)}' works on its client's roots and this client {why}, so the "
                "gateway refuses the request rather than run it on another client's folders.",
            )
