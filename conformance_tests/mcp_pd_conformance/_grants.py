"""Scenario grants: which tools each kind of read authorized, and which it did not, proven by calls.

Session G opens with the era sessions, before anything is fetched anywhere, and calls every safe tool
unfetched (`open_grants`). At the end of the run it goes on (`finish_grants`): reads that must grant
nothing, a read of another tool, one read of several tools, a longer stretch of other requests (and,
with --grant-hold, a wait), each followed by calls. A fresh session H checks that a read mixing known
and unknown names authorizes the known ones, and that its grant outlives requests that grant nothing (a read
without a selection, a refused call of another tool, a read naming an unknown tool). Only read-only tools (or
--call-tool) are ever called.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ._checks import Discovery, selection_uri, unknown_name
from ._documents import SESSIONLESS_VERSIONS, TOOL_DESCRIPTION_REQUIRED, CallOutcome, classify_call, example_arguments
from ._probe import ConnectFailure, Exchange, Held, Mode, Pool, Target, short
from ._record import Recorder
from ._selection import near_miss, partial_names

__all__ = ["MAX_SAFE_TOOLS", "STRETCH", "GrantsSession", "finish_grants", "open_grants", "safe_tools"]

MAX_SAFE_TOOLS = 8
# Checked in a session of its own, whatever became of session G (see _unsafe).
APART = frozenset({"grants/unsafe-tools-gated"})
STRETCH = 24  # other requests between the read and the calls of grants/persist-through-session
SURVIVE = "grants/survive-refusals"


def safe_tools(disc: Discovery) -> list[str]:
    """The tools the suite may call: --call-tool, then each readOnlyHint=true tool (in the listing or definition)."""
    names = [disc.probe] if disc.probe is not None and disc.probe_source == "--call-tool" else []
    for tool in disc.callable_tools:
        hints = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else disc.hints.get(tool["name"])
        if isinstance(hints, dict) and hints.get("readOnlyHint") is True and tool["name"] not in names:
            names.append(tool["name"])
    return names[:MAX_SAFE_TOOLS]


@dataclass
class GrantsSession:
    """Session G after its unfetched calls."""

    held: Held
    mode: Mode
    tools: list[str]
    code: str | None = None  # the refusal code G's first unfetched call got
    blocked: str = ""
    gated: bool = False  # every safe tool was refused unfetched: the server has a gate
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)

    def refused(self, outcome: CallOutcome) -> bool:
        return outcome.kind == "refused" and outcome.code in (TOOL_DESCRIPTION_REQUIRED, self.code)


async def open_grants(
    pool: Pool, target: Target, mode: Mode, rec: Recorder, disc: Discovery, call_args: dict[str, Any] | None
) -> GrantsSession | None:
    """Open session G and call every safe tool unfetched (grants/every-tool-gated, repeated-unfetched-refused)."""
    tools = safe_tools(disc)
    if disc.base is None or not tools:
        rec.skip_scenario(
            "grants", disc.safe_reason if disc.base is not None else "no tool_descriptions resource", keep=APART
        )
        return None
    try:
        held = await pool.open(target, mode)
    except ConnectFailure as exc:
        rec.skip_scenario("grants", f"could not open a session: {exc.message}", keep=APART)
        return None
    g = GrantsSession(held, mode, tools)
    unfetched = {name: dict(call_args or {}) if name == disc.probe else {} for name in tools}
    outcomes: dict[str, tuple[CallOutcome, Exchange]] = {}
    for name in tools:
        exchange = await held.peer.call(name, unfetched[name])
        outcomes[name] = (classify_call(exchange), exchange)
    first, _ = outcomes[tools[0]]
    version = held.peer.protocol_version
    if version in SESSIONLESS_VERSIONS and first.kind == "refused" and first.code != TOOL_DESCRIPTION_REQUIRED:
        g.blocked = f"protocol {version} has no session and the server refuses its calls with {first.code}"
        rec.skip_scenario("grants", g.blocked, keep=APART)
        return g
    g.code = first.code if first.kind == "refused" else None
    ran = [(n, ex) for n, (o, ex) in outcomes.items() if not g.refused(o)]
    if ran:
        rec.fail(
            "grants/every-tool-gated",
            f"{len(ran)} of {len(tools)} safe tools passed the gate unfetched: "
            + ", ".join(f"{n} ({outcomes[n][0].describe()})" for n, _ in ran[:5]),
            expected=f"every unfetched call refused with {TOOL_DESCRIPTION_REQUIRED}",
            exchange=ran[0][1],
        )
    else:
        g.gated = g.code is not None
        rec.ok("grants/every-tool-gated", f"all {len(tools)} safe tools were refused unfetched: {', '.join(tools)}")
    if g.refused(first):
        for attempt in (2, 3):
            exchange = await held.peer.call(tools[0], unfetched[tools[0]])
            outcome = classify_call(exchange)
            if not g.refused(outcome):
                rec.fail(
                    "grants/repeated-unfetched-refused",
                    f"unfetched call {attempt} of {tools[0]}: {outcome.describe()}",
                    expected=f"{TOOL_DESCRIPTION_REQUIRED} for every unfetched call",
                    exchange=exchange,
                )
                break
        else:
            rec.ok("grants/repeated-unfetched-refused", f"calls 2 and 3 of unfetched {tools[0]} were refused too")
    else:
        g.blocked = f"the first unfetched call of {tools[0]} was not refused (see grants/every-tool-gated)"
        rec.skip("grants/repeated-unfetched-refused", g.blocked)
    return g


def _case_variant(name: str, listed: list[str]) -> str | None:
    candidates = (name.swapcase(), name.upper(), name.lower(), name.title())
    return next((v for v in candidates if v != name and v not in listed), None)


async def finish_grants(
    pool: Pool, target: Target, g: GrantsSession | None, rec: Recorder, disc: Discovery, hold: float
) -> None:
    """The rest of scenario grants, after every other scenario (the definitions are known by then)."""
    if g is None:
        return
    try:
        if g.blocked:
            rec.skip_scenario("grants", g.blocked, keep=APART)
            return
        assert disc.base is not None
        for name in g.tools:
            entry = disc.entries.get(name)
            learned = example_arguments(entry) if isinstance(entry, dict) else None
            g.arguments[name] = dict(disc.safe.arguments) if disc.safe and disc.safe.name == name else learned or {}
        await _run(g, rec, disc, disc.base, hold)
    finally:
        await g.held.close()
    if not g.blocked:
        await _mixed(pool, target, g, rec, disc)


async def _call(g: GrantsSession, name: str) -> tuple[CallOutcome, Exchange]:
    exchange = await g.held.peer.call(name, g.arguments.get(name, {}))
    return classify_call(exchange), exchange


async def _run(g: GrantsSession, rec: Recorder, disc: Discovery, base: str, hold: float) -> None:
    peer, first = g.held.peer, g.tools[0]
    unknown = unknown_name(disc.names)
    # Reads that serve no definition of `first`: each must leave it refused.
    reads = {
        "no selection": base,
        "an empty selection": f"{base}?tools=",
        "an unknown name": selection_uri(base, unknown),
    }
    resembling = partial_names([first, *disc.names])
    partial = resembling[1] if resembling is not None and resembling[0] == first else []
    for label, variant in (
        ("a case variant", _case_variant(first, disc.names)),
        ("a punctuation variant", near_miss(first, disc.names)),
        *((("a prefix" if first.startswith(v) else "a near spelling"), v) for v in partial),
    ):
        if variant is not None:
            reads[f"{label} ({variant})"] = selection_uri(base, variant)
    leaked = []
    for label, uri in reads.items():
        await peer.read(uri)
        outcome, exchange = await _call(g, first)
        if not g.refused(outcome):
            leaked.append((f"after a read of {label}, {first}: {outcome.describe()}", exchange))
    if leaked:
        rec.fail(
            "grants/refused-read-grants-nothing",
            "; ".join(p for p, _ in leaked[:3]),
            expected=f"{first} still refused: none of these reads served its definition",
            exchange=leaked[0][1],
        )
    else:
        rec.ok("grants/refused-read-grants-nothing", f"{first} stayed refused after reads of {', '.join(reads)}")

    others = [n for n in disc.names if n not in g.tools]
    other = others[0] if others else (g.tools[1] if len(g.tools) > 1 else None)
    if other is None:
        rec.skip("grants/read-other-refused", "the server lists a single tool")
    else:
        await peer.read(selection_uri(base, other))
        outcome, exchange = await _call(g, first)
        if g.refused(outcome):
            rec.ok("grants/read-other-refused", f"reading {other} left {first} refused")
        else:
            rec.fail(
                "grants/read-other-refused",
                f"after reading only {other}, {first}: {outcome.describe()}",
                expected=f"{first} refused: only {other} was fetched",
                exchange=exchange,
            )

    # Every safe tool away from the head of the list, behind fillers when there are any.
    fillers = [n for n in others if n != other][:1] + ([other] if other and other not in g.tools else [])
    several = list(dict.fromkeys([*fillers, *g.tools[1:], first]))
    read = await peer.read(selection_uri(base, *several))
    refused = []
    for name in g.tools:
        outcome, exchange = await _call(g, name)
        if g.refused(outcome):
            refused.append((f"{name} (position {several.index(name) + 1})", exchange))
    if read.error is not None:
        rec.fail(
            "grants/each-read-tool-authorized",
            f"the read of {len(several)} tools failed: {short(read.received, 160)}",
            expected="a successful read, then every tool it served callable",
            exchange=read,
        )
    elif refused:
        rec.fail(
            "grants/each-read-tool-authorized",
            f"one read of ?tools={','.join(several)} left {len(refused)} refused: {', '.join(p for p, _ in refused)}",
            expected="every tool the read served passes the gate",
            exchange=refused[0][1],
        )
    else:
        rec.ok(
            "grants/each-read-tool-authorized",
            f"one read of {len(several)} tools authorized each of {', '.join(g.tools)}",
        )
        await _stretch(g, rec, disc, base, others or [unknown], hold)
    await _required_truthful(g, rec, disc)


async def _stretch(
    g: GrantsSession, rec: Recorder, disc: Discovery, base: str, fillers: list[str], hold: float
) -> None:
    peer = g.held.peer
    for i in range(STRETCH):
        step = i % 3
        if step == 0:
            await peer.read(selection_uri(base, fillers[(i // 3) % len(fillers)]))
        elif step == 1:
            await peer.list_tools()
        else:
            await peer.list_resources()
    lost = []
    for name in g.tools:
        outcome, exchange = await _call(g, name)
        if g.refused(outcome):
            lost.append((f"{name} after {STRETCH} other requests", exchange))
    if hold > 0 and not lost:
        await anyio.sleep(hold)
        for name in g.tools:
            outcome, exchange = await _call(g, name)
            if g.refused(outcome):
                lost.append((f"{name} after {hold:g} s", exchange))
    waited = f" and {hold:g} s of waiting" if hold > 0 else " (pass --grant-hold SECONDS to also wait)"
    if lost:
        rec.fail(
            "grants/persist-through-session",
            "the grant was lost: " + "; ".join(p for p, _ in lost[:3]),
            expected="grants last as long as the session",
            exchange=lost[0][1],
        )
    else:
        rec.ok("grants/persist-through-session", f"{len(g.tools)} grants held through {STRETCH} other requests{waited}")


async def _required_truthful(g: GrantsSession, rec: Recorder, disc: Discovery) -> None:
    """A read-only tool whose served schema requires nothing is called with {} (it is fetched by now)."""
    optional = []
    for name in g.tools:
        schema = (disc.entries.get(name) or {}).get("inputSchema")
        if isinstance(schema, dict) and schema.get("properties") and not schema.get("required"):
            optional.append((name, list(schema["properties"])))
    if not optional:
        rec.skip("grants/required-truthful", "no safe tool's served schema leaves all its parameters optional")
        return
    contradicted = []
    for name, properties in optional:
        exchange = await g.held.peer.call(name, {})
        outcome = classify_call(exchange)
        text = (exchange.received or "").lower()
        rejected = outcome.kind != "ok" and not g.refused(outcome)
        if rejected and ("required" in text or "missing" in text or any(p.lower() in text for p in properties)):
            contradicted.append(
                (f"{name} rejected a call without arguments: {short(exchange.received, 160)}", exchange)
            )
    if contradicted:
        rec.fail(
            "grants/required-truthful",
            "; ".join(p for p, _ in contradicted[:3]),
            expected="the schema's required list names what the tool requires",
            exchange=contradicted[0][1],
        )
    else:
        rec.ok("grants/required-truthful", f"{len(optional)} tools with all-optional schemas accepted {{}}")


async def _mixed(pool: Pool, target: Target, g: GrantsSession, rec: Recorder, disc: Discovery) -> None:
    assert disc.base is not None
    first = g.tools[0]
    unknown = unknown_name(disc.names)
    try:
        h = await pool.open(target, g.mode)
    except ConnectFailure as exc:
        rec.skip("grants/mixed-read-authorizes-known", f"could not open a session: {exc.message}")
        rec.skip(SURVIVE, f"could not open a session: {exc.message}")
        return
    try:
        read = await h.peer.read(selection_uri(disc.base, first, unknown))
        exchange = await h.peer.call(first, g.arguments.get(first, {}))
        outcome = classify_call(exchange)
        if read.error is not None or g.refused(outcome):
            what = f"the read failed ({short(read.received, 120)})" if read.error is not None else outcome.describe()
            rec.fail(
                "grants/mixed-read-authorizes-known",
                f"after reading ?tools={first},{unknown} in a new session, {first}: {what}",
                expected=f"{first} passes the gate: its definition was served",
                exchange=read if read.error is not None else exchange,
            )
            # survive-refusals needs a grant, not that one: a read of the tool alone gives it.
            await h.peer.read(selection_uri(disc.base, first))
            outcome = classify_call(await h.peer.call(first, g.arguments.get(first, {})))
            if g.refused(outcome):
                rec.skip(SURVIVE, f"even a read of {first} alone left it refused in session H: nothing to keep")
                return
        else:
            rec.ok("grants/mixed-read-authorizes-known", f"?tools={first},{unknown} authorized {first}")
        await _survive_refusals(h, g, rec, disc.base, unknown)
    finally:
        await h.close()


async def _survive_refusals(h: Held, g: GrantsSession, rec: Recorder, base: str, unknown: str) -> None:
    """grants/survive-refusals: session H holds a grant of the first safe tool; a read without a selection (refused),
    a refused call of another tool and a read naming an unknown tool (a successful read that serves no definition,
    I-4) must each leave it.

    After each of them the grant is called; when it is gone, it is read again, so that every request that clears
    grants is named, not only the first.
    """
    peer, first = h.peer, g.tools[0]
    # Another read-only tool, never fetched in H, so refused unfetched; with a single one, an unknown tool's call.
    other = g.tools[1] if len(g.tools) > 1 else unknown
    steps: list[tuple[str, Callable[[], Awaitable[Exchange]]]] = [
        ("a read without a selection", lambda: peer.read(base)),
        (
            f"a refused call of {other} (unfetched)" if other != unknown else f"a call of the unknown tool {unknown}",
            lambda: peer.call(other, g.arguments.get(other, {})),
        ),
        (f"a read naming an unknown tool ({unknown})", lambda: peer.read(selection_uri(base, unknown))),
    ]
    lost: list[tuple[str, Exchange]] = []
    for label, send in steps:
        await send()
        exchange = await peer.call(first, g.arguments.get(first, {}))
        outcome = classify_call(exchange)
        if g.refused(outcome):
            lost.append((f"after {label}, {first} was {outcome.describe()}", exchange))
            again = await peer.read(selection_uri(base, first))
            if again.error is not None:
                break
    rec.judge(
        SURVIVE,
        lost,
        ok=f"{first} stayed authorized after {', '.join(label for label, _ in steps)}",
        expected=f"{first} still passes the gate: a request that serves no definition changes no grant (grants last "
        "for the session)",
        prefix="a request that granted nothing cleared the session's grants: ",
        shown=None,
    )
