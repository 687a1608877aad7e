"""Which tool definitions each session may call (spec 5.1): isolated per session, idle sessions expire.

A grant is for the definition a session read, not only for a name (spec/interpretations.md I-12): it
records `name -> version` (the definition's content digest, spec 7.2), and a call is allowed only while
the tool's current version is the one granted. A tool that is redefined (a new schema, or a different tool
that took the name) must be described again. Knows nothing about the SDK.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from cachetools import TTLCache

__all__ = ["GrantStore", "GrantStoreUnavailable", "MemoryGrantStore"]

_TUPLE_LIMIT = 16


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
        self._sessions: TTLCache[str, tuple[tuple[str, str], ...] | dict[str, str]] = TTLCache(
            maxsize=max_sessions, ttl=idle_timeout, timer=timer
        )
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
        held = self._sessions.get(session, ())
        if isinstance(held, dict):
            held.update(versions)
        else:
            merged = dict(held)
            merged.update(versions)
            held = tuple(self._pair(n, v) for n, v in merged.items()) if len(merged) <= _TUPLE_LIMIT else merged
        self._sessions[session] = held  # re-set even when nothing is new: it slides the idle timeout

    async def version(self, session: str, name: str) -> str | None:
        return self.version_now(session, name)

    def version_now(self, session: str, name: str) -> str | None:
        """`version` without a coroutine."""
        held = self._sessions.get(session)
        if held is None:
            return None
        self._sessions[session] = held  # use slides the idle timeout
        if isinstance(held, dict):
            return held.get(name)
        for granted, version in held:
            if granted == name:
                return version
        return None

    def granted(self, session: str) -> dict[str, str]:
        """Every `name -> version` the session holds (for tests and diagnostics)."""
        return dict(self._sessions.get(session, ()))

    def forget(self, session: str) -> None:
        self._sessions.pop(session, None)

    def __len__(self) -> int:
        self._sessions.expire()
        return len(self._sessions)
