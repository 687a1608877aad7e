"""RedisGrantStore and RedisFetchLimiter against a real redis-server (tests/pdtest_redis.py): grants shared by
store instances, TTLs Redis enforces, fail-closed within a bounded time, recovery without a new store."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp_pd import GrantStoreUnavailable, RateLimit
from mcp_pd._redis import RedisGrantStore
from pdtest import free_port
from pdtest_redis import RedisServer, redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


@pytest.mark.req("PDX-REDIS-01", "PDX-REDIS-06")
async def test_grants_are_shared_by_stores_on_one_redis_and_separated_by_prefix(redis: RedisServer) -> None:
    one = RedisGrantStore.from_url(redis.url, prefix="app:")
    two = RedisGrantStore.from_url(redis.url, prefix="app:")
    other = RedisGrantStore.from_url(redis.url, prefix="other-app:")
    try:
        await one.grant("principal:alice", {"add": "sha256:aaaa", "delete_file": "sha256:bbbb"})
        assert await two.version("principal:alice", "add") == "sha256:aaaa"
        assert await two.granted("principal:alice") == {"add": "sha256:aaaa", "delete_file": "sha256:bbbb"}
        assert await two.version("principal:bob", "add") is None
        assert await two.version("principal:alice", "never_read") is None
        assert await other.version("principal:alice", "add") is None
        await two.grant("principal:alice", {"add": "sha256:cccc"})  # a newer definition read replaces the old
        assert await one.version("principal:alice", "add") == "sha256:cccc"
        assert await redis_keys(one) == ["app:grants:principal:alice"]
    finally:
        for store in (one, two, other):
            await store.aclose()


async def redis_keys(store: RedisGrantStore) -> list[str]:
    return sorted(await store.client.keys("*"))


@pytest.mark.req("PDX-REDIS-02")
async def test_ttl_is_enforced_by_redis_and_slides_on_use(redis: RedisServer) -> None:
    store = RedisGrantStore.from_url(redis.url, idle_timeout=1.0)
    try:
        await store.grant("s", {"add": "v1"})
        key = store.key("s")
        assert 0 < await store.client.pttl(key) <= 1000
        await anyio.sleep(0.6)
        assert await store.version("s", "add") == "v1"  # a gated call slides the expiry ...
        assert await store.client.pttl(key) > 700
        await anyio.sleep(0.6)
        assert await store.version("s", "add") == "v1"  # ... so 1.2 s after the grant it is still there
        await anyio.sleep(1.3)
        assert await store.client.exists(key) == 0  # Redis itself removed it: no process has to be alive
        assert await store.version("s", "add") is None
    finally:
        await store.aclose()


@pytest.mark.req("PDX-REDIS-02")
async def test_forget_deletes_in_the_background_and_long_keys_are_bounded(redis: RedisServer) -> None:
    store = RedisGrantStore.from_url(redis.url)
    try:
        long_session = "custom:" + "x" * 5000
        await store.grant(long_session, {"add": "v1"})
        assert await store.version(long_session, "add") == "v1"
        assert len(store.key(long_session)) < 100
        await store.grant("http:abc", {"add": "v1"})
        store.forget("http:abc")  # must not block: the deletion runs as a task
        with anyio.fail_after(5):
            while await store.client.exists(store.key("http:abc")):
                await anyio.sleep(0.01)
        assert await store.version("http:abc", "add") is None
        assert await store.version(long_session, "add") == "v1"
    finally:
        await store.aclose()


@pytest.mark.req("PDX-REDIS-03")
async def test_unreachable_redis_fails_closed_with_a_clear_error() -> None:
    port = free_port()  # nothing listens there
    store = RedisGrantStore.from_url(f"redis://127.0.0.1:{port}/0")
    limiter = store.fetch_limiter(RateLimit())
    try:
        with pytest.raises(GrantStoreUnavailable, match=rf"Redis at 127\.0\.0\.1:{port} is unavailable: .*"):
            await store.version("s", "add")
        with pytest.raises(GrantStoreUnavailable):
            await store.grant("s", {"add": "v1"})
        with pytest.raises(GrantStoreUnavailable):
            await limiter.acquire("s")
        assert await store.ping() is not None
    finally:
        await store.aclose()


@pytest.mark.req("PDX-REDIS-03")
async def test_a_redis_that_never_answers_cannot_hang_a_call() -> None:
    # A peer that accepts connections and then says nothing (a hung server, a black-holing proxy).
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    store = RedisGrantStore.from_url(f"redis://127.0.0.1:{port}/0", timeout=0.5)
    try:
        with anyio.fail_after(10):  # a bound on hanging, not a speed goal: the store's own timeout is 0.5 s
            with pytest.raises(GrantStoreUnavailable, match=r"no answer within 0\.5 s|Timeout"):
                await store.version("s", "add")
            with pytest.raises(GrantStoreUnavailable):
                await store.fetch_limiter(RateLimit()).acquire("s")
        assert accepted, "the store never reached the silent peer"
    finally:
        await store.aclose()
        stop.set()
        thread.join()
        listener.close()
        for conn in accepted:
            conn.close()


@pytest.mark.req("PDX-REDIS-04")
async def test_the_same_store_recovers_when_redis_returns(redis: RedisServer) -> None:
    store = RedisGrantStore.from_url(redis.url)
    try:
        await store.grant("s", {"add": "v1"})
        redis.stop()
        for _ in range(3):
            with pytest.raises(GrantStoreUnavailable):
                await store.version("s", "add")
        redis.start()  # the same port; an empty database (no persistence in the tests)
        assert await store.version("s", "add") is None  # never authorized by default: the grant is gone
        await store.grant("s", {"add": "v2"})
        assert await store.version("s", "add") == "v2"
    finally:
        await store.aclose()


@pytest.mark.req("PDX-REDIS-05")
async def test_fetch_limit_is_one_atomic_budget_across_replicas(redis: RedisServer) -> None:
    limit = RateLimit(per_second=0.01, burst=10)
    replicas = [RedisGrantStore.from_url(redis.url) for _ in range(2)]
    limiters = [store.fetch_limiter(limit) for store in replicas]
    waits: list[float] = []

    async def take(index: int) -> None:
        waits.append(await limiters[index % 2].acquire("principal:alice"))

    try:
        async with anyio.create_task_group() as tg:
            for i in range(40):
                tg.start_soon(take, i)
        assert sorted(waits)[:10] == [0.0] * 10
        refused = [w for w in waits if w > 0]
        assert len(refused) == 30, waits  # exactly the burst got through, however the replicas interleaved
        assert all(0 < w <= 100 for w in refused)  # one token per 100 s at 0.01/s
        assert await limiters[1].acquire("principal:bob") == 0  # another session has its own budget
    finally:
        for store in replicas:
            await store.aclose()


@pytest.mark.req("PDX-REDIS-05")
async def test_fetch_limit_refills_on_redis_clock(redis: RedisServer) -> None:
    store = RedisGrantStore.from_url(redis.url)
    limiter = store.fetch_limiter(RateLimit(per_second=20, burst=2))
    try:
        assert [await limiter.acquire("s") for _ in range(2)] == [0, 0]
        wait = await limiter.acquire("s")
        assert 0 < wait <= 0.05
        await anyio.sleep(0.12)  # two tokens' worth at 20/s
        assert await limiter.acquire("s") == 0
        ttl = await store.client.pttl("mcp-pd:rate:s")
        assert 0 < ttl <= (2 / 20 + 60) * 1000  # idle buckets expire
    finally:
        await store.aclose()


@pytest.mark.req("PDX-REDIS-01")
async def test_a_store_on_a_client_of_ones_own_answers_text(redis: RedisServer) -> None:
    from redis.asyncio import Redis

    store = RedisGrantStore(Redis.from_url(redis.url), prefix="own:")  # no decode_responses: Redis answers bytes
    try:
        await store.grant("s", {"add": "v1"})
        assert await store.version("s", "add") == "v1"
        assert await store.granted("s") == {"add": "v1"}
    finally:
        await store.aclose()
