"""`mcp-pd demo --prompt` (issue 40.7): an ad-hoc prompt has no check of its result, but a run in which the offline
planner gave up is a FAIL (exit 1), never a PASS; one it carried out still passes."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow]


def _demo(prompt: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "mcp_pd", "demo", "--prompt", prompt, "--no-ledger"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=240)


@pytest.mark.req("PDX-CLI-03")
def test_a_prompt_the_planner_gives_up_on_fails() -> None:
    done = _demo("Book me a flight to Mars")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL: the offline planner gave up: no tool in the list fits" in done.stdout, done.stdout
    assert "PASS" not in done.stdout and "0 of 1 task(s) passed." in done.stdout


@pytest.mark.req("PDX-CLI-03")
def test_a_prompt_the_planner_carries_out_passes() -> None:
    done = _demo("Calculate 2 ** 10 with the calculator")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"result": 1024' in done.stdout and "    PASS" in done.stdout
