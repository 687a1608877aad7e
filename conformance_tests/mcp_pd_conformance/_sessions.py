"""The multi-session scenarios: authorization, isolation and session-end (per protocol era), and sessionless.

Order matters. Every unfetched-call probe is sent before any era session fetches anything, so a
server that shares grants between sessions cannot pass the probe by accident; the probe uses the
--call-tool arguments or none at all (the gate must refuse before looking at them). A tool is
really invoked only when named with --call-tool or annotated readOnlyHint=true. When tools/list
carries no annotations (they are optional there), the hints are read from the definitions, in the
discovery session only, before any era session opens (`learn_hints`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from ._checks import NO_RESOURCE, ONLY_OWN_TOOLS, Discovery, SafeTool, selection_uri
from ._definitions import learn_definitions
from ._documents import (
    SESSIONLESS_VERSIONS,
    TOOL_DESCRIPTION_REQUIRED,
    CallOutcome,
    base_uri,
    classify_call,
    example_arguments,
    first_example,
    same_selection_uri,
)
from ._model import EraInfo
from ._probe import ConnectFailure, Exchange, Held, Mode, Peer, Pool, Target, short
from ._record import Recorder

__all__ = [
    "EraSession",
    "finish_era",
    "finish_sessionless",
    "learn_arguments",
    "learn_hints",
    "open_era",
    "open_sessionless",
    "pick_probe",
]

_ERA_SCENARIOS = ("authorization", "isolation", "session-end")


# -- which tool ---------------------------------------------------------------------------------------
def _read_only(annotations: object) -> bool:
    return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True


async def learn_hints(peer: Peer, disc: Discovery) -> None:
    """Fill `disc.hints` from the definitions when the listing carries no annotations at all.

    Reads the definitions of the first tools (see _definitions.learn_definitions: a bounded number of
    batched reads, so a rate-limited server keeps its budget for the checks). Runs in the discovery
    session: on a server whose grants leak between sessions the later unfetched-call probe of that tool
    is then let through, which the suite reports as a gate failure (PD-5.1-02) besides the isolation failure.
    """
    if disc.base is None or any(isinstance(t.get("annotations"), dict) for t in disc.gated_tools):
        return
    await learn_definitions(peer, disc)
    unread = [name for name in disc.names if name not in disc.entries]
    if unread:
        read = len(disc.names) - len(unread)
        disc.hints_problem = f"the suite read the definitions of {read} of {len(disc.names)} tools only"


def pick_probe(disc: Discovery, call_tool: str | None, call_args: dict[str, Any] | None) -> None:
    """Choose the tool to probe, without fetching anything; sets `disc.probe` or `disc.safe_reason`."""
    if disc.base is None:
        disc.safe_reason = NO_RESOURCE
        return
    if disc.tools and not disc.names:
        disc.safe_reason = ONLY_OWN_TOOLS
        return
    if call_tool is not None:
        if call_tool not in disc.names:
            disc.safe_reason = f"--call-tool {call_tool} is not in tools/list"
            return
        disc.probe, disc.probe_arguments, disc.probe_source = call_tool, dict(call_args or {}), "--call-tool"
        return
    listed = [t["name"] for t in disc.gated_tools if _read_only(t.get("annotations"))]
    fetched = [name for name in disc.names if _read_only(disc.hints.get(name))]
    if listed:
        disc.probe, disc.probe_source = listed[0], "readOnlyHint=true"
    elif fetched:
        disc.probe, disc.probe_source = fetched[0], "readOnlyHint=true in its fetched definition"
    else:
        where = "in tools/list" + (f" or in the definitions read ({disc.hints_problem})" if disc.hints_problem else "")
        disc.safe_reason = (
            f"no tool is annotated readOnlyHint=true {where}, so the suite will not invoke any tool; "
            "pass --call-tool NAME --args JSON to name one that is safe to call"
        )


def _read_only_names(disc: Discovery) -> list[str]:
    """Every read-only tool, in listing order: annotated in tools/list, or in its fetched definition when the
    listing gives it no annotations."""
    names = []
    for tool in disc.callable_tools:
        listed = tool.get("annotations")
        if _read_only(listed if isinstance(listed, dict) else disc.hints.get(tool["name"])):
            names.append(tool["name"])
    return names


def _hint_source(disc: Discovery, name: str) -> str:
    listed = next((t.get("annotations") for t in disc.callable_tools if t["name"] == name), None)
    return "readOnlyHint=true" if isinstance(listed, dict) else "readOnlyHint=true in its fetched definition"


async def learn_arguments(peer: Peer, disc: Discovery, call_args: dict[str, Any] | None) -> None:
    """The tool the suite really calls after a fetch, and its arguments (`disc.safe`, else `disc.safe_reason`).

    --call-tool with --args as given; --call-tool alone with its first example, or {} when it requires nothing.
    Otherwise every read-only tool is a candidate, not only the one probed unfetched: the probe first (its
    refusal and its authorization are then shown on one tool), then the tools whose description has an example
    (called with the first), then those whose schema requires nothing (called with {}). A tool that requires
    arguments and shows no example is never called with guessed ones.
    """
    if disc.probe is None or disc.base is None:
        return
    if call_args is not None:
        disc.safe = SafeTool(disc.probe, call_args, "--call-tool with --args")
        return
    named = disc.probe_source == "--call-tool"
    candidates = [disc.probe] if named else list(dict.fromkeys([disc.probe, *_read_only_names(disc)]))
    unread = [name for name in candidates if name not in disc.entries]
    if unread:
        await learn_definitions(peer, disc, names=unread)
    choices: list[tuple[int, int, SafeTool]] = []
    for position, name in enumerate(candidates):
        entry = disc.entries.get(name)
        if not isinstance(entry, dict):
            continue
        source = "--call-tool" if named else _hint_source(disc, name)
        example = first_example(entry)
        if example is not None:
            choice = SafeTool(name, example, f"{source}, arguments from its first example")
        elif example_arguments(entry) is not None:
            choice = SafeTool(name, {}, f"{source}, called with {{}}: its schema requires nothing")
        else:
            continue
        rank = 0 if name == disc.probe else 1 if example is not None else 2
        choices.append((rank, position, choice))
    if choices:
        disc.safe = min(choices, key=lambda c: (c[0], c[1]))[2]
        return
    if named:
        disc.safe_reason = (
            f"--call-tool {disc.probe} without --args: its description has no example and it requires arguments, "
            "so it is only probed unfetched; pass --args JSON to test calls after a fetch"
        )
        return
    tried = ", ".join(candidates[:6]) + (f" and {len(candidates) - 6} more" if len(candidates) > 6 else "")
    unread_now = [name for name in candidates if name not in disc.entries]
    disc.safe_reason = (
        f"no read-only tool can be called without guessing its arguments ({tried}: each requires arguments and "
        "its description has no example"
        + (f"; {len(unread_now)} definitions could not be read" if unread_now else "")
        + "), so they are only probed unfetched; pass --call-tool NAME --args JSON to test calls after a fetch"
    )


# -- per era ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Gate:
    """How this server refuses an unfetched call, as observed; later refusals are recognised by it."""

    kind: str
    code: str | None

    def refuses(self, outcome: CallOutcome) -> bool:
        """The refusal of an unfetched call: this server's first one, or TOOL_DESCRIPTION_REQUIRED whatever came first.

        A server that checks arguments before the gate answers the argument-less probe with its validation error
        and a later unfetched call with valid arguments with TOOL_DESCRIPTION_REQUIRED: both are the gate's.
        """
        return (outcome.kind == self.kind and outcome.code == self.code) or _refused_for_description(outcome)

    def unlike(self, outcome: CallOutcome) -> str:
        """Why `outcome` of an unfetched call is not this gate's refusal, in words a server author can act on."""
        if outcome.kind == "ok":
            return "the call ran: a grant reached a session that never fetched the tool"
        return f"{outcome.describe()}, not the refusal of an unfetched call"


