"""resource-read/available-tools-visible: what `available_tools` in an unknown-name entry (spec 6.3) offers.

The list is for a model that misspelt a name: it should name the tools the session may use. Judged in a session of
its own, so that nothing is fetched before the first read: a server that fills the list from the session's grants
answers it empty there, and after one fetch names only that tool; one that leaks hidden tools names tools this
session's tools/list does not show.
"""

from __future__ import annotations

from typing import Any

from ._checks import Discovery, selection_uri, unknown_name
from ._documents import available_tools
from ._probe import ConnectFailure, Exchange, Mode, Pool, Target, short
from ._record import Recorder

__all__ = ["available_tools_visible"]

CHECK = "resource-read/available-tools-visible"


async def available_tools_visible(pool: Pool, target: Target, mode: Mode, rec: Recorder, disc: Discovery) -> None:
    """Read an unknown name before and after one fetch in a fresh session; compare with what it may see."""
    assert disc.base is not None
    unknown = unknown_name(disc.names)
    try:
        held = await pool.open(target, mode)
    except ConnectFailure as exc:
        rec.skip(CHECK, f"could not open a session: {exc.message}")
        return
    try:
        peer = held.peer
        listed, _ = await peer.paginate("tools")
        names: list[Any] = [t.get("name") for t in listed if isinstance(t, dict)]
        visible = [n for n in names if isinstance(n, str) and n not in disc.meta]
        visible += [t["name"] for t in disc.behind if t["name"] not in visible]
        before = await peer.read(selection_uri(disc.base, unknown))
        first = available_tools(before, unknown)
        fetched = visible[0] if visible else None
        if first is None or fetched is None:
            why = "no tool is visible" if fetched is None else "no available_tools list (see unknown-tool-entry)"
            rec.skip(CHECK, why)
            return
        await peer.read(selection_uri(disc.base, fetched))
        after = await peer.read(selection_uri(disc.base, unknown))
        second = available_tools(after, unknown) or []
    finally:
        await held.close()
    problems: list[tuple[str, Exchange]] = []
    hidden = [n for n in dict.fromkeys([*first, *second]) if n not in visible and n not in disc.meta]
    if hidden:
        problems.append((f"it names tools this session's tools/list does not show: {short(hidden[:5], 120)}", before))
    if not first:
        problems.append(
            (f"it is empty in a session that had fetched nothing, though {len(visible)} tools are visible", before)
        )
    elif len(visible) > 1 and set(second) <= {fetched}:
        problems.append((f"after fetching only {fetched}, it names only {short(second, 80)}", after))
    rec.judge(
        CHECK,
        problems,
        ok=f"before any fetch it named {len(first)} of the {len(visible)} visible tools, none hidden",
        expected="available_tools drawn from what the session may see (its tools/list), whatever it fetched",
    )
