"""Helpers for the gateway tests: pinned npm reference servers, real upstream configs, process accounting."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PLAIN = HERE / "plain_server.py"
GARBAGE = HERE / "garbage_server.py"
# Installed into the checkout (tests/gateway/.gitignore covers it), once, by the first test that needs them.
NPM_DIR = Path(os.environ.get("MCP_PD_NPM_CACHE") or HERE / ".npm")
PINNED = {
    "memory": ("@modelcontextprotocol/server-memory", "2026.8.31"),
    "everything": ("@modelcontextprotocol/server-everything", "2026.8.31"),
    "filesystem": ("@modelcontextprotocol/server-filesystem", "2026.8.31"),
    # The official conformance harness (0.1.14 and later need node 22's fs.globSync; this machine has node 20).
    "conformance": ("@modelcontextprotocol/conformance", "0.1.13"),
}
MARK = "MCP_PD_GATEWAY_TEST_MARK"


def _entry(package: str) -> Path:
    return NPM_DIR / "node_modules" / package / "dist" / "index.js"


def _installed(package: str, version: str) -> bool:
    manifest = NPM_DIR / "node_modules" / package / "package.json"
    try:
        return json.loads(manifest.read_text())["version"] == version and _entry(package).is_file()
    except (OSError, ValueError, KeyError):
        return False


def npm_servers() -> dict[str, Path]:
    """{name: path of its dist/index.js}, installing the pinned versions with npm first if needed."""
    if all(_installed(p, v) for p, v in PINNED.values()):
        return {name: _entry(p) for name, (p, _) in PINNED.items()}
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("the gateway tests need node 20+ and npm on PATH (to install the MCP reference servers)")
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    with open(NPM_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test runs install once
        if not all(_installed(p, v) for p, v in PINNED.values()):
            (NPM_DIR / "package.json").write_text(
                json.dumps({"private": True, "dependencies": {p: v for p, v in PINNED.values()}}, indent=2)
            )
            done = subprocess.run(
                [npm, "install", "--prefix", str(NPM_DIR), "--no-audit", "--no-fund", "--loglevel=error"],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0:
                raise RuntimeError(f"npm install of the reference servers failed:\n{done.stderr[-3000:]}")
    return {name: _entry(p) for name, (p, _) in PINNED.items()}


def marked_pids(mark: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries our mark: every upstream and its descendants."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if needle not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(int(entry))
    return found


def wait_for_no_pids(mark: str, timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := marked_pids(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def stdio(command: str, *args: str, mark: str, env: Mapping[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"command": command, "args": list(args), "env": {MARK: mark, **(env or {})}, **extra}


def write_config(path: Path, servers: Mapping[str, Mapping[str, Any]]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}


def gateway_params(*args: str) -> StdioServerParameters:
    """`mcp-pd proxy ARGS` as a stdio subprocess, run with this interpreter."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_pd", "proxy", "--quiet-upstreams", *args], env=_env()
    )


def direct_params(server: Mapping[str, Any]) -> StdioServerParameters:
    """The same upstream, for a client that talks to it without the gateway."""
    return StdioServerParameters(
        command=server["command"], args=server.get("args", []), env={**_env(), **server.get("env", {})}
    )


@asynccontextmanager
async def connect(params: StdioServerParameters | str, **options: Any) -> AsyncIterator[Client]:
    async with Client(params, mode="legacy", cache=None, **options) as client:
        yield client


def error_of(result: Any) -> dict[str, Any]:
    """The error document of a tool-error result (the gateway's and the library's are structured)."""
    assert result.is_error, result
    document = result.structured_content or json.loads(result.content[0].text)
    error = document["error"]
    assert isinstance(error, dict)
    return error


async def describe(client: Client, *names: str) -> dict[str, Any]:
    result = await client.call_tool("describe_tools", {"tools": list(names)})
    assert not result.is_error, result
    document = json.loads(result.content[0].text)
    assert all("inputSchema" in document[n] for n in names), document
    return document


async def eventually(check: Callable[[], Awaitable[Any]], what: str = "the condition", timeout: float = 20.0) -> Any:
    """The first truthy value `check()` gives, polled every 0.1 s; AssertionError naming `what` after `timeout`."""
    with anyio.move_on_after(timeout):
        while True:
            value = await check()
            if value:
                return value
            await anyio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


# Bearer tokens for `mcp-pd proxy --bearer-tokens`: each names a principal (one client of the gateway).
TOKENS: dict[str, dict[str, Any]] = {
    "alice-gw-token-0123456789": {"client_id": "agent-app", "subject": "alice"},
    "bob-gw-token-0123456789ab": {"client_id": "agent-app", "subject": "bob"},
}
ALICE_TOKEN, BOB_TOKEN = TOKENS


def token_file(directory: Path) -> Path:
    path = directory / "tokens.json"
    path.write_text(json.dumps(TOKENS))
    return path


@asynccontextmanager
async def http_gateway(config: Path, log: Path, *extra: str) -> AsyncIterator[str]:
    """`mcp-pd proxy --transport http` on a free loopback port (stderr to `log`); its /mcp URL once it listens."""
    from pdtest import _wait_for_port, free_port, stop_process

    port = free_port()
    params = gateway_params("--config", str(config), "--transport", "http", "--port", str(port), *extra)
    with log.open("wb") as err:
        proc = subprocess.Popen([params.command, *params.args], stdout=subprocess.DEVNULL, stderr=err, env=params.env)
        try:
            _wait_for_port(port, proc)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop_process(proc)


@asynccontextmanager
async def http_client(url: str, token: str | None = None, **options: Any) -> AsyncIterator[Client]:
    """A client of `url` sending `Authorization: Bearer <token>` when given (options: the Client's own)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    if token is None:
        async with Client(url, cache=None, **options) as client:
            yield client
        return
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(url, http_client=http), cache=None, **options) as client,  # type: ignore[arg-type]
    ):
        yield client


class Peer:
    """A client's side of roots, sampling, elicitation and logging, recording what the upstreams asked."""

    def __init__(self, *roots: Path) -> None:
        self.folders = list(roots)  # what it answers a roots request with (a test may change it)
        self.asked: list[str] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []

    async def roots(self, ctx: Any) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=f.as_uri(), name=f.name) for f in self.folders])

    async def sampling(self, ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append("sampling")
        text = f"sampled: {params.messages[0].content.text}"  # type: ignore[union-attr]
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=text), model="peer")

    async def elicitation(self, ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append("elicitation")
        return types.ElicitResult(action="accept", content={"name": "Ada", "check": True, "integer": 7})

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    def options(self) -> dict[str, Any]:
        return {
            "list_roots_callback": self.roots,
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "logging_callback": self.log,
        }
