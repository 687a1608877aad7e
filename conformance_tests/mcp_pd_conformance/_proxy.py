"""A tool that calls tools, used against its own gate (spec 5.1: a tool runs only after its description was fetched).

A gated proxy tool (`run_tool(name, arguments)`, an `execute`, a `call_tool` of the server's own) is another way in:
when it dispatches to a tool whose definition the session never fetched, the gate was skipped. Catalog mode's
meta-tools are one known shape (the extension's own `call_tool`, checked by the core through its routes); this is the
general one, found by schema: a listed tool whose full definition takes a tool's name (a string) and its arguments
(an object). The suite fetches the proxy's own definition only, then asks it to run the read-only tool it calls
elsewhere, with the same arguments: that tool must not run.
"""

from __future__ import annotations

from typing import Any

from ._checks import Discovery, selection_uri
from ._documents import classify_call
from ._probe import ConnectFailure, Mode, Pool, Target
from ._record import Recorder

__all__ = ["PROXY", "proxy_tool_gated", "proxy_tools"]

PROXY = "grants/proxy-tool-gated"
_NAME_KEYS = ("name", "tool", "tool_name", "toolName", "tool_id", "toolId", "function", "command")
_ARGUMENT_KEYS = ("arguments", "args", "params", "parameters", "input", "tool_args", "toolArguments", "kwargs")


def _of_type(schema: Any, wanted: str) -> bool:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind == wanted or (isinstance(kind, list) and wanted in kind)


def proxy_tools(disc: Discovery) -> list[tuple[str, str, str]]:
    """Listed tools (the extension's own and those reached through one aside) whose definition takes a tool name and
    its arguments: (tool, the name's property, the arguments' property)."""
    found = []
    for tool in disc.gated_tools:
        name = tool["name"]
        schema = (disc.entries.get(name) or {}).get("inputSchema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if name in disc.meta or not isinstance(properties, dict):
            continue
        named = next((k for k in _NAME_KEYS if _of_type(properties.get(k), "string")), None)
        passed = next((k for k in _ARGUMENT_KEYS if _of_type(properties.get(k), "object")), None)
        if named and passed:
            found.append((name, named, passed))
    return found


async def proxy_tool_gated(pool: Pool, target: Target, mode: Mode, rec: Recorder, disc: Discovery) -> None:
    """grants/proxy-tool-gated, in a fresh session that fetches the proxy's definition and nothing else."""
    safe, base = disc.safe, disc.base
    proxies = [p for p in proxy_tools(disc) if safe is None or p[0] != safe.name]
    if not proxies and disc.behind:
        routed = sorted({route for route in pool.routes.values()})
        rec.ok(
            PROXY,
            f"the dispatcher is the extension's own ({', '.join(routed) or 'call_tool'}, catalog mode): every call the "
            "core's gate checks sent went through it",
        )
        return
    if not proxies:
        # Nothing to run through: said as INFO (not applicable), not as a skip of something that could be checked.
        rec.info(PROXY, "no listed tool takes a tool name and arguments: none dispatches to other tools")
        return
    if safe is None or base is None:
        rec.skip(PROXY, f"{proxies[0][0]} dispatches to tools, but no tool may be run through it: {disc.safe_reason}")
        return
    proxy, named, passed = proxies[0]
    try:
        held = await pool.open(target, mode)
    except ConnectFailure as exc:
        rec.skip(PROXY, f"could not open a session: {exc.message}")
        return
    try:
        read = await held.peer.read(selection_uri(base, proxy))
        exchange = await held.peer.call(proxy, {named: safe.name, passed: safe.arguments}, direct=True)
    finally:
        await held.close()
    outcome = classify_call(exchange)
    through = f"{proxy}({named}={safe.name!r}, {passed}=...)"
    if read.error is not None:
        rec.skip(PROXY, f"{proxy}'s definition could not be read, so its own gate stays shut ({read.received})")
    elif outcome.kind == "ok":
        rec.fail(
            PROXY,
            f"{through} ran {safe.name} in a session that fetched only {proxy}'s definition: the proxy skips the gate",
            expected=f"{safe.name} refused with TOOL_DESCRIPTION_REQUIRED (its description was never fetched in this "
            "session), whichever tool asks to run it",
            exchange=exchange,
        )
    else:
        rec.ok(PROXY, f"{through}, {safe.name} unfetched, did not run it: {outcome.describe()}")