@dataclass
class EraSession:
    """Session A of one era, after its unfetched probe."""

    era: str
    mode: Mode
    held: Held
    info: EraInfo
    gate: _Gate | None = None
    blocked: str = ""


def _refused_for_description(outcome: CallOutcome) -> bool:
    return outcome.kind == "refused" and outcome.code == TOOL_DESCRIPTION_REQUIRED


def _sessionless_refusal(outcome: CallOutcome, version: str) -> bool:
    """An explicit refusal of a sessionless-era call that is not TOOL_DESCRIPTION_REQUIRED (e.g. SESSION_REQUIRED)."""
    return version in SESSIONLESS_VERSIONS and outcome.kind == "refused" and not _refused_for_description(outcome)


def _skip_era(rec: Recorder, era: str, reason: str) -> None:
    for scenario in _ERA_SCENARIOS:
        rec.skip_scenario(scenario, reason, era=era)


async def open_era(held: Held, era: str, rec: Recorder, disc: Discovery) -> EraSession:
    """Session A of `era` (opened in that era's protocol, see _eras.open_in_era): its listings and the unfetched-call
    probe. Its later sessions (B, C) are opened in the same client mode."""
    mode = held.peer.mode
    session = EraSession(era, mode, held, EraInfo(era, mode, held.peer.protocol_version))
    await _era_listings(held.peer, rec, disc, era)
    if disc.probe is None:
        session.blocked = disc.safe_reason
        _skip_era(rec, era, disc.safe_reason)
        return session
    assert disc.base is not None
    exchange = await held.peer.call(disc.probe, disc.probe_arguments)
    outcome = classify_call(exchange)
    version = held.peer.protocol_version
    name = disc.probe
    before = (
        "before any era session fetched anything; only the discovery session read its definition, for its hints"
        if disc.probe in disc.hints
        else "before any session fetched anything"
    )
    sent = before + ("" if disc.probe_arguments else ", with no arguments")
    expected = f"an isError result with structuredContent {{error: {{code: {TOOL_DESCRIPTION_REQUIRED}, ...}}}}"
    check = "authorization/unfetched-call-refused"
    if outcome.kind == "ok":
        why = ""
        if disc.probe in disc.hints:
            why = (
                "; since the discovery session read its definition, either calls are not gated or grants leak "
                "between sessions (PD-5.1-04): re-run with --call-tool NAME --args JSON naming a read-only tool "
                "to tell them apart"
            )
        rec.fail(
            check,
            f"{name} ran although this session had not fetched it ({sent}){why}",
            expected=expected,
            exchange=exchange,
            era=era,
        )
        rec.skip("authorization/error-document", "the unfetched call was not refused", era=era)
        return session
    if _sessionless_refusal(outcome, version):
        reason = f"protocol {version} has no session and the server refuses its calls with {outcome.code}"
        rec.info(check, f"{name}: {outcome.describe()} ({reason}; see sessionless)", exchange=exchange, era=era)
        session.blocked = reason
        _skip_era(rec, era, reason)
        return session
    if _refused_for_description(outcome) and outcome.via == "result":
        rec.ok(check, f"{name}: {outcome.describe()}", era=era)
    elif _refused_for_description(outcome):
        rec.warn(
            check,
            f"{name}: {outcome.describe()}; a model reads tool results, not protocol errors",
            expected=expected,
            exchange=exchange,
            era=era,
        )
    else:
        rec.fail(check, f"{name} ({sent}): {outcome.describe()}", expected=expected, exchange=exchange, era=era)
    if outcome.kind == "refused":
        _judge_refusal_document(rec, disc.base, name, outcome, exchange, era)
    else:
        rec.skip("authorization/error-document", "the refusal carried no error document", era=era)
    session.gate = _Gate(outcome.kind, outcome.code)
    return session


