"""`mcp-pd check`: options, exit codes, the human and JSON reports, --expected-failures, the pytest entry."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_pd_conformance import CHECKS, main

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONTROLS = HERE / "pdconf_controls.py"
STATIC = "tools-list,resource-listing,resource-read,missing-selection"
NOT_MCP = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    msg = json.loads(line)\n"
    "    if 'id' in msg:\n"
    "        err = {'code': -32601, 'message': 'Method not found'}\n"
    "        print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'error': err}), flush=True)\n"
)


def control(defect: str) -> str:
    return shlex.join([sys.executable, str(CONTROLS), defect])


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--help")
    assert code == 0
    for line in ("0  every MUST check that ran passed", "1  one or more MUST", "2  usage error", "3  the server"):
        assert line in out
    # What a run that could not show the gate reads as, and that --strict fails it.
    assert '"PASS, GATE NOT VERIFIED"' in out
    assert "--strict and a SHOULD check warned or the gate was not verified" in out


def test_list_checks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--list-checks")
    assert code == 0
    assert all(spec.id in out for spec in CHECKS)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--stdio", "x", "--url", "http://127.0.0.1:1/mcp"],
        ["--stdio", "x", "--only", "PD-99-01"],
        ["--stdio", "x", "--skip", "no-such-scenario"],
        ["--stdio", "x", "--args", "{}"],
        ["--stdio", "x", "--call-tool", "t", "--args", "[1]"],
        ["--stdio", "x", "--call-tool", "t", "--args", "{not json"],
        ["--stdio", "x", "--era", "2024"],
        ["--stdio", "x", "--expected-failures", "/nonexistent/baseline.yml"],
        ["--url", "ftp://example.com"],
        ["--stdio", "  "],
        ["--stdio", "x", "--grant-hold", "-1"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = check(capsys, *argv)
    assert code == 2, (out, err)
    assert err.strip()


def test_a_server_that_cannot_start_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--stdio", "/nonexistent/server --flag", "-q")
    assert code == 3
    assert "VERDICT: ERROR (exit 3): could not start or reach the server: could not start '/nonexistent/server'" in out


def test_an_unreachable_url_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, out, _ = check(capsys, "--url", f"http://127.0.0.1:{port}/mcp", "-q")
    assert code == 3
    assert "could not connect to" in out


def test_a_process_that_is_not_an_mcp_server_fails_with_an_explanation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--stdio", shlex.join([sys.executable, "-c", NOT_MCP]), "--era", "legacy")
    assert code == 1
    assert "FAILURE  connection/handshake" in out
    assert "is this an MCP server?" in out
    assert "Method not found" in out


def test_json_report_and_quiet_human_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "report.json"
    code, out, err = check(
        capsys, "--stdio", control("no-unknown-entry"), "--only", STATIC, "--json", str(path), "-q", "--no-color"
    )
    assert code == 0, out
    assert err == ""  # -q: no progress
    assert "\033[" not in out
    assert "WARNING  resource-read/unknown-tool-entry" in out and "SUCCESS  " not in out
    assert "fix:" in out and "expected:" in out and "sent:" in out and "received:" in out
    report = json.loads(path.read_text())
    assert report["verdict"] == "PASS" and report["exit_code"] == 0
    assert report["target"].startswith("stdio: ")
    assert {c["scenario"] for c in report["checks"]} == set(STATIC.split(","))
    warning = next(c for c in report["checks"] if c["status"] == "WARNING")
    assert warning["requirements"] == ["PD-6.3-01"] and warning["levels"] == {"PD-6.3-01": "SHOULD"}
    assert warning["section"] == "6.3" and warning["sent"].startswith("resources/read ")
    assert sum(report["summary"].values()) == len(report["checks"])


def test_json_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = check(capsys, "--stdio", control("good"), "--only", "tools-list", "--json", "-", "-q")
    assert code == 0
    # Every tools-list check but the INFO ones passes on `good` (10 before issue 33 added its tools-list checks).
    passing = [c for c in CHECKS if c.scenario == "tools-list" and c.severity != "INFO"]
    assert json.loads(out)["summary"]["SUCCESS"] == len(passing)
    assert "VERDICT: PASS" in err


def test_strict_makes_warnings_fail_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    """A SHOULD (or one of our interpretations) only warns; --strict fails the run on it."""
    argv = ("--stdio", control("no-unknown-entry"), "--only", "resource-read", "-q", "--no-color")
    code, out, _ = check(capsys, *argv)
    assert code == 0 and "WARNING  resource-read/unknown-tool-entry" in out, out
    code, out, _ = check(capsys, *argv, "--strict", "--json", "-")
    assert code == 1
    report = json.loads(out)
    assert report["strict"] is True and report["verdict"] == "FAIL" and report["exit_code"] == 1
    code, out, _ = check(capsys, *argv, "--strict")
    assert code == 1 and out.rstrip().splitlines()[-1] == "VERDICT: FAIL (exit 1): --strict and 1 WARNING(s)", out


BASELINE = """\
# Known gaps of this server, as in the official MCP conformance harness.
server:
  - PD-4.4-03            # the response still carries a preamble
