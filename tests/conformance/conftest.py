"""Fixtures for the tests of the conformance suite itself.

Each server is checked once per test session and the reports are shared: the stdio controls a few
at a time (legacy era), the HTTP servers in both eras. Servers run as real subprocesses.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import pytest
from mcp_pd_conformance import ERAS, Options, Report, Target, run_suite
from pdtest import CATALOGS, http_command

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONTROLS = HERE / "pdconf_controls.py"
MEMORY_CATALOG = CATALOGS / "mcp-server-memory"
STDIO_CONTROLS = (
    "good",
    "full-schemas",
    "no-resource",
    "ignores-selection",
    "extra-tools",
    "preamble",
    "case-insensitive",
    "no-missing-selection",
    "ungated",
    "wrong-error-code",
    "jsonrpc-refusal",
    "forgetful",
    "no-unknown-entry",
    "bare-listing",
    "plain",
)
HTTP_CONTROLS = ("good", "global-grants", "bare-global-grants", "forgetful", "ungated")
SESSION_CONTROLS = frozenset({"good", "bare-listing", "ungated", "wrong-error-code", "jsonrpc-refusal", "forgetful"})


def control_argv(defect: str, *extra: str) -> tuple[str, ...]:
    return (sys.executable, str(CONTROLS), defect, *extra)


def reference_argv(*extra: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "mcp_pd", "serve", "--no-watch", *extra)


@contextmanager
def http_server(argv: tuple[str, ...]) -> Iterator[str]:
    """Start `argv` + a port on 127.0.0.1 as a subprocess; yield its /mcp URL."""
    with http_command(argv) as url:
        yield url


def run_many(jobs: dict[str, Callable[[], Awaitable[Report]]], limit: int = 3) -> dict[str, Report]:
    """Run suite jobs concurrently, at most `limit` at a time."""
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


def _job(options: Options) -> Callable[[], Awaitable[Report]]:
    return lambda: run_suite(options)


@pytest.fixture(scope="session")
def call_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory of per-control files listing every tool that really ran."""
    return tmp_path_factory.mktemp("calls")


@pytest.fixture(scope="session")
def stdio_reports(call_logs: Path) -> dict[str, Report]:
    """Every stdio control, checked in the legacy era."""
    jobs = {
        defect: _job(
            Options(
                Target(stdio=control_argv(defect, "--call-log", str(call_logs / f"stdio-{defect}.jsonl"))),
                eras=("legacy",),
                # Defects of the listing and the resource: the multi-session scenarios add nothing but time.
                skip=() if defect in SESSION_CONTROLS else ("isolation", "session-end"),
            )
        )
        for defect in STDIO_CONTROLS
    }
    return run_many(jobs)


@pytest.fixture(scope="session")
def http_reports(call_logs: Path) -> dict[str, Report]:
    """A few controls and the reference server over Streamable HTTP, in both eras."""
    with ExitStack() as stack:
        jobs = {}
        for defect in HTTP_CONTROLS:
            log = str(call_logs / f"http-{defect}.jsonl")
            url = stack.enter_context(http_server(control_argv(defect, "--call-log", log, "--http")))
            jobs[defect] = _job(Options(Target(url=url), eras=ERAS))
            if defect == "bare-global-grants":
                # Named explicitly, the probe is never read before the era sessions: the leak shows as a leak.
                # Its own server process: the grants of this control are global.
                log = str(call_logs / f"http-{defect}-named.jsonl")
                url = stack.enter_context(http_server(control_argv(defect, "--call-log", log, "--http")))
                named = Options(Target(url=url), eras=ERAS, call_tool="add", call_args={"a": 2, "b": 3})
                jobs[f"{defect} --call-tool"] = _job(named)
        url = stack.enter_context(http_server(reference_argv("--transport", "http", "--port")))
        jobs["reference"] = _job(Options(Target(url=url), eras=ERAS))
        return run_many(jobs)


@pytest.fixture(scope="session")
def reference_reports() -> dict[str, Report]:
    """The reference server over stdio in both eras, and a simulated real catalog."""
    jobs = {
        "reference": _job(Options(Target(stdio=reference_argv()), eras=ERAS)),
        "simulation": _job(
            Options(
                Target(stdio=reference_argv("--simulate", "--descriptions", str(MEMORY_CATALOG))),
                eras=("legacy",),
                call_tool="read_graph",
                call_args={},
            )
        ),
    }
    return run_many(jobs)
