"""Replicas sharing one Redis, as deployed: `mcp-pd serve --transport http --redis URL --bearer-tokens FILE`
subprocesses, a real redis-server, and the real `mcp` client with a bearer token (spec/sessions.md, I-17)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import redis as redis_client
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from pdtest import http_command, http_subprocess, serve_params
from pdtest_redis import ALICE, BOB, CI, RedisServer, redis_server, token_file

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"
TOOL = "list_projects"  # read-only; its example input is {}


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


def replica_args(redis: RedisServer, tmp_path: Path, *extra: str) -> list[str]:
    return ["--redis", redis.url, "--bearer-tokens", str(token_file(tmp_path)), "--no-watch", *extra]


@asynccontextmanager
async def client(url: str, token: str | None, mode: str = "2026-07-28") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as session,  # type: ignore[arg-type]
    ):
        yield session


async def fetch(session: Client, name: str = TOOL) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((await session.read_resource(f"{URI}?tools={name}")).contents[0].text)  # type: ignore[union-attr]
    return body


def error_code(result: Any) -> str | None:
    if not result.is_error:
        return None
    return str((result.structured_content or {}).get("error", {}).get("code"))


@pytest.mark.req("PDX-PRINCIPAL-01", "PDX-PRINCIPAL-02", "PDX-PRINCIPAL-03", "PDX-REDIS-01")
async def test_two_replicas_honour_a_principals_fetch_and_refuse_other_principals(
    redis: RedisServer, tmp_path: Path
) -> None:
    args = replica_args(redis, tmp_path)
    with http_subprocess(*args) as one, http_subprocess(*args) as two:
        # The default client is not steered to the handshake when it authenticates: server/discover is answered.
        async with client(one, ALICE, mode="auto") as alice:
            assert alice.protocol_version == "2026-07-28"
            assert error_code(await alice.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
            assert TOOL in await fetch(alice)
        async with client(two, ALICE) as alice:  # another replica, no handshake, a new HTTP connection
            result = await alice.call_tool(TOOL, {})
            assert not result.is_error, result.content
            assert "projects" in (result.structured_content or json.loads(result.content[0].text))  # type: ignore[union-attr]
        for token in (BOB, CI):  # the same OAuth client with another subject; another client
            async with client(two, token) as other:
                assert error_code(await other.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
        # Bob describes through the tool on replica two; replica one honours it, for Bob only.
        async with client(two, BOB) as bob:
            described = await bob.call_tool("describe_tools", {"tools": ["get_project"]})
            assert not described.is_error
        async with client(one, BOB) as bob:
            assert not (await bob.call_tool("get_project", {"project_id": 1})).is_error
        async with client(one, ALICE) as alice:
            assert error_code(await alice.call_tool("get_project", {"project_id": 1})) == "TOOL_DESCRIPTION_REQUIRED"
        # A handshake-era session of the same principal shares its grants too: the principal is the session.
        async with client(one, ALICE, mode="legacy") as legacy:
            assert legacy.protocol_version == "2025-11-25"
            assert not (await legacy.call_tool(TOOL, {})).is_error
        keys = sorted(redis_client.Redis.from_url(redis.url, decode_responses=True).keys("mcp-pd:grants:*"))
        assert keys == [
            'mcp-pd:grants:principal:["agent-app",null,"alice"]',
            'mcp-pd:grants:principal:["agent-app",null,"bob"]',
        ]


@pytest.mark.req("PDX-PRINCIPAL-03")
async def test_a_request_without_a_valid_token_is_refused_before_mcp(redis: RedisServer, tmp_path: Path) -> None:
    with http_subprocess(*replica_args(redis, tmp_path)) as url:
        async with httpx2.AsyncClient() as http:
            for headers in ({}, {"Authorization": "Bearer not-a-known-token-at-all"}):
                response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
                assert response.status_code == 401
                assert response.headers["www-authenticate"].startswith("Bearer ")


@pytest.mark.req("PDX-REDIS-03", "PDX-REDIS-04")
async def test_redis_down_fails_closed_and_service_resumes_without_a_restart(
    redis: RedisServer, tmp_path: Path
) -> None:
    with http_subprocess(*replica_args(redis, tmp_path)) as url:
        async with client(url, ALICE) as alice:
            await fetch(alice)
            assert not (await alice.call_tool(TOOL, {})).is_error
            redis.stop()
            for _ in range(5):  # a granted tool: refused while its grant cannot be checked
                result = await alice.call_tool(TOOL, {})
                assert error_code(result) == "GRANTS_UNAVAILABLE"
                error = result.structured_content["error"]  # type: ignore[index]
                assert error["retryable"] is True
                assert f"Redis at 127.0.0.1:{redis.port} is unavailable" in error["message"]
                assert "Nothing was run" in error["message"]
            with pytest.raises(MCPError) as refused:
                await fetch(alice)
            assert refused.value.error.data["error"]["code"] == "GRANTS_UNAVAILABLE"  # type: ignore[index]
            assert refused.value.error.data["error"]["retry_after_seconds"] == 1  # type: ignore[index]
            described = await alice.call_tool("describe_tools", {"tools": [TOOL]})
            assert error_code(described) == "GRANTS_UNAVAILABLE"
            # Other principals and never-read tools are refused the same way, never let through.
            assert error_code(await alice.call_tool("get_project", {"project_id": 1})) == "GRANTS_UNAVAILABLE"
            redis.start()  # same port, empty database
            assert error_code(await alice.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
            await fetch(alice)
            assert not (await alice.call_tool(TOOL, {})).is_error


@pytest.mark.req("PDX-REDIS-01")
async def test_grants_survive_a_server_restart(redis: RedisServer, tmp_path: Path) -> None:
    args = replica_args(redis, tmp_path)
    with http_subprocess(*args) as url:
        async with client(url, ALICE) as alice:
            await fetch(alice)
    with http_subprocess(*args) as url:  # a new process: nothing in memory
        async with client(url, ALICE) as alice:
            assert not (await alice.call_tool(TOOL, {})).is_error
        async with client(url, BOB) as bob:
            assert error_code(await bob.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"


@pytest.mark.req("PDX-REDIS-02")
async def test_grants_expire_on_time_across_replicas(redis: RedisServer, tmp_path: Path) -> None:
    args = replica_args(redis, tmp_path, "--session-idle-timeout", "1.5")
    with http_subprocess(*args) as one, http_subprocess(*args) as two:
        async with client(one, ALICE) as alice:
            await fetch(alice)
        async with client(two, ALICE) as alice:
            for _ in range(3):  # calls within the idle timeout keep the grant alive
                assert not (await alice.call_tool(TOOL, {})).is_error
                await anyio.sleep(0.8)
            await anyio.sleep(2.0)
            assert error_code(await alice.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"


@pytest.mark.req("PDX-PRINCIPAL-04")
async def test_stdio_servers_sharing_redis_never_share_connection_grants(redis: RedisServer) -> None:
    args = ("--redis", redis.url, "--no-watch")
    async with (
        Client(serve_params(*args), cache=None) as first,
        Client(serve_params(*args), cache=None) as second,
    ):
        await fetch(first)
        assert not (await first.call_tool(TOOL, {})).is_error
        assert error_code(await second.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
        keys = redis_client.Redis.from_url(redis.url, decode_responses=True).keys("mcp-pd:grants:*")
        # The key names the serving process and a counter, never a memory address another process may reuse.
        assert len(keys) == 1
        assert keys[0].startswith("mcp-pd:grants:stream:")
        assert "." in keys[0]


@pytest.mark.req("PDX-REDIS-01", "PDX-PRINCIPAL-02")
async def test_gateway_replicas_share_grants_through_redis(redis: RedisServer, tmp_path: Path) -> None:
    upstream = f"ref={sys.executable} -m mcp_pd serve --no-watch"
    proxy = [sys.executable, "-m", "mcp_pd", "proxy", "--transport", "http", "--upstream-stdio", upstream]
    proxy += ["--redis", redis.url, "--bearer-tokens", str(token_file(tmp_path)), "--port"]
    with http_command(proxy) as one, http_command(proxy) as two:
        async with client(one, ALICE) as alice:
            assert TOOL in await fetch(alice)
        async with client(two, ALICE) as alice:
            assert not (await alice.call_tool(TOOL, {})).is_error
        async with client(two, BOB) as bob:
            assert error_code(await bob.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
