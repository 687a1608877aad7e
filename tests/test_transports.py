"""The reference server over its real transports, in both protocol eras (spec/sessions.md)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp_pd.reference import build_reference_server
from pdtest import http_in_process, http_subprocess, serve_params

pytestmark = pytest.mark.anyio
URI = "resource:///tool_descriptions"


async def pick_read_only_tool(client: Client) -> tuple[str, dict[str, Any]]:
    """A read-only tool and the arguments of its first example, learned the way a model would.

    The listing carries no annotations (I-5), so the hint is read from the fetched definitions.
    """
    names = [t.name for t in (await client.list_tools()).tools]
    body = json.loads((await client.read_resource(f"{URI}?tools={','.join(names)}")).contents[0].text)  # type: ignore[union-attr]
    name = next(n for n in names if body[n].get("annotations", {}).get("readOnlyHint") is True)
    return name, body[name]["examples"][0]["input"]


async def assert_fetch_then_call(client: Client) -> None:
    name = "list_projects"  # read-only in tool_descriptions/list_projects.json
    assert name in {t.name for t in (await client.list_tools()).tools}
    refused = await client.call_tool(name, {})
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED"
    body = json.loads((await client.read_resource(f"{URI}?tools={name}")).contents[0].text)  # type: ignore[union-attr]
    assert body[name]["annotations"]["readOnlyHint"] is True
    args = body[name]["examples"][0]["input"]
    for _ in range(3):
        result = await client.call_tool(name, args)
        assert not result.is_error, result.content


@pytest.mark.req("PD-5.2-01", "PD-5.1-01", "PD-5.1-02", "PD-5.1-03")
@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_stdio_default_and_legacy_clients(mode: str, version: str) -> None:
    async with Client(serve_params(), mode=mode, cache=None) as client:  # type: ignore[arg-type]
        assert client.protocol_version == version
        await assert_fetch_then_call(client)


@pytest.mark.req("PD-5.2-01", "PD-5.1-03")
async def test_http_default_client_is_steered_to_a_session() -> None:
    with http_subprocess() as url:
        async with Client(url, cache=None) as client:
            # server/discover is refused on sessionless HTTP, so the default client falls back to the handshake.
            assert client.protocol_version == "2025-11-25"
            await assert_fetch_then_call(client)


@pytest.mark.req("PD-5.1-04", "PD-5.2-02")
async def test_http_sessions_are_isolated() -> None:
    with http_subprocess() as url:
        async with Client(url, mode="legacy", cache=None) as first, Client(url, mode="legacy", cache=None) as second:
            name, args = await pick_read_only_tool(first)
            outcomes: dict[str, list[bool]] = {"first": [], "second": []}

            async def loop(label: str, client: Client) -> None:
                for _ in range(10):
                    outcomes[label].append(bool((await client.call_tool(name, args)).is_error))

            async with anyio.create_task_group() as tg:
                tg.start_soon(loop, "first", first)
                tg.start_soon(loop, "second", second)
        assert outcomes == {"first": [False] * 10, "second": [True] * 10}


@pytest.mark.req("PD-5.2-01")
async def test_http_pinned_sessionless_client_gets_session_required() -> None:
    with http_subprocess() as url:
        async with Client(url, mode="2026-07-28", cache=None) as client:
            name, args = await pick_read_only_tool(client)  # descriptions are still served
            result = await client.call_tool(name, args)
    assert result.is_error
    assert result.structured_content is not None
    error = result.structured_content["error"]
    assert error["code"] == "SESSION_REQUIRED"
    assert "mode='legacy'" in error["hint"]


async def test_http_pinned_sessionless_client_is_refused_by_describe_tools_not_granted() -> None:
    # Nothing can keep a grant for this client: describe_tools must not answer "described" and leave every call
    # to fail. It refuses, with why and how to fix it.
    with http_subprocess() as url:
        async with Client(url, mode="2026-07-28", cache=None) as client:
            result = await client.call_tool("describe_tools", {"tools": ["list_projects"]})
    assert result.is_error
    assert result.structured_content is not None
    error = result.structured_content["error"]
    assert error["code"] == "SESSION_REQUIRED"
    assert error["message"].startswith("Not described: list_projects.")
    assert "mode='legacy'" in error["hint"]


async def test_stateless_http_refuses_calls_explicitly() -> None:
    with http_subprocess("--stateless") as url:
        async with Client(url, cache=None) as client:
            name, args = await pick_read_only_tool(client)
            result = await client.call_tool(name, args)
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "SESSION_REQUIRED"


@pytest.mark.req("PD-5.2-03", "PD-10.3-02")
async def test_http_session_end_drops_grants() -> None:
    app, pd = build_reference_server(watch=False)
    from mcp_pd._extension import _lowlevel

    async with http_in_process(_lowlevel(app)) as url:
        async with Client(url, mode="legacy", cache=None) as client:
            await pick_read_only_tool(client)
            assert len(pd.grants) == 1
        for _ in range(100):  # the DELETE that closes the session is processed asynchronously
            if len(pd.grants) == 0:
                break
            await anyio.sleep(0.02)
        assert len(pd.grants) == 0


async def test_bad_input_over_http_keeps_the_server_serving() -> None:
    with http_subprocess() as url:
        async with Client(url, mode="legacy", cache=None) as client:
            hostile = ["../../etc/passwd", "a/b", "%00", "x" * 129, ",".join(f"t{i}" for i in range(5000))]
            codes = []
            for names in hostile:
                try:
                    body = json.loads(
                        (await client.read_resource(f"{URI}?tools={names}")).contents[0].text  # type: ignore[union-attr]
                    )
                    codes.append(next(iter(body.values()))["error"])
                except MCPError as exc:
                    codes.append(exc.error.data["error"]["code"])
            assert codes == [
                "Tool '../../etc/passwd' not found",
                "Tool 'a/b' not found",
                "INVALID_TOOL_NAME",
                "INVALID_TOOL_NAME",
                "URI_TOO_LONG",
            ]
            assert (await client.call_tool("x" * 10_000, {})).is_error
            await assert_fetch_then_call(client)


@pytest.mark.req("PD-10.3-01")
async def test_reads_without_a_session_are_rate_limited_by_address() -> None:
    with http_subprocess("--fetch-rate", "0.1", "--fetch-burst", "2") as url:
        async with Client(url, mode="2026-07-28", cache=None) as client:
            for _ in range(2):
                await client.read_resource(f"{URI}?tools=calculate")
            with pytest.raises(MCPError) as caught:
                await client.read_resource(f"{URI}?tools=calculate")
    assert caught.value.error.data["error"]["code"] == "RATE_LIMITED"


async def test_sessionless_reject_policy_keeps_2026_clients_and_says_why() -> None:
    with http_subprocess("--sessionless", "reject") as url:
        async with Client(url, cache=None) as client:
            assert client.protocol_version == "2026-07-28"
            name, args = await pick_read_only_tool(client)
            result = await client.call_tool(name, args)
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "SESSION_REQUIRED"
