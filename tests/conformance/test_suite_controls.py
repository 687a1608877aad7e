"""Negative controls: each broken server fails the suite on the requirement it breaks, and only there."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mcp_pd_conformance import Report, Status, render


@dataclass(frozen=True)
class Expect:
    """`fails`: requirement IDs that must be among the failures; `allowed`: the only IDs that may fail."""

    fails: frozenset[str] = frozenset()
    allowed: frozenset[str] = frozenset()
    warns: frozenset[str] = frozenset()
    extra_skips: frozenset[str] = field(default_factory=frozenset)

    @property
    def exit_code(self) -> int:
        return 1 if self.fails else 0


def _e(fails: str = "", allowed: str = "", warns: str = "", skips: str = "") -> Expect:
    def ids(text: str) -> frozenset[str]:
        return frozenset(text.split())

    return Expect(ids(fails), ids(fails) | ids(allowed), ids(warns), ids(skips))


ISOLATION = "isolation/other-session-refused[legacy] isolation/own-session-unaffected[legacy] "
ISOLATION += "session-end/new-session-refused[legacy]"
EXPECTATIONS = {
    "good": _e(),
    "full-schemas": _e("PD-3.1-04 PD-3.1-01 PD-2-01"),
    "no-resource": _e("PD-4.1-01 PD-2-02 PD-3.2-01", skips="*"),
    "ignores-selection": _e("PD-4.4-02", warns="PD-6.3-01", skips="resource-read/exact-match"),
    "extra-tools": _e("PD-4.4-02"),
    "preamble": _e("PD-4.4-03"),
    "case-insensitive": _e("PD-4.3-03"),
    "no-missing-selection": _e("PD-4.3-04", skips="missing-selection/error-document"),
    "ungated": _e("PD-5.1-02 PD-2-03", skips=f"authorization/error-document[legacy] {ISOLATION}"),
    "wrong-error-code": _e("PD-5.1-02 PD-2-03 PD-6.2-01"),
    "jsonrpc-refusal": _e(warns="PD-5.1-02 PD-2-03"),
    "forgetful": _e("PD-5.1-03"),
    "no-unknown-entry": _e(warns="PD-6.3-01"),
    "bare-listing": _e(),
    "plain": _e("PD-4.1-01 PD-2-02 PD-3.2-01", allowed="PD-3.1-01 PD-3.1-04 PD-2-01", skips="*"),
}


def _ids(report: Report, status: Status) -> set[str]:
    return {req for r in report.results if r.status is status for req in r.requirements}


def _skipped(report: Report) -> set[str]:
    return {r.key for r in report.results if r.status is Status.SKIPPED}


# PD-5.1-04 is proven over HTTP (test_suite_transports.py): on stdio every session is its own process.
@pytest.mark.req(
    "PD-2-01",
    "PD-2-02",
    "PD-2-03",
    "PD-3.1-01",
    "PD-3.1-04",
    "PD-3.2-01",
    "PD-4.1-01",
    "PD-4.3-03",
    "PD-4.3-04",
    "PD-4.4-02",
    "PD-4.4-03",
    "PD-5.1-02",
    "PD-5.1-03",
    "PD-6.2-01",
    "PD-6.3-01",
)
@pytest.mark.parametrize("defect", sorted(EXPECTATIONS))
def test_control_fails_exactly_on_its_requirement(defect: str, stdio_reports: dict[str, Report]) -> None:
    report, expect = stdio_reports[defect], EXPECTATIONS[defect]
    text = render(report)
    failed = _ids(report, Status.FAILURE)
    assert expect.fails <= failed, text
    assert failed <= expect.allowed, text
    assert _ids(report, Status.WARNING) == set(expect.warns), text
    assert report.exit_code == expect.exit_code, text
    if "*" not in expect.extra_skips:
        # Every other check ran: nothing skipped beyond what the good server skips (the sessionless scenario).
        ran = {r.key for r in report.results}
        baseline = {k for k in _skipped(stdio_reports["good"]) if k in ran}
        assert _skipped(report) == baseline | set(expect.extra_skips), text
    for result in report.results:
        assert result.message, result.key
        if result.status in (Status.FAILURE, Status.WARNING):
            assert result.expected and result.spec.hint, result.key


def test_good_control_passes_every_check(stdio_reports: dict[str, Report]) -> None:
    report = stdio_reports["good"]
    statuses = {r.key: r.status for r in report.results}
    assert Status.FAILURE not in statuses.values() and Status.WARNING not in statuses.values(), render(report)
    skipped = {k for k, s in statuses.items() if s is Status.SKIPPED}
    assert skipped == {f"sessionless/{c}" for c in ("negotiated-version", "unfetched-call-refused", "fetch-then-call")}


def test_suite_never_invokes_a_destructive_tool(stdio_reports: dict[str, Report], call_logs: Path) -> None:
    """Only the readOnlyHint tool ever runs, even against a server that lets every call through."""
    assert stdio_reports  # the controls have run
    ran = set()
    for log in call_logs.glob("stdio-*.jsonl"):
        ran |= {json.loads(line)["tool"] for line in log.read_text().splitlines()}
    assert ran == {"add"}
    ungated = (call_logs / "stdio-ungated.jsonl").read_text().splitlines()
    assert ungated, "against the ungated control the unfetched call really ran"


def test_read_only_hints_are_learned_from_definitions_when_the_listing_has_none(
    stdio_reports: dict[str, Report], call_logs: Path
) -> None:
    report = stdio_reports["bare-listing"]
    note = 'Tool invoked by the suite: add {"a":2,"b":3} (readOnlyHint=true in its fetched definition'
    assert any(n.startswith(note) for n in report.notes), report.notes
    ran = [json.loads(line)["tool"] for line in (call_logs / "stdio-bare-listing.jsonl").read_text().splitlines()]
    assert ran and set(ran) == {"add"}


def test_a_server_without_the_extension_gets_a_plain_explanation(stdio_reports: dict[str, Report]) -> None:
    report = stdio_reports["plain"]
    text = render(report)
    first_lines = "\n".join(text.splitlines()[:6])
    assert "this server does not implement progressive disclosure (spec 4.1)" in first_lines, text
    listed = next(r for r in report.results if r.id == "resource-listing/listed")
    assert listed.status is Status.FAILURE
    assert "Method not found" in (listed.received or "")
    reasons = {r.message for r in report.results if r.status is Status.SKIPPED}
    assert all(any(w in m for w in ("progressive disclosure", "tool_descriptions", "--era")) for m in reasons), reasons
    assert text.rstrip().splitlines()[-1].startswith("VERDICT: FAIL (exit 1)")
