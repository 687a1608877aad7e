"""What a server serves against what it declares and lists: capabilities, and tools described but never listed.

Both are judged from what the run already saw, and cost no request on a correct server: the capabilities come from
each era's handshake (or `server/discover`), in the session the run has in that era (one is opened only when the run
has none there), and the names to look for come from the
`available_tools` of unknown-name entries in every read the run made (one read of an unknown name is sent only
when no read so far carried such an entry). A name found there that no page of `tools/list` holds is read; if
the resource describes it, it is served but never listed, and when its own definition marks it read-only it is
also called (with its first example, or `{}` when it requires nothing) to show that it runs.
"""

from __future__ import annotations

import json
from typing import Any

from ._checks import Discovery, selection_uri, unknown_name
from ._documents import SESSIONLESS_VERSIONS, classify_call, example_arguments
from ._eras import EraLedger
from ._probe import ConnectFailure, Exchange, Peer, Pool, Target, short
from ._record import Recorder

__all__ = ["capabilities_declared", "capabilities_in_eras", "era_of", "era_peers", "served_tools_listed"]

CAPABILITY = "resource-listing/capability-declared"
LISTED = "tools-list/served-tools-listed"
MAX_UNLISTED = 8  # names read (and, when read-only, called) by tools-list/served-tools-listed


def capabilities_declared(peer: Peer, rec: Recorder, disc: Discovery, era: str) -> None:
    """resource-listing/capability-declared in `era`: what resources/list and tools/list served is declared in the
    capabilities `peer` was given (by initialize, or by server/discover).

    A host that follows base MCP uses only negotiated capabilities (Appendix B keeps base MCP), so it never sends
    resources/list to a server that does not declare `resources`: the descriptions resource is then not provided.
    """
    if disc.base is None:
        rec.skip(CAPABILITY, "no tool_descriptions resource was listed (see resource-listing/listed)", era=era)
        return
    caps = peer.client.server_capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
    missing = [
        f'"{name}" ({what})'
        for name, what, served in (
            ("resources", f"resources/list listed {disc.base}", True),
            ("tools", f"tools/list listed {len(disc.tools)} tools", bool(disc.tools)),
        )
        if served and not isinstance(caps.get(name), dict)
    ]
    version = peer.protocol_version
    if missing:
        rec.fail(
            CAPABILITY,
            f"protocol {version}: the capabilities declare no {' and no '.join(missing)}; a host that respects "
            f"capabilities never lists the resource (declared: {short(sorted(caps), 160)})",
            expected='capabilities with "resources" (and "tools") for what the server serves, in every protocol '
            "version it negotiates",
            era=era,
        )
    else:
        rec.ok(CAPABILITY, f"protocol {version}: resources and tools are declared", era=era)


async def capabilities_in_eras(
    pool: Pool, target: Target, ledger: EraLedger, peers: dict[str, Peer], rec: Recorder, disc: Discovery
) -> None:
    """resource-listing/capability-declared once per era, each read from that era's own handshake: with the session
    the run already has in it (`peers`, by the protocol each negotiated), else a session opened for this alone. A
    server may build its capabilities per protocol version, and declare `resources` in one and not the other. A
    client pinned to 2026-07-28 asks nothing (the SDK adopts empty capabilities), so it shows no declaration."""
    for era in ledger.asked:
        peer = peers.get(era)
        if disc.base is None:
            rec.skip(CAPABILITY, "no tool_descriptions resource was listed (see resource-listing/listed)", era=era)
            continue
        if peer is not None:
            capabilities_declared(peer, rec, disc, era)
            continue
        unspoken = ledger.unspoken(era)
        if unspoken and era == "legacy":
            rec.skip(CAPABILITY, f"the {era} era was not exercised: {unspoken}", era=era)
            continue
        try:
            held = await pool.open(target, "legacy" if era == "legacy" else "auto")
        except ConnectFailure as exc:
            rec.skip(CAPABILITY, f"could not open a {era} session: {exc.message}", era=era)
            continue
        try:
            version = held.peer.protocol_version
            if era != "legacy" and version not in SESSIONLESS_VERSIONS:
                rec.info(
                    CAPABILITY,
                    f"no 2026-07-28 declaration to judge: the server declined server/discover and answered the default "
                    f"client in {version} (whose capabilities are judged in the legacy era)",
                    era=era,
                )
            else:
                capabilities_declared(held.peer, rec, disc, era)
        finally:
            await held.close()


