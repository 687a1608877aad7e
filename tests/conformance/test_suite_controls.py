"""Negative controls: each broken server fails the suite on the requirement it breaks, and only there."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mcp_pd_conformance import Report, Severity, Status, render


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
# When the first unfetched call already runs, the rest of scenario grants has nothing to prove.
GRANTS_BLOCKED = " ".join(
    f"grants/{c}"
    for c in (
        "repeated-unfetched-refused",
        "refused-read-grants-nothing",
        "read-other-refused",
        "each-read-tool-authorized",
        "mixed-read-authorizes-known",
        "persist-through-session",
        "required-truthful",
        "unsafe-tools-gated",
        "survive-refusals",
        "overlapping-reads",
        "overlapping-sessions",
        "proxy-tool-gated",
    )
)
EXPECTATIONS = {
    "good": _e(),
    "full-schemas": _e("PD-3.1-04 PD-3.1-01 PD-2-01"),
    "no-resource": _e("PD-4.1-01 PD-2-02 PD-3.2-01", skips="*"),
    "ignores-selection": _e(
        "PD-4.4-02",
        warns="PD-6.3-01",
        skips="resource-read/exact-match resource-read/punctuation-match resource-read/available-tools-visible "
        "resource-read/no-partial-match",
    ),
    "extra-tools": _e("PD-4.4-02"),
    "preamble": _e("PD-4.4-03"),
    "case-insensitive": _e("PD-4.3-03"),
    "no-missing-selection": _e(
        "PD-4.3-04", warns="PDX-PARSE-03 PD-4.3-04", skips="missing-selection/error-document[legacy]"
    ),
    "ungated": _e("PD-5.1-02 PD-2-03", skips=f"authorization/error-document[legacy] {ISOLATION} {GRANTS_BLOCKED}"),
    "wrong-error-code": _e("PD-5.1-02 PD-2-03 PD-6.2-01"),
    "jsonrpc-refusal": _e(warns="PD-5.1-02 PD-2-03"),
    # Session A's own grant lapsed: isolation and session-end are not blamed for it, they are skipped (issue 42).
    "forgetful": _e("PD-5.1-03", skips=ISOLATION),
    "no-unknown-entry": _e(warns="PD-6.3-01", skips="resource-read/available-tools-visible"),
    "bare-listing": _e(),
    "plain": _e("PD-4.1-01 PD-2-02 PD-3.2-01", allowed="PD-3.1-01 PD-3.1-04 PD-2-01", skips="*"),
    # Issue 11. A defect may also break what depends on it (a capped selection is also a silent truncation).
    "endless-cursor": _e("PD-3.1-01 PD-4.1-01"),
    "placeholder-descriptions": _e("PD-3.1-02"),
    "docstring-listing": _e("PD-3.1-04", warns="PD-3.1-04"),
    "call-example-listing": _e("PD-3.1-04"),
    "hidden-detail-listing": _e("PD-3.1-04"),
    "keyword-description": _e("PD-4.2-01 PD-4.2-02 PD-4.2-04 PD-4.1-04", warns="PD-4.2-06"),
    "paraphrased-missing": _e("PD-6.1-01"),
    "blank-names": _e(warns="PDX-PARSE-01 PDX-PARSE-03 PD-4.3-04"),
    "two-names-max": _e("PD-4.3-02 PD-4.4-01", allowed="PD-4.4-02"),
    "unknown-fails-read": _e(
        "PD-4.3-02 PD-4.4-01",
        warns="PD-6.3-01",
        # No read naming an unknown tool succeeds: neither its available_tools nor its keys can be judged.
        skips="resource-read/available-tools-visible resource-read/requested-keys-only",
    ),
    "loose-punctuation": _e("PD-4.3-03"),
    "raw-query": _e(warns="PDX-PARSE-01 PDX-PARSE-03 PD-4.3-04"),
    "strict-query": _e("PD-4.3-04", warns="PDX-PARSE-02"),
    "other-params-all": _e("PD-4.3-04"),
    "invalid-example": _e("PD-3.2-02 PD-3.2-03"),
    "lost-required": _e("PD-3.2-02"),
    "split-content": _e("PD-4.4-01 PD-4.4-03", warns="PD-4.1-05"),
    "text-plain-content": _e(warns="PD-4.1-05"),
    "silent-rate-limit": _e("PD-4.4-01", allowed="PD-4.3-02 PD-4.4-02", warns="PDX-PARSE-01"),
    # No gate was seen on every safe tool, so the tools the suite does not run are not probed (they might run).
    "gates-first-only": _e(
        "PD-5.1-02 PD-2-03", skips="grants/unsafe-tools-gated grants/overlapping-reads grants/overlapping-sessions"
    ),
    "lenient-retry": _e("PD-5.1-02", allowed="PD-5.1-01"),
    "refused-read-grants": _e("PD-5.1-02 PD-5.1-01"),
    "variant-grants": _e("PD-5.1-02 PD-5.1-01"),
    # A read that grants every tool: session A may call B's tool, which is this fault, not a grant misplaced.
    "any-read-grants": _e("PD-5.1-02 PD-5.1-01", skips="grants/overlapping-sessions"),
    "first-name-grants": _e("PD-5.1-01", skips="grants/persist-through-session"),
    "mixed-grants-nothing": _e("PD-5.1-01"),
    "short-lived-grants": _e("PD-5.1-03"),
    "expiring-grants": _e("PD-5.1-03"),
    # Issue 22: the last blind spots.
    "gates-read-only-only": _e("PD-5.1-02 PD-2-03"),
    "consequence-by-keyword": _e("PD-4.2-04 PD-4.1-04"),
    "available-fetched-only": _e(warns="PD-6.3-01"),
    "closed-listing-schema": _e("PD-3.1-05"),
    # Catalog mode: the core reads, gates and calls the tools behind call_tool (none is listed to compare schemas).
    "catalog-good": _e(skips="resource-read/listed-schema-agrees"),
    "catalog-any-read-grants": _e(
        "PD-5.1-02 PD-5.1-01", skips="resource-read/listed-schema-agrees grants/overlapping-sessions"
    ),
}

# Each check added for issue 11 and the control that proves it can fail (FAILURE, or WARNING for a SHOULD).
CHECK_CONTROLS = {
    "tools-list/pagination": "endless-cursor",
    "tools-list/distinct-descriptions": "placeholder-descriptions",
    "tools-list/no-parameter-docs": ("docstring-listing", "call-example-listing"),
    "tools-list/no-hidden-detail": "hidden-detail-listing",
    "resource-listing/explains-tools-list": "keyword-description",
    "resource-listing/explains-fetch-first": "keyword-description",
    "missing-selection/error-document": "paraphrased-missing",
    "missing-selection/blank-selection": "blank-names",
    # Issue 22: the blind spots.
    "missing-selection/no-tools-parameter": ("other-params-all", "strict-query"),
    "resource-read/several-names": "two-names-max",
    "resource-read/mixed-known-unknown": "unknown-fails-read",
    "resource-read/punctuation-match": "loose-punctuation",
    "resource-read/encoded-selection": "raw-query",
    "resource-read/other-parameters": "strict-query",
    "resource-read/schema-valid": "invalid-example",
    "grants/required-truthful": "lost-required",
    "resource-read/content-items": "split-content",
    "resource-read/content-mime-type": "text-plain-content",
    "resource-read/complete-responses": "silent-rate-limit",
    "grants/every-tool-gated": "gates-first-only",
    "grants/repeated-unfetched-refused": "lenient-retry",
    "grants/refused-read-grants-nothing": ("refused-read-grants", "variant-grants"),
    "grants/read-other-refused": "any-read-grants",
    "grants/each-read-tool-authorized": "first-name-grants",
    "grants/mixed-read-authorizes-known": "mixed-grants-nothing",
    "grants/persist-through-session": ("short-lived-grants", "expiring-grants"),
    "grants/unsafe-tools-gated": "gates-read-only-only",
    "resource-listing/explains-consequence": ("keyword-description", "consequence-by-keyword"),
    "resource-read/available-tools-visible": "available-fetched-only",
    "resource-read/listed-schema-agrees": "closed-listing-schema",
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
    "PD-3.1-02",
    "PD-3.1-04",
    "PD-3.1-05",
    "PD-3.2-02",
    "PD-3.2-03",
    "PD-4.1-04",
    "PD-4.1-05",
    "PD-4.2-01",
    "PD-4.2-02",
    "PD-4.2-04",
    "PD-4.3-02",
    "PD-4.4-01",
    "PD-5.1-01",
    "PDX-PARSE-01",
    "PDX-PARSE-02",
    "PDX-PARSE-03",
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
        assert _skipped(report) <= baseline | set(expect.extra_skips), text
    for result in report.results:
        assert result.message, result.key
        if result.status in (Status.FAILURE, Status.WARNING):
            assert result.expected and result.spec.hint, result.key


@pytest.mark.parametrize("check_id", sorted(CHECK_CONTROLS))
def test_each_new_check_has_a_control_that_fails_it(check_id: str, stdio_reports: dict[str, Report]) -> None:
    """No check passes vacuously: a server broken in exactly that way makes it FAIL (WARN for a SHOULD)."""
    controls = CHECK_CONTROLS[check_id]
    for defect in (controls,) if isinstance(controls, str) else controls:
        report = stdio_reports[defect]
        result = next(r for r in report.results if r.id == check_id)
        wanted = Status.WARNING if result.spec.severity is Severity.SHOULD else Status.FAILURE
        assert result.status is wanted, render(report)
        assert stdio_reports["good"].results and result.expected and result.spec.hint
        good = next(r for r in stdio_reports["good"].results if r.id == check_id)
        assert good.status is Status.SUCCESS, render(stdio_reports["good"])


def test_good_control_passes_every_check(stdio_reports: dict[str, Report]) -> None:
    report = stdio_reports["good"]
    statuses = {r.key: r.status for r in report.results}
    assert Status.FAILURE not in statuses.values() and Status.WARNING not in statuses.values(), render(report)
    skipped = {k for k, s in statuses.items() if s is Status.SKIPPED}
    assert skipped == {f"sessionless/{c}" for c in ("negotiated-version", "unfetched-call-refused", "fetch-then-call")}
    assert report.verdict == "PASS" and {p.state for p in report.gate} == {"verified"}, render(report)


def test_suite_never_invokes_a_destructive_tool(stdio_reports: dict[str, Report], call_logs: Path) -> None:
    """Only readOnlyHint tools ever run, even against a server that lets every call through; wipe_notes never."""
    assert stdio_reports  # the controls have run
    ran = set()
    for log in call_logs.glob("stdio-*.jsonl"):
        ran |= {json.loads(line)["tool"] for line in log.read_text().splitlines()}
    assert ran == {"add", "word_count", "list_notes"}
    ungated = (call_logs / "stdio-ungated.jsonl").read_text().splitlines()
    assert ungated, "against the ungated control the unfetched call really ran"


def test_read_only_hints_are_learned_from_definitions_when_the_listing_has_none(
    stdio_reports: dict[str, Report], call_logs: Path
) -> None:
    report = stdio_reports["bare-listing"]
    note = 'Tool invoked by the suite: add {"a":2,"b":3} (readOnlyHint=true in its fetched definition'
    assert any(n.startswith(note) for n in report.notes), report.notes
    ran = [json.loads(line)["tool"] for line in (call_logs / "stdio-bare-listing.jsonl").read_text().splitlines()]
    assert ran and set(ran) == {"add", "word_count", "list_notes"}


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