async def _era_listings(peer: Peer, rec: Recorder, disc: Discovery, era: str) -> None:
    tools, tools_ex = await peer.paginate("tools")
    resources, res_ex = await peer.paginate("resources")
    problems = []
    if tools_ex.error is not None:
        problems.append(("tools/list failed", tools_ex))
    if res_ex.error is not None:
        problems.append(("resources/list failed", res_ex))
    elif not any(base_uri(str(r.get("uri") or "")) == disc.base for r in resources):
        problems.append((f"{disc.base} is missing from resources/list", res_ex))
    rec.judge(
        "authorization/era-listings",
        problems,
        ok=f"protocol {peer.protocol_version}: {len(tools)} tools, {len(resources)} resources",
        expected="the same tools/list and resources/list in every protocol version",
        prefix=f"in protocol {peer.protocol_version}: ",
        shown=None,
        era=era,
    )


def _judge_refusal_document(
    rec: Recorder, base: str, name: str, outcome: CallOutcome, exchange: Exchange, era: str
) -> None:
    document = outcome.document or {}
    problems = []
    if not outcome.wrapped:
        problems.append('the document is the bare {"code", ...} object, not wrapped in {"error": {...}}')
    if outcome.code != TOOL_DESCRIPTION_REQUIRED:
        problems.append(f"code is {outcome.code!r}")
    message = document.get("message")
    if not isinstance(message, str) or name not in message:
        problems.append(f"the message {message!r} does not name {name}")
    if not same_selection_uri(document.get("resource_uri"), base, name):
        problems.append(f"resource_uri is {document.get('resource_uri')!r}")
    if problems:
        rec.fail(
            "authorization/error-document",
            "; ".join(problems),
            expected=f'{{"error": {{"code": "{TOOL_DESCRIPTION_REQUIRED}", "message": <naming {name!r}>, '
            f'"resource_uri": "{selection_uri(base, name)}"}}}} (spec 6.2, the wrapper included)',
            exchange=exchange,
            era=era,
        )
    else:
        rec.ok("authorization/error-document", f"names {name}, resource_uri {document['resource_uri']}", era=era)


