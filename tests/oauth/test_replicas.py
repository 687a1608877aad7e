"""Replicas without sticky sessions: two `mcp-pd serve --stateless --redis URL --oauth-issuer ...` replicas behind a
real round-robin haproxy (Debian's package), a real Redis and the real OpenID provider. A handshake-era client is
moved from replica to replica on every request and keeps working, also once one replica is killed mid-run; its
grants never reach another person. Without `--stateless` the same client is lost to `Session not found`, which is
why a deployment that cannot route sessions must set it (docs/team.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from oauth.idptest import IdP
from oauth.test_resource_server import client, code
from pdtest import _wait_for_port, free_port, stop_process
from pdtest_redis import RedisServer, redis_server

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"
TOOL = "list_projects"


def haproxy_binary() -> str:
    """haproxy from Debian's package, installed with apt-get when missing (the tests run as root here)."""
    found = shutil.which("haproxy") or (Path("/usr/sbin/haproxy") if Path("/usr/sbin/haproxy").exists() else None)
    if found is None:
        apt = subprocess.run(["apt-get", "install", "-y", "haproxy"], capture_output=True, text=True, timeout=600)
        if apt.returncode != 0:
            raise RuntimeError(f"the replica tests need haproxy (apt-get install haproxy): {apt.stderr[-2000:]}")
        found = shutil.which("haproxy") or "/usr/sbin/haproxy"
    return str(found)


