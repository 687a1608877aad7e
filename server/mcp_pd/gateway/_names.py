"""Served tool names: as the upstream names them, namespaced only where two upstreams (or the gateway) collide.

A pure function of the configured prefixes and the names each upstream lists, so the same servers always
give the same names, whatever order they start in. Knows nothing about sessions or the SDK.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["SEPARATOR", "Route", "assign_names"]

SEPARATOR = "__"


@dataclass(frozen=True, slots=True)
class Route:
    """Where a served tool name goes: the upstream's config name and the tool's name there."""

    server: str
    tool: str


def assign_names(
    listings: Mapping[str, Iterable[str]], prefixes: Mapping[str, str], reserved: Iterable[str] = ()
) -> dict[str, Route]:
    """`{served name: Route}` for every upstream tool.

    `listings`: server -> the tool names it lists. `prefixes`: server -> what goes before a colliding name
    (`server__` by default). A name listed by two servers, or equal to a `reserved` name (the gateway's own
    tools), is namespaced on every server that lists it: none of them silently wins.
    """
    owners: dict[str, list[str]] = {}
    for server, names in listings.items():
        for name in dict.fromkeys(names):
            owners.setdefault(name, []).append(server)
    blocked = set(reserved)
    routes: dict[str, Route] = {}
    for name in sorted(owners):
        servers = owners[name]
        collides = len(servers) > 1 or name in blocked
        for server in sorted(servers):
            served = f"{prefixes.get(server, server + SEPARATOR)}{name}" if collides else name
            if served in routes or served in blocked:
                # A namespaced name that another server also lists as such: keep the first (sorted) and say so
                # through the missing route; this needs two servers naming tools `a__b` on purpose.
                continue
            routes[served] = Route(server, name)
    return dict(sorted(routes.items()))
