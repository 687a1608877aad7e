"""Whose roots an upstream holds: a call runs on its own client's folders, never on another client's.

An upstream session is shared by the gateway's clients (`_pool.py`), but roots are state of that session: a server
such as `@modelcontextprotocol/server-filesystem` allows exactly the folders of the last roots answer it got, and
applies a new answer asynchronously, so switching one session between clients' roots would let a call race the
switch. An upstream that has asked for roots is therefore bound to one client per session:

- the shared session belongs to the first client that gives it roots: that client's calls run on it (together),
  and its roots changes reach the upstream as usual;
- another client gets a session (a process) of its own, opened at its first call and given its roots then; it is
  stopped once its client has gone (the connection closed) or after `OWN_IDLE` seconds without a call. At most
  `maxClientSessions` (config, default 16) run per upstream; past that, or with 0, a call is refused with why,
  never run on another client's folders;
- when the shared session's client has gone, the next client's call restarts it first, so nothing of the old
  client's roots outlives it, and then gives it the new client's;
- a call whose client cannot give roots while the session holds a departed client's is refused too. An upstream
  no client ever gave roots runs on its own configuration.

A handshake-era client is one client for its connection; 2026-07-28 clients, which have no connection, are one
per principal (bearer token), and every anonymous one is the same client, as they are for grants.

Knows nothing about tools, grants, modes or transports.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, Protocol

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.shared.exceptions import MCPError

from ._config import SESSION_SUFFIX as _OWN_KEY  # how a client's own session's key ends: no configured name does

__all__ = ["OWN_IDLE", "ROOTS_WAIT", "RootsKeeper", "SessionHost"]

ROOTS_WAIT: Final = 5.0
ROOTS_SETTLE: Final = 0.25  # how long after a roots answer a call waits, so the upstream has applied it
OWN_IDLE: Final = 600.0  # a client's own session unused this long is stopped (its next call opens another)
SWEEP_EVERY: Final = 5.0


def _ref(key: object) -> Callable[[], object | None]:
    """A reference that does not keep a client alive (a principal's name, a string, is held as it is)."""
    return (lambda: key) if isinstance(key, str) else weakref.ref(key)


def _gone() -> None:
    """The reference of a client that has gone."""


def _is(ref: Callable[[], object | None] | None, key: object) -> bool:
    held = None if ref is None else ref()
    return held is key or (isinstance(key, str) and held == key)


class _Turn:
    """The calls running on one upstream: whose they are, and how many."""

    def __init__(self) -> None:
        self.changed = anyio.Event()
        self.holder: Callable[[], object | None] | None = None
        self.running = 0

    async def enter(self, key: object) -> None:
        while self.running and not _is(self.holder, key):
            await self.changed.wait()
        self.holder = _ref(key)
        self.running += 1

    def leave(self) -> None:
        self.running -= 1
        if not self.running:
            self.changed.set()
            self.changed = anyio.Event()


class SessionHost(Protocol):
    """What the keeper needs of the pool: sessions renewed, opened for one client, and stopped."""

    @property
    def task_group(self) -> TaskGroup | None: ...

    def client_sessions(self, upstream: str) -> int: ...

    async def renew(self, key: str) -> None: ...

    async def spawn(self, upstream: str, key: str) -> None: ...

    async def retire(self, key: str) -> None: ...


@dataclass
class _Own:
    """A session of one client's own."""

    upstream: str
    client: Callable[[], object | None]
    key: str
    running: int = 0
    used: float = field(default_factory=time.monotonic)
    opening: bool = False
    ready: anyio.Event = field(default_factory=anyio.Event)  # set once it has started (or failed once)


class RootsKeeper:
    """Per upstream that uses roots: whose roots each of its sessions holds, and whose calls run on it now (see the
    module's docstring). Sessions are named by key: an upstream's shared one by its name, a client's own by
    `<name>#<n>` (a configured name never ends so: `_config.py`)."""

    def __init__(self, tell: Callable[[str], Awaitable[bool]], sessions: SessionHost | None) -> None:
        # `tell(key)`: send that session `notifications/roots/list_changed` (False when that could not be sent).
        self._tell = tell
        self._sessions = sessions
        self._users: set[str] = set()
        self._held: dict[str, Callable[[], object | None]] = {}  # session -> the client whose roots it got
        self._settled: dict[str, anyio.Event] = {}  # set when a roots request of that session ends
        self._answered: dict[str, float] = {}  # when each session last got a client's roots
        self._turns: dict[str, _Turn] = {}
        self._own: dict[str, _Own] = {}  # clients' own sessions, by key, until they are stopped
        self._sweeping = False
        self._opened = 0

    def _live(self, key: str) -> bool:
        """Whether `key` is a shared session or a client's own not yet stopped (a late message of a stopped one
        must not bring its entries back)."""
        return key in self._own or not self.is_own(key)

    def asked(self, key: str) -> None:
        """Session `key` sent a roots request: from now on its upstream's calls run on their own client's roots."""
        if self._live(key):
            self._users.add(self.upstream(key))

    def ended(self, key: str, answered_by: object | None) -> None:
        """A roots request of session `key` ended: answered by the client `answered_by`, or (None) not answered."""
        if answered_by is not None and self._live(key):
            self._held[key] = _ref(answered_by)
            self._answered[key] = time.monotonic()
        settled = self._settled.pop(key, None)
        if settled is not None:
            settled.set()

    def started(self, key: str) -> None:
        """Session `key` is a new one (first start or a restart): it holds nobody's roots yet."""
        self._held.pop(key, None)
        self._answered.pop(key, None)

    def left(self, client: object) -> None:
        """`client` has gone (its connection closed): its own sessions stop within `SWEEP_EVERY` seconds, and the
        next client's call renews a shared session it held."""
        for key, held in list(self._held.items()):
            if _is(held, client):
                self._held[key] = _gone
        for own in self._own.values():
            if _is(own.client, client):
                own.client = _gone

    def holds(self, key: str, client: object) -> bool:
        return _is(self._held.get(key), client)

    def upstream(self, key: str) -> str:
        """The upstream a session key belongs to."""
        own = self._own.get(key)
        return own.upstream if own is not None else _OWN_KEY.sub("", key)

    def owner(self, key: str) -> object | None:
        """The client a session of its own serves (None for a shared session, or when that client has gone)."""
        own = self._own.get(key)
        return None if own is None else own.client()

    @staticmethod
    def is_own(key: str) -> bool:
        """Whether `key` names (or named) a session of one client's own."""
        return _OWN_KEY.search(key) is not None

    def forget(self, upstream: str) -> None:
        """`upstream` left the config or is restarted: nothing of its sessions' roots is kept (the pool stops its
        clients' own sessions)."""
        self._users.discard(upstream)
        for key in [upstream, *(key for key, own in self._own.items() if own.upstream == upstream)]:
            self._drop(key)

    def _drop(self, key: str) -> None:
        self._own.pop(key, None)
        for table in (self._held, self._answered, self._turns, self._settled):
            table.pop(key, None)

    @contextlib.asynccontextmanager
    async def turn(self, upstream: str, client: object) -> AsyncIterator[str]:
        """The key of the session `client`'s call runs on: while the block runs, only `client`'s calls run there.
        A session of the client's own is claimed here and opened by `give`, inside the call, so what it asks as
        it starts (its first roots request) reaches that call."""
        if upstream not in self._users:
            yield upstream
            return
        while True:
            own = self._own_of(upstream, client)
            if own is None and not self._shared_free(upstream, client):
                own = self._claim(upstream, client)
            if own is not None:
                own.running += 1
                try:
                    yield own.key
                finally:
                    own.running -= 1
                    own.used = time.monotonic()
                return
            held = self._held.get(upstream)
            if held is not None and held() is not None and not _is(held, client):
                break  # held by another client and no room for one more: `give` refuses at once, without waiting
            turn = self._turns.setdefault(upstream, _Turn())
            await turn.enter(client)
            if self._shared_free(upstream, client) or not self._room(upstream):
                try:
                    yield upstream
                finally:
                    turn.leave()
                return
            turn.leave()  # another client took the shared session while this one waited: it gets its own
        yield upstream

    def _own_of(self, upstream: str, client: object) -> _Own | None:
        return next((o for o in self._own.values() if o.upstream == upstream and _is(o.client, client)), None)

    def _shared_free(self, upstream: str, client: object) -> bool:
        """Whether `client` may use the shared session: nobody else holds it (or its holder has gone), and no
        other client's call runs there now (its first call may be giving it roots, or parked in a round)."""
        held = self._held.get(upstream)
        turn = self._turns.get(upstream)
        if turn is not None and turn.running and not _is(turn.holder, client):
            return False
        return held is None or held() is None or _is(held, client)

    def _room(self, upstream: str) -> bool:
        """Whether another client may get a session of its own of `upstream`."""
        taken = sum(own.upstream == upstream for own in self._own.values())
        return self._sessions is not None and taken < self._sessions.client_sessions(upstream)

    def _claim(self, upstream: str, client: object) -> _Own | None:
        """A session of `client`'s own, counted now and opened by `give` (None: there may be none, and `give`
        says why)."""
        if not self._room(upstream):
            return None
        self._opened += 1
        own = _Own(upstream, _ref(client), f"{upstream}#{self._opened}")
        self._own[own.key] = own
        sessions = self._sessions
        if not self._sweeping and sessions is not None and sessions.task_group is not None:
            self._sweeping = True  # from the claim on: an opening cut short is stopped too
            sessions.task_group.start_soon(self._sweep, name="clients' own upstream sessions")
        return own

    async def _opened_own(self, key: str) -> None:
        """Open the claimed session `key` unless it is open (or opening: then wait for it)."""
        own = self._own.get(key)
        if own is None or own.ready.is_set():
            return
        if own.opening:
            await own.ready.wait()
            return
        assert self._sessions is not None
        own.opening = True
        try:
            # A session that fails to start is kept: its supervisor retries, and its calls say why meanwhile.
            await self._sessions.spawn(own.upstream, key)
        finally:
            own.ready.set()

    async def _sweep(self) -> None:
        """Stop clients' own sessions whose client has gone or that sat idle for `OWN_IDLE` seconds."""
        assert self._sessions is not None
        try:
            while self._own:
                await anyio.sleep(SWEEP_EVERY)
                now = time.monotonic()
                for key, own in list(self._own.items()):
                    if not own.running and (own.client() is None or now - own.used > OWN_IDLE):
                        self._drop(key)
                        await self._sessions.retire(key)
        finally:
            self._sweeping = False

    async def give(self, key: str, client: object, *, can_answer: bool) -> None:
        """Inside `turn` (and with the call registered, so the request reaches `client`): make session `key` hold
        `client`'s roots, opening it first if it is the client's own. Raises MCPError when it holds, or may
        still hold, another client's."""
        if self.upstream(key) not in self._users:
            return
        await self._opened_own(key)
        if not self.holds(key, client):
            try:
                await self._take(key, client, can_answer)
            finally:
                self._settled.pop(key, None)
        # The upstream applies a roots answer after it has sent its next message, perhaps (the filesystem server
        # checks every folder first): a call right behind the answer could still meet the old folders.
        answered = self._answered.get(key)
        if answered is not None:
            await anyio.sleep(max(0.0, answered + ROOTS_SETTLE - time.monotonic()))

    async def _take(self, key: str, client: object, can_answer: bool) -> None:
        held = self._held.get(key)
        if held is not None and held() is not None:
            limit = 0 if self._sessions is None else self._sessions.client_sessions(self.upstream(key))
            raise MCPError(
                types.INVALID_REQUEST,
                f"Upstream '{key}' works on its client's roots and is serving another client, and "
                + (
                    f"all {limit} sessions it may open for other clients are in use (maxClientSessions)"
                    if limit
                    else "its config allows no session per client (maxClientSessions is 0)"
                )
                + ". Try again later, give the server its directories in the gateway's config, or raise "
                "maxClientSessions.",
            )
        if held is not None:  # its client has gone: a new session, so none of that client's folders outlive it
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
