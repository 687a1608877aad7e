"""Grants and the fetch rate limit in Redis, so they outlive one process and are shared by replicas (issue 16).

`RedisGrantStore` keeps one hash per session (`name -> version`) whose TTL Redis enforces and every use slides;
`RedisFetchLimiter` is the spec 10.3 token bucket as one Lua script (atomic, on Redis's own clock, so replicas
share one budget per session). Both fail closed: an unreachable or slow Redis raises `GrantStoreUnavailable`
within `timeout` seconds, which the extension turns into a retryable refusal; nothing is authorized by default.
The client reconnects by itself, so service resumes when Redis does. Needs the `mcp-pd[redis]` extra.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
from collections.abc import Awaitable, Mapping
from typing import Any, Final, TypeVar

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from ._grants import GrantStoreUnavailable
from ._policy import RateLimit

__all__ = ["DEFAULT_PREFIX", "DEFAULT_TIMEOUT", "RedisFetchLimiter", "RedisGrantStore"]

logger = logging.getLogger("mcp_pd.redis")

DEFAULT_PREFIX: Final = "mcp-pd:"
# Seconds any one Redis operation may take, connecting included. Redis answers in well under a millisecond; the
# bound is for a dead or hung Redis, with room for an event loop busy with a burst of requests.
DEFAULT_TIMEOUT: Final = 2.0
# Session keys are ours (`http:<id>`, `principal:[...]`, `custom:<hook's string>`); a hook may return anything,
# so long ones are hashed to keep Redis keys bounded.
_KEY_LIMIT: Final = 200

T = TypeVar("T")

# KEYS[1] bucket; ARGV: tokens per second, burst, idle TTL (ms). Returns 0 when a token was taken, else the
# milliseconds until one is available. Redis's TIME, not each replica's clock: replicas share one bucket.
_TOKEN_BUCKET: Final = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return wait
"""


def _text(value: str | bytes) -> str:
    # A client built without decode_responses=True answers bytes.
    return value.decode() if isinstance(value, bytes) else str(value)


class _Link:
    """One Redis client shared by the grant store and the limiter: bounded calls, errors made explicit."""

    def __init__(self, client: Redis, timeout: float) -> None:
        self.client = client
        self.timeout = timeout
        kwargs = client.connection_pool.connection_kwargs
        # Where, for messages: never the password of the URL.
        self.where = (
            f"unix:{kwargs['path']}" if "path" in kwargs else f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
        )
        self.down = False

    async def call(self, action: Awaitable[T]) -> T:
        """`action`'s result, or GrantStoreUnavailable within `timeout` seconds (a dead Redis must not hang calls)."""
        try:
            async with asyncio.timeout(self.timeout):
                result = await action
        except (RedisError, OSError, TimeoutError) as exc:
            reason = (
                f"no answer within {self.timeout:g} s"
                if isinstance(exc, TimeoutError)
                else str(exc).rstrip(".") or type(exc).__name__
            )
            if not self.down:
                self.down = True
                logger.error(
                    "Redis at %s is unavailable (%s): gated calls fail closed until it returns", self.where, reason
                )
            raise GrantStoreUnavailable(f"Redis at {self.where} is unavailable: {reason}") from exc
        if self.down:
            self.down = False
            logger.warning("Redis at %s answers again: grants are served from it", self.where)
        return result


