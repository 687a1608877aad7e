"""grants/unsafe-tools-gated: the gate of the tools the suite will not run.

Only read-only tools (or --call-tool) are ever really called, so a gate that covers those alone would pass every
other grant check. Each other tool is called unfetched, in a session of its own, with arguments its full schema
rejects: every required parameter left out, every other constrained one of the wrong type. The gate runs first, so
the answer must be the refusal; a validation error means the arguments were checked before the gate (and the tool,
rejecting them, did not run). A tool with no required and no constrained parameter has no such call: it is left
unchecked and the report names it, unless --allow-side-effects lets the suite call it with {}.

A tool that does not check its arguments would run on such a call if it is not gated, so the probes are sent only
once the server has shown a gate (every safe tool refused unfetched, grants/every-tool-gated), and only in a session
where a safe tool that other sessions fetched is still refused (grants that leak between sessions would let a probe
through); without that evidence only --allow-side-effects sends them.
"""

from __future__ import annotations

from ._checks import Discovery
from ._definitions import violating_arguments
from ._documents import SESSIONLESS_VERSIONS, TOOL_DESCRIPTION_REQUIRED, classify_call
from ._grants import GrantsSession, safe_tools
from ._probe import ConnectFailure, Exchange, Mode, Pool, Target, short
from ._record import Recorder

__all__ = ["MAX_UNSAFE", "unsafe_tools_gated"]

CHECK = "grants/unsafe-tools-gated"
MAX_UNSAFE = 24  # unfetched probes of tools the suite will not run


async def unsafe_tools_gated(
    pool: Pool,
    target: Target,
    mode: Mode,
    rec: Recorder,
    disc: Discovery,
    g: GrantsSession | None,
    *,
    allow: bool,
) -> None:
    """Probe the gate of every tool outside `safe_tools` (see the module); `g`: session G of scenario grants, whose
    unfetched calls show whether there is a gate and the code it refuses with."""
    if disc.base is None:
        rec.skip(CHECK, "no tool_descriptions resource (see resource-listing/listed)")
        return
    safe = safe_tools(disc)
    others = [t["name"] for t in disc.callable_tools if t["name"] not in safe]
    if not others:
        rec.skip(CHECK, "every tool is one the suite calls (see grants/every-tool-gated)")
        return
    if not (g is not None and g.gated) and not allow:
        rec.skip(
            CHECK,
            "no safe tool showed a gate (see grants/every-tool-gated), so a probe could run a tool that does not "
            "check its arguments; pass --allow-side-effects to probe them anyway",
        )
        return
    probes: dict[str, dict[str, object]] = {}
    unchecked: list[str] = []
    for name in others[:MAX_UNSAFE]:
        entry = disc.entries.get(name)
        arguments = violating_arguments(entry.get("inputSchema") if isinstance(entry, dict) else None)
        if arguments is None and allow:
            arguments = {}
        if arguments is None:
            unchecked.append(name)
        else:
            probes[name] = arguments
    left = (
        f"; left unchecked ({len(unchecked)}): {', '.join(unchecked[:6])}: no required or constrained parameter, so "
        "any call could run them (pass --allow-side-effects to call them unfetched with {})"
        if unchecked
        else ""
    ) + (f"; {len(others) - MAX_UNSAFE} more not probed" if len(others) > MAX_UNSAFE else "")
    if not probes:
        rec.skip(CHECK, f"no tool outside the safe ones could be probed harmlessly{left}")
        return
    try:
        held = await pool.open(target, mode)
    except ConnectFailure as exc:
        rec.skip(CHECK, f"could not open a session: {exc.message}")
        return
    refusals = {TOOL_DESCRIPTION_REQUIRED, *([g.code] if g is not None and g.code else [])}
    problems: list[tuple[str, Exchange]] = []
    try:
        canary = safe[0] if safe else None
        if canary is not None and not allow:
            outcome = classify_call(await held.peer.call(canary, {}))
            if not (outcome.kind == "refused" and outcome.code in refusals):
                rec.skip(
                    CHECK,
                    f"a new session's unfetched call of {canary} (fetched in other sessions): {outcome.describe()}; "
                    "grants leak between sessions (see isolation), so a probe could run a tool; pass "
                    "--allow-side-effects to probe them anyway",
                )
                return
        for name, arguments in probes.items():
            exchange = await held.peer.call(name, arguments)
            outcome = classify_call(exchange)
            if outcome.kind == "refused" and outcome.code in refusals:
                continue
            if outcome.kind == "refused" and held.peer.protocol_version in SESSIONLESS_VERSIONS and not problems:
                rec.skip(CHECK, f"protocol {held.peer.protocol_version} has no session: {outcome.describe()}")
                return
            sent = f"{name} {short(arguments, 80)}"
            if outcome.kind == "ok":
                problems.append((f"{sent} ran unfetched, with arguments its schema rejects", exchange))
            elif outcome.kind == "refused":
                problems.append(
                    (f"{sent}: {outcome.describe()}: the arguments were checked before the gate ran", exchange)
                )
            else:
                problems.append((f"{sent}: {outcome.describe()}: no refusal came first", exchange))
    finally:
        await held.close()
    rec.judge(
        CHECK,
        problems,
        ok=f"{len(probes)} tools the suite does not run were refused unfetched, before validation: "
        f"{', '.join(list(probes)[:6])}{left}",
        expected=f"{TOOL_DESCRIPTION_REQUIRED} for every unfetched call, whatever the tool and its arguments",
        prefix=f"{len(problems)} of {len(probes)} unfetched tools were not refused by the gate: ",
    )
