"""Runs the scenarios against one server and assembles the `Report`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._available import available_tools_visible
from ._baseline import apply_baseline, validate_selector
from ._browse import adopt_catalog
from ._catalog import catalog_profile
from ._checks import NO_RESOURCE, Discovery, unfetched_tool_note
from ._definitions import judge_reads, learn_definitions, listed_schema_agrees, schema_valid
from ._eras import EraLedger, open_discovery, open_in_era
from ._fallback import tool_fallback_profile
from ._grants import GrantsSession, finish_grants, open_grants
from ._listing import relist, tools_list
from ._missing import MISSING_DOCUMENT, error_document_in_era, missing_selection
from ._model import Report, Status
from ._overlap import overlapping_reads
from ._probe import MAX_PAGES, ConnectFailure, Held, Mode, Peer, Pool, Target
from ._profiles import ProfileContext
from ._proxy import proxy_tool_gated
from ._reading import resource_read
from ._record import Recorder
from ._resource_listing import resource_listing
from ._selection import selection_parsing
from ._served import capabilities_in_eras, era_of, era_peers, served_tools_listed
from ._sessions import (
    EraSession,
    finish_era,
    finish_sessionless,
    learn_arguments,
    learn_hints,
    open_era,
    open_sessionless,
    pick_probe,
)
from ._spec import CHECKS, ERAS, PER_ERA_SCENARIOS, PROFILES, CheckSpec, Era
from ._unsafe import unsafe_tools_gated
from ._warming import warm_first_sessions, warm_grant_sessions

__all__ = ["ERAS", "Options", "profile_problem", "run_suite", "select_checks"]

_CALLING = frozenset({"authorization", "grants", "isolation", "session-end", "sessionless"})


@dataclass(frozen=True)
class Options:
    """One run: the target, the protocol eras, the selection, the tool the suite may invoke, the optional profiles."""

    target: Target
    eras: tuple[Era, ...] = ERAS
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    call_tool: str | None = None
    call_args: dict[str, Any] | None = None
    expected_failures: tuple[str, ...] | None = None
    strict: bool = False
    grant_hold: float = 0.0
    profiles: tuple[str, ...] = ()
    allow_side_effects: bool = False  # grants/unsafe-tools-gated may call an unconstrained tool unfetched with {}
    # time.monotonic() the reported duration counts from (the CLI: its process's start); None: run_suite's call.
    started: float | None = None

    def __post_init__(self) -> None:
        if not self.eras or any(e not in ERAS for e in self.eras):
            raise ValueError(f"eras must be a non-empty subset of {ERAS}")
        unknown = [p for p in self.profiles if p not in PROFILES]
        if unknown:
            raise ValueError(f"unknown profile(s) {', '.join(unknown)}; the profiles are {', '.join(PROFILES)}")
        for token in (*self.only, *self.skip, *(self.expected_failures or ())):
            validate_selector(token)
        for token in self.only:
            problem = profile_problem(token, self.profiles)
            if problem:
                raise ValueError(problem)
        if self.call_args is not None and self.call_tool is None:
            raise ValueError("call_args needs call_tool")
        if self.grant_hold < 0:
            raise ValueError("grant_hold must not be negative")


def _matches(token: str, spec: CheckSpec) -> bool:
    return token in (spec.id, spec.scenario) or token in spec.requirements or token.split("[", 1)[0] == spec.id


def select_checks(
    only: tuple[str, ...] = (), skip: tuple[str, ...] = (), profiles: tuple[str, ...] = ()
) -> list[CheckSpec]:
    """The checks a run reports: the core's and those of `profiles`, matching --only (all when empty), minus --skip."""
    return [
        spec
        for spec in CHECKS
        if (spec.profile is None or spec.profile in profiles)
        and (not only or any(_matches(t, spec) for t in only))
        and not any(_matches(t, spec) for t in skip)
    ]


def profile_problem(token: str, profiles: tuple[str, ...]) -> str | None:
    """Why an --only selector selects nothing: it names only checks of a profile that was not asked for."""
    matched = [spec for spec in CHECKS if _matches(token, spec)]
    missing = sorted({s.profile for s in matched if s.profile is not None and s.profile not in profiles})
    if matched and missing and all(s.profile in missing for s in matched):
        return f"{token!r} is checked by the profile {' / '.join(missing)}: add --profile {missing[0]}"
    return None


async def run_suite(options: Options, progress: Callable[[str], None] | None = None) -> Report:
    """Run every selected scenario against `options.target` and return the report."""
    started = time.monotonic() if options.started is None else options.started
    say = progress or (lambda _message: None)
    report = Report(target=options.target.describe(), strict=options.strict)
    rec = Recorder()
    wanted = select_checks(options.only, options.skip, options.profiles)
    scenarios = {spec.scenario for spec in wanted}
    disc = Discovery()
    async with Pool() as pool:
        await _run(pool, options, report, rec, disc, scenarios, say)
        if "resource-read" in scenarios:
            judge_reads(rec, disc, pool.reads)
    return _finish(report, rec, wanted, options, started)


