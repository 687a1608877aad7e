"""A FastMCP upstream's version selector behind `mcp-pd proxy` (issue 39.2, I-42): the gateway's gate refuses a call
that selects a version nobody described, on the stdio lane, on the SDK path (`--no-lane`) and over HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from gateway.gwtest import ROOT, describe, gateway_params, http_client, http_gateway, stdio, write_config
from mcp import Client

pytestmark = pytest.mark.anyio
APP = ROOT / "tests" / "fastmcp_versions_app.py"
V1: dict[str, Any] = {"fastmcp": {"version": "1.0"}}


async def _call(client: Client, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> dict[str, Any]:
    params = types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta)  # type: ignore[call-arg]
    result = await client.session.send_request(types.CallToolRequest(params=params), types.CallToolResult)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _attack(client: Client, log: Path) -> None:
    described = (await describe(client, "notes"))["notes"]
    assert described["annotations"] == {"readOnlyHint": True}
    for _ in range(2):  # the second would be the lane's, had the first taught it who the client is
        refused = await _call(client, "notes", {"note_id": 1}, V1)
        assert refused.get("isError"), refused
        error = json.loads(refused["content"][0]["text"])["error"]
        assert error["code"] == "IMPLEMENTATION_NOT_DESCRIBED" and error["described"] == "2.0", error
        ok = await _call(client, "notes", {"query": "milk"}, {"fastmcp": {"version": "2.0"}})
        assert not ok.get("isError"), ok
    ran = [json.loads(line)["version"] for line in log.read_text().splitlines()]
    assert ran == ["2.0", "2.0"], ran  # v1 (destructive) never ran


@pytest.mark.parametrize("lane", [True, False])
@pytest.mark.req("PDX-FASTMCP-02")
async def test_the_gateway_refuses_an_undescribed_version_over_stdio(tmp_path: Path, mark: str, lane: bool) -> None:
    log = tmp_path / "ran.jsonl"
    upstream = stdio(sys.executable, str(APP), "--call-log", str(log), mark=mark)
    config = write_config(tmp_path / "servers.json", {"versioned": upstream})
    params = gateway_params("--config", str(config), *([] if lane else ["--no-lane"]))
    async with Client(params, mode="legacy", cache=None) as client:
        await _attack(client, log)


@pytest.mark.req("PDX-FASTMCP-02")
async def test_the_gateway_refuses_an_undescribed_version_over_http(tmp_path: Path, mark: str) -> None:
    log = tmp_path / "ran.jsonl"
    upstream = stdio(sys.executable, str(APP), "--call-log", str(log), mark=mark)
    config = write_config(tmp_path / "servers.json", {"versioned": upstream})
    async with http_gateway(config, tmp_path / "gateway.log") as url, http_client(url, mode="legacy") as client:
        await _attack(client, log)
