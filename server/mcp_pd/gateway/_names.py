"""Served tool names: as the upstream names them, namespaced only where that name would be ambiguous.

The rule, a pure function of the set of (upstream, tool name) pairs, the configured prefixes and the gateway's own
tool names (so the same servers always give the same names, whatever order they list in or come up in):

Each upstream tool `t` of upstream `s` is served under its name at one of three levels:

0. `t` as it is;
1. namespaced: `s`'s prefix + `t` (the configured `prefix`, else `<key>__`);
2. canonical: `<key>__t`, where `key` (`server_key`) is `s`'s name in SEP-986 characters with each run of `_`
   made one and no `_` at the end (the config refuses two upstreams with one key, and an empty one).

Every tool starts at level 0. Then, in rounds, every tool below level 2 moves up one level at once when its
current name is (a) also the current name of another tool, (b) one of the gateway's own tool names, or (c) begins
with another upstream's prefix or `<key>__`: it reads as that upstream's namespaced name (squatting). Rounds stop
when no tool moves. A move for (c), or one for (a)/(b) that is not the plain case of a raw name listed twice,
is reported as a note where it changed the served name (the gateway logs it and shows it on the operator page).

Why every tool gets exactly one name and every name one tool: levels only rise and stop at 2, so the rounds end.
Level-2 names never collide: a key holds no `__` and does not end in `_`, so the first `__` in `<key>__t` is the
one after the key, which gives back the key (hence the upstream: keys are distinct) and `t`; nor do they equal a
gateway name, which may not contain `__` (checked). So when the rounds end, a name taken twice would have a
taker below level 2, which would have moved: there is none. What (c) adds: `a__search` is upstream `a`'s name
whether or not `a` is up, never that of an upstream `z` that lists a tool so named (z's is `z__a__search`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["SEPARATOR", "Naming", "Route", "assign_names", "name_tools", "server_key"]

SEPARATOR = "__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_UNDERSCORES = re.compile(r"_{2,}")
_TOP = 2  # the canonical level: never moves

Claim = tuple[str, str]  # (upstream, tool name there)


@dataclass(frozen=True, slots=True)
class Route:
    """Where a served tool name goes: the upstream's config name and the tool's name there."""

    server: str
    tool: str


@dataclass(frozen=True, slots=True)
class Naming:
    """The served names (`routes`, sorted) and what the operator should know about them (`notes`)."""

    routes: dict[str, Route]
    notes: tuple[str, ...]


def server_key(name: str) -> str:
    """An upstream's name as it starts its tools' canonical names: SEP-986 characters, no `__`, no final `_`."""
    return _UNDERSCORES.sub("_", _UNSAFE.sub("_", name)).rstrip("_")


def assign_names(
    listings: Mapping[str, Iterable[str]], prefixes: Mapping[str, str], reserved: Iterable[str] = ()
) -> dict[str, Route]:
    """`{served name: Route}` for every upstream tool (`name_tools` without the notes)."""
    return name_tools(listings, prefixes, reserved).routes


def name_tools(
    listings: Mapping[str, Iterable[str]],
    prefixes: Mapping[str, str],
    reserved: Iterable[str] = (),
    *,
    servers: Iterable[str] = (),
) -> Naming:
    """The served name of every upstream tool, by the rule in the module docstring.

    `listings`: upstream -> the tool names it lists. `prefixes`: upstream -> its configured prefix. `reserved`:
    the gateway's own tool names. `servers`: further upstreams (not listed yet) whose names nobody may squat.
    Raises ValueError when two upstreams have one key, a key is empty, or a reserved name holds `__`.
    """
    blocked = frozenset(reserved)
    if bad := sorted(n for n in blocked if SEPARATOR in n):
        raise ValueError(f"the gateway's own tool names may not contain {SEPARATOR!r}: {bad}")
    everyone = sorted({*listings, *prefixes, *servers})
    keys: dict[str, str] = {}
    owner: dict[str, str] = {}
    for server in everyone:
        key = keys[server] = server_key(server)
        if not key:
            raise ValueError(f"upstream {server!r}: its name gives an empty tool-name prefix")
        if (other := owner.setdefault(key, server)) != server:
            raise ValueError(f"upstreams {other!r} and {server!r} give the same tool-name prefix {key!r}")
    prefix = {s: prefixes.get(s) or keys[s] + SEPARATOR for s in everyone}
    markers = {s: {prefix[s], keys[s] + SEPARATOR} for s in everyone}
    # Per upstream, the markers of every other one, longest first (the one a note names is the most specific).
    foreign = {
        s: sorted(((m, r) for r in everyone if r != s for m in markers[r]), key=lambda x: (-len(x[0]), x))
        for s in everyone
    }

    def named(claim: Claim, level: int) -> str:
        server, tool = claim
        return tool if level == 0 else (prefix[server] if level == 1 else keys[server] + SEPARATOR) + tool

    claims = sorted({(s, t) for s, names in listings.items() for t in names})
    level = dict.fromkeys(claims, 0)
    current = {c: c[1] for c in claims}
    takers: dict[str, set[Claim]] = {}
    for claim, name in current.items():
        takers.setdefault(name, set()).add(claim)
    why: dict[Claim, tuple[str, str]] = {}  # the first unusual move of a tool: why, and the name it left
    # Each round decides on the names as they stood when it began; only names a move touched are looked at again
    # (nothing else can have changed), so a chain of k links costs k small rounds, not k passes over every tool.
    dirty = set(takers)
    while dirty:
        moving: list[Claim] = []
        for name in dirty:
            group = takers.get(name, set())
            for claim in group:
                if level[claim] == _TOP:
                    continue
                if len(group) > 1 or name in blocked:
                    moving.append(claim)
                    # A raw name listed twice, or the gateway's own: the plain case, said by the listed line.
                    if any(level[o] for o in group):
                        why.setdefault(claim, (f"{name!r} is also another tool's served name", name))
                    elif len(group) == 1 and level[claim]:
                        why.setdefault(claim, (f"{name!r} is one of the gateway's own tool names", name))
                    continue
                squatted = next((r for m, r in foreign[claim[0]] if name.startswith(m)), None)
                if squatted is not None:
                    moving.append(claim)
                    why.setdefault(claim, (f"{name!r} reads as upstream {squatted!r}'s namespaced name", name))
        dirty = set()
        for claim in moving:
            left = current[claim]
            takers[left].discard(claim)
            level[claim] += 1
            current[claim] = name = named(claim, level[claim])
            takers.setdefault(name, set()).add(claim)
            dirty |= {left, name}
    routes = {current[c]: Route(*c) for c in claims}
    # Said only where the name changed (a default prefix's level 1 and 2 are one name).
    notes = tuple(
        f"tool {t!r} of upstream {s!r} is served as {current[(s, t)]!r}: {reason}"
        for (s, t), (reason, left) in sorted(why.items())
        if current[(s, t)] != left
    )
    return Naming(dict(sorted(routes.items())), notes)
