"""Issue 33, kinds 3, 6 and 7, and the isolation diagnosis: what the suite compares across a server's traffic.

Each `traffic-*` control of pdconf_controls.py is `good` with one behaviour changed; the suite must fail it on
exactly the check that judges that behaviour (over stdio, and over HTTP in both eras), while `good` and the
reference server pass those checks. `traffic-validates-first` checks arguments before its gate: the suite fails
its gate order, and must not blame its (correct) session isolation for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_pd_conformance import Report, Status, render

NEW_CHECKS = ("grants/survive-refusals", "resource-listing/capability-declared", "tools-list/served-tools-listed")
# The one check each control must fail, and nothing else may.
BREAKS = {
    "traffic-refusals-wipe": "grants/survive-refusals",
    "traffic-undeclared-resources": "resource-listing/capability-declared",
    "traffic-unlisted-tool": "tools-list/served-tools-listed",
}
ISOLATION = ("isolation/other-session-refused", "isolation/own-session-unaffected", "session-end/new-session-refused")
# What a gate behind argument validation fails (the unfetched probe is sent with no arguments), and nothing else.
GATE_ORDER = frozenset(
    {"authorization/unfetched-call-refused", "authorization/error-document", "grants/unsafe-tools-gated"}
)


def _ids(report: Report, status: Status) -> set[str]:
    return {r.id for r in report.results if r.status is status}


def _result(report: Report, key: str) -> Status:
    """The status of check `key` (`id[era]`, or an id): of its one result, or the worst of its per-era results."""
    statuses = [r.status for r in report.results if key in (r.key, r.id)]
    assert statuses, key
    if Status.SUCCESS in statuses:
        # An era where the check could not run (2026-07-28 over HTTP: a pinned client without a session, issue 42)
        # says so as INFO or SKIPPED; only a FAILURE or WARNING in some era outweighs a SUCCESS in another.
        statuses = [s for s in statuses if s not in (Status.INFO, Status.SKIPPED)]
    return next((s for s in statuses if s is not Status.SUCCESS), statuses[0])


@pytest.mark.req("PD-5.1-03", "PD-2-02", "PD-4.1-01", "PD-3.1-01", "PD-2-01")
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("defect", sorted(BREAKS))
def test_each_traffic_control_fails_exactly_its_check(
    defect: str, transport: str, traffic_reports: dict[str, Report]
) -> None:
    report = traffic_reports[defect if transport == "stdio" else f"http {defect}"]
    text = render(report)
    assert _ids(report, Status.FAILURE) == {BREAKS[defect]}, text
    assert report.exit_code == 1 and report.verdict.startswith("FAIL"), text
    failed = next(r for r in report.results if r.id == BREAKS[defect])
    assert failed.expected and failed.spec.hint, failed.key
    warned = [r for r in report.results if r.status is Status.WARNING]
    if defect == "traffic-unlisted-tool":
        # available_tools naming an unlisted tool is also what 6.3's checks see: those warnings, and no other.
        assert all(r.requirements == ("PD-6.3-01",) for r in warned), text
    else:
        assert not warned, text
    for check in NEW_CHECKS:
        if check != BREAKS[defect]:
            assert _result(report, check) is Status.SUCCESS, text


@pytest.mark.req("PD-5.1-03")
def test_every_refusal_that_clears_grants_is_named(traffic_reports: dict[str, Report]) -> None:
    """A read without a selection, a refused call of another tool and a read naming an unknown tool each cleared
    session H's grant; the check re-reads after each, so all three are named, not only the first. Each is called
    what it is: under I-4 the read naming an unknown tool succeeds, so none is called "a refusal"."""
    result = next(r for r in traffic_reports["traffic-refusals-wipe"].results if r.id == "grants/survive-refusals")
    for request in (
        "a read without a selection",
        "a refused call of word_count (unfetched)",
        "a read naming an unknown tool (pd_conformance_no_such_tool)",
    ):
        assert request in result.message, result.message
    assert "refusal" not in result.message, result.message
    assert "TOOL_DESCRIPTION_REQUIRED" in (result.received or ""), result.received


@pytest.mark.req("PD-2-02", "PD-4.1-01")
def test_undeclared_resources_capability_is_reported_with_what_was_served(traffic_reports: dict[str, Report]) -> None:
    result = next(
        r
        for r in traffic_reports["traffic-undeclared-resources"].results
        if r.id == "resource-listing/capability-declared"
    )
    assert 'no "resources"' in result.message and "resource:///tool_descriptions" in result.message, result.message
    assert '"tools"' not in result.message.split("declared:")[0], result.message  # tools are declared


@pytest.mark.req("PD-3.1-01")
def test_a_tool_dropped_by_paging_is_found_described_and_run(
    traffic_reports: dict[str, Report], call_logs: Path
) -> None:
    """list_notes is on no tools/list page, yet described; read-only by its own definition, the suite ran it."""
    for key, log in (("traffic-unlisted-tool", "traffic"), ("http traffic-unlisted-tool", "traffic-http")):
        result = next(r for r in traffic_reports[key].results if r.id == "tools-list/served-tools-listed")
        assert "list_notes is described by the resource and ran when called" in result.message, result.message
        ran = [
            json.loads(line)["tool"]
            for line in (call_logs / f"{log}-traffic-unlisted-tool.jsonl").read_text().splitlines()
        ]
        assert "list_notes" in ran and "wipe_notes" not in ran, ran


@pytest.mark.req("PD-5.1-04", "PD-5.2-02", "PD-5.2-03")
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_gate_behind_validation_is_not_blamed_on_isolation(
    transport: str, traffic_reports: dict[str, Report]
) -> None:
    """Session B's TOOL_DESCRIPTION_REQUIRED is the gate's refusal, although the argument-less probe drew
    INVALID_ARGUMENTS: isolation and session-end pass; only the gate order fails, with advice about the gate."""
    report = traffic_reports["traffic-validates-first" if transport == "stdio" else "http traffic-validates-first"]
    text = render(report)
    # Over HTTP the 2026-07-28 era is a client pinned to it (issue 42), which this control refuses without a session
    # (its argument-less probe draws INVALID_ARGUMENTS first): only the handshake era has sessions A, B and C.
    eras = ("legacy",)
    for era in eras:
        for check in ISOLATION:
            assert _result(report, f"{check}[{era}]") is Status.SUCCESS, text
        probe = next(r for r in report.results if r.key == f"authorization/unfetched-call-refused[{era}]")
        assert probe.status is Status.FAILURE and "INVALID_ARGUMENTS" in probe.message, text
    failed = _ids(report, Status.FAILURE)
    assert "authorization/unfetched-call-refused" in failed and failed <= GATE_ORDER, text
    assert "Key grants" not in text and "grants leak" not in text, text
    for check in NEW_CHECKS:
        assert _result(report, check) is Status.SUCCESS, text


def _passes_the_new_checks(name: str, report: Report, *, warnings: bool = False) -> None:
    text = f"{name}:\n{render(report)}"
    for check in NEW_CHECKS:
        assert _result(report, check) is Status.SUCCESS, text
    assert not _ids(report, Status.FAILURE) and report.exit_code == 0, text
    if not warnings:
        assert not _ids(report, Status.WARNING), text


# One fixture each (pytest-timeout counts a fixture's set-up in the first test that asks for it).
def test_correct_controls_pass_the_new_checks_over_stdio(stdio_reports: dict[str, Report]) -> None:
    for name in ("good", "catalog-good", "bare-listing"):
        _passes_the_new_checks(name, stdio_reports[name])


def test_reference_server_passes_the_new_checks_over_stdio(reference_reports: dict[str, Report]) -> None:
    """Both eras, tools/list in pages of 4, and a simulated real catalog (which has its SHOULD warnings)."""
    for name, report in reference_reports.items():
        _passes_the_new_checks(name, report, warnings=True)


def test_correct_servers_pass_the_new_checks_over_http(http_reports: dict[str, Report]) -> None:
    _passes_the_new_checks("good", http_reports["good"])
    _passes_the_new_checks("reference", http_reports["reference"], warnings=True)
