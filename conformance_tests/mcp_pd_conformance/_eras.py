"""Which protocol eras a run exercised, and how: the suite labels a check `[2026-07-28]` only when requests of that
era were answered in that era's protocol.

A server may speak one era only: one that refuses the initialize handshake is judged in 2026-07-28 alone, and one
that declines `server/discover` (over HTTP, to keep its clients on sessions) answers the SDK's default client in
2025-11-25. The 2026-07-28 era is then reached with a client pinned to that protocol, and exercised only when the
server answers it. Each era asked for is reported as exercised (by what) or not (and why); an era asked for alone
that the server never speaks cannot pass (PDX-SUITE-01).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._documents import SESSIONLESS_VERSIONS
from ._model import EraCoverage
from ._probe import ConnectFailure, Held, Mode, Pool, Target
from ._record import Recorder
from ._requirements import PER_ERA_CHECKS, PER_ERA_SCENARIOS, Era

__all__ = ["ERA_CHECK", "EraLedger", "open_discovery", "open_in_era"]

ERA_CHECK = "connection/era-exercised"


@dataclass
class EraLedger:
    """What the run learned of each era it was asked for: exercised (how) or not (why)."""

    asked: tuple[Era, ...]
    exercised: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    # What the SDK's default client (mode auto) negotiated, when the run opened one.
    auto_negotiated: str | None = None

    def saw(self, era: str, how: str) -> None:
        """`era` was exercised: a request of it was answered in its protocol."""
        self.exercised.setdefault(era, how)
        self.missing.pop(era, None)

    def missed(self, era: str, why: str) -> None:
        """`era` could not be exercised this way (a later way may still exercise it)."""
        if era not in self.exercised:
            self.missing[era] = why  # the later way tried says more (it names the earlier ones)

    def unspoken(self, era: str) -> str | None:
        """Why `era` is known not to be spoken (its sessions would only repeat the refusal), or None."""
        return self.missing.get(era)

    @property
    def session_mode(self) -> Mode:
        """The client mode for sessions of no particular era: the handshake when it is spoken and asked for."""
        return "legacy" if "legacy" in self.asked and "legacy" not in self.missing else "auto"

    def judge(self, rec: Recorder) -> list[EraCoverage]:
        """connection/era-exercised per era asked for, and the coverage the report shows.

        Not exercised is a failure when no other era asked for was exercised (an era asked for alone that the
        server never speaks cannot pass), else INFO: the server is judged on the era it speaks."""
        coverage = []
        for era in self.asked:
            how = self.exercised.get(era)
            if how is not None:
                rec.ok(ERA_CHECK, f"exercised: {how}", era=era)
                coverage.append(EraCoverage(era, True, how))
                continue
            why = self.missing.get(era, "no request of this era was answered in its protocol")
            others = [e for e in self.asked if e != era and e in self.exercised]
            coverage.append(EraCoverage(era, False, why))
            if others:
                rec.info(ERA_CHECK, f"not exercised: {why}; the server is judged in {', '.join(others)}", era=era)
            else:
                rec.fail(
                    ERA_CHECK,
                    f"not exercised: {why}",
                    expected=f"requests of the {era} era answered in its protocol"
                    + (" (or run with --era both, to judge the era the server speaks)" if len(self.asked) == 1 else ""),
                    era=era,
                )
        return coverage

    def skip_era(self, rec: Recorder, era: str, why: str) -> None:
        """Every per-era check of `era` (its check of exercise aside), skipped: the era was not exercised."""
        reason = f"the {era} era was not exercised: {why}"
        for scenario in sorted(PER_ERA_SCENARIOS):
            rec.skip_scenario(scenario, reason, era=era)
        for check in sorted(PER_ERA_CHECKS - {ERA_CHECK}):
            if not rec.has(check, era):
                rec.skip(check, reason, era=era)


async def open_discovery(pool: Pool, target: Target, ledger: EraLedger) -> Held:
    """The first session: the handshake when the legacy era is asked for; when the server refuses the handshake and
    2026-07-28 is asked for too, the default client. Raises ConnectFailure when no era connects."""
    if "legacy" in ledger.asked:
        try:
            held = await pool.open(target, "legacy")
        except ConnectFailure as exc:
            if exc.kind != "handshake" or "2026-07-28" not in ledger.asked:
                raise
            ledger.missed("legacy", f"the server refused the initialize handshake ({exc.message})")
        else:
            ledger.saw("legacy", f"the initialize handshake negotiated {held.peer.protocol_version}")
            return held
    held = await pool.open(target, "auto")
    _saw_auto(ledger, held)
    return held


def _saw_auto(ledger: EraLedger, held: Held) -> None:
    version = held.peer.protocol_version
    ledger.auto_negotiated = version
    if version in SESSIONLESS_VERSIONS:
        ledger.saw("2026-07-28", f"the default client (mode auto) negotiated {version} by server/discover")
    else:
        ledger.missed(
            "2026-07-28",
            f"the server answered the default client (mode auto) in {version} (it declined server/discover)",
        )


async def open_in_era(pool: Pool, target: Target, era: str, ledger: EraLedger) -> tuple[Held | None, str]:
    """A session of `era` in its own protocol, and why there is none.

    legacy: the handshake. 2026-07-28: the default client when it negotiates 2026-07-28, else a client pinned to
    2026-07-28 (the SDK's pinned client sends no server/discover: the era counts as exercised only once the server
    answers one of its requests, tools/list here)."""
    if era == "legacy":
        try:
            held = await pool.open(target, "legacy")
        except ConnectFailure as exc:
            ledger.missed(era, f"the server refused the initialize handshake ({exc.message})")
            return None, f"could not open a legacy session: {exc.message}"
        ledger.saw(era, f"the initialize handshake negotiated {held.peer.protocol_version}")
        return held, ""
    try:
        default = await pool.open(target, "auto")
    except ConnectFailure as exc:
        why = f"the default client could not connect ({exc.message})"
    else:
        _saw_auto(ledger, default)
        if default.peer.protocol_version in SESSIONLESS_VERSIONS:
            return default, ""
        why = f"the default client was answered in {default.peer.protocol_version}"
        await default.close()
    try:
        pinned = await pool.open(target, "2026-07-28")
    except ConnectFailure as exc:
        ledger.missed(era, f"{why}, and a client pinned to 2026-07-28 could not connect ({exc.message})")
        return None, ledger.missing[era]
    listing = await pinned.peer.list_tools()
    if listing.error is not None:
        await pinned.close()
        ledger.missed(era, f"{why}, and tools/list from a client pinned to 2026-07-28 failed ({listing.received})")
        return None, ledger.missing[era]
    ledger.saw(era, f"{why}; a client pinned to 2026-07-28 was answered")
    return pinned, ""