"""


def test_expected_failures_and_stale_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "baseline.yml"
    baseline.write_text(BASELINE)
    report_path = tmp_path / "report.json"
    argv = ["--only", "resource-read", "--expected-failures", str(baseline), "--json", str(report_path), "-q"]

    code, out, _ = check(capsys, "--stdio", control("preamble"), *argv)
    assert code == 0, out
    assert "FAILURE (expected)" in out and "Expected failures (in the baseline): PD-4.4-03" in out
    report = json.loads(report_path.read_text())
    assert report["expected_failures"] == {"expected": ["PD-4.4-03"], "stale": [], "unused": []}
    assert [c["id"] for c in report["checks"] if c["expected_failure"]] == ["resource-read/no-preamble"]

    code, out, _ = check(capsys, "--stdio", control("good"), *argv)
    assert code == 1, out
    assert "STALE baseline entries (now passing; remove them from the file): PD-4.4-03" in out
    assert "VERDICT: FAIL (exit 1): stale expected failures (now passing): PD-4.4-03" in out


def test_baseline_entries_that_match_nothing_that_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "baseline.yml"
    baseline.write_text("- sessionless\n- authorization/persists[2026-07-28]\n")
    code, out, _ = check(
        capsys, "--stdio", control("good"), "--only", "tools-list", "--expected-failures", str(baseline), "-q"
    )
    assert code == 0, out
    assert "Baseline entries matching no check that ran: sessionless, authorization/persists[2026-07-28]" in out
    baseline.write_text("server:\n  - PD-99-01\n")
    code, _, err = check(capsys, "--stdio", control("good"), "--expected-failures", str(baseline))
    assert code == 2 and "PD-99-01" in err


def test_a_named_tool_that_does_not_exist_is_never_called(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(
        capsys, "--stdio", control("good"), "--era", "legacy", "--only", "authorization", "--call-tool", "nope"
    )
    assert code == 0, out
    assert "Note: No tool was invoked: --call-tool nope is not in tools/list." in out
    assert "SKIPPED  authorization/unfetched-call-refused[legacy]" in out


def test_mcp_pd_check_delegates_to_the_suite() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "check", "--list-checks"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "session-end/new-session-refused" in done.stdout


@pytest.mark.parametrize(("defect", "returncode"), [("good", 0), ("ungated", 1)])
def test_pytest_entry(defect: str, returncode: int) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance_tests",
            "-q",
            "-p",
            "no:cacheprovider",
            "--pd-stdio",
            control(defect),
            "--pd-era",
            "legacy",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == returncode, done.stdout + done.stderr
    assert "mcp-pd conformance report" in done.stdout
    if returncode:
        assert "FAILED conformance_tests/test_conformance.py::test_check[authorization/unfetched-call-refused]" in (
            done.stdout
        )