class RedisGrantStore:
    """Grants in Redis: `<prefix>grants:<session>` is a hash `name -> version`, expiring `idle_timeout` seconds
    after the session's last fetch or gated call (Redis enforces it), surviving restarts, shared by replicas.

    >>> grants = RedisGrantStore.from_url("redis://127.0.0.1:6379/0", prefix="myapp:")
    >>> ProgressiveDisclosure(grants=grants, rate_limiter=grants.fetch_limiter(RateLimit()))

    `prefix` separates deployments sharing one Redis. `timeout` bounds every operation (connect included).
    """

    def __init__(
        self,
        client: Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        idle_timeout: float = 1800.0,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if idle_timeout <= 0 or timeout <= 0:
            raise ValueError("RedisGrantStore needs idle_timeout > 0 and timeout > 0")
        self.prefix = prefix
        self.idle_ms = max(1, round(idle_timeout * 1000))
        self._link = _Link(client, timeout)
        self._forgetting: set[asyncio.Task[Any]] = set()

    @classmethod
    def from_url(
        cls, url: str, *, prefix: str = DEFAULT_PREFIX, idle_timeout: float = 1800.0, timeout: float = DEFAULT_TIMEOUT
    ) -> RedisGrantStore:
        """A store on `redis://[user:password@]host:port/db` (or `rediss://`, `unix://`); connects on first use."""
        client = Redis.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            # One immediate retry: after a Redis restart the first command on a pooled connection meets a closed
            # socket; the retry reconnects, so the first call after recovery already succeeds.
            retry=Retry(NoBackoff(), 1),
        )
        return cls(client, prefix=prefix, idle_timeout=idle_timeout, timeout=timeout)

    @property
    def where(self) -> str:
        """host:port of the Redis server (for messages and start-up lines)."""
        return self._link.where

    @property
    def client(self) -> Redis:
        return self._link.client

    def key(self, session: str) -> str:
        """The Redis key holding `session`'s grants."""
        if len(session) > _KEY_LIMIT:
            session = "sha256:" + hashlib.sha256(session.encode()).hexdigest()
        return f"{self.prefix}grants:{session}"

    async def grant(self, session: str, versions: Mapping[str, str]) -> None:
        if not versions:
            return
        key = self.key(session)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=dict[Any, Any](versions))
            pipe.pexpire(key, self.idle_ms)
            await self._link.call(pipe.execute())

    async def version(self, session: str, name: str) -> str | None:
        key = self.key(session)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hget(key, name)
            pipe.pexpire(key, self.idle_ms)  # use slides the idle timeout (a no-op on a missing key)
            version, _ = await self._link.call(pipe.execute())
        return _text(version) if version is not None else None

    async def granted(self, session: str) -> dict[str, str]:
        """Every `name -> version` the session holds (for tests and diagnostics)."""
        held = await self._link.call(self.client.hgetall(self.key(session)))
        return {_text(k): _text(v) for k, v in held.items()}

    def forget(self, session: str) -> None:
        """Delete the session's grants in the background (must not block); if Redis is down, the TTL ends them."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (interpreter shutdown): the TTL ends them
        task = loop.create_task(self._forget(session))
        self._forgetting.add(task)
        task.add_done_callback(self._forgetting.discard)

    async def _forget(self, session: str) -> None:
        try:
            await self._link.call(self.client.delete(self.key(session)))
        except GrantStoreUnavailable as exc:
            logger.debug("could not delete the grants of %s now (%s); they expire by TTL", session, exc)

    async def ping(self) -> str | None:
        """None when Redis answers, else what is wrong (for start-up lines)."""
        try:
            await self._link.call(self.client.ping())
        except GrantStoreUnavailable as exc:
            return str(exc)
        return None

    def fetch_limiter(self, limit: RateLimit) -> RedisFetchLimiter:
        """The fetch rate limiter on the same Redis client and prefix."""
        return RedisFetchLimiter(self._link, limit, prefix=self.prefix)

    async def aclose(self) -> None:
        """Close the client's connections (after the server stops)."""
        await self.client.aclose()


class RedisFetchLimiter:
    """Spec 10.3 per session in Redis: one token bucket per session, taken atomically by a Lua script, so every
    replica draws on the same budget; idle buckets expire. Built by `RedisGrantStore.fetch_limiter`."""

    def __init__(self, link: _Link, limit: RateLimit, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.limit = limit
        self.prefix = prefix
        self._link = link
        self._idle_ms = math.ceil((limit.burst / limit.per_second + 60) * 1000)
        self._script = link.client.register_script(_TOKEN_BUCKET)

    async def acquire(self, bucket: str) -> float:
        """Take one token: 0 when allowed, else the seconds to wait. GrantStoreUnavailable when Redis cannot answer."""
        if len(bucket) > _KEY_LIMIT:
            bucket = "sha256:" + hashlib.sha256(bucket.encode()).hexdigest()
        wait_ms = await self._link.call(
            self._script(
                keys=[f"{self.prefix}rate:{bucket}"],
                args=[repr(self.limit.per_second), self.limit.burst, self._idle_ms],
            )
        )
        return int(wait_ms) / 1000