def era_of(peer: Peer) -> str:
    """The era `peer` speaks: 2026-07-28, or legacy (a handshake version)."""
    return "2026-07-28" if peer.protocol_version in SESSIONLESS_VERSIONS else "legacy"


def era_peers(peers: list[Peer]) -> dict[str, Peer]:
    """The first of `peers` that negotiated each era by a handshake or server/discover (pinned clients ask nothing)."""
    found: dict[str, Peer] = {}
    for peer in peers:
        if peer.mode != "2026-07-28":
            found.setdefault(era_of(peer), peer)
    return found


def _entries(exchange: Exchange) -> dict[str, Any]:
    """The JSON object of a successful read's first content item ({} when it is something else)."""
    contents = (exchange.result or {}).get("contents")
    if exchange.error is not None or not isinstance(contents, list) or not contents:
        return {}
    first = contents[0]
    text = first.get("text") if isinstance(first, dict) else None
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _available(reads: list[Exchange]) -> tuple[dict[str, Exchange], bool]:
    """Every name that an unknown-name entry's available_tools gave, with the read that gave it first; and whether
    any read carried available_tools at all."""
    names: dict[str, Exchange] = {}
    seen = False
    for exchange in reads:
        for entry in _entries(exchange).values():
            available = entry.get("available_tools") if isinstance(entry, dict) else None
            if isinstance(available, list):
                seen = True
                for name in available:
                    if isinstance(name, str) and name:
                        names.setdefault(name, exchange)
    return names, seen


def _described(entry: Any, name: str) -> bool:
    """A full definition, not an error entry: an object with an inputSchema and no error."""
    return (
        isinstance(entry, dict)
        and "error" not in entry
        and isinstance(entry.get("inputSchema"), dict)
        and entry.get("name", name) == name
    )


async def served_tools_listed(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """tools-list/served-tools-listed: no tool that the resource describes is missing from every tools/list page."""
    if disc.base is None:
        rec.skip(LISTED, "no tool_descriptions resource was listed (see resource-listing/listed)")
        return
    listed = {str(t.get("name")) for t in disc.tools} | set(disc.names)
    available, seen = _available(peer.reads)
    if not seen:
        await peer.read(selection_uri(disc.base, unknown_name(disc.names)))
        available, seen = _available(peer.reads)
    unlisted = [name for name in available if name not in listed][:MAX_UNLISTED]
    if not seen:
        rec.info(LISTED, "no unknown-name entry gave available_tools, so no tool served beyond tools/list was seen")
        return
    if not unlisted:
        rec.ok(LISTED, f"every tool available_tools named is on a page of tools/list ({len(listed)} tools)")
        return
    read = await peer.read(selection_uri(disc.base, *unlisted))
    entries = _entries(read)
    problems = []
    for name in unlisted:
        entry = entries.get(name)
        if not _described(entry, name):
            continue
        assert isinstance(entry, dict)
        problems.append((f"{name} is described by the resource{await _called(peer, name, entry)}", read))
    if not problems:
        rec.ok(LISTED, f"available_tools named {len(unlisted)} unlisted names; the resource describes none of them")
        return
    rec.judge(
        LISTED,
        problems,
        ok="",
        expected="every tool the server describes and runs is on some page of tools/list",
        prefix=f"not on any of the tools/list pages ({len(listed)} tools), yet available_tools named it: ",
        shown=None,
    )


async def _called(peer: Peer, name: str, entry: dict[str, Any]) -> str:
    """', and ran when called' when its own definition marks it read-only and the call passed; else ''."""
    annotations = entry.get("annotations")
    arguments = example_arguments(entry)
    if not (isinstance(annotations, dict) and annotations.get("readOnlyHint") is True) or arguments is None:
        return " (not called: its definition does not mark it read-only with arguments the suite can send)"
    outcome = classify_call(await peer.call(name, arguments))
    return " and ran when called" if outcome.kind == "ok" else f"; called, it was {outcome.describe()}"
