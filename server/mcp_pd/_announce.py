"""Telling clients that definitions changed (spec 7.2), in each protocol era, and only those who asked.

Handshake-era connections get `notifications/tools/list_changed` (the capability says so) and
`notifications/resources/updated` for the descriptions URIs they subscribed to; 2026-07-28 clients get the
same events on their `subscriptions/listen` stream through the SDK's subscription bus. Knows nothing about
grants or files.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["Announcer"]

logger = logging.getLogger("mcp_pd")


class Announcer:
    """The handshake-era connections seen, their resource subscriptions, and the 2026-07-28 bus."""

    def __init__(self, resource_uri: str, selected: Callable[[str], Iterable[str] | None]) -> None:
        self.resource_uri = resource_uri
        # `selected(uri)`: the tool names a descriptions URI selects (None: the base URI, i.e. all of them).
        self._selected = selected
        self.bus: SubscriptionBus | None = None
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self._subscriptions: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

    def seen(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Remember a handshake-era connection that can receive notifications."""
        conn = getattr(ctx.session, "_connection", None)
        if (
            conn is not None
            and getattr(conn, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS
            and getattr(conn, "has_standalone_channel", False)
            # Membership first: WeakSet.add builds a new weakref with a callback on every call.
            and conn not in self._connections
        ):
            self._connections.add(conn)

    def subscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        conn = getattr(ctx.session, "_connection", None)
        if conn is not None:
            self._subscriptions.setdefault(conn, set()).add(uri)

    def unsubscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        conn = getattr(ctx.session, "_connection", None)
        if conn is not None:
            self._subscriptions.get(conn, set()).discard(uri)

    async def announce(self, changed: frozenset[str]) -> None:
        logger.info("tool definitions changed: %s", ", ".join(sorted(changed)))
        for conn in list(self._connections):
            try:
                await conn.notify("notifications/tools/list_changed", None)
                for uri in sorted(self._subscriptions.get(conn, ())):
                    names = self._selected(uri)
                    if names is None or changed.intersection(names):
                        await conn.notify("notifications/resources/updated", {"uri": uri})
            except Exception as exc:  # a connection that just closed must not stop the others hearing
                logger.debug("could not notify a connection: %s", exc)
        if self.bus is not None:
            await self.bus.publish(ToolsListChanged())
            await self.bus.publish(ResourceUpdated(uri=self.resource_uri))