async def _run(
    pool: Pool,
    options: Options,
    report: Report,
    rec: Recorder,
    disc: Discovery,
    scenarios: set[str],
    say: Callable[[str], None],
) -> None:
    target = options.target
    say(f"connecting ({target.describe()})")
    ledger = EraLedger(options.eras)
    try:
        first: Held = await open_discovery(pool, target, ledger)
    except ConnectFailure as exc:
        _connect_failed(report, rec, exc)
        return
    try:
        await _scenarios(pool, options, report, rec, disc, scenarios, say, first, ledger)
    finally:
        report.coverage = ledger.judge(rec)


async def _scenarios(
    pool: Pool,
    options: Options,
    report: Report,
    rec: Recorder,
    disc: Discovery,
    scenarios: set[str],
    say: Callable[[str], None],
    first: Held,
    ledger: EraLedger,
) -> None:
    target = options.target
    peer = first.peer
    info = peer.client.server_info
    who = f"{info.name} {info.version}".strip() if info is not None else "an anonymous server"
    refused = ledger.unspoken("legacy")
    rec.ok("connection/handshake", f"{who}, protocol {peer.protocol_version}" + (f" ({refused})" if refused else ""))
    say("tools-list")
    await tools_list(peer, rec, disc)
    say("resource-listing")
    await resource_listing(peer, rec, disc)
    await peer.paginate("resourceTemplates")
    _judge_pagination(rec, peer)
    if disc.no_resource_reason:
        report.notes.append(f"{disc.no_resource_reason}.")

    calling = bool(scenarios & _CALLING)
    if calling and target.headers:
        report.notes.append(
            "Credentials were sent on every connection of this run: a server that keys grants by the authenticated "
            "principal (as mcp-pd serve --bearer-tokens does, spec/interpretations.md I-18) sees all of them as one "
            "client, so what one session fetched is granted in the others; judge such a server's sessions with "
            "--skip authorization,grants,isolation,session-end,sessionless, or against a server keyed by session."
        )
    if calling or "resource-read" in scenarios:
        # Catalog mode: the tools behind call_tool join the core's reads, gates and grant checks.
        pool.routes.update(await adopt_catalog(peer, disc))
        if disc.behind:
            report.notes.append(
                f"Catalog mode: the core read, gated and called {len(disc.behind)} tools that browse_tools named, "
                "each call sent through call_tool."
            )
    # Sessions of a session-bearing era when one is selected and spoken: a grant needs a session.
    held_mode: Mode = ledger.session_mode
    sessions: list[EraSession] = []
    pinned: Held | None = None
    grants: GrantsSession | None = None
    if calling:
        # Unfetched-call probes first, before any era session fetches anything (see _sessions).
        if options.call_tool is None:
            await learn_hints(peer, disc)
        pick_probe(disc, options.call_tool, options.call_args)
        warm_first_sessions(pool, target, options.eras, scenarios, disc, held_mode, ledger)
        for era in options.eras:
            if era == "legacy" and not scenarios & PER_ERA_SCENARIOS:
                continue
            say(f"authorization [{era}]")
            if disc.base is None:
                for scenario in PER_ERA_SCENARIOS:
                    rec.skip_scenario(scenario, NO_RESOURCE, era=era)
                continue
            unspoken = ledger.unspoken(era) if era == "legacy" else None
            held, why = (None, unspoken) if unspoken else await open_in_era(pool, target, era, ledger)
            if held is None:
                ledger.skip_era(rec, era, why)
                continue
            session = await open_era(held, era, rec, disc)
            sessions.append(session)
            report.eras.append(session.info)
        if "grants" in scenarios:
            say("grants")
            grants = await open_grants(pool, target, held_mode, rec, disc, options.call_args)
        if "sessionless" in scenarios:
            if "2026-07-28" not in options.eras:
                rec.skip_scenario("sessionless", "--era legacy: the sessionless 2026-07-28 protocol was not selected")
            elif disc.base is None:
                rec.skip_scenario("sessionless", NO_RESOURCE)
            else:
                say("sessionless")
                pinned = await open_sessionless(pool, target, rec, disc, ledger.auto_negotiated)
                if pinned is not None:
                    ledger.saw("2026-07-28", "a client pinned to 2026-07-28 was answered (scenario sessionless)")

    if "resource-listing" in scenarios:
        # Each era's capabilities from its own handshake: the discovery session's, and the era sessions' above.
        peers = era_peers([peer, *(s.held.peer for s in sessions)])
        await capabilities_in_eras(pool, target, ledger, peers, rec, disc)
    if "resource-read" in scenarios or calling:
        await learn_definitions(peer, disc)
    if "resource-read" in scenarios:
        say("resource-read")
        await resource_read(peer, rec, disc)
        if disc.base is not None and disc.names:
            await selection_parsing(peer, rec, disc)
            schema_valid(rec, disc)
            listed_schema_agrees(rec, disc)
            await available_tools_visible(pool, target, held_mode, rec, disc)
    if "missing-selection" in scenarios:
        say("missing-selection")
        # The error document in each era, from a session of that era: the discovery session's, then the others'.
        own = era_of(peer)
        await missing_selection(peer, rec, disc, own if own in options.eras else None)
        for session in sessions:
            if disc.base is not None and session.era != own and not rec.has(MISSING_DOCUMENT, session.era):
                await error_document_in_era(session.held.peer, rec, disc.base, session.era)
        for era in options.eras:  # eras without a session of their own (no calling scenario selected, say)
            spoken = not (era == "legacy" and ledger.unspoken(era))
            if disc.base is not None and not rec.has(MISSING_DOCUMENT, era) and spoken:
                held, _why = await open_in_era(pool, target, era, ledger)
                if held is not None:
                    try:
                        await error_document_in_era(held.peer, rec, disc.base, era)
                    finally:
                        await held.close()
    if "tools-list" in scenarios:
        # After the reads above: their unknown-name entries name the tools the server serves; and a re-listing
        # after them (and after any list_changed they drew) is judged as the first listing was.
        await served_tools_listed(peer, rec, disc)
        await relist(peer, rec, disc)
    if calling:
        await learn_arguments(peer, disc, options.call_args)
    # The profiles run last, so that nothing they authorize can help a core probe; the discovery session
    # stays open for them, to read definitions, search and browse (it is never used to prove a grant).
    profiles = [p for p in options.profiles if p in scenarios]
    if not profiles:
        await first.close()
    for session in sessions:
        say(f"authorization [{session.era}]")
        await finish_era(pool, target, session, rec, disc, say)
    await finish_sessionless(pinned, rec, disc)
    if grants is not None:
        say("grants")
        warm_grant_sessions(pool, target, grants, disc)
        await finish_grants(pool, target, grants, rec, disc, options.grant_hold)
    if "grants" in scenarios:
        await unsafe_tools_gated(pool, target, held_mode, rec, disc, grants, allow=options.allow_side_effects)
        say("grants [overlapping]")
        await overlapping_reads(pool, target, grants, rec, disc)
        await proxy_tool_gated(pool, target, held_mode, rec, disc)
    if calling and disc.base is not None:
        report.notes.append(unfetched_tool_note(disc))
    if profiles:
        context = ProfileContext(pool, target, held_mode, rec, disc, peer, options.call_tool, options.call_args, say)
        try:
            # Catalog first: the names it browses give tool-fallback more tools to choose a safe one from.
            for name, profile in (("catalog", catalog_profile), ("tool-fallback", tool_fallback_profile)):
                if name in profiles:
                    say(f"profile {name}")
                    report.profiles.append(await profile(context))
        finally:
            await first.close()
        report.profiles.sort(key=lambda run: list(PROFILES).index(run.name))


