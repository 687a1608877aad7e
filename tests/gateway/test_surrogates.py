"""An upstream's lone surrogate (issue 39: nothing an upstream sends makes the gateway fail): JSON may carry
"\\ud800" alone, which has no UTF-8, so the SDK's transports cannot write it. Over stdio it ended the gateway; over
HTTP the client's stream ended without an answer. The gateway reads it as U+FFFD and answers, in both transports.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gateway.gwtest import HERE, describe, gateway_params, http_client, http_gateway, stdio, write_config
from mcp import Client
from mcp.client.stdio import stdio_client

SERVER = HERE / "surrogate_server.py"


async def _answers_twice(client: Client) -> None:
    await describe(client, "lone")
    for _ in range(2):  # the second call: the gateway is still there
        result = await client.call_tool("lone", {})
        assert not result.is_error
        assert result.content[0].text == "a\ufffdb"  # type: ignore[union-attr]


@pytest.mark.req("PDX-UPSTREAM-04")
@pytest.mark.anyio
async def test_a_lone_surrogate_from_an_upstream_reaches_a_stdio_client_as_u_fffd(tmp_path: Path, mark: str) -> None:
    config = write_config(tmp_path / "servers.json", {"raw": stdio(sys.executable, str(SERVER), mark=mark)})
    with (tmp_path / "gateway.log").open("w") as errlog:
        params = gateway_params("--config", str(config))
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            await _answers_twice(client)
    assert "Traceback" not in (tmp_path / "gateway.log").read_text()


@pytest.mark.req("PDX-UPSTREAM-04")
@pytest.mark.anyio
async def test_a_lone_surrogate_from_an_upstream_reaches_an_http_client_as_u_fffd(tmp_path: Path, mark: str) -> None:
    config = write_config(tmp_path / "servers.json", {"raw": stdio(sys.executable, str(SERVER), mark=mark)})
    async with http_gateway(config, tmp_path / "gateway.log") as url, http_client(url) as client:
        await _answers_twice(client)
    assert "Traceback" not in (tmp_path / "gateway.log").read_text()
