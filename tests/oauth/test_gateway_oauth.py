"""`mcp-pd proxy --oauth-issuer`: the gateway as an OAuth 2.1 resource server in front of a real npm upstream, and
the conformance suite passing against it with a token from the real OpenID provider (`mcp-pd check --header`)."""

from __future__ import annotations

import functools
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from gateway.gwtest import gateway_params, npm_servers, stdio, wait_for_no_pids, write_config
from oauth.idptest import IdP
from pdtest import http_command

SCOPE = "mcp:tools"


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[IdP]:
    provider = IdP(tmp_path)
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()


def _check(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "mcp_pd", "check", "--url", url, "--call-tool", "read_graph", "--args", "{}"]
    return subprocess.run([*argv, *extra, "-q", "--no-color"], capture_output=True, text=True, timeout=600)


@pytest.mark.req("PDX-OAUTH-10")
def test_the_suite_passes_against_the_gateway_with_a_token_from_the_idp(tmp_path: Path, idp: IdP) -> None:
    """With one token every session of the suite is the same person; the suite judges grants per session, so the
    gateway keeps them per session here (`--grants-per session`; per principal is tests/oauth/test_resource_server)."""
    mark = uuid.uuid4().hex
    memory = stdio("node", str(npm_servers()["memory"]), mark=mark, env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")})
    config = write_config(tmp_path / "servers.json", {"memory": memory})
    params = gateway_params(
        "--config", str(config), "--transport", "http", "--oauth-issuer", idp.issuer, "--oauth-scope", SCOPE
    )
    with http_command([params.command, *params.args, "--grants-per", "session", "--port"]) as url:
        refused = _check(url)
        # Said as a 401 (exit 3) with the server's OAuth challenge, which names where to get a token.
        assert refused.returncode == 3 and "HTTP 401 Unauthorized: the server requires credentials" in refused.stdout
        assert "WWW-Authenticate: Bearer resource_metadata=" in refused.stdout
        token = anyio.run(functools.partial(idp.client_credentials, resource=url, scope=SCOPE))
        done = _check(url, "--header", f"Authorization: Bearer {token}")
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert "VERDICT: PASS" in done.stdout
        assert token not in done.stdout + done.stderr  # the suite never prints what it was given to send
    assert not wait_for_no_pids(mark)


@pytest.mark.req("PDX-OAUTH-10")
@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["check", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization Bearer x"], "give 'NAME: VALUE'"),
        (["check", "--stdio", "python -m mcp_pd serve", "--header", "A: b"], "--header applies to --url only"),
        (["serve", "--transport", "http", "--grants-per", "session"], "--grants-per needs --oauth-issuer"),
        (["serve", "--grants-per", "session"], "applies to --transport http only"),
        (["proxy", "--stateless", "--config", "servers.json"], "--stateless applies to --transport http only"),
    ],
)
def test_flags_that_cannot_hold_are_refused_with_the_reason(argv: list[str], says: str) -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_pd", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and says in done.stderr, done.stderr
