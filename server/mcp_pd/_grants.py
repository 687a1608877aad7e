"""Which tools each session may call (spec 5.1): isolated per session, idle sessions expire."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from cachetools import TTLCache

__all__ = ["GrantStore", "MemoryGrantStore"]

_TUPLE_LIMIT = 16


@runtime_checkable
class GrantStore(Protocol):
    """Storage of authorizations; implement it over a shared store to run several replicas."""

    def grant(self, session: str, names: Iterable[str]) -> None: ...
    def allowed(self, session: str, name: str) -> bool: ...
    def forget(self, session: str) -> None: ...
    def __len__(self) -> int: ...


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
        # Tuples, not sets: a session holds a few tools, `in` on a short tuple is as quick, and a
        # tuple is a third of a set's size (100k sessions: benchmarks/README.md). A session that
        # fetches many tools gets a set, updated in place, so lookups and grants stay O(1).
        self._sessions: TTLCache[str, tuple[str, ...] | set[str]] = TTLCache(
            maxsize=max_sessions, ttl=idle_timeout, timer=timer
        )

    def grant(self, session: str, names: Iterable[str]) -> None:
        # Sys-interned names keep 100k sessions of the same tools cheap.
        names = map(sys.intern, names)
        held = self._sessions.get(session, ())
        if isinstance(held, set):
            held.update(names)
        else:
            merged = dict.fromkeys((*held, *names))
            held = tuple(merged) if len(merged) <= _TUPLE_LIMIT else set(merged)
        self._sessions[session] = held  # re-set even when nothing is new: it slides the idle timeout

    def allowed(self, session: str, name: str) -> bool:
        granted = self._sessions.get(session)
        if granted is None:
            return False
        self._sessions[session] = granted
        return name in granted

    def granted(self, session: str) -> frozenset[str]:
        return frozenset(self._sessions.get(session, ()))

    def forget(self, session: str) -> None:
        self._sessions.pop(session, None)

    def __len__(self) -> int:
        self._sessions.expire()
        return len(self._sessions)
