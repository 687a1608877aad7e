"""What the verdict says of the gate (issue 32): the suite shows the gate of every server it reaches without running a
side effect, and a run that could not show it never reads as a plain PASS (--strict fails it).

The controls are checked once per session (conftest.verdict_reports); each run's call log lists every tool that
really ran.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_pd_conformance import GATE_CLAIMS, GateProof, Report, Status, render

CONTROLS = Path(__file__).resolve().parent / "pdconf_controls.py"
REFUSED, AUTHORIZES = (claim for claim, _ in GATE_CLAIMS)


def _gate(report: Report) -> dict[str, GateProof]:
    return {proof.claim: proof for proof in report.gate}


def _ran(call_logs: Path, defect: str) -> list[dict[str, Any]]:
    log = call_logs / f"verdict-{defect}.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _last_line(report: Report) -> str:
    return render(report).rstrip().splitlines()[-1]


def _failed(report: Report) -> set[str]:
    return {req for r in report.results if r.status is Status.FAILURE for req in r.requirements}


@pytest.mark.parametrize(
    ("defect", "failed", "warned"),
    [
        ("never-refuses", {"PD-5.1-02", "PD-2-03"}, set()),
        ("never-refuses-lax", {"PD-5.1-02", "PD-2-03"}, set()),
        ("no-read-only", set(), set()),
        ("first-needs-arguments", set(), {"PD-3.2-03"}),
    ],
)
def test_each_control_fails_exactly_on_its_requirement(
    verdict_reports: dict[str, Report], defect: str, failed: set[str], warned: set[str]
) -> None:
    report = verdict_reports[defect]
    text = render(report)
    assert _failed(report) == failed, text
    assert {req for r in report.results if r.status is Status.WARNING for req in r.requirements} == warned, text
    assert report.exit_code == (1 if failed else 0), text


@pytest.mark.req("PD-5.1-02", "PD-2-03")
def test_a_server_that_never_refuses_fails_without_a_read_only_tool(
    verdict_reports: dict[str, Report], call_logs: Path
) -> None:
    report = verdict_reports["never-refuses"]
    text = render(report)
    assert report.exit_code == 1 and report.verdict == "FAIL", text
    assert _last_line(report).startswith("VERDICT: FAIL (exit 1): 1 MUST check(s) failed"), text
    probed = next(r for r in report.results if r.id == "grants/unsafe-tools-gated")
    assert probed.status is Status.FAILURE and "refused with INVALID_ARGUMENTS" in probed.message, text
    assert _gate(report)[REFUSED].state == "failed", text
    # Its tools check their arguments (as SDK tools do): the probe, with a required parameter left out, ran nothing.
    assert _ran(call_logs, "never-refuses") == []


@pytest.mark.req("PD-5.1-02")
def test_probes_stop_at_the_first_tool_a_server_lets_through(
    verdict_reports: dict[str, Report], call_logs: Path
) -> None:
    """With no read-only tool the probes are the only proof of the gate: sent one at a time, the least risky first,
    so a server that neither gates nor validates runs one tool at most (never the destructive one)."""
    report = verdict_reports["never-refuses-lax"]
    text = render(report)
    assert report.exit_code == 1, text
    probed = next(r for r in report.results if r.id == "grants/unsafe-tools-gated")
    assert probed.status is Status.FAILURE and "add {} ran unfetched" in probed.message, text
    assert "the other 3 were not probed" in probed.message, text
    assert _ran(call_logs, "never-refuses-lax") == [{"tool": "add", "arguments": {}}]


@pytest.mark.req("PD-5.1-02")
def test_a_correct_server_without_a_read_only_tool_is_not_a_plain_pass(
    verdict_reports: dict[str, Report], call_logs: Path
) -> None:
    report = verdict_reports["no-read-only"]
    text = render(report)
    assert report.exit_code == 0 and not report.failures() and not report.warnings(), text
    # The refusal was shown without running anything: every other tool called unfetched with arguments it rejects.
    gate = _gate(report)
    assert gate[REFUSED] == GateProof(REFUSED, "verified", "grants/unsafe-tools-gated"), text
    assert gate[AUTHORIZES].state == "not verified", text
    assert "no tool is annotated readOnlyHint=true" in gate[AUTHORIZES].reason, text
    assert "--call-tool NAME --args JSON" in gate[AUTHORIZES].reason, text
    assert _ran(call_logs, "no-read-only") == []
    last = _last_line(report)
    assert last.startswith("VERDICT: PASS, GATE NOT VERIFIED (exit 0): every MUST check that ran passed"), text
    assert "no call showed that a fetch authorizes the call" in last and "--strict fails this run" in last
    assert f"NOT VERIFIED a fetch authorizes the call: {gate[AUTHORIZES].reason}" in text
    as_json = report.to_json()
    assert as_json["verdict"] == "PASS, GATE NOT VERIFIED" and as_json["exit_code"] == 0
    assert [g["status"] for g in as_json["gate"]] == ["verified", "not verified"]
    strict = dataclasses.replace(report, strict=True)
    assert strict.exit_code == 1 and strict.verdict == "FAIL"
    expected = "VERDICT: FAIL (exit 1): --strict and the gate not verified (that a fetch authorizes the call)"
    assert _last_line(strict) == expected


def test_every_read_only_tool_is_tried_when_the_first_needs_arguments(
    verdict_reports: dict[str, Report], call_logs: Path
) -> None:
    """The gateway's case: the first read-only tool requires arguments and shows no example; another requires none."""
    report = verdict_reports["first-needs-arguments"]
    text = render(report)
    note = "Tool invoked by the suite: list_notes {} (readOnlyHint=true, called with {}: its schema requires nothing)"
    assert note + "." in report.notes, report.notes
    sessions = {r.key: r.status for r in report.results if r.scenario in ("authorization", "isolation", "session-end")}
    assert len(sessions) == 8 and set(sessions.values()) == {Status.SUCCESS}, text
    assert report.verdict == "PASS" and {p.state for p in report.gate} == {"verified"}, text
    assert _gate(report)[AUTHORIZES].check == "authorization/fetch-authorizes[legacy]"
    # Only read-only tools ran: list_notes for real, the others in the grant checks.
    assert {call["tool"] for call in _ran(call_logs, "first-needs-arguments")} <= {"add", "word_count", "list_notes"}


