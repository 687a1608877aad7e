"""Overlapping requests: grants made by reads that run at the same time (spec 5.1: per session, for the session).

Real hosts pipeline requests. A server that updates a session's grants by read-modify-write across an await loses
all but one of several overlapping reads' grants; one that finds "the current session" in state shared by requests
writes a grant into whichever session's request ran last. Neither shows one request at a time.

Both checks are bounded and deterministic: every read of a round is sent before any answer is awaited (the requests
are pipelined on the session's one connection, so they overlap in the server whatever the machine's load), the
rounds are few, and the verdict is read from calls made after every read has been answered. The report says how
many overlapping reads were sent. Only read-only tools (or --call-tool) are called, with the arguments the grants
scenario learned.
"""

from __future__ import annotations

import anyio

from ._checks import Discovery, selection_uri, unknown_name
from ._documents import CallOutcome, classify_call
from ._grants import GrantsSession
from ._probe import ConnectFailure, Exchange, Held, Peer, Pool, Target
from ._record import Recorder

__all__ = ["OVERLAPPING_READS", "overlapping_reads", "sessions_needed"]

# Reads in flight at once in one session: each safe tool's read repeated so, with an unknown name's read among them.
OVERLAPPING_READS = 24
# Rounds of the two-session check: each round, both sessions read their own tool at the same time.
SESSION_ROUNDS = 6
READS = "grants/overlapping-reads"
SESSIONS = "grants/overlapping-sessions"


async def _all_at_once(peer: Peer, uris: list[str]) -> list[Exchange]:
    """Send every read before awaiting any answer; the answers, in the order of `uris`."""
    answers: dict[int, Exchange] = {}

    async def one(index: int, uri: str) -> None:
        answers[index] = await peer.read(uri)

    async with anyio.create_task_group() as tg:
        for index, uri in enumerate(uris):
            tg.start_soon(one, index, uri)
    return [answers[i] for i in range(len(uris))]


async def _call(g: GrantsSession, peer: Peer, name: str) -> tuple[CallOutcome, Exchange]:
    exchange = await peer.call(name, g.arguments.get(name, {}))
    return classify_call(exchange), exchange


async def overlapping_reads(
    pool: Pool, target: Target, g: GrantsSession | None, rec: Recorder, disc: Discovery
) -> None:
    """grants/overlapping-reads and grants/overlapping-sessions, each in sessions of their own."""
    why = _cannot(g, disc)
    if why:
        rec.skip(READS, why)
        rec.skip(SESSIONS, why)
        return
    assert g is not None
    assert disc.base is not None
    await _one_session(pool, target, g, rec, disc, disc.base)
    await _two_sessions(pool, target, g, rec, disc.base)


def sessions_needed(g: GrantsSession | None, disc: Discovery) -> int:
    """How many fresh sessions `overlapping_reads` opens (one for the reads in one session, two for two sessions)."""
    if _cannot(g, disc):
        return 0
    assert g is not None
    return 3 if len(g.tools) >= 2 else 1


def _cannot(g: GrantsSession | None, disc: Discovery) -> str:
    if g is None or disc.base is None:
        return "the grants scenario did not run (see grants/every-tool-gated)"
    if g.blocked:
        return g.blocked
    if not g.gated:
        return "the safe tools were not all refused unfetched (see grants/every-tool-gated): no gate to race"
    return ""


async def _open(pool: Pool, target: Target, g: GrantsSession) -> Held | str:
    try:
        return await pool.open(target, g.mode)
    except ConnectFailure as exc:
        return f"could not open a session: {exc.message}"


