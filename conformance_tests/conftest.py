"""pytest entry of the conformance suite: `pytest conformance_tests [--pd-stdio CMD | --pd-url URL]`.

Without either option it checks the reference server over stdio (`python -m mcp_pd serve`). The
suite runs once per pytest session; each check is one test, and the full report is printed at the end.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any

import anyio
import pytest
from mcp_pd_conformance import ERAS, Options, Report, Target, render, run_suite

REFERENCE = (sys.executable, "-m", "mcp_pd", "serve")
_REPORT = pytest.StashKey[Report]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-pd conformance")
    where = group.addoption
    where("--pd-stdio", metavar="COMMAND", help="server command line to check over stdio")
    where("--pd-url", metavar="URL", help="Streamable HTTP endpoint to check, e.g. http://127.0.0.1:8000/mcp")
    where("--pd-era", choices=(*ERAS, "both"), default="both", help="protocol era(s) (default both)")
    where("--pd-call-tool", metavar="NAME", help="the tool the suite may really invoke")
    where("--pd-args", metavar="JSON", help="arguments for --pd-call-tool")
    where("--pd-timeout", type=float, default=30.0, metavar="SECONDS", help="per request (default 30)")


def _options(config: pytest.Config) -> Options:
    stdio, url = config.getoption("--pd-stdio"), config.getoption("--pd-url")
    if stdio and url:
        raise pytest.UsageError("give --pd-stdio or --pd-url, not both")
    timeout = config.getoption("--pd-timeout")
    if url:
        target = Target(url=url, timeout=timeout)
    else:
        target = Target(stdio=tuple(shlex.split(stdio)) if stdio else REFERENCE, timeout=timeout)
    era = config.getoption("--pd-era")
    args: Any = config.getoption("--pd-args")
    call_args = json.loads(args) if args else None
    return Options(
        target,
        eras=ERAS if era == "both" else (era,),
        call_tool=config.getoption("--pd-call-tool"),
        call_args=call_args,
    )


@pytest.fixture(scope="session")
def pd_report(request: pytest.FixtureRequest) -> Report:
    """The suite's report for the server under test (run once)."""
    config = request.config
    if _REPORT not in config.stash:
        config.stash[_REPORT] = anyio.run(run_suite, _options(config))
    report = config.stash[_REPORT]
    if report.fatal is not None:
        pytest.fail(f"could not start or reach the server ({report.target}): {report.fatal}", pytrace=False)
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _REPORT in config.stash:
        terminalreporter.section("mcp-pd conformance report")
        terminalreporter.write(render(config.stash[_REPORT], verbosity=0))