def _judge_pagination(rec: Recorder, peer: Peer) -> None:
    if peer.pagination_problems:
        rec.fail(
            "tools-list/pagination",
            "; ".join(peer.pagination_problems),
            expected=f"nextCursor only while more items follow, each cursor once, within {MAX_PAGES} pages",
        )
    else:
        rec.ok("tools-list/pagination", "tools/list, resources/list and resources/templates/list cursors ended")


def _connect_failed(report: Report, rec: Recorder, exc: ConnectFailure) -> None:
    if exc.kind == "unreachable":
        report.fatal = exc.message
        message = f"could not start or reach the server: {exc.message}"
    elif exc.kind == "unauthorized":
        report.fatal = exc.message
        report.fatal_kind = "unauthorized"
        message = f"not authorized: {exc.message}"
    else:
        message = f"{exc.message}; is this an MCP server? Progressive disclosure is an MCP extension"
    expected = "an MCP server answering initialize (2025-11-25) or server/discover (2026-07-28)"
    if exc.kind == "unauthorized":
        expected = "credentials the server accepts (--header, --header-env or --bearer-env), then " + expected
    rec.fail("connection/handshake", message, expected=expected)
    if exc.stderr.strip():
        report.notes.append("server stderr (last lines):\n" + "\n".join(exc.stderr.strip().splitlines()[-15:]))


def _finish(report: Report, rec: Recorder, wanted: list[CheckSpec], options: Options, started: float) -> Report:
    said = [line for line in options.target.said if line != "(nothing)"]
    if said:
        report.notes.append("the server warned on stderr (first session):\n" + "\n".join(said))
    order = {spec.id: i for i, spec in enumerate(CHECKS)}
    era_order: dict[str, int] = {era: i for i, era in enumerate(options.eras)}
    connected = any(r.id == "connection/handshake" and r.status is Status.SUCCESS for r in rec.results)
    reason = (
        "not reached: an earlier step of its scenario did not complete"
        if connected
        else "no MCP connection (see connection/handshake)"
    )
    for spec in wanted:
        if spec.per_era:
            rec.spread(spec.id, options.eras)
        for era in options.eras if spec.per_era else (None,):
            if not rec.has(spec.id, era):
                rec.skip(spec.id, reason, era=era)
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
