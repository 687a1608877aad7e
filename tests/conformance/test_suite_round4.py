"""Issue 42, the suite's fourth round: correct but unusual servers it wrongly failed, and the eras it claims.

Each control of pdconf_controls.py named here is `good` with one change; the correct ones must pass (each failed on
a93d142), the faulty ones must fail on exactly the check that judges them. Over stdio in both eras, and over HTTP
where the change shows there (one process serving each control at /CONTROL/mcp).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_pd_conformance import ERAS, Options, Report, Status, Target, render
from mcp_pd_conformance._spec import Era
from mcp_pd_conformance._text import explains_authorization, sequential_steps
from pdtest import http_command
from pdtest_suite import keys, run_options
from pdtest_zygote import forked_argv

CONTROLS = Path(__file__).resolve().parent / "pdconf_controls.py"
NOT_AUTHORIZATION = ("authorization", "isolation", "session-end", "sessionless")
# Correct servers the third round failed: `required` in another order between reads, the resource's workflow in
# other words, a server that speaks 2026-07-28 only.
CORRECT = ("reordered-required", "reworded-description", "modern-only")
# Faulty servers the third round passed, each with the checks its one mistake fails (legacy era, over stdio).
FAULTY = {
    # ?tools=ad serves and grants add; its entry under "ad" is add's definition (4.4), and the grant it left lets
    # add through after a read of another tool too.
    "fuzzy-names": {
        "resource-read/no-partial-match",
        "resource-read/entries-match-keys",
        "grants/refused-read-grants-nothing",
        "grants/read-other-refused",
    },
    "title-instructions": {"tools-list/no-usage-instructions"},
    "inline-parameter-docs": {"tools-list/no-parameter-docs"},
    "relist-full": {"tools-list/relist-minimal"},
    "racy-grants": {"grants/overlapping-reads"},
    "proxy-ungated": {"grants/proxy-tool-gated"},
}
OVER_HTTP = ("modern-only", "modern-bare-missing", "handshake-only", "racy-sessions")


def _argv(*controls: str) -> tuple[str, ...]:
    return forked_argv(CONTROLS, *controls)


def _stdio(name: str, eras: tuple[Era, ...] = ERAS, skip: tuple[str, ...] = ()) -> Options:
    return Options(Target(stdio=_argv(name)), eras=eras, skip=skip)


# Four fixtures of a few runs each, so that no test's set-up (which pytest-timeout counts) runs many servers: each
# yields its reports under the keys the tests read (`stdio NAME`, `http NAME`, and the variants below).
@pytest.fixture(scope="module")
def correct_reports() -> dict[str, Report]:
    """The correct controls over stdio in both eras, and modern-only asked for the era it never speaks."""
    options = {f"stdio {name}": _stdio(name) for name in CORRECT}
    options["stdio modern-only --era legacy"] = _stdio("modern-only", ("legacy",))
    return run_options(options, limit=3)


@pytest.fixture(scope="module")
def faulty_reports() -> dict[str, Report]:
    """The faulty controls over stdio: the legacy era, the grants scenario as their only calling one."""
    options = {f"stdio {name}": _stdio(name, ("legacy",), NOT_AUTHORIZATION) for name in FAULTY}
    options["stdio proxy-gated"] = _stdio("proxy-gated", ("legacy",), NOT_AUTHORIZATION)  # correct: must pass
    return run_options(options, limit=3)


@pytest.fixture(scope="module")
def era_reports() -> dict[str, Report]:
    """What shows per era: a grant dropped on a clock, a 2026-07-28 refusal without its document (both eras)."""
    # A grant dropped on a clock: only calls spread over seconds show it, in the session that fetched.
    options = {"stdio clock-grants": _stdio("clock-grants", skip=("grants",))}
    options["stdio modern-bare-missing"] = _stdio("modern-bare-missing")
    return run_options(options, limit=2)


@pytest.fixture(scope="module")
def http_reports4() -> dict[str, Report]:
    """The OVER_HTTP controls over HTTP (one process serving each at /CONTROL/mcp, with `good` beside, so that one
    control alone is served so too): in both eras, and handshake-only asked for 2026-07-28 alone."""
    with http_command((*_argv(*OVER_HTTP, "good"), "--http")) as url:
        base = url.removesuffix("/mcp")
        options = {
            f"http {name}": Options(Target(url=f"{base}/{name}/mcp"), eras=ERAS)
            for name in OVER_HTTP
            if name != "racy-sessions"
        }
        racy = Options(Target(url=f"{base}/racy-sessions/mcp"), eras=("legacy",), skip=NOT_AUTHORIZATION)
        options["http racy-sessions"] = racy
        modern = Options(Target(url=f"{base}/handshake-only/mcp"), eras=("2026-07-28",))
        options["http handshake-only --era 2026-07-28"] = modern
        return run_options(options, limit=3)


def _status(report: Report, key: str) -> Status:
    return next(r.status for r in report.results if r.key == key)


@pytest.mark.req("PD-3.2-02", "PD-4.4-01", "PD-4.2-05", "PD-4.2-08")
@pytest.mark.parametrize("control", ["reordered-required", "reworded-description"])
def test_correct_but_unusual_servers_pass(control: str, correct_reports: dict[str, Report]) -> None:
    """`required` is a set (JSON Schema): another order between reads is the same schema. Steps need no numbers and
    a grant needs no word "authorizes". Both passed nothing on a93d142 (a FAILURE, two WARNINGs)."""
    report = correct_reports[f"stdio {control}"]
    text = render(report)
    assert report.exit_code == 0 and report.verdict == "PASS", text
    assert not keys(report, Status.FAILURE) | keys(report, Status.WARNING), text
    checks = {
        "reordered-required": ("resource-read/entries-match-keys",),
        "reworded-description": ("resource-listing/sequential-steps", "resource-listing/explains-authorization"),
    }[control]
    for check in checks:
        assert _status(report, check) is Status.SUCCESS, text


@pytest.mark.req("PD-2-01", "PDX-SUITE-01")
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_of_one_era_is_judged_on_the_era_it_speaks(transport: str, request: pytest.FixtureRequest) -> None:
    """A server that refuses the initialize handshake passes under --era both: the handshake is judged in 2026-07-28,
    the legacy era is reported as not exercised (INFO, its checks skipped with that reason), never as a failure."""
    reports = request.getfixturevalue("correct_reports" if transport == "stdio" else "http_reports4")
    report = reports[f"{transport} modern-only"]
    text = render(report)
    assert report.exit_code == 0 and report.verdict.startswith("PASS"), text
    assert not keys(report, Status.FAILURE) | keys(report, Status.WARNING), text
    assert _status(report, "connection/handshake") is Status.SUCCESS, text
    legacy = next(r for r in report.results if r.key == "connection/era-exercised[legacy]")
    assert legacy.status is Status.INFO and "refused the initialize handshake" in legacy.message, text
    assert _status(report, "connection/era-exercised[2026-07-28]") is Status.SUCCESS, text
    coverage = {c.era: c.exercised for c in report.coverage}
    assert coverage == {"legacy": False, "2026-07-28": True}, text
    assert "Era legacy: NOT exercised: the server refused the initialize handshake" in text
    skipped = [r for r in report.results if r.era == "legacy" and r.id != "connection/era-exercised"]
    assert skipped and all(r.status is Status.SKIPPED for r in skipped), text
    assert all("the legacy era was not exercised" in r.message for r in skipped), text
    first = report.to_json()["era_coverage"][0]
    assert first["era"] == "legacy" and first["exercised"] is False and "initialize" in first["detail"], first


@pytest.mark.req("PDX-SUITE-01")
def test_asking_for_an_era_the_server_never_speaks_cannot_pass(correct_reports: dict[str, Report]) -> None:
    report = correct_reports["stdio modern-only --era legacy"]
    assert report.exit_code == 1 and report.verdict == "FAIL", render(report)


def test_workflow_words_are_read_by_meaning() -> None:
    """Other words for the same statements pass; mentions of sessions or order that do not say them do not."""
    for said in (
        "Fetching a description authorizes that tool for this session.",
        "Reading a tool's description unlocks that tool for as long as this session lasts.",
        "A read grants access to the tool for the rest of the connection.",
        "Once read, a definition lets you call its tool for the rest of the session.",
    ):
        assert explains_authorization(said), said
    for said in (
        "Calling a tool is not allowed in this session without reading it first.",
        "Calls in this session are logged.",
        "Errors follow the tools/list format.",
    ):
        assert not explains_authorization(said), said
    for said in (
        "Begin by choosing a tool. Next, read its description. Finally, call it.",
        "First pick a tool from tools/list, then read its definition.",
        "tools/list -> tool_descriptions?tools=NAME -> tools/call",
        "Step 1: choose. Step 2: read.",
        "1. Choose a tool. 2. Read it.",
    ):
        assert sequential_steps(said), said
    for said in ("Tool definitions as JSON. Fetch a definition before calling.", "Read the definition, then call it."):
        assert not sequential_steps(said), said


@pytest.mark.req("PD-6.1-01")
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_missing_selection_document_is_judged_in_each_era(transport: str, request: pytest.FixtureRequest) -> None:
    """A server whose 2026-07-28 MISSING_TOOL_SELECTION carries no document passed on a93d142 (6.1 was read in the
    discovery session's era only); now the check fails in exactly that era."""
    reports = request.getfixturevalue("era_reports" if transport == "stdio" else "http_reports4")
    report = reports[f"{transport} modern-bare-missing"]
    text = render(report)
    assert keys(report, Status.FAILURE) == {"missing-selection/error-document[2026-07-28]"}, text
    failed = next(r for r in report.results if r.key == "missing-selection/error-document[2026-07-28]")
    assert "in protocol 2026-07-28" in failed.message and "no MISSING_TOOL_SELECTION document" in failed.message
    assert failed.expected and failed.spec.hint, text
    assert _status(report, "missing-selection/error-document[legacy]") is Status.SUCCESS, text
    assert report.exit_code == 1, text


@pytest.mark.req("PDX-SUITE-01")
def test_an_era_answered_in_another_protocol_is_not_claimed(http_reports4: dict[str, Report]) -> None:
    """A server that answers the 2026-07-28 client in 2025-11-25 and refuses the 2026-07-28 envelope: --era
    2026-07-28 passed on a93d142 with every check labelled [2026-07-28]; now it fails, saying why, and under --era
    both the server is judged in the handshake era with 2026-07-28 reported as not exercised."""
    alone = http_reports4["http handshake-only --era 2026-07-28"]
    text = render(alone)
    assert alone.exit_code == 1 and keys(alone, Status.FAILURE) == {"connection/era-exercised[2026-07-28]"}, text
    failed = next(r for r in alone.results if r.key == "connection/era-exercised[2026-07-28]")
    assert "the default client was answered in 2025-11-25" in failed.message, text
    assert "client pinned to 2026-07-28 failed" in failed.message, text
    assert not [r for r in alone.results if r.era == "2026-07-28" and r.status is Status.SUCCESS], text
    both = http_reports4["http handshake-only"]
    text = render(both)
    assert both.exit_code == 0, text
    assert {c.era: c.exercised for c in both.coverage} == {"legacy": True, "2026-07-28": False}, text
    assert "Era 2026-07-28: NOT exercised" in text


@pytest.mark.req("PD-4.3-03", "PD-3.1-04", "PD-3.1-01", "PD-5.1-02")
@pytest.mark.parametrize("control", sorted(FAULTY))
def test_each_faulty_control_fails_exactly_its_checks(control: str, faulty_reports: dict[str, Report]) -> None:
    """Prefix and fuzzy names (4.3), usage instructions in a title and parameter docs with defaults and ranges (3.1),
    full schemas on the re-list after notifications/tools/list_changed (3.1): each passed on a93d142."""
    report = faulty_reports[f"stdio {control}"]
    text = render(report)
    failed = {r.id for r in report.results if r.status is Status.FAILURE}
    assert failed == FAULTY[control], text
    assert not keys(report, Status.WARNING), text
    assert all(r.expected and r.spec.hint for r in report.results if r.status is Status.FAILURE), text
    assert report.exit_code == 1, text


def test_the_relist_says_what_it_heard(faulty_reports: dict[str, Report]) -> None:
    relisted = next(r for r in faulty_reports["stdio relist-full"].results if r.id == "tools-list/relist-minimal")
    assert "after the run's reads and 1 notifications/tools/list_changed" in relisted.message
    assert "add (inputSchema: lists 2 parameter(s)" in relisted.message
    good = next(r for r in faulty_reports["stdio racy-grants"].results if r.id == "tools-list/relist-minimal")
    assert good.status is Status.SUCCESS and "as first listed" in good.message


@pytest.mark.req("PD-5.1-03")
def test_grants_dropped_on_a_clock_are_blamed_on_persistence(era_reports: dict[str, Report]) -> None:
    """A server that drops grants every second passed on a93d142 (every call came within a second of the fetch; the
    blind tester's version was caught by isolation/own-session-unaffected, blaming the other session). Now
    authorization/persists spans 2.4 s and fails in each era, and isolation and session-end are skipped, not failed."""
    report = era_reports["stdio clock-grants"]
    text = render(report)
    assert keys(report, Status.FAILURE) == {f"authorization/persists[{era}]" for era in ERAS}, text
    failed = next(r for r in report.results if r.key == "authorization/persists[legacy]")
    assert "s after it, was refused" in failed.message and "nothing but this tool's own calls" in failed.message
    for era in ERAS:
        for check in ("isolation/other-session-refused", "isolation/own-session-unaffected"):
            result = next(r for r in report.results if r.key == f"{check}[{era}]")
            assert result.status is Status.SKIPPED and "the grant lapsed in session A itself" in result.message, text


@pytest.mark.req("PD-5.1-01", "PD-5.1-04", "PD-5.2-02")
def test_overlapping_reads_find_lost_and_misplaced_grants(faulty_reports: dict[str, Report]) -> None:
    """Reads sent at once, as hosts pipeline them: a grant lost by a read-modify-write (one session) and a grant
    written into the session whose request arrived last (two sessions, over HTTP). Both passed on a93d142, which sent
    one request at a time; the report says how many reads overlapped."""
    lost = next(r for r in faulty_reports["stdio racy-grants"].results if r.id == "grants/overlapping-reads")
    assert lost.status is Status.FAILURE and lost.message.startswith("24 overlapping reads of 3 tools"), lost.message
    assert "still refused" in lost.message
    for name in ("stdio title-instructions", "stdio inline-parameter-docs"):
        report = faulty_reports[name]
        for check in ("grants/overlapping-reads", "grants/overlapping-sessions"):
            result = next(r for r in report.results if r.id == check)
            assert result.status is Status.SUCCESS, render(report)


@pytest.mark.req("PD-5.1-04", "PD-5.2-02")
def test_overlapping_sessions_find_a_misplaced_grant(http_reports4: dict[str, Report]) -> None:
    """Over HTTP two sessions share one server process: a grant written into the session whose request arrived
    last fails grants/overlapping-sessions, and nothing else."""
    racy = http_reports4["http racy-sessions"]
    text = render(racy)
    assert keys(racy, Status.FAILURE) == {"grants/overlapping-sessions"}, text
    misplaced = next(r for r in racy.results if r.id == "grants/overlapping-sessions")
    assert "12 overlapping reads in two sessions" in misplaced.message and "never read" in misplaced.message


@pytest.mark.req("PD-5.1-02", "PD-2-03")
def test_a_tool_that_calls_tools_is_used_against_its_own_gate(faulty_reports: dict[str, Report]) -> None:
    """run_tool(name, arguments), found by its schema: fetched alone, it must not run a tool the session never
    fetched. proxy-ungated passed on a93d142; proxy-gated, which asks the gate for the tool it runs, passes."""
    failed = next(r for r in faulty_reports["stdio proxy-ungated"].results if r.id == "grants/proxy-tool-gated")
    assert "run_tool(name='add', arguments=...) ran add" in failed.message, failed.message
    good = faulty_reports["stdio proxy-gated"]
    text = render(good)
    assert good.exit_code == 0 and not keys(good, Status.FAILURE) | keys(good, Status.WARNING), text
    passed = next(r for r in good.results if r.id == "grants/proxy-tool-gated")
    assert passed.status is Status.SUCCESS and "TOOL_DESCRIPTION_REQUIRED" in passed.message, text
