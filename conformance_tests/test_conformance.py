"""One test per conformance check (across protocol eras); FAILURE fails, SKIPPED skips with its reason.

A WARNING (a failed SHOULD) and INFO pass; they appear in the report printed at the end.
"""

from __future__ import annotations

import pytest
from mcp_pd_conformance import CHECKS, REQUIREMENTS, Report, Status


def _lines(report: Report, check_id: str) -> list[str]:
    out = []
    for r in report.results:
        if r.id == check_id:
            out.append(f"{r.status.value} {r.key} [{' '.join(r.requirements)}]: {r.message}")
            for label, value in (("sent", r.sent), ("received", r.received), ("expected", r.expected)):
                if value and r.status is Status.FAILURE:
                    out.append(f"    {label}: {value}")
    return out


@pytest.mark.req(*REQUIREMENTS)
@pytest.mark.parametrize("check_id", [c.id for c in CHECKS])
def test_check(check_id: str, pd_report: Report) -> None:
    results = [r for r in pd_report.results if r.id == check_id]
    assert results, f"{check_id} produced no result"
    if any(r.status is Status.FAILURE for r in results):
        spec = results[0].spec
        pytest.fail("\n".join([*_lines(pd_report, check_id), f"fix: {spec.hint}"]), pytrace=False)
    if all(r.status is Status.SKIPPED for r in results):
        pytest.skip("; ".join(dict.fromkeys(r.message for r in results)))
