"""Test helpers: real servers over real transports (stdio subprocesses, uvicorn on loopback)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
# The 322 real definitions the scale, simulation and ledger tests use: ../shared/catalogs beside the
# checkout, or MCP_PD_CATALOGS (tests/conftest.py stops the run up front when neither exists).
CATALOGS = Path(os.environ.get("MCP_PD_CATALOGS") or ROOT.parent / "shared" / "catalogs")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_params(*args: str) -> StdioServerParameters:
    """`mcp-pd serve` as a stdio subprocess, run with this interpreter."""
    passed = ("PATH", "HOME", "LANG", "PYTHONPATH", "SYSTEMROOT", "MCP_PD_CACHE_DIR")
    env = {k: v for k, v in os.environ.items() if k in passed}
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_pd", "serve", *args], env=env)


# How long a server may take to start listening: it is watched the whole time (an early exit fails at once), so this
# only turns a server that hangs without listening into a clear error before pytest's own 300 s timeout. A busy
# 2-core machine (load 8 and more) starts a Python server in tens of seconds, never in a fixed 30.
START_UP: float = 240.0


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = START_UP) -> None:
    """Return once the process listens on `port` (readiness); RuntimeError at once if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited early with {proc.returncode}: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"server did not listen on {port} within {timeout}s")


@contextmanager
def http_command(argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[str]:
    """Run `argv` + a free loopback port as a subprocess until it listens; yields its /mcp URL."""
    port = free_port()
    proc = subprocess.Popen([*argv, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        _wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10, *, close_stderr: bool = True) -> None:
    """SIGTERM, then SIGKILL after `timeout` s; closes its stderr pipe (if any) so no ResourceWarning follows.

    `close_stderr=False` where a reader thread still drains the pipe: close it after joining the thread.
    """
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stderr and close_stderr:
        proc.stderr.close()


@contextmanager
def http_subprocess(*args: str) -> Iterator[str]:
    """`mcp-pd serve --transport http` as a subprocess on a free loopback port; yields the endpoint URL."""
    with http_command([sys.executable, "-m", "mcp_pd", "serve", "--transport", "http", *args, "--port"]) as url:
        yield url


@asynccontextmanager
async def http_in_process(app: Any, **http_options: Any) -> AsyncIterator[str]:
    """Serve a low-level Server's Streamable HTTP app with uvicorn inside this event loop."""
    async with serve_asgi(app.streamable_http_app(host="127.0.0.1", **http_options)) as url:
        yield url


@asynccontextmanager
async def serve_asgi(starlette_app: Any) -> AsyncIterator[str]:
    """An ASGI app with a Streamable HTTP endpoint at /mcp, served by uvicorn on a free loopback port in this loop."""
    port = free_port()
    config = uvicorn.Config(starlette_app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True