def test_strict_fails_a_run_that_could_not_show_the_gate() -> None:
    """The real command: --strict turns PASS, GATE NOT VERIFIED into exit 1; the JSON report says which half."""
    command = [sys.executable, str(CONTROLS), "no-read-only"]
    argv = ["--stdio", shlex.join(command), "--era", "legacy", "--only", "authorization,grants", "--strict"]
    run = subprocess.run(
        [sys.executable, "-m", "mcp_pd_conformance", *argv, "--json", "-", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(run.stdout)
    assert run.returncode == 1, run.stderr
    assert report["verdict"] == "FAIL" and report["summary"]["FAILURE"] == 0 and report["summary"]["WARNING"] == 0
    assert [(g["claim"], g["status"]) for g in report["gate"]] == [(REFUSED, "verified"), (AUTHORIZES, "not verified")]
    assert "VERDICT: FAIL (exit 1): --strict and the gate not verified" in run.stderr


def test_the_duration_is_wall_clock_from_the_command_start() -> None:
    """The reported duration counts the command's own start-up: on a busy machine that is seconds of imports, which a
    clock started by the run itself would leave out (a run that ends at once reported 0.0 s after seconds)."""
    # The process spends a known 1.5 s before the suite's modules are even imported (a stand-in for a slow start-up
    # that holds on any machine, however loaded): a clock started at import or by the run would not count it.
    held = 2.5
    launch = (
        f"import runpy, sys, time; time.sleep({held}); "
        "sys.argv = ['mcp-pd-check', '--stdio', '/nonexistent/server', '--json', '-', '-q']; "
        "runpy.run_module('mcp_pd_conformance', run_name='__main__')"
    )
    began = time.monotonic()
    run = subprocess.run([sys.executable, "-c", launch], capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - began
    assert run.returncode == 3, run.stderr
    duration = json.loads(run.stdout)["duration_s"]
    assert held <= duration <= elapsed, (duration, elapsed)
    assert re.search(r"Summary: .* in \d+\.\d s of wall clock\n", run.stderr), run.stderr
