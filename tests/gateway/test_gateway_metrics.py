"""GET /metrics on `mcp-pd proxy` over HTTP (issue 21.3): each upstream's state, starts and call latency."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gateway.gwtest import gateway_params, stdio, write_config
from mcp import Client
from pdtest import http_command
from pdtest_metrics import scrape, value

pytestmark = pytest.mark.anyio
PLAIN = Path(__file__).parent / "plain_server.py"


async def test_proxy_reports_upstream_state_and_call_latency(tmp_path: Path, mark: str) -> None:
    config = write_config(tmp_path / "servers.json", {"plain": stdio(sys.executable, str(PLAIN), mark=mark)})
    params = gateway_params("--config", str(config), "--transport", "http", "--port")
    with http_command([params.command, *params.args]) as url:
        async with Client(url, mode="legacy", cache=None) as client:
            await client.call_tool("describe_tools", {"tools": ["echo"]})
            assert not (await client.call_tool("echo", {"text": "hi"})).is_error
        samples = scrape(url)
    assert value(samples, "mcp_pd_upstream_state", upstream="plain", state="ready") == 1
    assert value(samples, "mcp_pd_upstream_starts_total", upstream="plain") >= 1
    assert value(samples, "mcp_pd_upstream_call_seconds_count", upstream="plain") == 1
    assert value(samples, "mcp_pd_tool_calls_total", tool="echo", outcome="ok") == 1
