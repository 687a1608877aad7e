"""Sessions of one client's own (`<name>#<n>`), for `RootsKeeper` (`_roots.py`): claimed for a client's call when
another client holds the shared session, opened by the pool inside that call, and stopped once their client has gone
or they sat idle for `OWN_IDLE` seconds; with every place taken (`maxClientSessions`), the least recently used one
not serving a call is stopped for the next client.
Knows nothing about roots, turns on the shared session, tools, grants, modes or transports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import anyio

if TYPE_CHECKING:
    from ._roots import SessionHost

__all__ = ["OWN_IDLE", "Own", "OwnSessions"]

logger = logging.getLogger("mcp_pd.gateway")

OWN_IDLE: Final = 600.0  # a client's own session unused this long is stopped (its next call opens another)


@dataclass
class Own:
    """A session of one client's own."""

    upstream: str
    client: str
    key: str
    running: int = 0
    used: float = field(default_factory=time.monotonic)
    opening: bool = False
    ready: anyio.Event = field(default_factory=anyio.Event)  # set once it has started (or failed once)


class OwnSessions:
    """Clients' own sessions, by key (`by_key`, shared with the keeper), until they are stopped; `drop(key)`:
    forget everything the keeper holds of a session."""

    def __init__(self, host: SessionHost | None, drop: Callable[[str], None]) -> None:
        self._host = host
        self._drop = drop
        self.by_key: dict[str, Own] = {}
        self._opened = 0

    def of(self, upstream: str, client: str) -> Own | None:
        return next((o for o in self.by_key.values() if o.upstream == upstream and o.client == client), None)

    def room(self, upstream: str) -> bool:
        """Whether another client may get a session of its own of `upstream` (stopping an unused one if need be)."""
        limit = 0 if self._host is None else self._host.client_sessions(upstream)
        taken = [own for own in self.by_key.values() if own.upstream == upstream]
        return len(taken) < limit or (limit > 0 and any(not own.running for own in taken))

    async def claim(self, upstream: str, client: str) -> Own | None:
        """A session of `client`'s own, counted now and opened by `open` from `RootsKeeper.give` (None: there may
        be none, and `give` says why). With every place taken, the least recently used session not serving a call
        is stopped first."""
        if not self.room(upstream) or self._host is None:
            return None
        taken = [own for own in self.by_key.values() if own.upstream == upstream]
        victim = None
        if len(taken) >= self._host.client_sessions(upstream):
            victim = min((own for own in taken if not own.running), key=lambda own: own.used)
            self._drop(victim.key)
        self._opened += 1
        own = Own(upstream, client, f"{upstream}#{self._opened}", running=1)
        self.by_key[own.key] = own  # counted before any wait, so two claims never both take the last place
        sessions = self._host
        if victim is not None:
            logger.info("upstream %r: all sessions for clients taken; stopping the least recently used", upstream)
            await sessions.retire(victim.key)
        return own

    async def open(self, key: str) -> None:
        """Open the claimed session `key` unless it is open (or opening: then wait for it)."""
        own = self.by_key.get(key)
        if own is None or own.ready.is_set():
            return
        if own.opening:
            await own.ready.wait()
            return
        assert self._host is not None
        own.opening = True
        try:
            # A session that fails to start is kept: its supervisor retries, and its calls say why meanwhile.
            await self._host.spawn(own.upstream, key)
        finally:
            own.ready.set()

    async def stop_idle(self, now: float) -> None:
        """Stop those whose client has gone or that sat idle for `OWN_IDLE` seconds (the keeper's sweep)."""
        assert self._host is not None
        for key, own in list(self.by_key.items()):
            if not own.running and (not own.client or now - own.used > OWN_IDLE):
                self._drop(key)
                await self._host.retire(key)
