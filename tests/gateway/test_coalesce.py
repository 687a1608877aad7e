"""`Coalesced` on its own (issue 39.12): a burst of requests costs two runs, a steady flood one run per interval,
and no request is lost (a run always starts after the last one)."""

from __future__ import annotations

import anyio
import pytest
from mcp_pd.gateway._coalesce import Coalesced

pytestmark = pytest.mark.anyio


@pytest.mark.req("PDX-UPSTREAM-02")
async def test_a_burst_costs_two_runs_and_no_request_is_lost() -> None:
    seen: list[int] = []
    asked = [0]

    async def work() -> None:
        seen.append(asked[0])  # how many requests had come in when this run started
        await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        relists = Coalesced(work, "test", interval=0.2)
        for _ in range(2000):
            asked[0] += 1
            relists.request(tg)
        await anyio.sleep(0.01)
        asked[0] += 1
        relists.request(tg)  # during the first run: served by the second
        with anyio.fail_after(5):
            while relists.runs < 2 or relists._running:
                await anyio.sleep(0.01)
    assert relists.requests == 2001 and relists.runs == 2, seen
    assert seen[-1] == asked[0]  # the last run started after the last request


async def test_a_steady_flood_costs_one_run_per_interval() -> None:
    async def work() -> None:
        pass

    async with anyio.create_task_group() as tg:
        relists = Coalesced(work, "test", interval=0.2)
        with anyio.move_on_after(1.0):
            while True:
                relists.request(tg)
                await anyio.sleep(0.001)
        with anyio.fail_after(5):
            while relists._running:
                await anyio.sleep(0.01)
    assert relists.requests > 200 and 4 <= relists.runs <= 7, (relists.requests, relists.runs)
