"""Secrets never leave the operator's log (issue 39.5): a pasted header value with a trailing blank, or one an HTTP
library refuses, never puts the token in a client's refusal, on `/admin` or in the gateway's log."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from gateway.gwtest import error_of, gateway_params, http_gateway, write_config
from mcp import Client
from pdtest import _wait_for_port, free_port, stop_process

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SQUAT = Path(__file__).parent / "squat_server.py"
TOKEN = "s3cr3t-upstream-token-6f1c2b9e"


@contextmanager
def _http_upstream(label: str, tool: str) -> Iterator[str]:
    """tests/gateway/squat_server.py over Streamable HTTP on a free loopback port: its /mcp URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SQUAT), "--http", str(port), label, tool],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


@pytest.mark.req("PDX-SECRET-01", "PDX-SECRET-02")
async def test_a_pasted_token_reaches_no_refusal_page_or_log(tmp_path: Path) -> None:
    with _http_upstream("pasted", "pasted_echo") as pasted, _http_upstream("broken", "broken_echo") as broken:
        # The tools are known from an export, so each client's call reaches the upstream's start (and its refusal).
        plain = write_config(tmp_path / "plain.json", {"pasted": {"url": pasted}, "broken": {"url": broken}})
        cache = tmp_path / "defs"
        params = gateway_params()
        done = subprocess.run(
            [params.command, "-m", "mcp_pd", "export", "--config", str(plain), "--out", str(cache)],
            capture_output=True,
            text=True,
            timeout=120,
            env=params.env,
        )
        assert done.returncode == 0, done.stderr
        config = write_config(
            tmp_path / "servers.json",
            {
                # As pasted from a host's config: a trailing blank after the token.
                "pasted": {"url": pasted, "headers": {"Authorization": f"Bearer {TOKEN} "}},
                # A value no HTTP library sends (a line break inside): refused, and quoted by the library.
                "broken": {"url": broken, "headers": {"Authorization": f"Bearer {TOKEN}\nx"}},
            },
        )
        log = tmp_path / "gateway.log"
        async with http_gateway(config, log, "--cache", str(cache), "--mode", "eager") as url:
            refusals = []
            async with Client(url, cache=None) as alice, Client(url, cache=None) as bob:
                # The blank is not part of the value: the pasted entry works.
                result = await alice.call_tool("pasted_echo", {})
                assert not result.is_error, result
                assert isinstance(result.content[0], types.TextContent)
                assert result.content[0].text == "pasted:pasted_echo"
                for client in (alice, bob):
                    refused = await client.call_tool("broken_echo", {})
                    error = error_of(refused)
                    assert error["code"] == "UPSTREAM_UNAVAILABLE", error
                    assert "Illegal header value" in error["message"], error  # says why
                    refusals.append(json.dumps(refused.model_dump(mode="json")))
            page = httpx2.get(url.removesuffix("/mcp") + "/admin", timeout=30).text
    assert "broken_echo" in page and "Illegal header value" in page
    said = log.read_text()
    assert "Illegal header value" in said, said
    for where, text in (("alice's refusal", refusals[0]), ("bob's refusal", refusals[1]), ("/admin", page)):
        assert TOKEN not in text, where
    assert TOKEN not in said  # better not in the operator's log either
