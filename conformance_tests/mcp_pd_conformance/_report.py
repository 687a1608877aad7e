"""The human report (grouped by spec section) and the machine-readable JSON report."""

from __future__ import annotations

import json
from collections import Counter
from itertools import groupby
from pathlib import Path

from ._model import CheckResult, Report, Status
from ._spec import PROFILES, SECTION_TITLES, SPEC_VERSION

__all__ = ["render", "verdict", "write_json"]

_BULK = 5
_COLORS = {
    Status.SUCCESS: "32",
    Status.FAILURE: "31;1",
    Status.WARNING: "33",
    Status.SKIPPED: "36",
    Status.INFO: "34",
}


def _paint(text: str, code: str, color: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if color else text


def _section_key(section: str) -> tuple[int, ...]:
    if section.startswith("I-"):  # the project's interpretations come after the spec's sections
        return (1000, int(section[2:]))
    return tuple(int(part) for part in section.split("."))


def _line(result: CheckResult, color: bool, verbosity: int) -> list[str]:
    spec = result.spec
    label = result.status.value + (" (expected)" if result.expected_failure else "")
    status = _paint(f"{label:<8}", _COLORS[result.status], color)
    reqs = " ".join(spec.requirements)
    lines = [f"  {status} {result.key:<46} {result.message}  [{reqs} §{spec.section}]"]
    detailed = result.status in (Status.FAILURE, Status.WARNING) or verbosity >= 2
    if detailed:
        for name, value in (("sent", result.sent), ("received", result.received), ("expected", result.expected)):
            if value:
                lines.append(f"           {name + ':':<9} {value}")
        if result.status in (Status.FAILURE, Status.WARNING) and spec.hint:
            lines.append(f"           {'fix:':<9} {spec.hint}")
    return lines


def verdict(report: Report) -> str:
    """The last line of the report."""
    code = report.exit_code
    if report.fatal is not None and report.fatal_kind == "unauthorized":
        return f"VERDICT: ERROR (exit 3): not authorized: {report.fatal}"
    if report.fatal is not None:
        return f"VERDICT: ERROR (exit 3): could not start or reach the server: {report.fatal}"
    failures = report.failures()
    if failures:
        ids = sorted({r for f in failures for r in f.requirements})
        return f"VERDICT: FAIL (exit {code}): {len(failures)} MUST check(s) failed; requirements {', '.join(ids)}"
    if report.baseline is not None and report.baseline.stale:
        return f"VERDICT: FAIL (exit {code}): stale expected failures (now passing): {', '.join(report.baseline.stale)}"
    warnings = sum(1 for r in report.results if r.status is Status.WARNING)
    unverified = [p.claim for p in report.gate_unverified()]
    if code == 1 and report.strict:
        why = [f"{len(report.warnings())} WARNING(s)"] if report.warnings() else []
        why += [f"the gate not verified (that {' / that '.join(unverified)})"] if unverified else []
        return f"VERDICT: FAIL (exit 1): --strict and {' and '.join(why)}"
    if unverified:
        return (
            f"VERDICT: PASS, GATE NOT VERIFIED (exit 0): every MUST check that ran passed ({warnings} SHOULD "
            f"warning(s)), but no call showed that {' or that '.join(unverified)} (see Gate); --strict fails this run"
        )
    left_out = [p.claim for p in report.gate if p.state == "not selected"]
    unchecked = f"; not checked (--only/--skip): that {' / that '.join(left_out)}" if left_out else ""
    return f"VERDICT: PASS (exit 0): every MUST check passed ({warnings} SHOULD warning(s)){unchecked}"


_GATE_COLORS = {"verified": Status.SUCCESS, "failed": Status.FAILURE, "not verified": Status.WARNING}


def _gate(report: Report, color: bool, verbosity: int) -> list[str]:
    """What the calls showed of the gate: each half, with the check that showed it or why nothing did."""
    proofs = [p for p in report.gate if p.state != "not selected"]
    if report.fatal is not None or not proofs or (verbosity < 1 and all(p.state == "verified" for p in proofs)):
        return []
    out = ["", _paint("Gate (spec 5.1): what the calls showed", "1", color)]
    for proof in proofs:
        label = _paint(f"{proof.state.upper():<12}", _COLORS[_GATE_COLORS[proof.state]], color)
        shown = f" (by {proof.check})" if proof.state == "verified" else f": {proof.reason}"
        out.append(f"  {label} {proof.claim}{shown}")
    return out


def _sections(results: list[CheckResult], color: bool, verbosity: int) -> list[str]:
    out: list[str] = []
    ordered = sorted(results, key=lambda r: _section_key(r.spec.section))
    for section, group in groupby(ordered, key=lambda r: r.spec.section):
        out.append("")
        out.append(_paint(f"§{section} {SECTION_TITLES.get(section, '')}", "1", color))
        for result in group:
            out += _line(result, color, verbosity)
    return out


def _profiles(report: Report, color: bool, verbosity: int) -> list[str]:
    """Each profile asked for: a header (with the reason when it was skipped as a whole), then its checks."""
    out: list[str] = []
    runs = {run.name: run for run in report.profiles}
    names = dict.fromkeys([*runs, *(r.spec.profile for r in report.results if r.spec.profile)])
    for name in names:
        if name is None:
            continue
        run = runs.get(name)
        skipped = run is not None and not run.ran
        shown = [
            r
            for r in report.results
            if r.spec.profile == name
            and (verbosity >= 1 or r.status in (Status.FAILURE, Status.WARNING))
            and (verbosity >= 2 or not skipped)
        ]
        if not shown and not skipped:
            continue
        out += ["", _paint(f"Profile {name}: {PROFILES.get(name, '')}", "1", color)]
        if skipped:
            label = _paint(f"{'SKIPPED':<8}", _COLORS[Status.SKIPPED], color)
            out.append(f"  {label} the whole profile: {run.reason if run else ''}")
        out += [line for line in _sections(shown, color, verbosity) if line]
    return out


def render(report: Report, *, color: bool = False, verbosity: int = 1) -> str:
    """The report as text. verbosity 0: problems only; 1: every check; 2: with every exchange."""
    out = [f"MCP Progressive Disclosure conformance (spec v{SPEC_VERSION})", f"Target: {report.target}"]
    if report.eras:
        eras = "; ".join(f"{e.era} (client mode {e.mode}) negotiated {e.negotiated}" for e in report.eras)
        out.append(f"Protocol eras: {eras}")
    for era in report.coverage:
        state = "exercised" if era.exercised else _paint("NOT exercised", _COLORS[Status.WARNING], color)
        out.append(f"Era {era.era}: {state}: {era.how}")
    if report.profiles:
        runs = ", ".join(f"{p.name} ({'ran' if p.ran else 'skipped: ' + p.reason})" for p in report.profiles)
        out.append(f"Profiles: {runs}")
    out += [f"Note: {note}" for note in report.notes]
    core = [r for r in report.results if r.spec.profile is None]
    # Many checks skipped for one reason (no connection, no resource) read better as one line.
    reasons = Counter(r.message for r in core if r.status is Status.SKIPPED)
    bulk = {reason for reason, n in reasons.items() if n >= _BULK and verbosity < 2}
    shown = [
        r
        for r in core
        if (verbosity >= 1 or r.status in (Status.FAILURE, Status.WARNING))
        and not (r.status is Status.SKIPPED and r.message in bulk)
    ]
    out += _sections(shown, color, verbosity)
    if bulk:
        out.append("")
    for reason in sorted(bulk, key=lambda m: -reasons[m]):
        label = _paint(f"{'SKIPPED':<8}", _COLORS[Status.SKIPPED], color)
        out.append(f"  {label} {reasons[reason]} checks: {reason}")
    out += _profiles(report, color, verbosity)
    out += _gate(report, color, verbosity)
    counts = report.counts()
    expected = sum(1 for r in report.results if r.expected_failure)
    out.append("")
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    out.append(
        f"Summary: {len(report.results)} checks: {summary}"
        + (f" ({expected} expected failure(s))" if expected else "")
        + f" in {report.duration_s:.1f} s of wall clock"
    )
    if report.baseline is not None:
        if report.baseline.expected:
            out.append("Expected failures (in the baseline): " + ", ".join(report.baseline.expected))
        if report.baseline.stale:
            out.append(
                _paint("STALE", _COLORS[Status.FAILURE], color)
                + " baseline entries (now passing; remove them from the file): "
                + ", ".join(report.baseline.stale)
            )
        if report.baseline.unused:
            out.append("Baseline entries matching no check that ran: " + ", ".join(report.baseline.unused))
    line = verdict(report)
    shade = Status.FAILURE if report.exit_code else Status.WARNING if report.gate_unverified() else Status.SUCCESS
    out.append(_paint(line, _COLORS[shade], color))
    return "\n".join(out) + "\n"


def write_json(report: Report, path: str | Path) -> None:
    """Write the JSON report (`-` for stdout is handled by the CLI)."""
    Path(path).write_text(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
