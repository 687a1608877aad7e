"""Which session a request belongs to, in each transport and protocol era (spec 5.2; spec/sessions.md).

The one place that reads the SDK's connection objects. Returns an opaque key and registers a
callback for the end of the session; knows nothing about what is granted.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["SessionKeyHook", "SessionPolicy", "SessionResolver", "SessionlessPolicy"]

logger = logging.getLogger("mcp_pd.sessions")

SessionKeyHook = Callable[[ServerRequestContext[Any, Any]], str | None]
SessionlessPolicy = Literal["downgrade", "reject"]


@dataclass(frozen=True)
class SessionPolicy:
    """How requests without a session identity are treated (spec/sessions.md)."""

    sessionless: SessionlessPolicy = "downgrade"
    session_key: SessionKeyHook | None = None


def _connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    # The SDK exposes the per-client Connection to handlers only through the session object.
    # Guarded so an SDK change degrades to "no identity" (an explicit error), never to shared state.
    return getattr(ctx.session, "_connection", None)


def is_http(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the request came over Streamable HTTP (the transport attaches the HTTP request)."""
    return ctx.request is not None


class _SessionEnd:
    """An exit callback for one session: a slotted object rather than `exit_stack.callback(fn, key)`,
    whose closure and wrapper cost ~760 bytes per session (all session tracking is now ~230;
    benchmarks/README.md)."""

    __slots__ = ("key", "resolver")

    def __init__(self, resolver: SessionResolver, key: str) -> None:
        self.resolver = resolver
        self.key = key

    def __call__(self, *exc_details: object) -> None:
        # Returns None, so an exception unwinding the session is never suppressed.
        self.resolver._ended(self.key)


class SessionResolver:
    """Maps a request to a session key, and tells `on_end(key)` when that session is over."""

    def __init__(self, policy: SessionPolicy, on_end: Callable[[str], None]) -> None:
        self.policy = policy
        self._on_end = on_end
        self._tracked: set[str] = set()

    def resolve(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        """The session key of `ctx`, or None when the request carries no session identity."""
        if self.policy.session_key is not None:
            custom = self.policy.session_key(ctx)
            if custom is not None:
                return f"custom:{custom}"
        conn = _connection(ctx)
        if conn is None:
            return None
        session_id = getattr(conn, "session_id", None)
        if session_id:
            # Stateful Streamable HTTP: the Mcp-Session-Id names the session.
            return self._track(f"http:{session_id}", conn)
        if is_http(ctx):
            # Stateless HTTP, or 2026-07-28 over HTTP: every request is a new connection.
            return None
        if getattr(conn, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
            # Handshake era on a stream (stdio, in-memory): the connection lives as long as the session.
            return self._track(f"conn:{id(conn):x}", conn)
        if getattr(conn, "has_standalone_channel", False):
            # 2026-07-28 on stdio: a fresh Connection per request, but one outbound channel per pipe,
            # and one pipe is one client.
            return self._track(f"stream:{id(conn.outbound):x}", conn.outbound)
        return None

    def _track(self, key: str, anchor: Any) -> str:
        if key in self._tracked:
            return key
        self._tracked.add(key)
        exit_stack = getattr(anchor, "exit_stack", None)
        if exit_stack is not None:
            # Runs on stdio EOF, HTTP DELETE and the SDK's idle timeout.
            exit_stack.push(_SessionEnd(self, key))
        else:
            weakref.finalize(anchor, self._ended, key)
        return key

    def _ended(self, key: str) -> None:
        self._tracked.discard(key)
        logger.debug("session %s ended; dropping its grants", key)
        self._on_end(key)

    def __len__(self) -> int:
        return len(self._tracked)
