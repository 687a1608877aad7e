"""Metric labels stay bounded whatever clients send (issue 31.9), on `mcp-pd serve` over HTTP with the real client.

Only served tool names become `tool` labels: an unknown name (however long) is counted under one label, `(other)`,
and so is an unknown name in a describe. The gateway's side is in tests/gateway/test_doors.py.
"""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import Client
from pdtest import http_subprocess
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.anyio

CALLS = 250
HUGE = 30_000  # characters per unknown name: 250 of them made /metrics 7.5 MB before labels were bounded
BOUND = 64 * 1024  # /metrics of the reference server after all this traffic (about 20 kB); 7.5 MB when unbounded


def families(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.mark.req("PDX-HTTP-04")
async def test_unknown_and_huge_names_are_folded_into_one_label() -> None:
    with http_subprocess() as url:
        async with Client(url, mode="legacy", cache=None) as client:

            async def unknown(i: int) -> None:
                refused = await client.call_tool(f"{i:04d}".ljust(HUGE, "x"), {})
                assert refused.is_error

            # Concurrently: an unknown name waits for the next re-listing (at most one a 0.25 s), shared by all.
            async with anyio.create_task_group() as tg:
                for i in range(CALLS):
                    tg.start_soon(unknown, i)
            for i in range(10):  # up to 64 names per describe: one served, the rest well-formed but unknown
                names = ["list_projects", *(f"nope_{i}_{j}_".ljust(120, "y") for j in range(63))]
                assert not (await client.call_tool("describe_tools", {"tools": names})).is_error
            assert not (await client.call_tool("list_projects", {})).is_error
        response = httpx2.get(url.removesuffix("/mcp") + "/metrics", timeout=30)
    assert response.status_code == 200
    assert len(response.content) < BOUND, len(response.content)
    samples = families(response.text)
    tools = {dict(labels).get("tool") for (_, labels) in samples} - {None}
    assert tools == {"(other)", "list_projects"}, sorted(t[:40] for t in tools if t)[:5]
    calls = "mcp_pd_tool_calls_total"
    assert samples[(calls, (("outcome", "refused"), ("tool", "(other)")))] == CALLS
    assert samples[(calls, (("outcome", "ok"), ("tool", "list_projects")))] == 1
    assert samples[("mcp_pd_tool_describes_total", (("tool", "list_projects"),))] == 10
    # Unknown names in a describe were refused one by one: nothing was described, not even under (other).
    assert ("mcp_pd_tool_describes_total", (("tool", "(other)"),)) not in samples
    assert samples[("mcp_pd_refusals_total", (("code", "TOOL_NOT_FOUND"),))] == CALLS
