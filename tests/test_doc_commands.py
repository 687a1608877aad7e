"""Every shell command README.md and the docs show, run as written (issue 23.2; the table is tests/pdtest_docs.py).

They run in a copy of the checkout (so `--markdown README.md` and `report --write` rewrite the copy, not this tree)
whose `.venv` and `../shared` are the real ones, with no model API keys in the environment.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from gateway.gwtest import npm_servers
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pdtest import CATALOGS, ROOT, stop_process
from pdtest_docs import HOW, commands
from pdtest_redis import ALICE, RedisServer, token_file

pytestmark = pytest.mark.anyio

PORT = 8000  # the port the docs use
TIMEOUT = 900


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout beside a `shared/` that holds the real catalogs; `.venv` is this checkout's."""
    stamp, pyproject = ROOT / ".venv" / ".installed", ROOT / "pyproject.toml"
    # The copy keeps pyproject.toml's time, so ./dev there must find the venv current and never reinstall it (an
    # editable install pointed at the copy would outlive the copy).
    assert stamp.exists() and stamp.stat().st_mtime >= pyproject.stat().st_mtime, "run ./dev first: .venv is stale"
    base = tmp_path_factory.mktemp("docs")
    checkout = base / "checkout"
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, checkout / name)
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    (base / "shared").mkdir()
    (base / "shared" / "catalogs").symlink_to(CATALOGS)
    return checkout


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    """The reader's shell: the project's venv on PATH (the docs' bare `mcp-pd` and `python`), no model keys."""
    values = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    values["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{values.get('PATH', '')}"
    return values


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def _ok(command: str, cwd: Path, env: dict[str, str]) -> str:
    done = _run(command, cwd, env)
    assert done.returncode == 0, f"{command!r} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


async def _lists_tools(command: str, cwd: Path, env: dict[str, str]) -> list[str]:
    params = StdioServerParameters(command="bash", args=["-c", command], cwd=str(cwd), env=env)
    async with Client(params, mode="legacy", cache=None) as client:
        return [t.name for t in (await client.list_tools()).tools]


@pytest.mark.parametrize("command", commands("stdio"))
async def test_stdio_commands_serve(command: str, work: Path, env: dict[str, str]) -> None:
    names = await _lists_tools(command, work, env)
    assert names, command
    assert ("search_tools" in names) == ("--mode catalog" in command)


@pytest.mark.parametrize("command", commands("exit0"))
def test_commands_run_to_completion(command: str, work: Path, env: dict[str, str]) -> None:
    _ok(command, work, env)


@pytest.mark.parametrize("command", commands("refused"))
def test_commands_without_a_model_say_what_is_missing(command: str, work: Path, env: dict[str, str]) -> None:
    done = _run(command, work, env)
    assert done.returncode == 2, f"{command!r} exited {done.returncode}\n{done.stderr[-3000:]}"
    assert HOW[command][1] in done.stderr, done.stderr[-3000:]


@pytest.fixture
def port_8000() -> None:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", PORT))
        except OSError:
            pytest.fail(f"port {PORT} is taken: the documented HTTP commands serve on it")


class _Serving:
    """A documented server command running in the background until the block ends."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stderr=subprocess.PIPE)

    def __enter__(self) -> _Serving:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.proc.stderr.read() if self.proc.stderr else b"").decode()[-3000:]
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", PORT)) == 0:
                    return self
            time.sleep(0.1)
        raise TimeoutError(f"nothing listened on {PORT}")

    def __exit__(self, *exc: object) -> None:
        stop_process(self.proc)


def _initialize(host: str) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "docs", "version": "1"}},
    }
    headers = {"Host": host, "Accept": "application/json, text/event-stream"}
    return httpx2.post(f"http://127.0.0.1:{PORT}/mcp", json=body, headers=headers, timeout=10)


async def test_http_commands_serve(work: Path, env: dict[str, str], port_8000: None, tmp_path: Path) -> None:
    serving = commands("http")
    assert len(serving) == 4
    plain, redis_served, public, demo = (
        next(c for c in serving if key in c) for key in ("--port 8000", "--redis", "--host 0.0.0.0", "--url")
    )
    with _Serving(plain, work, env):
        async with Client(f"http://127.0.0.1:{PORT}/mcp", mode="legacy", cache=None) as client:
            assert "describe_tools" in [t.name for t in (await client.list_tools()).tools]
        _ok(demo, work, env)  # the agent against that server
    redis = RedisServer(tmp_path)
    redis.port = 6379  # the URL the docs give
    started = not redis.ping()
    if started:
        redis.start()
    try:
        token_file(work)  # the docs' tokens.json, in the directory the command runs in
        with _Serving(redis_served, work, env):
            headers = {"Authorization": f"Bearer {ALICE}"}
            async with httpx2.AsyncClient(headers=headers) as http:
                transport = streamable_http_client(f"http://127.0.0.1:{PORT}/mcp", http_client=http)
                async with Client(transport, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
                    await client.read_resource("resource:///tool_descriptions?tools=calculate")
                    result = await client.call_tool("calculate", {"expression": "6 * 7"})
                    assert not result.is_error, result
    finally:
        if started:
            redis.stop()
    with _Serving(public, work, env):
        assert _initialize("mcp.example.com").status_code == 200
        assert _initialize("evil.example").status_code >= 400


async def test_export_enrich_then_serve_from_the_cache(work: Path, env: dict[str, str], tmp_path: Path) -> None:
    export, edit, serve = commands("export")
    memory = npm_servers()["memory"]
    (tmp_path / "servers.json").write_text(
        json.dumps({"mcpServers": {"memory": {"command": "node", "args": [str(memory)]}}}), encoding="utf-8"
    )
    # The reader's editor: adds guidance to the definition it is given, as a person would.
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import json, sys\np = sys.argv[1]\nd = json.load(open(p))\nd['usage_guidance'] = 'Check first.'\n"
        "json.dump(d, open(p, 'w'))\n"
    )
    for command in (export, edit, export):  # the docs' order: export, enrich, export again
        _ok(command, tmp_path, {**env, "EDITOR": f"{sys.executable} {editor}"})
    definition = json.loads((tmp_path / "defs" / "create_entities.json").read_text())
    assert definition["usage_guidance"] == "Check first."  # kept by the second export
    params = StdioServerParameters(command="bash", args=["-c", serve], cwd=str(tmp_path), env=env)
    async with Client(params, mode="legacy", cache=None) as client:
        assert "create_entities" in [t.name for t in (await client.list_tools()).tools]
        read = await client.read_resource("resource:///tool_descriptions?tools=create_entities")
        served = json.loads(read.contents[0].text)  # type: ignore[union-attr]
        assert served["create_entities"]["usage_guidance"] == "Check first."


async def test_wheel_lines(work: Path, env: dict[str, str]) -> None:
    shutil.rmtree("/tmp/pd", ignore_errors=True)
    for command in commands("wheel"):
        if command == "/tmp/pd/bin/mcp-pd serve":
            assert "describe_tools" in await _lists_tools(command, work, env)
        else:
            _ok(command, work, env)
    shutil.rmtree("/tmp/pd", ignore_errors=True)


def _fresh_venv(where: Path, env: dict[str, str]) -> dict[str, str]:
    """A new venv (with pip) and the reader's shell with it activated: its `pip` and `python` come first."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=TIMEOUT)
    project_bin = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p != project_bin]
    return {**env, "PATH": os.pathsep.join([str(where / "bin"), *path]), "VIRTUAL_ENV": str(where)}


