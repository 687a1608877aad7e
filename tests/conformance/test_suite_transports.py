"""The suite over Streamable HTTP and against the reference server, in both protocol eras."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_pd_conformance import Report, Status, render


def _failed(report: Report) -> set[str]:
    return {req for r in report.results if r.status is Status.FAILURE for req in r.requirements}


def _by_key(report: Report) -> dict[str, Status]:
    return {r.key: r.status for r in report.results}


@pytest.mark.req("PD-5.1-04", "PD-5.2-02", "PD-5.2-03")
def test_shared_grants_fail_isolation_over_http(http_reports: dict[str, Report], call_logs: Path) -> None:
    report = http_reports["global-grants"]
    failed = _failed(report)
    assert "PD-5.1-04" in failed, render(report)
    # A global grant also lets a later session and a sessionless client through: the same defect.
    # The grants scenario sees the other sessions' grants too (PD-5.1-02/PD-5.1-01 checks of scenario grants).
    assert failed <= {"PD-5.1-04", "PD-5.2-02", "PD-5.2-03", "PD-5.1-02", "PD-5.1-01"}, render(report)
    statuses = _by_key(report)
    for era in ("legacy", "2026-07-28"):
        assert statuses[f"isolation/other-session-refused[{era}]"] is Status.FAILURE
        assert statuses[f"authorization/unfetched-call-refused[{era}]"] is Status.SUCCESS
    assert report.exit_code == 1
    # Leaked grants would let an unfetched probe of a destructive tool run: the suite sees the leak and sends none.
    unsafe = next(r for r in report.results if r.id == "grants/unsafe-tools-gated")
    assert unsafe.status is Status.SKIPPED and "grants leak between sessions" in unsafe.message, unsafe.message
    assert "wipe_notes" not in (call_logs / "http-global-grants.jsonl").read_text()


@pytest.mark.req("PD-5.1-04", "PD-5.1-02")
def test_shared_grants_are_not_hidden_when_hints_come_from_the_definitions(http_reports: dict[str, Report]) -> None:
    """Hints read in the discovery session let a leaky server's probe through: a failure that names both causes
    and the way to tell them apart; with --call-tool the same server fails exactly on isolation."""
    report = http_reports["bare-global-grants"]
    assert _failed(report) == {"PD-5.1-02", "PD-2-03"}, render(report)
    refused = next(r for r in report.results if r.key == "authorization/unfetched-call-refused[legacy]")
    assert "grants leak between sessions (PD-5.1-04)" in refused.message and "--call-tool" in refused.message
    named = http_reports["bare-global-grants --call-tool"]
    assert "PD-5.1-04" in _failed(named), render(named)
    assert _failed(named) <= {"PD-5.1-04", "PD-5.2-02", "PD-5.2-03", "PD-5.1-02", "PD-5.1-01", "PD-2-03"}, render(named)
    statuses = _by_key(named)
    assert statuses["authorization/unfetched-call-refused[legacy]"] is Status.SUCCESS
    assert statuses["isolation/other-session-refused[legacy]"] is Status.FAILURE


@pytest.mark.req("PD-5.1-03")
def test_forgetful_grants_fail_persistence_over_http(http_reports: dict[str, Report]) -> None:
    report = http_reports["forgetful"]
    assert _failed(report) == {"PD-5.1-03"}, render(report)


@pytest.mark.req("PD-5.1-02", "PD-2-03")
def test_ungated_calls_fail_over_http_in_every_era(http_reports: dict[str, Report]) -> None:
    report = http_reports["ungated"]
    assert _failed(report) == {"PD-5.1-02", "PD-2-03"}, render(report)
    statuses = _by_key(report)
    assert statuses["sessionless/unfetched-call-refused"] is Status.FAILURE
    for era in ("legacy", "2026-07-28"):
        assert statuses[f"authorization/unfetched-call-refused[{era}]"] is Status.FAILURE


@pytest.mark.req("PD-5.2-01", "PD-5.1-01", "PD-5.1-02")
@pytest.mark.parametrize("server", ["good", "reference"])
def test_correct_servers_pass_over_http_in_both_eras(server: str, http_reports: dict[str, Report]) -> None:
    report = http_reports[server]
    assert report.exit_code == 0, render(report)
    assert not [r for r in report.results if r.status is Status.FAILURE], render(report)
    # Over HTTP the default client is steered to the handshake; the 2026-07-28 era is exercised by a client pinned to
    # it (issue 42: never the handshake again under the label [2026-07-28]), which gets an explicit refusal.
    assert [(e.era, e.mode, e.negotiated) for e in report.eras] == [
        ("legacy", "legacy", "2025-11-25"),
        ("2026-07-28", "2026-07-28", "2026-07-28"),
    ], render(report)
    assert all(c.exercised for c in report.coverage), render(report)
    assert "a client pinned to 2026-07-28 was answered" in render(report)
    fetch_then_call = next(r for r in report.results if r.id == "sessionless/fetch-then-call")
    assert fetch_then_call.status is Status.SUCCESS
    assert "SESSION_REQUIRED" in fetch_then_call.message
    # What needs a session in 2026-07-28 is skipped, saying why; the handshake era runs it all.
    skipped = [r for r in report.results if r.status is Status.SKIPPED]
    assert skipped and all(r.era == "2026-07-28" and "SESSION_REQUIRED" in r.message for r in skipped), render(report)
    assert not [r for r in report.results if r.era == "legacy" and r.status is Status.SKIPPED], render(report)


@pytest.mark.req("PD-2-01", "PD-2-02", "PD-2-03", "PD-4.3-04", "PD-5.1-04", "PD-5.2-03")
def test_reference_server_passes_over_stdio_in_both_eras(reference_reports: dict[str, Report]) -> None:
    report = reference_reports["reference"]
    assert report.exit_code == 0, render(report)
    assert not [r for r in report.results if r.status in (Status.FAILURE, Status.SKIPPED)], render(report)
    assert [(e.era, e.negotiated) for e in report.eras] == [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")]
    # The listing carries no annotations (I-5): the read-only probe comes from the fetched definitions.
    assert any("(readOnlyHint=true in its fetched definition" in n for n in report.notes), report.notes


def test_simulated_catalog_passes_with_an_explicit_tool(reference_reports: dict[str, Report]) -> None:
    """A real catalog without readOnly annotations: --call-tool names the tool the suite may invoke."""
    report = reference_reports["simulation"]
    assert report.exit_code == 0, render(report)
    assert "Tool invoked by the suite: read_graph {} (--call-tool with --args)." in report.notes
    # The catalog ships no examples or error guidance: SHOULD warnings, not failures.
    warned = {r.id for r in report.results if r.status is Status.WARNING}
    assert warned == {"resource-read/examples", "resource-read/error-guidance"}, render(report)


@pytest.mark.req("PD-3.1-01")
def test_a_paginated_tools_list_is_followed_everywhere(reference_reports: dict[str, Report]) -> None:
    """With tools/list in pages of 4, the suite sees the whole catalog (and passes) as without pages."""
    paged, whole = reference_reports["paged"], reference_reports["reference"]
    assert paged.exit_code == 0, render(paged)

    def listed(report: Report) -> str:
        return next(r.message for r in report.results if r.id == "tools-list/listed")

    assert listed(paged) == listed(whole)
    pagination = next(r for r in paged.results if r.id == "tools-list/pagination")
    assert pagination.status is Status.SUCCESS
