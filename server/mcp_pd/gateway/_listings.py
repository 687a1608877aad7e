"""One listing (resources, templates, prompts) gathered across the gateway's upstreams.

Every upstream that declares the capability is asked (started if need be; one that cannot start is left out), each
page followed up to a bound, and one failing upstream leaves the others' entries listed. For a client, an upstream
on its clients' roots is listed from the session holding that client's roots (`_roots.py`), never another client's.
Knows nothing about names, routes or what is listed: `_content.py` serves what this gathers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeAlias, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from ._bridge import ClientBridge
from ._pool import Upstream, UpstreamPool, UpstreamUnavailable

__all__ = ["Listings", "session_of"]

logger = logging.getLogger("mcp_pd.gateway")

Context: TypeAlias = ServerRequestContext[Any, Any]
T = TypeVar("T")
_PAGES: Final = 100


class Listings:
    """Gathers one capability's listing from every upstream that declares it."""

    def __init__(self, pool: UpstreamPool, bridge: ClientBridge) -> None:
        self.pool = pool
        self.bridge = bridge

    async def serving(self, capability: str) -> list[tuple[Upstream, ClientSession]]:
        """Every upstream that declares `capability`, started if need be (one that cannot start is left out)."""
        found: dict[str, tuple[Upstream, ClientSession]] = {}

        async def one(upstream: Upstream) -> None:
            try:
                session = await upstream.ensure()
            except UpstreamUnavailable as exc:
                logger.info("listing %s without upstream %r: %s", capability, upstream.name, exc)
                return
            if getattr(session.server_capabilities, capability, None) is not None:
                found[upstream.name] = (upstream, session)

        async with anyio.create_task_group() as tg:
            for upstream in list(self.pool.upstreams.values()):
                tg.start_soon(one, upstream)
        return [found[name] for name in sorted(found)]

    async def gather(
        self,
        capability: str,
        page: Callable[[ClientSession, str | None], Awaitable[tuple[list[T], str | None]]],
        ctx: Context | None = None,
    ) -> dict[str, list[T]]:
        """Every page of one listing from each upstream that declares `capability`. For `ctx`'s client, an upstream
        on its clients' roots is listed from the session holding that client's roots (what it lists may come from
        them); one that cannot be had for it is left out. Without `ctx` (routing only), the shared session."""
        listed: dict[str, list[T]] = {}

        async def pages(session: ClientSession) -> list[T]:
            items: list[T] = []
            cursor: str | None = None
            for _ in range(_PAGES):
                got, cursor = await page(session, cursor)
                items.extend(got)
                if not cursor:
                    break
            return items

        async def one(upstream: Upstream, session: ClientSession) -> None:
            items: list[T] = []
            try:
                if ctx is not None and self.bridge.roots.uses_roots(upstream.name):

                    async def own(key: str) -> list[T]:
                        return await pages(await session_of(self.pool, key))

                    request = ("list", capability, None)
                    items = await self.bridge.call(upstream.name, ctx, None, request, own)
                else:
                    items = await pages(session)
            except Exception as exc:  # one failing upstream leaves the others' entries listed
                # A server with resources may have no templates (resources/templates/list is optional): not a fault.
                quiet = isinstance(exc, MCPError) and exc.error.code == types.METHOD_NOT_FOUND
                (logger.debug if quiet else logger.warning)(
                    "upstream %r: listing its %s failed: %s", upstream.name, capability, exc
                )
            listed[upstream.name] = items

        serving = await self.serving(capability)
        async with anyio.create_task_group() as tg:
            for upstream, session in serving:
                tg.start_soon(one, upstream, session)
        return {name: listed[name] for name in sorted(listed)}


async def session_of(pool: UpstreamPool, key: str) -> ClientSession:
    """The live session `key` names (an upstream's name, or a client's own session); MCPError saying why not."""
    try:
        return await pool.instance(key).ensure()
    except UpstreamUnavailable as exc:
        raise MCPError(types.INTERNAL_ERROR, f"{str(exc)[0].upper()}{str(exc)[1:]}.") from None