async def finish_era(
    pool: Pool,
    target: Target,
    session: EraSession,
    rec: Recorder,
    disc: Discovery,
    progress: Callable[[str], None],
) -> None:
    """Fetch, call, persist (authorization); a concurrent session B (isolation); a later session C (session-end)."""
    era, a = session.era, session.held
    run_end = False
    try:
        if session.blocked:
            return
        safe, base = disc.safe, disc.base
        if safe is None or base is None:
            _skip_era(rec, era, disc.safe_reason)
            return
        if session.gate is not None:
            pool.warm(target, session.mode)  # session B, started while session A's grant is shown to last (stdio)
        if not await _fetch_then_call(a.peer, rec, base, safe, session):
            return
        if session.gate is None:
            reason = "the unfetched call was not refused (see authorization/unfetched-call-refused)"
            rec.skip_scenario("isolation", reason, era=era)
            rec.skip_scenario("session-end", reason, era=era)
            return
        progress(f"isolation [{era}]")
        await _isolation(pool, target, session, rec, safe, session.gate)
        run_end = True
    finally:
        await a.close()
    if run_end and disc.safe is not None and session.gate is not None:
        progress(f"session-end [{era}]")
        await _session_end(pool, target, session, rec, disc.safe, session.gate)


async def _fetch_then_call(a: Peer, rec: Recorder, base: str, safe: SafeTool, session: EraSession) -> bool:
    """authorization/fetch-authorizes and /persists; True when the session ended up authorized."""
    era, gate, version = session.era, session.gate, a.protocol_version
    fetch = await a.read(selection_uri(base, safe.name))
    call = await a.call(safe.name, safe.arguments)
    after = classify_call(call)

    def refused(outcome: CallOutcome) -> bool:
        return gate.refuses(outcome) if gate is not None else _refused_for_description(outcome)

    if fetch.error is not None:
        rec.fail(
            "authorization/fetch-authorizes",
            f"fetching {safe.name}'s description failed",
            expected="a successful read, then a call that passes the gate",
            exchange=fetch,
            era=era,
        )
        reason = "the description could not be fetched (see authorization/fetch-authorizes)"
    elif _sessionless_refusal(after, version) and not refused(after):
        reason = f"protocol {version} has no session and the server refuses its calls with {after.code}"
        rec.info(
            "authorization/fetch-authorizes", f"{safe.name}: {after.describe()} ({reason})", exchange=call, era=era
        )
    elif refused(after):
        rec.fail(
            "authorization/fetch-authorizes",
            f"{safe.name} was still refused after this session fetched its description: {after.describe()}",
            expected="the call passes the gate (no TOOL_DESCRIPTION_REQUIRED)",
            exchange=call,
            era=era,
        )
        reason = "the fetching session was never authorized (see authorization/fetch-authorizes)"
    else:
        note = "" if after.kind == "ok" else f" (the tool itself answered: {short(after.detail or after.code, 120)})"
        rec.ok("authorization/fetch-authorizes", f"{safe.name} passed the gate after the fetch{note}", era=era)
        lapsed = await _persists(a, rec, safe, era, refused)
        if not lapsed:
            return True
        reason = f"the grant lapsed in session A itself ({lapsed}; see authorization/persists)"
        rec.skip_scenario("isolation", reason, era=era)
        rec.skip_scenario("session-end", reason, era=era)
        return False
    rec.skip("authorization/persists", reason, era=era)
    rec.skip_scenario("isolation", reason, era=era)
    rec.skip_scenario("session-end", reason, era=era)
    return False


