"""Whose roots an upstream holds: a call runs on its own client's folders, never on another client's.

An upstream session is shared by the gateway's clients (`_pool.py`), but roots are state of that session: a server
such as `@modelcontextprotocol/server-filesystem` allows exactly the folders of the last roots answer it got, and
applies a new answer asynchronously, so switching one session between clients' roots would let a call race the
switch. An upstream that has asked for roots is therefore bound to one client, the first that gives it roots:

- that client's calls run (together); its roots changes reach the upstream as usual;
- another client's call is refused with an error that says why (one session, shared; give the server its
  directories in the config, or run a gateway per user), never run on the holder's folders;
- when the holder has gone (its connection closed), the next client's call restarts the upstream first, so
  nothing of the old client's roots outlives it, and then gives it the new client's;
- a call whose client cannot give roots while the upstream holds a departed client's is refused too. An
  upstream no client ever gave roots runs on its own configuration.

A handshake-era client is one holder for its connection; 2026-07-28 clients, which have no connection, are one
holder per principal (bearer token), and every anonymous one is the same holder, as they are for grants.

Knows nothing about tools, grants, modes or transports.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = ["ROOTS_WAIT", "RootsKeeper"]

ROOTS_WAIT: Final = 5.0


def _ref(key: object) -> Callable[[], object | None]:
    """A reference that does not keep a client alive (a principal's name, a string, is held as it is)."""
    return (lambda: key) if isinstance(key, str) else weakref.ref(key)


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


class RootsKeeper:
    """Per upstream that uses roots: whose roots it holds, and whose calls run now (see the module's docstring)."""

    def __init__(self, tell: Callable[[str], Awaitable[bool]], restart: Callable[[str], Awaitable[None]]) -> None:
        # `tell(upstream)`: send it `notifications/roots/list_changed` (False when that could not be sent);
        # `restart(upstream)`: a new session (and process), returning once it is ready.
        self._tell = tell
        self._restart = restart
        self._users: set[str] = set()
        self._held: dict[str, Callable[[], object | None]] = {}  # upstream -> the client whose roots it got
        self._settled: dict[str, anyio.Event] = {}  # set when a roots request of that upstream ends
        self._turns: dict[str, _Turn] = {}

    def asked(self, upstream: str) -> None:
        """`upstream` sent a roots request: from now on its calls run on their own client's roots."""
        self._users.add(upstream)

    def ended(self, upstream: str, answered_by: object | None) -> None:
        """A roots request of `upstream` ended: answered by the client `answered_by`, or (None) not answered."""
        if answered_by is not None:
            self._held[upstream] = _ref(answered_by)
        settled = self._settled.pop(upstream, None)
        if settled is not None:
            settled.set()

    def holds(self, upstream: str, key: object) -> bool:
        return _is(self._held.get(upstream), key)

    @contextlib.asynccontextmanager
    async def turn(self, upstream: str, key: object) -> AsyncIterator[None]:
        """While the block runs, only `key`'s calls run on `upstream` (if it uses roots)."""
        if upstream not in self._users:
            yield
            return
        turn = self._turns.setdefault(upstream, _Turn())
        await turn.enter(key)
        try:
            yield
        finally:
            turn.leave()

    async def give(self, upstream: str, key: object, *, can_answer: bool) -> None:
        """Inside `turn` (and with the call registered, so the request reaches `key`): make `upstream` hold
        `key`'s roots. Raises MCPError when it holds, or may still hold, another client's."""
        if upstream not in self._users or self.holds(upstream, key):
            return
        held = self._held.get(upstream)
        if held is not None and held() is not None:
            raise MCPError(
                types.INVALID_REQUEST,
                f"Upstream '{upstream}' works on its client's roots and is serving another client: it has one "
                "session, shared by the gateway's clients, and roots belong to that session. Give the server its "
                "directories in the gateway's config, or run a gateway per user.",
            )
        if held is not None:  # its client has gone: a new session, so none of that client's folders outlive it
            del self._held[upstream]
            await self._restart(upstream)
        if can_answer:
            with anyio.move_on_after(ROOTS_WAIT):
                for _ in range(2):  # a second time when the first request to end was another one (or refused)
                    if self.holds(upstream, key):
                        break
                    settled = self._settled.setdefault(upstream, anyio.Event())
                    if not await self._tell(upstream):
                        break
                    await settled.wait()
        if upstream in self._held and not self.holds(upstream, key):
            why = "gave it none in time" if can_answer else "did not declare roots"
            raise MCPError(
                types.INVALID_REQUEST,
                f"Upstream '{upstream}' works on its client's roots and this client {why}, so the gateway refuses "
                "the request rather than run it on another client's folders.",
            )
