"""Which sessions the scenarios are about to open, started together ahead of need (stdio only: see `Pool.warm`).

Over stdio each session is a server process of its own, and a process's start (the interpreter and the SDK's
imports, about a second of CPU) is most of what a session costs. The scenarios open their sessions one after the
other; started together, on a machine with more than one core, most of those starts overlap each other and the
requests of the sessions already open. A warm session is never sent anything until it is handed out, and a process
started early is the same server as one started when asked, so no verdict depends on warming; sessions that must
begin after another ended (session-end's) are opened fresh. A prediction that misses costs one idle process, ended
with the pool.
"""

from __future__ import annotations

from collections.abc import Collection

from ._checks import Discovery
from ._eras import EraLedger
from ._grants import GrantsSession, safe_tools
from ._overlap import sessions_needed
from ._probe import Mode, Pool, Target
from ._spec import PER_ERA_SCENARIOS, Era

__all__ = ["warm_first_sessions", "warm_grant_sessions"]


def warm_first_sessions(
    pool: Pool,
    target: Target,
    eras: Collection[Era],
    scenarios: Collection[str],
    disc: Discovery,
    mode: Mode,
    ledger: EraLedger,
) -> None:
    """The sessions opened before any fetch: each era's session A, the grants scenario's session G, the sessionless
    client, and resource-read's fresh session (available-tools-visible). `mode`: the run's session mode."""
    if disc.base is None:
        return
    modes: list[Mode] = []
    if "legacy" in eras and set(scenarios) & PER_ERA_SCENARIOS and not ledger.unspoken("legacy"):
        modes.append("legacy")
    if "2026-07-28" in eras:
        modes.append("auto")  # the default client first (_eras.open_in_era)
    if "grants" in scenarios and safe_tools(disc):
        modes.append(mode)
    if "sessionless" in scenarios and "2026-07-28" in eras and disc.probe is not None:
        modes.append("2026-07-28")
    if "resource-read" in scenarios and disc.names:
        modes.append(mode)
    for each in modes:
        pool.warm(target, each)


def warm_grant_sessions(pool: Pool, target: Target, g: GrantsSession | None, disc: Discovery) -> None:
    """The fresh sessions the grants scenario opens after session G's own requests: the mixed read's, the probes of
    the tools the suite does not run (when a gate was shown and there are such tools), and the overlapping reads'."""
    if g is None or g.blocked or disc.base is None:
        return
    count = 1 + sessions_needed(g, disc)
    if g.gated and any(t["name"] not in g.tools for t in disc.callable_tools):
        count += 1
    pool.warm(target, g.mode, count)
