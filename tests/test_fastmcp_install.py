"""`ProgressiveDisclosure().install(app)` on a FastMCP 4 server (PyPI `fastmcp`), as its users write and run one
(issue 32.1): FastMCP's own `Client` in process, over `app.run()`'s stdio and HTTP in subprocesses, and the
conformance suite over both transports with the gate verified.

What FastMCP decides a caller may see (enabled, tags, a session's own visibility, a tool's `auth`, `AuthMiddleware`)
is all that caller can list, read or call through the extension; its access token's client and subject key grants.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import fastmcp
import httpx2
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import StaticTokenVerifier, require_scopes, restrict_tag
from fastmcp.server.middleware import AuthMiddleware, Middleware, MiddlewareContext
from fastmcp.tools import Tool
from fastmcp_app import READ_ONLY, TOKENS
from mcp import MCPError
from mcp.server import MCPServer
from mcp.server.lowlevel import Server
from mcp_pd import MINIMAL_INPUT_SCHEMA, ProgressiveDisclosure
from mcp_pd_conformance import Options, Report, Target, render, run_suite
from pdtest import ROOT, http_command, serve_asgi

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"
APP = Path(__file__).resolve().parent / "fastmcp_app.py"


def notes_app(*, on_lowlevel: bool = False, **options: Any) -> tuple[FastMCP[Any], ProgressiveDisclosure, list[str]]:
    """A small FastMCP server with the extension installed (`on_lowlevel`: on `app._mcp_server`, as some did before
    FastMCP was taken natively); the list records every tool body that ran."""
    ran: list[str] = []
    app: FastMCP[Any] = FastMCP("notes")

    @app.tool(annotations=READ_ONLY)
    def list_notes() -> list[str]:
        """List every note."""
        ran.append("list_notes")
        return ["first"]

    @app.tool
    def add_note(text: str) -> int:
        """Store a note."""
        ran.append("add_note")
        return 1

    @app.tool(tags={"internal"})
    def dump_state() -> str:
        """Internal state."""
        ran.append("dump_state")
        return "state"

    app.disable(tags={"internal"})
    return app, ProgressiveDisclosure(**options).install(app._mcp_server if on_lowlevel else app), ran


def error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    document: dict[str, Any] = json.loads(result.content[0].text)["error"]
    return document


async def read(client: Client[Any], names: str) -> dict[str, Any]:
    (content,) = await client.read_resource(f"{URI}?tools={names}")
    body: dict[str, Any] = json.loads(content.text)  # type: ignore[union-attr]
    return body


async def call(client: Client[Any], name: str, arguments: dict[str, Any] | None = None) -> Any:
    return await client.call_tool(name, arguments or {}, raise_on_error=False)


# -- in process: FastMCP's Client on the server object ---------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.req("PDX-FASTMCP-01")
async def test_install_takes_a_fastmcp_server(mode: str) -> None:
    app, pd, ran = notes_app()
    assert pd._server is app._mcp_server  # the server FastMCP answers on, not a copy
    async with Client(app, mode=mode) as client:
        listed = {t.name: t for t in await client.list_tools()}
        assert set(listed) == {"describe_tools", "list_notes", "add_note"}
        assert listed["add_note"].input_schema == MINIMAL_INPUT_SCHEMA
        assert error(await call(client, "add_note", {"text": "x"}))["code"] == "TOOL_DESCRIPTION_REQUIRED"
        assert ran == []  # refused before FastMCP ran anything
        full = await read(client, "add_note")
        assert full["add_note"]["inputSchema"]["required"] == ["text"]
        result = await call(client, "add_note", {"text": "x"})
        assert not result.is_error and result.structured_content == {"result": 1}
        described = await call(client, "describe_tools", {"tools": ["list_notes"]})
        assert "list_notes" in json.loads(described.content[0].text)
        assert (await call(client, "list_notes")).structured_content == {"result": ["first"]}
    assert ran == ["add_note", "list_notes"]


@pytest.mark.req("PDX-FASTMCP-01")
async def test_tools_added_after_install_are_found() -> None:
    app, _, _ = notes_app()
    async with Client(app) as client:
        await client.list_tools()

        @app.tool
        def late(x: int) -> int:
            """Registered after the first listing."""
            return x * 2

        def added(y: int) -> int:
            """Added as a Tool object."""
            return y + 1

        app.add_tool(Tool.from_function(added))
        body = await read(client, "late,added")
        assert body["late"]["inputSchema"]["required"] == ["x"] and body["added"]["inputSchema"]["required"] == ["y"]
        assert (await call(client, "late", {"x": 4})).structured_content == {"result": 8}
        assert (await call(client, "added", {"y": 4})).structured_content == {"result": 5}
        assert {"late", "added"} <= {t.name for t in await client.list_tools()}


@pytest.mark.parametrize("on_lowlevel", [False, True], ids=["app", "app._mcp_server"])
@pytest.mark.req("PDX-FASTMCP-01")
async def test_a_disabled_tool_is_never_listed_described_or_called(on_lowlevel: bool) -> None:
    app, _, ran = notes_app(on_lowlevel=on_lowlevel)
    async with Client(app) as client:
        # Hidden by its tag from the start: unknown everywhere, and nothing suggests it.
        assert "dump_state" not in {t.name for t in await client.list_tools()}
        body = await read(client, "dump_state")
        assert body["dump_state"]["error"] == "Tool 'dump_state' not found"
        assert "dump_state" not in body["dump_state"]["available_tools"]
        assert error(await call(client, "dump_state"))["code"] == "TOOL_NOT_FOUND"
        # Disabled after this session fetched and called it: its grant no longer lets anything through.
        await read(client, "list_notes")
        assert not (await call(client, "list_notes")).is_error
        app.disable(names={"list_notes"})
        refused = error(await call(client, "list_notes"))
        assert refused["code"] == "TOOL_NOT_FOUND" and "list_notes" not in refused["available_tools"]
        assert "error" in (await read(client, "list_notes"))["list_notes"]
        assert "list_notes" not in {t.name for t in await client.list_tools()}
        app.enable(names={"list_notes"})
        assert not (await call(client, "list_notes")).is_error  # enabled again, same definition: the grant holds
    assert ran == ["list_notes", "list_notes"]


@pytest.mark.req("PDX-FASTMCP-01")
async def test_a_sessions_own_visibility_is_its_alone() -> None:
    app, _, _ = notes_app()

    @app.tool
    async def unlock(ctx: Context) -> str:
        """Show the internal tools to this session."""
        await ctx.enable_components(tags={"internal"})
        return "unlocked"

    async with Client(app, mode="legacy") as admin, Client(app, mode="legacy") as other:
        await read(admin, "unlock")
        assert not (await call(admin, "unlock")).is_error
        assert "dump_state" in {t.name for t in await admin.list_tools()}
        # Right after the admin's listing (which had it), the other session, which never unlocked, asks for it:
        # not readable, not callable, not listed.
        assert "error" in (await read(other, "dump_state"))["dump_state"]
        assert error(await call(other, "dump_state"))["code"] == "TOOL_NOT_FOUND"
        assert "dump_state" not in {t.name for t in await other.list_tools()}
        assert "inputSchema" in (await read(admin, "dump_state"))["dump_state"]
        assert (await call(admin, "dump_state")).structured_content == {"result": "state"}


@pytest.mark.req("PDX-FASTMCP-01")
async def test_mounted_servers_tools_are_gated_under_their_namespace() -> None:
    app, _, _ = notes_app()
    files: FastMCP[Any] = FastMCP("files")

    @files.tool(annotations=READ_ONLY)
    def count(text: str) -> int:
        """Count characters."""
        return len(text)

    app.mount(files, namespace="files")
    async with Client(app) as client:
        assert "files_count" in {t.name for t in await client.list_tools()}
        assert error(await call(client, "files_count", {"text": "abc"}))["code"] == "TOOL_DESCRIPTION_REQUIRED"

        @files.tool
        def size(text: str) -> int:
            """Added to the mounted server later."""
            return len(text.encode())

        body = await read(client, "files_count,files_size")
        assert set(body) == {"files_count", "files_size"} and all("inputSchema" in e for e in body.values())
        assert (await call(client, "files_count", {"text": "abc"})).structured_content == {"result": 3}
        assert (await call(client, "files_size", {"text": "é"})).structured_content == {"result": 2}


async def test_the_operators_permission_hook_still_applies() -> None:
    app, _, ran = notes_app(permission=lambda caller, name: name != "add_note")
    async with Client(app) as client:
        assert {t.name for t in await client.list_tools()} == {"describe_tools", "list_notes"}
        assert "error" in (await read(client, "add_note"))["add_note"]
        assert error(await call(client, "add_note", {"text": "x"}))["code"] == "TOOL_NOT_FOUND"
    assert ran == []


class Counting(Middleware):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_request(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        self.seen.append(str(context.method))
        return await call_next(context)


async def test_fastmcp_middleware_sees_each_request_once() -> None:
    """The listings made to learn what a caller may see run no middleware: a rate limit or a log counts what the
    client sent, each request that reaches FastMCP once."""
    app, _, _ = notes_app()
    counting = Counting()
    app.add_middleware(counting)
    async with Client(app) as client:
        await client.list_tools()
        await call(client, "list_notes")  # refused by the extension: FastMCP never sees it
        await read(client, "list_notes")
        await call(client, "list_notes")
    assert [m for m in counting.seen if m.startswith("tools/")] == ["tools/list", "tools/call"]


async def test_capabilities_keep_fastmcps_own_list_changed() -> None:
    plain: FastMCP[Any] = FastMCP("plain")
    plain.tool(lambda: 1, name="one")
    app, _, _ = notes_app()
    async with Client(plain, mode="legacy") as bare, Client(app, mode="legacy") as installed:
        before, after = bare.initialize_result.capabilities, installed.initialize_result.capabilities
    assert before.prompts is not None and after.prompts is not None
    assert before.resources is not None and after.resources is not None
    assert after.prompts.list_changed is before.prompts.list_changed is True
    assert after.resources.list_changed is before.resources.list_changed is True
    assert after.tools is not None and after.tools.list_changed is True


# -- the FastMCP layout the install relies on, pinned ------------------------------------------------------------
def test_the_supported_fastmcp_is_the_installed_one() -> None:
    """The private attribute read (`_mcp_server`) is checked against this version; a new major needs a new check."""
    from mcp_pd._fastmcp import SUPPORTED_MAJOR, lowlevel_server

    assert fastmcp.__version__.split(".")[0] == str(SUPPORTED_MAJOR)
    app: FastMCP[Any] = FastMCP("pinned")
    inner = lowlevel_server(app)
    assert isinstance(inner, Server) and inner is app._mcp_server
    assert inner.get_request_handler("tools/list") is not None and inner.get_request_handler("tools/call") is not None


def test_an_unknown_fastmcp_layout_is_refused_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_pd._fastmcp import SUPPORTED_MAJOR

    app: FastMCP[Any] = FastMCP("moved")
    app._mcp_server = Server("not FastMCP's")  # type: ignore[assignment]
    with pytest.raises(TypeError, match="does not keep its low-level mcp Server"):
        ProgressiveDisclosure().install(app)
    monkeypatch.setattr(fastmcp, "__version__", f"{SUPPORTED_MAJOR + 1}.0.0")
    with pytest.raises(TypeError, match=rf"FastMCP {SUPPORTED_MAJOR}\.x"):
        ProgressiveDisclosure().install(FastMCP("next"))
    with pytest.raises(TypeError, match="MCPServer, a low-level Server or a FastMCP server, not dict"):
        ProgressiveDisclosure().install({})  # type: ignore[arg-type]


def test_fastmcp_stays_optional() -> None:
    """Importing mcp_pd and installing on the SDK's MCPServer never imports fastmcp."""
    code = (
        "import sys; from mcp.server import MCPServer; from mcp_pd import ProgressiveDisclosure\n"
        "app = MCPServer('x')\n@app.tool()\ndef t() -> int:\n    return 1\n"
        "ProgressiveDisclosure().install(app); assert 'fastmcp' not in sys.modules, 'fastmcp imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=_env(), timeout=60)
    assert MCPServer  # the same SDK class, in this process


# -- HTTP: FastMCP's auth keys grants on the token's client and subject --------------------------------------------
@asynccontextmanager
async def serve_http(app: FastMCP[Any]) -> AsyncIterator[str]:
    """`app.http_app()` (what `app.run(transport="http")` serves) on a free loopback port, in this event loop."""
    async with serve_asgi(app.http_app()) as url:
        yield url


async def status_without_token(url: str, token: str) -> int:
    """The HTTP status of an initialize sent with `token` (empty: no Authorization header)."""
    headers = {
        "Accept": "application/json, text/event-stream",
        **({"Authorization": f"Bearer {token}"} if token else {}),
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with httpx2.AsyncClient() as http:
        return (await http.post(url, json=body, headers=headers)).status_code


def auth_app() -> tuple[FastMCP[Any], ProgressiveDisclosure]:
    tokens = {
        "alice": {"client_id": "notes-app", "sub": "alice", "scopes": ["notes", "admin", "billing"]},
        "bob": {"client_id": "notes-app", "sub": "bob", "scopes": ["notes"]},
    }
    app: FastMCP[Any] = FastMCP(
        "auth",
        auth=StaticTokenVerifier(tokens=tokens),
        middleware=[AuthMiddleware(auth=restrict_tag("billing", scopes=["billing"]))],
    )

    @app.tool(annotations=READ_ONLY)
    def whoami() -> str:
        """Who is calling."""
        return "someone"

    @app.tool(auth=require_scopes("admin"))
    def purge() -> str:
        """Admins only (the tool's own auth)."""
        return "purged"

    @app.tool(tags={"billing"})
    def invoice() -> str:
        """Billing only (AuthMiddleware on its tag)."""
        return "invoiced"

    return app, ProgressiveDisclosure().install(app)


async def test_fastmcp_auth_keys_grants_on_client_and_subject() -> None:
    app, pd = auth_app()
    async with serve_http(app) as url:
        async with Client(url, auth="alice") as alice:  # FastMCP's default: 2026-07-28, no session to key on
            assert error(await call(alice, "whoami"))["code"] == "TOOL_DESCRIPTION_REQUIRED"
            await read(alice, "whoami")
            assert (await call(alice, "whoami")).structured_content == {"result": "someone"}
        async with Client(url, auth="bob") as bob:  # the same OAuth client, another subject
            assert error(await call(bob, "whoami"))["code"] == "TOOL_DESCRIPTION_REQUIRED"
        async with Client(url, auth="alice") as again:  # alice's grant outlives her connection
            assert (await call(again, "whoami")).structured_content == {"result": "someone"}
    assert set(pd.grants.granted('principal:["notes-app",null,"alice"]')) == {"whoami"}
    assert set(pd.grants.granted('principal:["notes-app",null,"bob"]')) == set()


@pytest.mark.req("PDX-FASTMCP-01")
async def test_what_fastmcp_auth_hides_cannot_be_read_or_called() -> None:
    app, _ = auth_app()
    async with serve_http(app) as url:
        async with Client(url, auth="alice") as alice:
            assert {t.name for t in await alice.list_tools()} == {"describe_tools", "whoami", "purge", "invoice"}
            await read(alice, "purge,invoice")
            assert (await call(alice, "purge")).structured_content == {"result": "purged"}
            assert (await call(alice, "invoice")).structured_content == {"result": "invoiced"}
        # Right after alice's listing (which had them), bob asks for what his token does not allow.
        async with Client(url, auth="bob") as bob:
            body = await read(bob, "purge,invoice,whoami")
            assert "error" in body["purge"] and "error" in body["invoice"] and "inputSchema" in body["whoami"]
            for hidden in ("purge", "invoice"):
                refused = error(await call(bob, hidden))
                assert refused["code"] == "TOOL_NOT_FOUND" and refused["available_tools"] == ["whoami"]
            assert {t.name for t in await bob.list_tools()} == {"describe_tools", "whoami"}
        assert await status_without_token(url, "") == 401


# -- app.run() in a subprocess: stdio and HTTP ---------------------------------------------------------------------
def _env() -> dict[str, str]:
    passed = ("PATH", "HOME", "LANG", "PYTHONPATH", "SYSTEMROOT", "MCP_PD_CACHE_DIR")
    return {k: v for k, v in os.environ.items() if k in passed}


def stdio_client(*args: str) -> Client[Any]:
    return Client(StdioTransport(sys.executable, [str(APP), *args], env=_env(), cwd=str(ROOT)))


@pytest.mark.slow
async def test_app_run_over_stdio() -> None:
    async with stdio_client() as client:
        listed = {t.name for t in await client.list_tools()}
        assert listed == {"describe_tools", "list_notes", "add_note", "delete_note", "files_count", "note_count"}
        assert error(await call(client, "add_note", {"text": "hi"}))["code"] == "TOOL_DESCRIPTION_REQUIRED"
        await read(client, "add_note,note_count,files_count")
        assert (await call(client, "add_note", {"text": "hi"})).structured_content == {"result": 1}
        assert (await call(client, "note_count")).structured_content == {"result": 1}
        assert (await call(client, "files_count", {"text": "four"})).structured_content == {"result": 4}
        assert error(await call(client, "dump_state"))["code"] == "TOOL_NOT_FOUND"
        with pytest.raises(ToolError):
            await client.call_tool("delete_note", {"note_id": 1})  # raise_on_error: a refusal is a tool error


@pytest.mark.slow
async def test_app_run_over_http_with_fastmcp_auth() -> None:
    with http_command([sys.executable, str(APP), "--auth", "--http"]) as url:
        async with Client(url, auth="alice-token") as alice, Client(url, auth="bob-token") as bob:
            await read(alice, "add_note")
            assert (await call(alice, "add_note", {"text": "hi"})).structured_content == {"result": 1}
            assert error(await call(bob, "add_note", {"text": "hi"}))["code"] == "TOOL_DESCRIPTION_REQUIRED"
        async with Client(url, auth="ci-token") as ci:  # another client, no subject
            assert error(await call(ci, "add_note", {"text": "hi"}))["code"] == "TOOL_DESCRIPTION_REQUIRED"
        assert await status_without_token(url, "forged") == 401
    assert set(TOKENS) == {"alice-token", "bob-token", "ci-token"}


# -- the conformance suite: passes over stdio and HTTP, with the gate verified ------------------------------------
def _passed_with_gate_verified(report: Report, log: Path) -> None:
    assert report.exit_code == 0 and report.verdict == "PASS", render(report)
    assert [proof.state for proof in report.gate] == ["verified", "verified"], render(report)
    statuses = {r.key: r.status.name for r in report.results}
    assert statuses["grants/every-tool-gated"] == "SUCCESS", render(report)
    # What the suite may not run unfetched never ran: only read-only tools, each after its fetch.
    ran = {json.loads(line)["tool"] for line in log.read_text().splitlines()} if log.exists() else set()
    assert ran and ran <= {"list_notes", "note_count", "files_count"}, ran


@pytest.mark.slow
async def test_the_suite_passes_over_stdio_with_the_gate_verified(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    report = await run_suite(Options(Target(stdio=(sys.executable, str(APP), "--call-log", str(log)))))
    _passed_with_gate_verified(report, log)


@pytest.mark.slow
async def test_the_suite_passes_over_http_with_the_gate_verified(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    with http_command([sys.executable, str(APP), "--call-log", str(log), "--http"]) as url:
        report = await run_suite(Options(Target(url=url)))
    _passed_with_gate_verified(report, log)


async def test_fastmcps_own_resources_stay_fastmcps() -> None:
    """A FastMCP resource is read from FastMCP (no listing of tools first); a descriptions URI from the extension."""
    app, _, _ = notes_app()

    @app.resource("data://greeting")
    def greeting() -> str:
        return "hello"

    async with Client(app) as client:
        (content,) = await client.read_resource("data://greeting")
        assert content.text == "hello"  # type: ignore[union-attr]
        with pytest.raises(MCPError):
            await client.read_resource(URI)  # no selection: the spec's error, as a JSON-RPC error
