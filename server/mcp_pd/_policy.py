"""The caller-facing policies: who may see which tools (spec 5.3, 10.2) and how often to fetch (10.3)."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cachetools import TTLCache
from mcp.server.context import ServerRequestContext

__all__ = ["Caller", "FetchLimiter", "FetchRateLimiter", "RateLimit", "ToolPermission"]


@dataclass(frozen=True)
class Caller:
    """What a permission hook knows about the request it decides on."""

    session: str | None
    protocol_version: str
    headers: Mapping[str, str] | None
    context: ServerRequestContext[Any, Any]


ToolPermission = Callable[[Caller, str], bool]
"""`permission(caller, tool_name) -> bool`: the primary authorization layer. Called once per tool
per request, so keep it cheap (precompute sets). A tool it refuses is absent from tools/list,
"not found" in the resource and unknown to tools/call."""


@dataclass(frozen=True)
class RateLimit:
    """A token bucket: `burst` reads at once, refilled at `per_second`."""

    per_second: float = 10.0
    burst: int = 60

    def __post_init__(self) -> None:
        if self.per_second <= 0 or self.burst < 1:
            raise ValueError("RateLimit needs per_second > 0 and burst >= 1")


@runtime_checkable
class FetchLimiter(Protocol):
    """Where the read budget of each session lives (spec 10.3): in this process, or shared by replicas.

    `acquire` may be a plain method (in-process, no coroutine per read) or a coroutine (a shared store such as
    Redis). It may raise `GrantStoreUnavailable` when its store cannot answer: the read is then refused
    retryably, never let through uncounted.
    """

    def acquire(self, bucket: str) -> float | Awaitable[float]:
        """Take one read from `bucket`: 0 when allowed, else the seconds to wait."""
        ...


class FetchRateLimiter:
    """Per-session token buckets for resource fetches, in this process; idle buckets are dropped."""

    def __init__(self, limit: RateLimit, timer: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._timer = timer
        idle = limit.burst / limit.per_second + 60
        self._buckets: TTLCache[str, tuple[float, float]] = TTLCache(maxsize=1_000_000, ttl=idle, timer=timer)

    def acquire(self, session: str) -> float:
        """Take one token; return 0 when allowed, else the seconds to wait."""
        now = self._timer()
        tokens, last = self._buckets.get(session, (float(self.limit.burst), now))
        tokens = min(float(self.limit.burst), tokens + (now - last) * self.limit.per_second)
        if tokens >= 1:
            self._buckets[session] = (tokens - 1, now)
            return 0.0
        self._buckets[session] = (tokens, now)
        return math.ceil((1 - tokens) / self.limit.per_second * 1000) / 1000