async def _one_session(pool: Pool, target: Target, g: GrantsSession, rec: Recorder, disc: Discovery, base: str) -> None:
    """Many overlapping reads of the safe tools in one fresh session; then each tool must pass the gate."""
    held = await _open(pool, target, g)
    if isinstance(held, str):
        rec.skip(READS, held)
        return
    tools = g.tools
    uris = [selection_uri(base, tools[i % len(tools)]) for i in range(OVERLAPPING_READS - 1)]
    uris.insert(len(uris) // 2, selection_uri(base, unknown_name(disc.names)))  # a read that grants nothing, mid-way
    try:
        answers = await _all_at_once(held.peer, uris)
        failed = [(uri, ex) for uri, ex in zip(uris, answers, strict=True) if ex.error is not None]
        lost: list[tuple[str, Exchange]] = []
        for name in tools:
            outcome, exchange = await _call(g, held.peer, name)
            if g.refused(outcome):
                lost.append((name, exchange))
    finally:
        await held.close()
    sent = f"{len(uris)} overlapping reads of {len(tools)} tools ({', '.join(tools)}) sent at once"
    if lost:
        rec.fail(
            READS,
            f"{sent}; then {len(lost)} of the {len(tools)} tools were still refused: {', '.join(n for n, _ in lost)} "
            "(a grant lost when reads of one session overlap)"
            + (f"; {len(failed)} of the reads failed" if failed else ""),
            expected="every tool read passes the gate, however the reads overlapped",
            exchange=lost[0][1],
        )
    else:
        rec.ok(READS, f"{sent}; every tool then passed the gate")


async def _two_sessions(pool: Pool, target: Target, g: GrantsSession, rec: Recorder, base: str) -> None:
    """Two fresh sessions reading at the same time, each its own tool; then each is refused the other's tool."""
    if len(g.tools) < 2:
        rec.skip(SESSIONS, "one safe tool only: two sessions need a tool each")
        return
    mine, theirs = g.tools[0], g.tools[1]
    a, b = await _open(pool, target, g), await _open(pool, target, g)  # warm at once over stdio (see _warming)
    held = [h for h in (a, b) if not isinstance(h, str)]
    try:
        if isinstance(a, str) or isinstance(b, str):
            rec.skip(SESSIONS, a if isinstance(a, str) else str(b))
            return
        read_a = [selection_uri(base, mine)] * SESSION_ROUNDS
        read_b = [selection_uri(base, theirs)] * SESSION_ROUNDS
        async with anyio.create_task_group() as tg:
            tg.start_soon(_all_at_once, a.peer, read_a)
            tg.start_soon(_all_at_once, b.peer, read_b)
        results: dict[str, tuple[CallOutcome, Exchange]] = {}
        # Own tools first: a refused call must not be what takes a session's grant away (grants/survive-refusals).
        for label, peer, name in (("a-own", a.peer, mine), ("b-own", b.peer, theirs)):
            results[label] = await _call(g, peer, name)
        for label, peer, name in (("a-other", a.peer, theirs), ("b-other", b.peer, mine)):
            results[label] = await _call(g, peer, name)
    finally:
        for h in held:
            await h.close()
    if not all(g.refused(results[label][0]) for label in ("a-other", "b-other")):
        alone = await _read_alone_grants(pool, target, g, base, mine, theirs)
        if alone:
            rec.skip(SESSIONS, alone)
            return
    _judge_sessions(rec, g, mine, theirs, results)


async def _read_alone_grants(pool: Pool, target: Target, g: GrantsSession, base: str, mine: str, theirs: str) -> str:
    """Why a call of another session's tool cannot show a misplaced grant, or "": when a read of `mine` alone, in a
    session of its own with nothing overlapping, already lets `theirs` run, the grant is not the other session's
    (that is grants/read-other-refused's fault, and a server whose lenient retries let a second call through still
    refuses this session's first)."""
    held = await _open(pool, target, g)
    if isinstance(held, str):
        return held
    try:
        await held.peer.read(selection_uri(base, mine))
        outcome, _exchange = await _call(g, held.peer, theirs)
    finally:
        await held.close()
    if g.refused(outcome):
        return ""
    return (
        f"a read of {mine} alone, in a session of its own with nothing overlapping, authorizes {theirs} (see "
        "grants/read-other-refused): a grant in the wrong session cannot be told apart"
    )


def _judge_sessions(
    rec: Recorder, g: GrantsSession, mine: str, theirs: str, results: dict[str, tuple[CallOutcome, Exchange]]
) -> None:
    sent = f"{2 * SESSION_ROUNDS} overlapping reads in two sessions (A read {mine}, B read {theirs}, at the same time)"
    problems: list[tuple[str, Exchange]] = []
    for label, session, name in (("a-other", "A", theirs), ("b-other", "B", mine)):
        outcome, exchange = results[label]
        if not g.refused(outcome):
            problems.append((f"session {session} never read {name}, yet {outcome.describe()}", exchange))
    for label, session, name in (("a-own", "A", mine), ("b-own", "B", theirs)):
        outcome, exchange = results[label]
        if g.refused(outcome):
            problems.append((f"session {session} read {name}, yet was refused it", exchange))
    rec.judge(
        SESSIONS,
        problems,
        ok=f"{sent}: each session got its own grant and none of the other's",
        expected="each session's reads grant that session only, however the sessions' requests overlap",
        prefix=f"{sent}: grants went to the wrong session: ",
    )
