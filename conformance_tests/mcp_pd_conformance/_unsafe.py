"""grants/unsafe-tools-gated: the gate of the tools the suite will not run.

Only read-only tools (or --call-tool) are ever really called, so a gate that covers those alone would pass every
other grant check. Each other tool is called unfetched, in a session of its own, with arguments its full schema
rejects: every required parameter left out, every other constrained one of the wrong type. PD-5.1-02 makes every
call of a tool the session has not authorized fail with TOOL_DESCRIPTION_REQUIRED, whatever its arguments, so the
answer must be that refusal; a validation error means the arguments were checked before the gate (and the tool,
rejecting them, did not run), which fails the check too. A tool with no required and no constrained parameter has
no such call: it is left unchecked and the report names it, unless --allow-side-effects lets the suite call it
with {}.

A tool that does not check its arguments would run on such a call if it is not gated, so:
- when the server showed a gate (every safe tool refused unfetched, grants/every-tool-gated), the probes are sent in
  a session where a safe tool that other sessions fetched is still refused (grants that leak between sessions would
  let a probe through);
- when it lists no safe tool, these probes are the only proof of its gate: they are sent one at a time, the least
  risky first (a required parameter left out; marked not destructive), and the first that is not refused ends the
  probing, so a server that neither gates nor validates runs one tool at most, with arguments its schema rejects;
- when safe tools were called unfetched and not refused, there is no gate to show, and only --allow-side-effects
  sends the probes.
"""

from __future__ import annotations

from typing import Any

from ._checks import Discovery
from ._definitions import violating_arguments
from ._documents import SESSIONLESS_VERSIONS, TOOL_DESCRIPTION_REQUIRED, classify_call
from ._grants import GrantsSession, safe_tools
from ._probe import ConnectFailure, Exchange, Mode, Pool, Target, short
from ._record import Recorder

__all__ = ["MAX_UNSAFE", "unsafe_tools_gated"]

CHECK = "grants/unsafe-tools-gated"
MAX_UNSAFE = 24  # unfetched probes of tools the suite will not run


def _annotations(disc: Discovery, name: str) -> dict[str, Any]:
    listed = next((t.get("annotations") for t in disc.callable_tools if t["name"] == name), None)
    for found in (listed, disc.hints.get(name), (disc.entries.get(name) or {}).get("annotations")):
        if isinstance(found, dict):
            return found
    return {}


def _risk(disc: Discovery, name: str) -> tuple[int, int]:
    """Lower first: a probe that leaves out a required parameter, of a tool marked not destructive."""
    schema = (disc.entries.get(name) or {}).get("inputSchema")
    required = isinstance(schema, dict) and bool(schema.get("required"))
    return (0 if required else 1, 0 if _annotations(disc, name).get("destructiveHint") is False else 1)


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
    shown = g is not None and g.gated
    cautious = not safe and not allow  # the probes are the only proof of the gate
    if not (shown or cautious or allow):
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
    if cautious:
        order = sorted(probes, key=lambda n: _risk(disc, n))  # stable: listing order within a rank
        probes = {name: probes[name] for name in order}
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
    probed = 0
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
            probed += 1
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
                before = "the arguments were checked before the gate ran"
                if cautious:  # no safe tool could show that grants stay in their session
                    before += " (or the discovery session's read of its definition authorized it here too)"
                problems.append((f"{sent}: {outcome.describe()}: {before}", exchange))
            else:
                problems.append((f"{sent}: {outcome.describe()}: no refusal came first", exchange))
            if cautious:
                break  # the next probe might be of a tool that runs
    finally:
        await held.close()
    stopped = len(probes) - probed
    held_back = f" (the other {stopped} were not probed: with no gate shown, one could be a tool that runs)"
    rec.judge(
        CHECK,
        problems,
        ok=f"{len(probes)} tools the suite does not run were refused unfetched, before validation: "
        f"{', '.join(list(probes)[:6])}{left}"
        + ("; with no read-only tool listed, these probes are what shows the gate" if cautious else ""),
        expected=f"{TOOL_DESCRIPTION_REQUIRED} for every unfetched call, whatever the tool and its arguments",
        prefix=f"{len(problems)} of {probed} unfetched tools were not refused by the gate"
        + (held_back if stopped else "")
        + ": ",
    )
