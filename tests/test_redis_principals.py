"""Principal keys with the `mcp` SDK's own authorization (`streamable_http_app(auth=..., token_verifier=...)`),
in-process and with the default in-memory grants: what "session" means once requests carry a principal
(spec/sessions.md, I-17)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.settings import AuthSettings
from mcp_pd._auth import StaticTokenVerifier
from mcp_pd._extension import _lowlevel
from mcp_pd.reference import build_reference_server
from pdtest import free_port, http_in_process
from pdtest_redis import ALICE, BOB, TOKENS

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"
TOOL = "list_projects"


@asynccontextmanager
async def authenticated_server(*, stateless: bool = False, **options: Any) -> AsyncIterator[str]:
    app, _ = build_reference_server(watch=False, **options)
    verifier = StaticTokenVerifier.from_mapping(TOKENS)
    auth = AuthSettings(issuer_url="https://auth.example.com", resource_server_url=None)  # type: ignore[arg-type]
    async with http_in_process(_lowlevel(app), auth=auth, token_verifier=verifier, stateless_http=stateless) as url:
        yield url


@asynccontextmanager
async def client(url: str, token: str, mode: str = "2026-07-28") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as session,  # type: ignore[arg-type]
    ):
        yield session


def code(result: Any) -> str | None:
    return str(result.structured_content["error"]["code"]) if result.is_error else None


@pytest.mark.req("PDX-PRINCIPAL-01", "PDX-PRINCIPAL-02", "PDX-PRINCIPAL-03")
@pytest.mark.parametrize("stateless", [False, True])
async def test_the_sdk_principal_keys_grants_in_the_sessionless_era(stateless: bool) -> None:
    async with authenticated_server(stateless=stateless) as url:
        async with client(url, ALICE, mode="auto") as alice:
            assert alice.protocol_version == "2026-07-28"  # not steered to the handshake: it has an identity
            assert code(await alice.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
            await alice.read_resource(f"{URI}?tools={TOOL}")
        async with client(url, ALICE) as alice:  # a new client, a new connection: the same principal
            assert not (await alice.call_tool(TOOL, {})).is_error
        async with client(url, BOB) as bob:
            assert code(await bob.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"


@pytest.mark.req("PDX-PRINCIPAL-01")
async def test_principal_keys_off_falls_back_to_transport_sessions() -> None:
    async with authenticated_server(principal_keys=False) as url:
        async with client(url, ALICE, mode="auto") as alice:
            assert alice.protocol_version == "2025-11-25"  # steered to the handshake, as without authentication
            await alice.read_resource(f"{URI}?tools={TOOL}")
            assert not (await alice.call_tool(TOOL, {})).is_error
        async with client(url, ALICE, mode="legacy") as alice:  # a new MCP session: grants ended with the old one
            assert code(await alice.call_tool(TOOL, {})) == "TOOL_DESCRIPTION_REQUIRED"
        async with client(url, ALICE) as pinned:
            assert code(await pinned.call_tool(TOOL, {})) == "SESSION_REQUIRED"


@pytest.mark.req("PDX-PRINCIPAL-01")
async def test_a_session_key_hook_comes_before_the_principal() -> None:
    async with authenticated_server(session_key=lambda ctx: "one-team") as url:
        async with client(url, ALICE) as alice:
            await alice.read_resource(f"{URI}?tools={TOOL}")
        async with client(url, BOB) as bob:  # the operator keyed everyone on one team: Bob shares Alice's grants
            assert not (await bob.call_tool(TOOL, {})).is_error


@pytest.mark.req("PDX-PRINCIPAL-03")
@pytest.mark.parametrize(
    ("content", "argv", "message"),
    [
        ('{"short": {"client_id": "a"}}', ["--transport", "http"], "shorter than 16 characters"),
        ('{"a-long-enough-token": {"subject": "a"}}', ["--transport", "http"], "a string 'client_id'"),
        ("[1, 2]", ["--transport", "http"], "expected a JSON object"),
        ("not json", ["--transport", "http"], "cannot read bearer tokens"),
        ('{"a-long-enough-token": {"client_id": "a"}}', [], "applies to --transport http only"),
    ],
)
def test_bad_bearer_token_files_are_refused_at_start_up(
    tmp_path: Path, content: str, argv: list[str], message: str
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content, encoding="utf-8")
    command = [sys.executable, "-m", "mcp_pd", "serve", *argv, "--port", str(free_port()), "--bearer-tokens", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert message in done.stderr
