"""GET /metrics (issue 21.3): Prometheus text format from `mcp-pd serve` and `mcp-pd proxy` over HTTP, parsed with
the official parser after real traffic from the real client."""

from __future__ import annotations

import httpx2
import pytest
from mcp import Client
from pdtest import http_subprocess
from pdtest_metrics import scrape, value

pytestmark = pytest.mark.anyio


async def test_serve_counts_requests_refusals_describes_and_calls() -> None:
    with http_subprocess() as url:
        async with Client(url, mode="legacy", cache=None) as client:
            await client.list_tools()
            refused = await client.call_tool("list_projects", {})
            assert refused.is_error
            described = await client.call_tool("describe_tools", {"tools": ["list_projects"]})
            assert not described.is_error
            assert not (await client.call_tool("list_projects", {})).is_error
        samples = scrape(url)
    assert value(samples, "mcp_pd_requests_total", method="tools/list", outcome="ok") >= 1
    assert value(samples, "mcp_pd_refusals_total", code="TOOL_DESCRIPTION_REQUIRED") == 1
    assert value(samples, "mcp_pd_tool_calls_total", tool="list_projects", outcome="refused") == 1
    assert value(samples, "mcp_pd_tool_calls_total", tool="list_projects", outcome="ok") == 1
    assert value(samples, "mcp_pd_tool_describes_total", tool="list_projects") == 1
    assert value(samples, "mcp_pd_request_seconds_count", method="tools/call") == 3
    assert value(samples, "mcp_pd_grant_sessions") >= 0  # the memory store says how many hold grants


async def test_serve_without_metrics_has_no_endpoint() -> None:
    with http_subprocess("--no-metrics") as url:
        response = httpx2.get(url.removesuffix("/mcp") + "/metrics", timeout=10)
    assert response.status_code == 404


async def test_with_bearer_tokens_metrics_need_the_operator_token(tmp_path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"metrics-client-token-0123456789": {"client_id": "ops", "subject": "ops"}}')
    (tmp_path / "admin").write_text("metrics-operator-token-0123456789\n")
    with http_subprocess("--bearer-tokens", str(tokens), "--admin-token-file", str(tmp_path / "admin")) as url:
        endpoint = url.removesuffix("/mcp") + "/metrics"
        assert httpx2.get(endpoint, timeout=10).status_code == 401
        client = {"Authorization": "Bearer metrics-client-token-0123456789"}
        assert httpx2.get(endpoint, headers=client, timeout=10).status_code == 401  # a client token is not enough
        headers = {"Authorization": "Bearer metrics-operator-token-0123456789"}
        assert httpx2.get(endpoint, headers=headers, timeout=10).status_code == 200