@contextmanager
def balancer(directory: Path, port: int, backends: list[int]) -> Iterator[subprocess.Popen[bytes]]:
    """haproxy on `port`, round-robin over `backends`, health-checking each every 300 ms (one failure takes it out),
    and sending a request refused at connect to the other replica (`redispatch`)."""
    servers = "\n".join(f"  server r{i} 127.0.0.1:{p} check inter 300 fall 1 rise 2" for i, p in enumerate(backends))
    config = directory / "haproxy.cfg"
    config.write_text(
        f"""global
  maxconn 512
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  retries 3
  option redispatch
  retry-on conn-failure empty-response
frontend mcp
  bind 127.0.0.1:{port}
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk
  http-check send meth GET uri /.well-known/oauth-protected-resource/mcp ver HTTP/1.1 hdr Host 127.0.0.1:{port}
{servers}
"""
    )
    proc = subprocess.Popen(
        [haproxy_binary(), "-f", str(config), "-db"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _wait_for_port(port, proc, timeout=30)
        yield proc
    finally:
        stop_process(proc)


@contextmanager
def replica(
    idp: IdP,
    redis: RedisServer,
    resource: str,
    audit: Path,
    *extra: str,
    serve: tuple[str, ...] = ("serve", "--no-watch"),
) -> Iterator[subprocess.Popen[bytes]]:
    port = free_port()
    command = [sys.executable, "-m", "mcp_pd", *serve, "--transport", "http", "--port", str(port)]
    command += ["--redis", redis.url, "--oauth-issuer", idp.issuer, "--oauth-resource", resource]
    proc = subprocess.Popen(
        [*command, "--audit", str(audit), *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _wait_for_port(port, proc)
        proc.port = port  # type: ignore[attr-defined]
        yield proc
    finally:
        stop_process(proc)


def calls_in(audit: Path, tool: str = TOOL) -> list[dict[str, Any]]:
    if not audit.exists():
        return []
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    return [r for r in records if r.get("method") == "tools/call" and r.get("tool") == tool]


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[IdP]:
    provider = IdP(tmp_path)
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()


@pytest.mark.req("PDX-REPLICA-01", "PDX-REPLICA-02")
async def test_a_handshake_client_moved_between_stateless_replicas_keeps_working(tmp_path: Path, idp: IdP) -> None:
    lb = free_port()
    url = f"http://127.0.0.1:{lb}/mcp"
    audits = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    with redis_server(tmp_path) as redis, ExitStack() as stack:
        replicas = [stack.enter_context(replica(idp, redis, url, a, "--stateless")) for a in audits]
        stack.enter_context(balancer(tmp_path, lb, [r.port for r in replicas]))  # type: ignore[attr-defined]
        alice = await idp.authorization_code("alice", resource=url)
        bob = await idp.authorization_code("bob", resource=url)
        answered = 0
        async with client(url, alice, mode="legacy") as session:  # the 2025 handshake, then round-robin
            await session.read_resource(f"{URI}?tools={TOOL}")
            for _ in range(20):
                answered += not (await session.call_tool(TOOL, {})).is_error
            assert all(calls_in(a) for a in audits), "round-robin reached both replicas"
            stop_process(replicas[0])  # one replica dies mid-run
            for _ in range(20):
                answered += not (await session.call_tool(TOOL, {})).is_error
        assert answered == 40  # nothing lost
        async with client(url, bob, mode="legacy") as session:  # nothing leaked: bob never fetched it
            assert code(await session.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
    people = {r["principal"] for a in audits for r in calls_in(a)}
    assert people == {"alice", "bob"}


@pytest.mark.req("PDX-REPLICA-01")
async def test_without_stateless_round_robin_loses_the_handshake_session(tmp_path: Path, idp: IdP) -> None:
    lb = free_port()
    url = f"http://127.0.0.1:{lb}/mcp"
    with redis_server(tmp_path) as redis, ExitStack() as stack:
        replicas = [stack.enter_context(replica(idp, redis, url, tmp_path / f"{n}.jsonl")) for n in "ab"]
        stack.enter_context(balancer(tmp_path, lb, [r.port for r in replicas]))  # type: ignore[attr-defined]
        alice = await idp.authorization_code("alice", resource=url)

        async def moved_around() -> None:
            async with client(url, alice, mode="legacy") as session:
                await session.read_resource(f"{URI}?tools={TOOL}")
                for _ in range(4):
                    await session.call_tool(TOOL, {})

        with pytest.raises(BaseException) as lost:  # noqa: PT011 - the SDK wraps it in its task groups
            await moved_around()
        assert "Session not found" in repr(lost.value) or "Session terminated" in repr(lost.value), repr(lost.value)


@pytest.mark.req("PDX-REPLICA-01", "PDX-REPLICA-02")
async def test_gateway_replicas_without_sticky_sessions(tmp_path: Path, idp: IdP) -> None:
    from gateway.gwtest import PLAIN, stdio, wait_for_no_pids, write_config

    mark = uuid.uuid4().hex
    config = write_config(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    proxy = ("proxy", "--quiet-upstreams", "--config", str(config))
    lb = free_port()
    url = f"http://127.0.0.1:{lb}/mcp"
    audits = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    with redis_server(tmp_path) as redis, ExitStack() as stack:
        replicas = [stack.enter_context(replica(idp, redis, url, a, "--stateless", serve=proxy)) for a in audits]
        stack.enter_context(balancer(tmp_path, lb, [r.port for r in replicas]))  # type: ignore[attr-defined]
        alice = await idp.authorization_code("alice", resource=url)
        bob = await idp.authorization_code("bob", resource=url)
        answered = 0
        async with client(url, alice, mode="legacy") as session:
            await session.read_resource(f"{URI}?tools=echo")
            for n in range(20):
                answered += not (await session.call_tool("echo", {"text": str(n)})).is_error
            assert all(calls_in(a, "echo") for a in audits), "round-robin reached both gateways"
            stop_process(replicas[0])
            for n in range(20):
                answered += not (await session.call_tool("echo", {"text": str(n)})).is_error
        assert answered == 40
        async with client(url, bob, mode="legacy") as session:
            assert code(await session.call_tool("echo", {"text": "x"})) == "TOOL_DESCRIPTION_REQUIRED"
    assert not wait_for_no_pids(mark)
