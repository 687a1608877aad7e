"""The optional profiles: `mcp-pd check --profile tool-fallback` (I-13) and `--profile catalog` (I-16).

The reference server passes both where they apply and has the catalog profile skipped, with its reason, where
it does not; each negative control fails the profile check it targets (and no check outside its `allowed`).
Servers run once for the whole file (conftest.profile_runs): the controls over HTTP, checked with --only their
profile, and four runs of the real command line.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_pd_conformance import CHECKS, PROFILES, Report, Status, main, render

TOOL_FALLBACK = [c.id for c in CHECKS if c.profile == "tool-fallback"]
CATALOG = [c.id for c in CHECKS if c.profile == "catalog"]

# Per control: the checks it must fail (FAILURE, or WARNING for a SHOULD check), and the others it may fail too
# (what cannot work once the targeted defect is there). Every other check of its profile succeeds.
TARGETS: dict[str, tuple[str, str]] = {
    "describe-good": ("", ""),
    "describe-gated": ("listed callable-unfetched required-names-describe", "same-document same-errors authorizes"),
    "describe-other-document": ("same-document same-errors", ""),
    "describe-no-grant": ("authorizes", ""),
    "describe-grants-all": ("only-described", ""),
    "describe-global-grant": ("isolated", ""),
    "catalog-good": ("", ""),
    "catalog-ungated-call": ("call-gated", ""),
    "catalog-no-validation": ("call-validates", ""),
    "catalog-big-list": ("fixed-list search-results", ""),
    "catalog-naive-search": ("search-abstains search-filters", ""),
    "catalog-no-suggestions": ("call-unknown", ""),
    "catalog-short-browse": ("browse", ""),
}
# A control whose defect leaves a check nothing to judge.
SKIPS = {"describe-no-grant": {"tool-fallback/isolated"}, "describe-gated": {"tool-fallback/isolated"}}


def _profile(control: str) -> str:
    return "catalog" if control.startswith("catalog-") else "tool-fallback"


@pytest.fixture(scope="module")
def reports(profile_runs: tuple[dict[str, Report], dict[str, subprocess.CompletedProcess[str]]]) -> dict[str, Report]:
    return profile_runs[0]


@pytest.fixture(scope="module")
def cli(
    profile_runs: tuple[dict[str, Report], dict[str, subprocess.CompletedProcess[str]]],
) -> dict[str, subprocess.CompletedProcess[str]]:
    return profile_runs[1]


def _json(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert run.stdout.strip(), run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def _statuses(report: dict[str, Any], profile: str) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["checks"] if c["profile"] == profile}


@pytest.mark.req("PDX-DESCRIBE-01", "PDX-DESCRIBE-02", "PDX-DESCRIBE-03", "PDX-DESCRIBE-04", "PDX-DESCRIBE-06")
def test_the_reference_server_passes_tool_fallback_and_skips_catalog(
    cli: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    run = cli["reference"]
    report = _json(run)
    assert run.returncode == 0, run.stderr
    assert _statuses(report, "tool-fallback") == dict.fromkeys(TOOL_FALLBACK, "SUCCESS"), run.stderr
    reason = "the server is not in catalog mode: tools/list has no search_tools"
    assert report["profiles"] == [
        {"name": "tool-fallback", "status": "ran", "reason": None},
        {"name": "catalog", "status": "skipped", "reason": reason},
    ]
    assert set(_statuses(report, "catalog").values()) == {"SKIPPED"}
    # The human report says which profile each check belongs to, and why a profile was skipped.
    assert f"Profile tool-fallback: {PROFILES['tool-fallback']}" in run.stderr
    assert f"SKIPPED  the whole profile: {reason}" in run.stderr
    # Only the profiles were selected: the verdict says the core's gate checks were left out.
    last = run.stderr.rstrip().splitlines()[-1]
    assert last.startswith("VERDICT: PASS (exit 0): every MUST check passed (0 SHOULD warning(s)); not checked"), last


@pytest.mark.req(
    "PDX-DESCRIBE-01",
    "PDX-DESCRIBE-02",
    "PDX-DESCRIBE-03",
    "PDX-DESCRIBE-04",
    "PDX-DESCRIBE-06",
    "PDX-CATALOG-01",
    "PDX-CATALOG-02",
    "PDX-CATALOG-04",
    "PDX-CATALOG-06",
)
def test_the_reference_server_in_catalog_mode_passes_the_core_and_both_profiles(
    cli: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    run = cli["reference-catalog"]
    report = _json(run)
    assert run.returncode == 0, run.stderr
    assert [p["status"] for p in report["profiles"]] == ["ran", "ran"]
    assert _statuses(report, "tool-fallback") == dict.fromkeys(TOOL_FALLBACK, "SUCCESS"), run.stderr
    assert _statuses(report, "catalog") == dict.fromkeys(CATALOG, "SUCCESS"), run.stderr
    # The core lists only the extension's own tools (advertised as metaTools), then reads, gates and calls the tools
    # browse_tools names, through call_tool (issue 22.6): its grant checks run on them, none is skipped.
    core = [c for c in report["checks"] if c["profile"] is None]
    assert not [c for c in core if c["status"] in ("FAILURE", "WARNING")], run.stderr
    extension = next(c for c in core if c["id"] == "tools-list/extension-tools")
    assert "search_tools (advertised in metaTools)" in extension["message"]
    grants = {c["id"]: c["status"] for c in core if c["id"].startswith(("grants/", "authorization/"))}
    assert grants and set(grants.values()) == {"SUCCESS"}, grants
    assert any(n.startswith("Catalog mode: the core read, gated and called") for n in report["notes"]), report["notes"]


@pytest.mark.req("PDX-DESCRIBE-01")
def test_a_server_without_a_describe_tool_has_the_profile_skipped_with_the_reason(
    cli: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    run = cli["no-describe-tool"]
    report = _json(run)
    assert run.returncode == 0, run.stderr
    (profile,) = report["profiles"]
    assert profile["status"] == "skipped" and "the server has no describe tool" in profile["reason"]
    assert set(_statuses(report, "tool-fallback").values()) == {"SKIPPED"}
    assert f"SKIPPED  the whole profile: {profile['reason']}" in run.stderr


@pytest.mark.req("PDX-DESCRIBE-06")
def test_strict_fails_a_run_whose_only_problem_is_a_profile_warning(
    cli: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    run = cli["strict"]
    report = _json(run)
    assert _statuses(report, "tool-fallback") == {"tool-fallback/required-names-describe": "WARNING"}
    assert not [c for c in report["checks"] if c["status"] == "FAILURE"]
    assert run.returncode == 1 and report["strict"] is True
    assert "VERDICT: FAIL (exit 1): --strict and 1 WARNING(s)" in run.stderr


@pytest.mark.req(
    "PDX-DESCRIBE-01",
    "PDX-DESCRIBE-02",
    "PDX-DESCRIBE-03",
    "PDX-DESCRIBE-04",
    "PDX-DESCRIBE-06",
    "PDX-CATALOG-01",
    "PDX-CATALOG-02",
    "PDX-CATALOG-04",
    "PDX-CATALOG-06",
)
@pytest.mark.parametrize("control", sorted(TARGETS))
def test_each_control_fails_the_profile_check_it_targets(control: str, reports: dict[str, Report]) -> None:
    report, profile = reports[control], _profile(control)
    text = render(report)
    targets, allowed = (frozenset(f"{profile}/{c}" for c in group.split()) for group in TARGETS[control])
    bad = {r.id for r in report.results if r.status in (Status.FAILURE, Status.WARNING)}
    assert targets <= bad <= targets | allowed, text
    skipped = {r.id for r in report.results if r.status is Status.SKIPPED}
    assert skipped == SKIPS.get(control, set()), text
    assert {r.spec.profile for r in report.results} == {profile}
    assert report.profiles and report.profiles[0].ran
    assert report.exit_code == (1 if any(r.status is Status.FAILURE for r in report.results) else 0), text
    for result in report.results:
        if result.status in (Status.FAILURE, Status.WARNING):
            assert result.expected and result.spec.hint and result.message, result.id


def test_every_profile_check_has_a_control_that_fails_it(reports: dict[str, Report]) -> None:
    failed = {f"{_profile(c)}/{check}" for c, (targets, _) in TARGETS.items() for check in targets.split()}
    assert failed == set(TOOL_FALLBACK) | set(CATALOG)
    assert set(TARGETS) == set(reports)


@pytest.mark.req("PDX-CATALOG-04")
def test_call_tool_runs_nothing_whose_arguments_break_the_schema(reports: dict[str, Report], call_logs: Path) -> None:
    """The call logs: the correct catalog never ran `add` with a wrong argument; the unchecking one did."""
    assert reports  # the controls have run

    def bad_adds(control: str) -> list[dict[str, Any]]:
        lines = (call_logs / f"profile-{control}.jsonl").read_text().splitlines()
        return [e for e in map(json.loads, lines) if e["tool"] == "add" and not isinstance(e["arguments"]["a"], int)]

    assert bad_adds("catalog-good") == []
    assert bad_adds("catalog-no-validation") != []


def test_profiles_invoke_only_read_only_tools(reports: dict[str, Report], call_logs: Path) -> None:
    assert reports
    ran = set()
    for log in call_logs.glob("profile-*.jsonl"):
        ran |= {json.loads(line)["tool"] for line in log.read_text().splitlines()}
    assert ran and ran <= {"add", "word_count", "list_notes"}


def test_list_checks_shows_the_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list-checks"]) == 0
    out = capsys.readouterr().out
    for name, text in PROFILES.items():
        assert f"profile {name} (--profile {name}): {text}" in out
    assert all(check in out for check in (*TOOL_FALLBACK, *CATALOG))
    assert "PDX-CATALOG-06" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--profile", "nope"], "unknown profile nope"),
        (["--only", "catalog"], "'catalog' is checked by the profile catalog: add --profile catalog"),
        (["--only", "PDX-DESCRIBE-02"], "add --profile tool-fallback"),
        (["--profile", "catalog", "--only", "tool-fallback/isolated"], "add --profile tool-fallback"),
    ],
)
def test_profile_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--stdio", "x", *argv]) == 2
    assert message in capsys.readouterr().err