def _installed(venv: Path, env: dict[str, str], *modules: str, call: bool = False) -> str:
    """Where the venv's `mcp_pd` comes from (with `modules` importable); `call`: once the installed `mcp-pd` has
    described and called a tool."""
    probe = "import importlib, sys, mcp_pd; [importlib.import_module(m) for m in sys.argv[1:]]; print(mcp_pd.__file__)"
    where = _ok(f"{venv}/bin/python -c {shlex.quote(probe)} {' '.join(modules)}", Path("/"), env).strip()
    if call:
        arguments = shlex.quote(json.dumps({"expression": "6*7"}))
        called = _ok(f"{venv}/bin/mcp-pd call --stdio '{venv}/bin/mcp-pd serve' calculate {arguments}", Path("/"), env)
        assert json.loads(called)["result"]["structuredContent"]["result"] == 42
    return where


# Each builds the project and fills a fresh venv from the package index (the pip cache keeps that to minutes).
@pytest.mark.timeout(1500)
@pytest.mark.req("PDX-INSTALL-02")
def test_install_lines_from_a_checkout(work: Path, env: dict[str, str], tmp_path: Path) -> None:
    plain, editable, extra, _ = commands("install")
    venv = tmp_path / "venv"
    shell = _fresh_venv(venv, env)
    _ok(plain, work, shell)
    installed = _installed(venv, shell, "prometheus_client", "mcp_pd_conformance", "mcp_pd_agent", call=True)
    assert Path(installed).is_relative_to(venv)
    _ok(editable, work, shell)
    assert Path(_installed(venv, shell)).is_relative_to(work / "server")  # the checkout's code runs
    _ok(extra, work, shell)
    assert Path(_installed(venv, shell, "fastmcp")).is_relative_to(venv)


@pytest.mark.timeout(1500)
@pytest.mark.req("PDX-INSTALL-02")
def test_install_line_from_git(env: dict[str, str], tmp_path: Path) -> None:
    from_git = commands("install")[-1]
    # A clone of this repository stands in for the remote (no network but the package index's).
    remote = tmp_path / "remote"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(remote)], check=True, timeout=TIMEOUT)
    venv = tmp_path / "venv-git"
    # file://localhost/...: the pip ensurepip seeds (23.x) refuses `name @ git+file:///path`, an empty host.
    shell = {**_fresh_venv(venv, env), "REPO_URL": f"file://localhost{remote}"}
    _ok(from_git, tmp_path, shell)
    assert Path(_installed(venv, shell, "prometheus_client", call=True)).is_relative_to(venv)


@pytest.mark.timeout(900)
@pytest.mark.req("PDX-CLI-01")
def test_inspector_with_a_token(work: Path, env: dict[str, str], port_8000: None) -> None:
    # The Inspector that `npx` resolves today (version 2: it takes --header), one connection per command: the grant the
    # read gave the token's principal is what lets the second command's call through.
    serve, read, call = commands("inspector")
    token_file(work)
    shell = {**env, "TOKEN": ALICE}
    with _Serving(serve, work, shell):
        described = _ok(read, work, shell)
        assert '"calculate"' in described and "inputSchema" in described, described
        called = _ok(call, work, shell)
    result = json.loads(called[: called.rindex("}") + 1])
    assert result["structuredContent"]["result"] == 42, called
