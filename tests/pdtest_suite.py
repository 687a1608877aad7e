"""Running the conformance suite from tests: several runs at once, and what a report says by status."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import anyio
from mcp_pd_conformance import Options, Report, Status, run_suite

__all__ = ["keys", "run_many", "run_options"]


def run_many(jobs: Mapping[str, Callable[[], Awaitable[Report]]], limit: int = 3) -> dict[str, Report]:
    """Run suite jobs concurrently, at most `limit` at a time (each starts its own server processes)."""
    reports: dict[str, Report] = {}

    async def main() -> None:
        gate = anyio.Semaphore(limit)

        async def one(name: str, job: Callable[[], Awaitable[Report]]) -> None:
            async with gate:
                reports[name] = await job()

        async with anyio.create_task_group() as tg:
            for name, job in jobs.items():
                tg.start_soon(one, name, job)

    anyio.run(main)
    return reports


def run_options(options: Mapping[str, Options], limit: int = 4) -> dict[str, Report]:
    """`run_suite` for each of `options`, at most `limit` at a time."""
    return run_many({name: (lambda option=option: run_suite(option)) for name, option in options.items()}, limit)


def keys(report: Report, status: Status) -> set[str]:
    """The keys (check and era) of the report's results with `status`."""
    return {r.key for r in report.results if r.status is status}
