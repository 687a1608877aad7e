"""The official MCP conformance harness (`@modelcontextprotocol/conformance`, its server scenarios) run against the
npm `everything` server over HTTP, once direct and once through the gateway in eager mode: every scenario that
passes direct must pass through the gateway. Most scenarios call tools of the harness's own test server, which
`everything` does not have, so they fail on both sides alike; the comparison is what this test holds."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from gateway.gwtest import MARK, gateway_params
from pdtest import _wait_for_port, free_port, stop_process

pytestmark = pytest.mark.slow

_SUMMARY = re.compile(r"^([✓✗]) ([\w-]+): (\d+) passed, (\d+) failed", re.MULTILINE)


@contextmanager
def _serving(command: list[str], port: int, log: Path, env: dict[str, str]) -> Iterator[str]:
    with log.open("wb") as err:
        proc = subprocess.Popen(command, stdout=err, stderr=err, env=env)
        try:
            _wait_for_port(port, proc)
            yield f"http://localhost:{port}/mcp"
        finally:
            stop_process(proc)


def _harness(npm: dict[str, Path], url: str) -> dict[str, bool]:
    harness = npm["conformance"]
    done = subprocess.run(
        ["node", str(harness), "server", "--url", url], capture_output=True, text=True, timeout=280, check=False
    )
    results = {m[2]: m[1] == "✓" for m in _SUMMARY.finditer(done.stdout + done.stderr)}
    assert len(results) >= 25, done.stdout[-3000:] + done.stderr[-2000:]
    return results


@pytest.mark.req("PDX-CARRY-01", "PDX-CARRY-02")
def test_scenarios_that_pass_direct_pass_through_the_gateway(tmp_path: Path, npm: dict[str, Path], mark: str) -> None:
    env = {**os.environ, MARK: mark}
    everything = str(npm["everything"])
    direct_port, gateway_port = free_port(), free_port()
    with _serving(
        ["node", everything, "streamableHttp"], direct_port, tmp_path / "direct.log", {**env, "PORT": str(direct_port)}
    ) as url:
        direct = _harness(npm, url)
    params = gateway_params(
        "--upstream-stdio", f"everything=node {everything}", "--mode", "eager", "--transport", "http",
        "--port", str(gateway_port),
    )  # fmt: skip
    with _serving([params.command, *params.args], gateway_port, tmp_path / "gateway.log", env) as url:
        through = _harness(npm, url)
    passed_direct = {name for name, ok in direct.items() if ok}
    lost = sorted(name for name in passed_direct if not through.get(name))
    assert not lost, f"pass direct, fail through the gateway: {lost}"
    # What this run found, for the record (the README quotes these figures).
    print(
        f"official harness: {len(passed_direct)} of {len(direct)} scenarios pass direct, "
        f"{sum(through.values())} of {len(through)} through the gateway"
    )
