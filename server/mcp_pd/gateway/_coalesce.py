"""Work that any number of notices ask for, done a bounded number of times: an upstream's
`notifications/tools/list_changed` asks for a re-listing (and, when the listing changed, an announcement to every
connected client), and an upstream may send thousands of them at once.

`Coalesced(work)`: `request()` asks for `work` to run once more after now. At most one run at a time and one more
pending, whatever the number of requests (those arriving while one is pending are served by it), and runs start at
least `interval` seconds apart: a burst of 2000 notices costs two runs, a steady flood one run per interval. No
request is lost: a run always starts after the last request that came in.
Knows nothing about MCP, upstreams or clients.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
from anyio.abc import TaskGroup

__all__ = ["INTERVAL", "Coalesced"]

logger = logging.getLogger("mcp_pd.gateway")

INTERVAL: Final = 0.5  # seconds between two runs' starts


class Coalesced:
    """`work` run after requests, one run at a time, at least `interval` seconds apart (see the module docstring)."""

    def __init__(self, work: Callable[[], Awaitable[None]], what: str, *, interval: float = INTERVAL) -> None:
        self._work = work
        self._what = what  # for the log: "re-listing upstream 'x'"
        self._interval = interval
        self._pending = False
        self._running = False
        self._last = -math.inf
        self.runs = 0
        self.requests = 0

    def request(self, task_group: TaskGroup | None) -> None:
        """Ask for one more run after now (started in `task_group` when none is under way)."""
        self.requests += 1
        if self._pending:
            return  # the run already asked for starts after this request: it covers it
        if not self._running:
            if task_group is None:
                return  # nothing runs (the pool is not open): nothing is left pending either
            self._running = True
            task_group.start_soon(self._run, name=self._what)
        self._pending = True

    async def _run(self) -> None:
        try:
            while self._pending:
                await anyio.sleep(max(0.0, self._last + self._interval - anyio.current_time()))
                self._pending = False  # requests from here on ask for another run
                self._last = anyio.current_time()
                self.runs += 1
                try:
                    await self._work()
                except Exception:  # one failed run must not stop the next
                    logger.exception("%s failed", self._what)
        finally:
            self._running = False
