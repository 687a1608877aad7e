"""Runs the scenarios against one server and assembles the `Report`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ._baseline import apply_baseline, validate_selector
from ._checks import (
    Discovery,
    choose_safe_tool,
    missing_selection,
    resource_listing,
    resource_read,
    session_scenarios,
    sessionless,
    tools_list,
    unfetched_tool_note,
)
from ._model import EraInfo, Report, Status
from ._probe import ConnectFailure, Mode, Target, connect
from ._record import Recorder
from ._spec import CHECKS, PER_ERA_SCENARIOS, CheckSpec

__all__ = ["ERAS", "Options", "run_suite", "select_checks"]

Era = Literal["legacy", "2026-07-28"]
ERAS: tuple[Era, ...] = ("legacy", "2026-07-28")
_CALLING = frozenset({"authorization", "isolation", "session-end", "sessionless"})


@dataclass(frozen=True)
class Options:
    """One run: the target, the protocol eras, the selection, and the tool the suite may invoke."""

    target: Target
    eras: tuple[Era, ...] = ERAS
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    call_tool: str | None = None
    call_args: dict[str, Any] | None = None
    expected_failures: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.eras or any(e not in ERAS for e in self.eras):
            raise ValueError(f"eras must be a non-empty subset of {ERAS}")
        for token in (*self.only, *self.skip, *(self.expected_failures or ())):
            validate_selector(token)
        if self.call_args is not None and self.call_tool is None:
            raise ValueError("call_args needs call_tool")


def _matches(token: str, spec: CheckSpec) -> bool:
    return token in (spec.id, spec.scenario) or token in spec.requirements or token.split("[", 1)[0] == spec.id


def select_checks(only: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> list[CheckSpec]:
    """The checks a run reports: those matching --only (all when empty) minus those matching --skip."""
    return [
        spec
        for spec in CHECKS
        if (not only or any(_matches(t, spec) for t in only)) and not any(_matches(t, spec) for t in skip)
    ]


async def run_suite(options: Options, progress: Callable[[str], None] | None = None) -> Report:
    """Run every selected scenario against `options.target` and return the report."""
    started = time.monotonic()
    say = progress or (lambda _message: None)
    target = options.target
    report = Report(target=target.describe())
    rec = Recorder()
    wanted = select_checks(options.only, options.skip)
    scenarios = {spec.scenario for spec in wanted}
    disc = Discovery()
    primary: Mode = "legacy" if "legacy" in options.eras else "auto"

    say(f"connecting ({target.describe()})")
    try:
        async with connect(target, primary) as peer:
            info = peer.client.server_info
            who = f"{info.name} {info.version}".strip() if info is not None else "an anonymous server"
            rec.ok("connection/handshake", f"{who}, protocol {peer.protocol_version}")
            say("tools-list")
            await tools_list(peer, rec, disc)
            say("resource-listing")
            await resource_listing(peer, rec, disc)
            if "resource-read" in scenarios:
                say("resource-read")
                await resource_read(peer, rec, disc)
            if "missing-selection" in scenarios:
                say("missing-selection")
                await missing_selection(peer, rec, disc)
            if scenarios & _CALLING:
                await choose_safe_tool(peer, disc, options.call_tool, options.call_args)
    except ConnectFailure as exc:
        _connect_failed(report, rec, exc, target)
        return _finish(report, rec, wanted, options, started)

    default: EraInfo | None = None
    if scenarios & _CALLING:
        for era in options.eras:
            if era == "legacy" and not scenarios & PER_ERA_SCENARIOS:
                continue
            mode: Mode = "legacy" if era == "legacy" else "auto"
            say(f"authorization [{era}]")
            era_info = await session_scenarios(target, era, mode, rec, disc, say)
            if era_info is not None:
                report.eras.append(era_info)
                if era == "2026-07-28":
                    default = era_info
        if "sessionless" in scenarios:
            if "2026-07-28" in options.eras:
                say("sessionless")
                await sessionless(target, rec, disc, default)
            else:
                rec.skip_scenario("sessionless", "--era legacy: the sessionless 2026-07-28 protocol was not selected")
        if disc.base is not None:
            report.notes.append(unfetched_tool_note(disc))
    if disc.no_resource_reason:
        report.notes.insert(0, f"{disc.no_resource_reason}.")
    return _finish(report, rec, wanted, options, started)


def _connect_failed(report: Report, rec: Recorder, exc: ConnectFailure, target: Target) -> None:
    if exc.kind == "unreachable":
        report.fatal = exc.message
        message = f"could not start or reach the server: {exc.message}"
    else:
        message = f"{exc.message}; is this an MCP server? Progressive disclosure is an MCP extension"
    rec.fail(
        "connection/handshake",
        message,
        expected="an MCP server answering initialize (2025-11-25) or server/discover (2026-07-28)",
    )
    if exc.stderr.strip():
        report.notes.append("server stderr (last lines):\n" + "\n".join(exc.stderr.strip().splitlines()[-15:]))
    for spec in CHECKS:
        if spec.scenario != "connection":
            rec.skip_scenario(spec.scenario, "no MCP connection (see connection/handshake)")


def _finish(report: Report, rec: Recorder, wanted: list[CheckSpec], options: Options, started: float) -> Report:
    order = {spec.id: i for i, spec in enumerate(CHECKS)}
    era_order: dict[str, int] = {era: i for i, era in enumerate(options.eras)}
    for spec in wanted:
        for era in options.eras if spec.scenario in PER_ERA_SCENARIOS else (None,):
            if era is not None and era not in era_order:
                continue
            if not rec.has(spec.id, era):
                rec.skip(spec.id, "not reached: an earlier step of its scenario did not complete", era=era)
    ids = {spec.id for spec in wanted}
    report.results = sorted(
        (r for r in rec.results if r.id in ids and (r.era is None or r.era in era_order)),
        key=lambda r: (order[r.id], era_order.get(r.era or "", -1)),
    )
    if options.expected_failures is not None:
        apply_baseline(report, list(options.expected_failures))
    report.duration_s = time.monotonic() - started
    assert all(r.status in Status for r in report.results)
    return report
