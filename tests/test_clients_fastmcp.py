"""FastMCP's `create_proxy` in front of `mcp-pd serve` over HTTP, the three ways its users run it (issue 23.4).

- `create_proxy(url)`: FastMCP 4.2 speaks the sessionless 2026-07-28 protocol by default, so nothing can be
  remembered: describe and call are both refused with SESSION_REQUIRED, and the hint says how to get a session.
- `create_proxy(Client(url, mode="legacy"))`, the client not connected: a new upstream session per request, so the
  grant made by the describe is gone at the call; the refusal's reason names the pattern (I-20).
- the same client connected before `create_proxy`: one session, and describe-then-call works.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastmcp import Client as FastClient
from fastmcp.server import create_proxy
from mcp import Client
from pdtest import http_subprocess

pytestmark = pytest.mark.anyio


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    error: dict[str, Any] = json.loads(result.content[0].text)["error"]
    return error


@pytest.fixture
def url() -> Any:
    with http_subprocess() as endpoint:
        yield endpoint


async def _describe_then_call(proxy: Any) -> tuple[Any, Any]:
    async with FastClient(proxy) as client:
        described = await client.call_tool("describe_tools", {"tools": ["calculate"]}, raise_on_error=False)
        called = await client.call_tool("calculate", {"expression": "6 * 7"}, raise_on_error=False)
        return described, called


@pytest.mark.req("PDX-CHURN-01")
async def test_a_session_per_request_is_named_in_the_refusal(url: str) -> None:
    described, called = await _describe_then_call(create_proxy(FastClient(url, mode="legacy"), name="proxy"))
    assert not described.is_error
    error = _error(called)
    assert error["code"] == "TOOL_DESCRIPTION_REQUIRED"
    assert "another MCP session of this client (fastmcp/" in error["reason"]
    assert "create_proxy" in error["reason"]


async def test_a_connected_client_keeps_one_session_and_its_grants(url: str) -> None:
    async with FastClient(url, mode="legacy") as backend:
        described, called = await _describe_then_call(create_proxy(backend, name="proxy"))
    assert not described.is_error
    assert not called.is_error, called
    assert json.loads(called.content[0].text)["result"] == 42


async def test_the_default_sessionless_proxy_is_told_how_to_get_a_session(url: str) -> None:
    described, called = await _describe_then_call(create_proxy(url, name="proxy"))
    for result in (described, called):
        error = _error(result)
        assert error["code"] == "SESSION_REQUIRED"
        assert "mode='legacy'" in error["hint"]


@pytest.mark.req("PDX-CHURN-01")
async def test_no_reason_for_the_session_that_fetched_or_for_another_client(url: str) -> None:
    # The same session calling without a grant (never fetched) gets the plain refusal; a different client that did
    # not fetch is told nothing about the one that did.
    async with FastClient(url, mode="legacy") as fetcher:
        await fetcher.call_tool("describe_tools", {"tools": ["calculate"]})
        unfetched = await fetcher.call_tool("hash_text", {"text": "x"}, raise_on_error=False)
        assert "reason" not in _error(unfetched)
        async with Client(url, mode="legacy", cache=None) as other:  # the mcp SDK's client: another clientInfo
            refused = await other.call_tool("calculate", {"expression": "1 + 1"})
            assert refused.structured_content is not None
            assert "reason" not in refused.structured_content["error"]