# Calls after the fetch, and the pause before each (seconds): a grant must outlast requests and time (5.1: for the
# session's lifetime). 1.2 s apart, twice: a server that drops grants on a clock (every second, say) shows within
# one run, whatever the phase of its clock, and the check costs 2.4 s per era.
_LATER_CALLS = (0.0, 1.2, 1.2)


async def _persists(a: Peer, rec: Recorder, safe: SafeTool, era: str, refused: Callable[[CallOutcome], bool]) -> str:
    """authorization/persists: further calls over a few seconds; what lapsed (empty when the grant held). Session A's
    own lapse is said here, so isolation (whose session B runs later) is never blamed for it."""
    waited = 0.0
    for attempt, pause in enumerate(_LATER_CALLS, start=2):
        if pause:
            await anyio.sleep(pause)
            waited += pause
        again = classify_call(exchange := await a.call(safe.name, safe.arguments))
        if refused(again):
            when = f"call {attempt} after the fetch, {waited:.1f} s after it" if waited else f"call {attempt}"
            rec.fail(
                "authorization/persists",
                f"{when}, was refused ({again.describe()}): authorization did not persist in session A, where "
                "nothing but this tool's own calls happened since the fetch",
                expected=f"every later call in the session passes the gate, however long after the fetch (the suite "
                f"waited {sum(_LATER_CALLS):.1f} s)",
                exchange=exchange,
                era=era,
            )
            return f"{when}, was refused"
    rec.ok(
        "authorization/persists",
        f"{len(_LATER_CALLS)} further calls passed the gate over {sum(_LATER_CALLS):.1f} s",
        era=era,
    )
    return ""


async def _isolation(
    pool: Pool, target: Target, session: EraSession, rec: Recorder, safe: SafeTool, gate: _Gate
) -> None:
    era = session.era
    note = " (over stdio each session is its own server process)" if target.stdio is not None else ""
    try:
        b = await pool.open(target, session.mode)
    except ConnectFailure as exc:
        rec.skip_scenario("isolation", f"could not open a second session: {exc.message}", era=era)
        return
    calls: dict[str, Exchange] = {}

    async def call(label: str, peer: Peer) -> None:
        calls[label] = await peer.call(safe.name, safe.arguments)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "b", b.peer)
            tg.start_soon(call, "a", session.held.peer)
    finally:
        await b.close()
    other = classify_call(calls["b"])
    if gate.refuses(other):
        rec.ok("isolation/other-session-refused", f"session B was refused {safe.name}{note}", era=era)
    else:
        rec.fail(
            "isolation/other-session-refused",
            f"session B never fetched {safe.name}, yet {gate.unlike(other)}",
            expected=f"the refusal of an unfetched call ({TOOL_DESCRIPTION_REQUIRED}): only session A fetched it",
            exchange=calls["b"],
            era=era,
        )
    own = classify_call(calls["a"])
    if gate.refuses(own):
        rec.fail(
            "isolation/own-session-unaffected",
            f"session A, which fetched {safe.name}, was refused it while session B was active",
            expected="session A's call passes the gate",
            exchange=calls["a"],
            era=era,
        )
    else:
        rec.ok("isolation/own-session-unaffected", "session A stayed authorized", era=era)


