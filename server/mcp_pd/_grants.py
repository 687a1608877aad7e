"""Which tool definitions each session may call (spec 5.1): isolated per session, idle sessions expire.

A grant is for the definition a session read, not only for a name (spec/interpretations.md I-12): it
records `name -> version` (the definition's content digest, spec 7.2), and a call is allowed only while
the tool's current version is the one granted. A tool that is redefined (a new schema, or a different tool
that took the name) must be described again. Knows nothing about the SDK.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar, runtime_checkable

__all__ = ["GrantStore", "GrantStoreUnavailable", "MemoryGrantStore"]

_TUPLE_LIMIT = 16

V = TypeVar("V")


class GrantStoreUnavailable(Exception):
    """The store cannot answer now (e.g. its server is unreachable): the call must fail closed, retryably."""


@runtime_checkable
class GrantStore(Protocol):
    """Storage of authorizations; implement it over a shared store to run several replicas.

    `grant` and `version` may raise `GrantStoreUnavailable`; the extension then refuses the call with a
    retryable error and never authorizes by default.
    """

    async def grant(self, session: str, versions: Mapping[str, str]) -> None:
        """Record that `session` read these definitions (`name -> version`)."""

    async def version(self, session: str, name: str) -> str | None:
        """The version of `name` that `session` read, or None when it never read one (or it expired)."""

    def forget(self, session: str) -> None:
        """Drop every grant of `session` (its end); must not block."""


class MemoryGrantStore:
    """In-process grants with a sliding idle timeout per session.

    `max_sessions` bounds memory; past it the least recently used session loses its grants first
    (its next call is asked to fetch again: safe, never a leak).
    """

    def __init__(
        self,
        idle_timeout: float = 1800.0,
        max_sessions: int = 1_000_000,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        # A session holds a short tuple of (name, version) pairs, each pair shared by every session that read
        # that version (interned in `_pairs`), so 100k sessions of the same tools stay cheap
        # (benchmarks/README.md). A session that fetches many tools gets a dict, updated in place.
        self._sessions: _Idle[tuple[tuple[str, str], ...] | dict[str, str]] = _Idle(max_sessions, idle_timeout, timer)
        self._pairs: dict[tuple[str, str], tuple[str, str]] = {}

    def _pair(self, name: str, version: str) -> tuple[str, str]:
        key = (name, version)
        pair = self._pairs.get(key)
        if pair is None:
            if len(self._pairs) > 100_000:  # versions come and go with edits; bound the interning table
                self._pairs.clear()
            pair = self._pairs[key] = (sys.intern(name), sys.intern(version))
        return pair

    async def grant(self, session: str, versions: Mapping[str, str]) -> None:
        self.grant_now(session, versions)

    def grant_now(self, session: str, versions: Mapping[str, str]) -> None:
        """`grant` without a coroutine (benchmarks and tests that fill a store directly)."""
        held = self._sessions.get(session) or ()
        if isinstance(held, dict):
            held.update(versions)
        else:
            merged = dict(held)
            merged.update(versions)
            held = tuple(self._pair(n, v) for n, v in merged.items()) if len(merged) <= _TUPLE_LIMIT else merged
        self._sessions.set(session, held)

    async def version(self, session: str, name: str) -> str | None:
        return self.version_now(session, name)

    def version_now(self, session: str, name: str) -> str | None:
        """`version` without a coroutine."""
        held = self._sessions.get(session)  # use slides the idle timeout
        if held is None:
            return None
        if isinstance(held, dict):
            return held.get(name)
        for granted, version in held:
            if granted == name:
                return version
        return None

    def granted(self, session: str) -> dict[str, str]:
        """Every `name -> version` the session holds (for tests and diagnostics)."""
        return dict(self._sessions.peek(session) or ())

    def forget(self, session: str) -> None:
        self._sessions.pop(session)

    def __len__(self) -> int:
        return len(self._sessions)


class _Idle(Generic[V]):
    """Values by key that lapse `ttl` seconds after their last use; past `maxsize` keys, the least recently used
    goes first. (cachetools' TTLCache did this here; this costs a fraction of it per use, on every gated call.)"""

    def __init__(self, maxsize: int, ttl: float, timer: Callable[[], float]) -> None:
        self._maxsize = maxsize
        self._ttl = ttl
        self._timer = timer
        # (lapses at, value), least recently used first: with one ttl, that is also the order in which they lapse.
        self._items: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def get(self, key: str) -> V | None:
        """The value of `key`, None when it has none or it lapsed; a use, so its time to lapse starts again."""
        entry = self._items.get(key)
        if entry is None:
            return None
        now = self._timer()
        if entry[0] <= now:
            del self._items[key]
            return None
        self._items[key] = (now + self._ttl, entry[1])
        self._items.move_to_end(key)
        return entry[1]

    def peek(self, key: str) -> V | None:
        """`get` without it counting as a use."""
        entry = self._items.get(key)
        return entry[1] if entry is not None and self._timer() < entry[0] else None

    def set(self, key: str, value: V) -> None:
        now = self._timer()
        self._lapse(now)
        self._items[key] = (now + self._ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self._maxsize:
            self._items.popitem(last=False)

    def pop(self, key: str) -> None:
        self._items.pop(key, None)

    def __len__(self) -> int:
        self._lapse(self._timer())
        return len(self._items)

    def _lapse(self, now: float) -> None:
        items = self._items
        while items:
            key, (lapses, _) = next(iter(items.items()))
            if lapses > now:
                return
            del items[key]