async def _session_end(
    pool: Pool, target: Target, session: EraSession, rec: Recorder, safe: SafeTool, gate: _Gate
) -> None:
    era = session.era
    try:
        c = await pool.open(target, session.mode, fresh=True)  # begun after session A ended, never a warm one
    except ConnectFailure as exc:
        rec.skip("session-end/new-session-refused", f"could not open a new session: {exc.message}", era=era)
        return
    try:
        exchange = await c.peer.call(safe.name, safe.arguments)
    finally:
        await c.close()
    outcome = classify_call(exchange)
    if gate.refuses(outcome):
        rec.ok(
            "session-end/new-session-refused",
            f"a session opened after session A ended was refused {safe.name}",
            era=era,
        )
    else:
        rec.fail(
            "session-end/new-session-refused",
            f"session C, opened after session A ended, never fetched {safe.name}, yet {gate.unlike(outcome)}",
            expected=f"the refusal of an unfetched call ({TOOL_DESCRIPTION_REQUIRED}): grants end with their session",
            exchange=exchange,
            era=era,
        )


# -- sessionless ----------------------------------------------------------------------------------------
async def open_sessionless(
    pool: Pool, target: Target, rec: Recorder, disc: Discovery, negotiated: str | None
) -> Held | None:
    """Scenario sessionless, first half: a client pinned to 2026-07-28 (no MCP session) sends the unfetched probe.
    `negotiated`: what the default client (mode auto) negotiated, when the run opened one."""
    if negotiated is not None:
        rec.info("sessionless/negotiated-version", f"the default client (mode auto) negotiated {negotiated}")
    else:
        rec.info("sessionless/negotiated-version", "the default client could not connect")
    if disc.probe is None:
        rec.skip_scenario("sessionless", disc.safe_reason)
        return None
    try:
        held = await pool.open(target, "2026-07-28")
    except ConnectFailure as exc:
        rec.skip_scenario("sessionless", f"could not open a 2026-07-28 client: {exc.message}")
        return None
    if negotiated not in SESSIONLESS_VERSIONS:
        listing = await held.peer.list_tools()
        if listing.error is not None:
            rec.skip_scenario("sessionless", f"the server does not serve 2026-07-28 requests ({listing.received})")
            await held.close()
            return None
    name = disc.probe
    exchange = await held.peer.call(name, disc.probe_arguments)
    first = classify_call(exchange)
    expected = f"{TOOL_DESCRIPTION_REQUIRED}, or an explicit refusal such as SESSION_REQUIRED"
    if first.kind == "ok":
        rec.fail(
            "sessionless/unfetched-call-refused",
            f"{name} ran in protocol 2026-07-28 although nothing was fetched",
            expected=expected,
            exchange=exchange,
        )
    elif first.kind == "refused":
        rec.ok("sessionless/unfetched-call-refused", f"{name}: {first.describe()}")
    else:
        rec.warn(
            "sessionless/unfetched-call-refused",
            f"{name} was refused, but without an error code: {first.detail}",
            expected=expected,
            exchange=exchange,
        )
    return held


async def finish_sessionless(held: Held | None, rec: Recorder, disc: Discovery) -> None:
    """Scenario sessionless, second half: fetch then call in the same pinned client."""
    if held is None:
        return
    try:
        safe, base = disc.safe, disc.base
        if safe is None or base is None:
            rec.skip("sessionless/fetch-then-call", disc.safe_reason)
            return
        fetch = await held.peer.read(selection_uri(base, safe.name))
        call = await held.peer.call(safe.name, safe.arguments)
    finally:
        await held.close()
    after = classify_call(call)
    check = "sessionless/fetch-then-call"
    expected = "the call passes the gate, or an explicit documented refusal such as SESSION_REQUIRED"
    if fetch.error is not None:
        rec.fail(
            check,
            f"fetching {safe.name}'s description failed in protocol 2026-07-28",
            expected=expected,
            exchange=fetch,
        )
    elif after.kind == "ok":
        rec.ok(check, f"fetch then call of {safe.name} succeeded in protocol 2026-07-28")
    elif _refused_for_description(after):
        rec.fail(
            check,
            f"{safe.name} is still refused with {TOOL_DESCRIPTION_REQUIRED} after the fetch: a 2026-07-28 client "
            "can never call it and is not told why",
            expected=expected,
            exchange=call,
        )
    elif after.kind == "refused":
        message = (after.document or {}).get("message")
        rec.ok(check, f"refused explicitly with {after.code}" + (f": {short(message, 160)}" if message else ""))
    else:
        rec.fail(
            check,
            f"after the fetch the call failed without an error code: {after.detail}",
            expected=expected,
            exchange=call,
        )
